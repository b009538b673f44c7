"""Prototype (not library code): the shared-data GD loop in a flat neuron layout.

The engine vmaps a per-run step over runs. With shared data XLA turns the two big products into
single GEMMs over all R*p neurons, but the per-run pieces (``S @ a``, ``S.T @ g`` and the
(n, p)-per-run view of Z) become three (R, n, p)-sized transpose copies plus two batched
mat-vecs each step. This prototype keeps every run's neurons side by side in one layout:

    Wt (d, R*p) = W_all^T,  a (R*p,)
    Z  = X @ Wt                                   (n, R*p)    GEMM, no transpose
    out[i, r] = kappa * sum_j sigma(Z)[i, r, j] a[r, j]       (n, R)  (a mat-vec when R = 1)
    g = dL/dout                                               (n, R)
    G = sigma'(Z) * g[:, r]                                   (n, R*p)
    M = X^T @ G                                   (d, R*p)    GEMM (X^T hoisted)
    grad_Wt = kappa * a * M,   grad_a = kappa * sum_i sigma(Z) g   (or sum_d Wt * M, since
                                                                    sigma(z) = sigma'(z) z)

with the engine's per-run early stop / divergence masks. For tiny d (<= 4) Z is an unrolled
elementwise sum over the d input coordinates, and for tiny n (<= 8) M is unrolled over samples,
instead of GEMMs with an inner dimension of 2 or 3. Each variant is also compiled with XLA's
YNNPACK fusions switched off (``compiler_options``, per function).

    .venv/bin/python bench/proto_flat_engine.py        checks against simulate and times both
"""

from __future__ import annotations

import sys
import time
from functools import cache
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_throughput
import bench_tiny
from _common import ForeignLoad, best_time, foreign_load_line
from shallowflow.dynamics import EngineConfig, record_schedule, simulate

NO_YNN = (("xla_cpu_experimental_ynn_fusion_type", ""),)
SMALL_D, SMALL_N = 4, 8


def _flat_gd(cfg: EngineConfig, steps: int, grad_a_from_gemm: bool, a0, W0, X, y, stop_loss):
    """``steps`` GD steps of R runs (a0 (R, p), W0 (R, p, d)) on shared (X, y); returns the final
    (a, W) in the engine's layout and the per-run stop / divergence flags."""
    R, p, d = W0.shape
    n = X.shape[0]
    act, loss, kappa = cfg.activation, cfg.loss, cfg.kappa
    rate = cfg.lr * cfg.time_scale
    XT = X.T  # hoisted out of the loop
    c = loss.normaliser(jnp.ones_like(y))

    def body(k, carry):
        a, Wt, stopped, diverged = carry
        if d <= SMALL_D:
            Z = sum(X[:, i : i + 1] * Wt[i][None, :] for i in range(d))
        else:
            Z = X @ Wt  # (n, R*p)
        S = act(Z)
        if R == 1:
            out = kappa * (S @ a)[:, None]
        else:
            out = kappa * jnp.sum(S.reshape(n, R, p) * a.reshape(1, R, p), axis=-1)  # (n, R)
        L = c * jnp.sum(loss.pointwise(out, y[:, None]), axis=0)  # (R,)
        g = c * loss.pointwise_derivative(out, y[:, None])  # (n, R)
        G = (act.derivative(Z).reshape(n, R, p) * g[:, :, None]).reshape(n, R * p)
        if n <= SMALL_N:
            M = jnp.stack([sum(G[i] * X[i, j] for i in range(n)) for j in range(d)])
        else:
            M = XT @ G  # (d, R*p)
        if grad_a_from_gemm:
            grad_a = kappa * jnp.sum(Wt * M, axis=0)
        elif R == 1:
            grad_a = kappa * (g[:, 0] @ S)
        else:
            grad_a = kappa * jnp.sum(S.reshape(n, R, p) * g[:, :, None], axis=0).reshape(R * p)
        new_a = a - rate * grad_a if cfg.train_second_layer else a
        new_Wt = Wt - rate * (kappa * a)[None, :] * M
        fin = jnp.isfinite(L) & jnp.isfinite(
            jnp.sum(new_a.reshape(R, p), axis=1) + jnp.sum(new_Wt.reshape(d, R, p), axis=(0, 2))
        )
        frozen = stopped | diverged
        stop_now = ~frozen & (stop_loss > L)
        div_now = ~frozen & ~stop_now & ~fin
        move = jnp.repeat(~(frozen | stop_now | div_now), p)
        a = jnp.where(move, new_a, a)
        Wt = jnp.where(move[None, :], new_Wt, Wt)
        return a, Wt, stopped | stop_now, diverged | div_now

    Wt0 = jnp.transpose(W0, (2, 0, 1)).reshape(d, R * p)
    false = jnp.zeros(R, bool)
    a, Wt, stopped, diverged = lax.fori_loop(0, steps, body, (a0.reshape(-1), Wt0, false, false))
    return a.reshape(R, p), jnp.transpose(Wt.reshape(d, R, p), (1, 2, 0)), stopped, diverged


@cache
def flat_gd(options: tuple[tuple[str, Any], ...] = ()):
    """The prototype, jitted with XLA ``compiler_options`` (() = stock)."""
    return jax.jit(_flat_gd, static_argnums=(0, 1, 2), compiler_options=dict(options) or None)


def compare(label: str, cfg: Any, net: Any, X: Any, y: Any, steps: int, flops: float | None,
            repeats: int = 2) -> list[dict[str, Any]]:
    """Time simulate and the prototype variants on one workload; check they agree."""
    sched = record_schedule(steps, every=steps)
    simulate(cfg, net, X, y, record_schedule(1, every=1))  # compile
    t_eng, res = best_time(lambda: simulate(cfg, net, X, y, sched), repeats, warmup=False)
    rows = [{"workload": label, "variant": "engine (simulate)", "seconds": t_eng, "steps": steps,
             "flops": flops, "speedup": 1.0, "max_param_diff": 0.0}]
    stop = jnp.full((net.a.shape[0],), -jnp.inf, net.a.dtype)
    for trick in (False, True):
        for opts in ((), NO_YNN):
            fn = flat_gd(opts)

            def run(fn=fn, trick=trick):
                return jax.block_until_ready(fn(cfg, steps, trick, net.a, net.W, X, y, stop))

            t, (a, W, _, _) = best_time(run, repeats)
            err = max(
                float(np.max(np.abs(np.asarray(a) - res.final.a))),
                float(np.max(np.abs(np.asarray(W) - res.final.W))),
            )
            name = ("flat" + (" + grad_a from GEMM" if trick else "")
                    + (", no YNNPACK fusions" if opts else ""))
            rows.append({"workload": label, "variant": name, "seconds": t, "steps": steps,
                         "flops": flops, "speedup": t_eng / t, "max_param_diff": err})
            print(f"{label}: {name:40s} {t:7.3f} s  x{t_eng / t:5.2f}", flush=True)
    return rows


def bench() -> list[dict[str, Any]]:
    cfg, net0, X, y = bench_throughput.setup()
    steps = 100
    flops = 4.0 * X.shape[0] * X.shape[1] * net0.W.shape[1] * net0.W.shape[0] * steps
    rows = []
    for dtype in ("float32", "float64"):
        net = jax.tree_util.tree_map(lambda v, dt=dtype: v.astype(dt), net0)
        rows += compare(f"throughput {dtype}", cfg, net, X.astype(dtype), y.astype(dtype), steps,
                        flops)
    tcfg, tnet, tX, ty = bench_tiny.problem()
    rows += compare("tiny float64", tcfg, tnet, tX, ty, 2000, None)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "Prototype `bench/proto_flat_engine.py` (flat neuron layout for shared data; same "
        "semantics as `simulate`, no probes): throughput workload 100 steps, tiny workload 2000 "
        "steps.",
        "",
        "| workload | variant | speed | vs engine | max abs. param. diff. vs engine |",
        "|---|---|---:|---:|---:|",
    ]
    for r in rows:
        if r["flops"] is None:
            speed = f"{r['seconds'] / r['steps'] * 1e6:.0f} us/step"
        else:
            speed = f"{r['flops'] / r['seconds'] / 1e9:.1f} GFLOP/s"
        lines.append(f"| {r['workload']} | {r['variant']} | {speed} | x{r['speedup']:.2f} "
                     f"| {r['max_param_diff']:.1e} |")
    return "\n".join(lines)


if __name__ == "__main__":
    t0 = time.perf_counter()
    with ForeignLoad() as foreign:
        result = bench()
    print(table(result))
    print(f"total {time.perf_counter() - t0:.1f} s. {foreign_load_line(foreign.value)}")
