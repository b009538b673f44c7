"""Prototype (not library code): the shared-data GD step in a flat neuron layout.

The engine vmaps a per-run step over runs. With shared data XLA turns the two big products into
single GEMMs over all R*p neurons, but the per-run pieces (``S @ a``, ``S.T @ g`` and the
(n, p)-per-run view of Z) become three (R, n, p)-sized transpose copies plus two batched
mat-vecs each step. This prototype keeps every run's neurons side by side in one layout:

    Wt (d, R*p) = W_all^T,  a (R*p,)
    Z  = X @ Wt                                   (n, R*p)    GEMM, no transpose
    out[i, r] = kappa * sum_j sigma(Z)[i, r, j] a[r, j]       (n, R)  row reduction
    g = dL/dout                                               (n, R)
    G = sigma'(Z) * g[:, r]                                   (n, R*p)
    M = X^T @ G                                   (d, R*p)    GEMM (X^T precomputed)
    grad_Wt = kappa * a * M,   grad_a = kappa * sum_d Wt * M  (sigma(z) = sigma'(z) z)

with the engine's per-run early stop / divergence masks. ``python bench/proto_flat_engine.py``
checks it against :func:`shallowflow.dynamics.simulate` and times both.
"""

from __future__ import annotations

import sys
import time
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

sys.path.insert(0, str(Path(__file__).resolve().parent))

import shallowflow  # noqa: F401  (enables float64)
from _common import best_time
from shallowflow.dynamics import EngineConfig


@partial(jax.jit, static_argnums=(0, 1, 2))
def flat_gd(cfg: EngineConfig, steps: int, grad_a_from_gemm: bool, a0, W0, X, y, stop_loss):
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
        Z = X @ Wt  # (n, R*p)
        S3 = act(Z).reshape(n, R, p)
        out = kappa * jnp.sum(S3 * a.reshape(1, R, p), axis=-1)  # (n, R)
        L = c * jnp.sum(loss.pointwise(out, y[:, None]), axis=0)  # (R,)
        g = c * loss.pointwise_derivative(out, y[:, None])  # (n, R)
        G = (act.derivative(Z).reshape(n, R, p) * g[:, :, None]).reshape(n, R * p)
        M = XT @ G  # (d, R*p)
        if grad_a_from_gemm:
            grad_a = kappa * jnp.sum(Wt * M, axis=0)
        else:
            grad_a = kappa * jnp.sum(S3 * g[:, :, None], axis=0).reshape(R * p)
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


def main() -> None:
    from shallowflow.data import sphere
    from shallowflow.dynamics import record_schedule, simulate
    from shallowflow.init import dpb

    R, n, d, p, steps = 64, 1000, 100, 40, 200
    X, y = sphere(jax.random.PRNGKey(0), n, d)
    net0 = jax.vmap(lambda k: dpb(k, p, d))(jax.random.split(jax.random.PRNGKey(1), R))
    cfg = EngineConfig(kappa=1.0 / p, lr=0.1, time_scale=float(p), probes=("loss",))
    flops = 4.0 * n * d * p * R * steps
    for dtype in (jnp.float32, jnp.float64):
        net = jax.tree_util.tree_map(lambda v, dt=dtype: v.astype(dt), net0)
        Xd, yd = X.astype(dtype), y.astype(dtype)
        stop = jnp.full((R,), -jnp.inf, dtype)
        t_eng, res = best_time(
            lambda net=net, Xd=Xd, yd=yd: simulate(cfg, net, Xd, yd, record_schedule(steps, steps)),
            repeats=2,
        )
        print(f"{dtype.__name__}: engine  {t_eng:.3f} s  {flops / t_eng / 1e9:6.1f} GFLOP/s")
        for trick in (False, True):
            def run(net=net, Xd=Xd, yd=yd, stop=stop, trick=trick):
                return jax.block_until_ready(flat_gd(cfg, steps, trick, net.a, net.W, Xd, yd, stop))

            t, (a, W, _, _) = best_time(run, repeats=2)
            err = max(
                float(np.max(np.abs(np.asarray(a) - res.final.a))),
                float(np.max(np.abs(np.asarray(W) - res.final.W))),
            )
            name = "flat+gemm-grad_a" if trick else "flat"
            print(f"  {name:17s} {t:.3f} s  {flops / t / 1e9:6.1f} GFLOP/s  "
                  f"x{t_eng / t:.2f}  max|param diff| {err:.2e}")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - t0:.1f} s")
