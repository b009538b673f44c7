"""Reduced (diagonal) engine against the dense engine on orthogonal data, DPB Experiment 2 shapes.

64 networks on shared data shallowflow.data.orthogonal(key, n, d, basis="random"), d = 2000,
n in (1000, 2000), width p(n) = floor(log(n / 0.05) / log(4/3)) + 1 (35 and 37;
:func:`shallowflow.theory.good_init.neurons_for`, docs/math.md §1.4(5)), DPB init vmapped over
keys, EngineConfig(kappa = 1/p, lr = 1, time_scale = p, probes = ("loss",)), records at the first
and last step only.

- dense engine (``solve(..., span=False)``): X (n, d), two GEMMs of 2 n d 64 p flops each per
  step (18-38 GFLOP), so only a few steps are timed;
- reduced engine (``solve(..., span=True)``, :mod:`shallowflow.dynamics.span`): orthogonal
  rows are diagonal in the basis q_i = x_i / ||x_i||, O(n 64 p) elementwise work per step.

Per-step times are differences, (T(1 + k steps) - T(1 step)) / k, of best-of-r ``solve`` calls
after a call that compiles, so the record evaluations, host transfers and (for the reduced engine)
the reduction are excluded; speed-up = dense s/step / reduced s/step. The reduced engine's loop
is timed on pre-reduced inputs (its DiagonalInputs and W Q, passed to ``solve`` as they are,
exactly what ``span=True`` runs); the one-time cost of ``span=True`` (span_of, project,
and the two restores of the start and end parameters) is measured separately and in an
end-to-end call of ``span=True``. Agreement: both engines for a few steps, probes loss and
neuron_norm every step. Goals (issue): speed-up >= 100x, max relative difference <= 1e-10.

    .venv/bin/python bench/bench_reduced.py [--steps 1000]

Raw numbers go to bench/out/reduced.json.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from shallowflow.benchmarks.common import (
    ForeignLoad,
    best_time,
    finish,
    machine_info,
    parser,
    with_foreign_load,
)
from shallowflow.theory.good_init import neurons_for

RUNS, D, NS, LR, DELTA = 64, 2000, (1000, 2000), 1.0, 0.05
STEPS, DENSE_STEPS, AGREE_STEPS = 1000, 6, 10
GOAL_SPEEDUP, GOAL_AGREE = 100.0, 1e-10
QUICK = {"ns": (200,), "steps": 50, "dense_steps": 2, "agree_steps": 3, "repeats": 1}
"""Keyword arguments of :func:`bench` for a quick run (seconds; not comparable numbers)."""


def setup(n: int, probes: tuple[str, ...] = ("loss",)) -> tuple[Any, Any, Any, Any]:
    """(cfg, net0, X, y) in float64 for n samples."""
    import jax

    from shallowflow import enable_full_precision
    from shallowflow.data import orthogonal
    from shallowflow.dynamics import EngineConfig
    from shallowflow.model.initialisation import dpb

    enable_full_precision()
    p = neurons_for(n, DELTA)
    X, y = orthogonal(jax.random.PRNGKey(0), n, D, basis="random")
    keys = jax.random.split(jax.random.PRNGKey(1), RUNS)
    net0 = jax.vmap(lambda k: dpb(k, p, D))(keys)
    cfg = EngineConfig(kappa=1.0 / p, lr=LR, time_scale=float(p), probes=probes)
    return cfg, net0, np.asarray(X), np.asarray(y)


def per_step(cfg: Any, net: Any, X: Any, y: Any, steps: int, repeats: int,
             span: bool = False) -> dict[str, float]:
    """(T(1 + steps) - T(1)) / steps of ``solve``, best of ``repeats``, after a compile call
    (both schedules record twice, so they share the compiled segment)."""
    from shallowflow.dynamics import EngineOptions, SaveAt, solve

    def run(k: int) -> Any:
        return solve(cfg, net, X, y, saveat=SaveAt(np.array([0, k])), options=EngineOptions(span=span))

    t0 = time.perf_counter()
    run(1)
    compile_s = time.perf_counter() - t0
    # solve returns numpy arrays: synchronised
    short, _ = best_time(lambda: run(1), repeats, warmup=False)
    long, _ = best_time(lambda: run(1 + steps), repeats, warmup=False)
    return {"seconds_compile_call": compile_s, "seconds_1": short, "seconds_long": long,
            "steps": steps, "seconds_per_step": (long - short) / steps}


def reduction_cost(net0: Any, X: np.ndarray) -> dict[str, float]:
    """One call each of the pieces ``solve(span=True)`` adds: span_of (orthogonality test,
    norms, basis), project (W Q and W_perp) and restore (called for the start and end). The keys
    stay those of the first runs' raw numbers ("reduce_data": the span_of time)."""
    from shallowflow.dynamics.span import is_orthogonal, project, restore, span_of

    W0 = np.asarray(net0.W, np.float64)
    t0 = time.perf_counter()
    is_orthogonal(X)
    t_orth = time.perf_counter() - t0
    t0 = time.perf_counter()
    red = span_of(X)
    t_red = time.perf_counter() - t0
    t0 = time.perf_counter()
    Wr, W_perp = project(W0, red.basis)
    t_proj = time.perf_counter() - t0
    t0 = time.perf_counter()
    restore(Wr, red.basis, W_perp)
    t_rest = time.perf_counter() - t0
    return {"is_orthogonal": t_orth, "reduce_data": t_red, "project": t_proj, "restore": t_rest,
            "total": t_red + t_proj + 2 * t_rest}


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    """max |a - b| / |b| elementwise (b the dense reference)."""
    return float(np.max(np.abs(a - b) / np.abs(b)))


def agreement(n: int, steps: int) -> dict[str, float]:
    """Both engines for ``steps`` steps, loss and neuron_norm recorded every step."""
    from shallowflow.dynamics import EngineOptions, SaveAt, record_schedule, solve

    cfg, net0, X, y = setup(n, probes=("loss", "neuron_norm"))
    sched = record_schedule(steps, every=1)
    res = {r: solve(cfg, net0, X, y, saveat=SaveAt(sched),
                       options=EngineOptions(span=r)) for r in (True, False)}
    red, den = res[True], res[False]
    dW = np.linalg.norm(red.final.W - den.final.W, axis=(1, 2))
    return {
        "steps": steps,
        "loss_max_rel": _rel(red.records["loss"], den.records["loss"]),
        "neuron_norm_max_rel": _rel(red.records["neuron_norm"], den.records["neuron_norm"]),
        "W_final_max_rel": float(np.max(dW / np.linalg.norm(den.final.W, axis=(1, 2)))),
        "W_final_max_abs": float(np.max(np.abs(red.final.W - den.final.W))),
        "a_final_max_rel": _rel(red.final.a, den.final.a),
        "loss_start_mean": float(np.mean(den.records["loss"][:, 0])),
        "loss_end_mean": float(np.mean(den.records["loss"][:, -1])),
    }


def bench_n(n: int, steps: int, dense_steps: int, agree_steps: int,
            repeats: int) -> dict[str, Any]:
    """Both engines' s/step, the reduction's one-time cost and the agreement at ``n``."""
    from shallowflow.dynamics import EngineOptions, SaveAt, solve
    from shallowflow.dynamics.span import project, span_of
    from shallowflow.model.inputs import DiagonalInputs
    from shallowflow.model.network import Network

    cfg, net0, X, y = setup(n)
    # the reduced engine's loop on pre-reduced inputs: the Inputs object passes through solve
    red = span_of(X)
    if not isinstance(red.inputs, DiagonalInputs):
        raise RuntimeError("orthogonal data did not take the diagonal fast path")
    Wr, _ = project(np.asarray(net0.W, np.float64), red.basis)
    reduced = per_step(cfg, Network(net0.a, Wr), red.inputs, y, steps, repeats)
    dense = per_step(cfg, net0, X, y, dense_steps, repeats)
    setup_cost = reduction_cost(net0, X)
    t0 = time.perf_counter()
    e2e = solve(cfg, net0, X, y, saveat=SaveAt(np.array([0, steps])), options=EngineOptions(span=True))
    e2e_s = time.perf_counter() - t0
    p = neurons_for(n, DELTA)
    return {
        "n": n, "p": p,
        "dense_gflop_per_step": 4.0 * n * D * p * RUNS / 1e9,
        "reduced": reduced,
        "dense": dense,
        "speedup": dense["seconds_per_step"] / reduced["seconds_per_step"],
        "reduction_cost": setup_cost,
        "end_to_end_reduce_true": {"steps": steps, "seconds": e2e_s,
                                   "seconds_per_step": e2e_s / steps,
                                   "loss_end_mean": float(np.mean(e2e.records["loss"][:, -1]))},
        "agreement": agreement(n, agree_steps),
    }


def bench(steps: int = STEPS, dense_steps: int = DENSE_STEPS, agree_steps: int = AGREE_STEPS,
          repeats: int = 2, ns: Sequence[int] = NS) -> dict[str, Any]:
    """:func:`bench_n` at every n of ``ns``."""
    rows = {}
    with ForeignLoad() as foreign:
        for n in ns:
            rows[str(n)] = bench_n(n, steps, dense_steps, agree_steps, repeats)
    return {
        "name": "reduced",
        "config": {"runs": RUNS, "d": D, "ns": list(ns), "widths": [neurons_for(n, DELTA) for n in ns],
                   "lr": LR, "kappa": "1/p", "time_scale": "p", "init": "dpb gaussian",
                   "data": "orthogonal random basis", "steps": steps, "dense_steps": dense_steps,
                   "agree_steps": agree_steps, "repeats": repeats},
        "results": rows,
        "goals": {"speedup": GOAL_SPEEDUP, "agreement": GOAL_AGREE},
        "foreign_load": foreign.value,
        "machine": machine_info(),
    }


def _yes(ok: bool) -> str:
    return "yes" if ok else "no"


def table(r: dict[str, Any]) -> str:
    """The markdown tables of :func:`bench`'s result (speed-up, one-time cost, agreement)."""
    c, g = r["config"], r["goals"]
    lines = [
        f"Reduced vs dense engine: {c['runs']} runs on shared orthogonal data (random basis), "
        f"d = {c['d']}, p = p(n, 0.05), kappa = 1/p, lr = {c['lr']}, time_scale = p, float64. "
        f"s/step = (T(1 + k) - T(1)) / k with T best of {c['repeats']} calls; reduced: "
        f"k = {c['steps']}, loop on pre-reduced inputs; dense: k = {c['dense_steps']}.",
        "",
        "| n | p | dense GFLOP/step | dense s/step | reduced s/step | speed-up | goal | met |",
        "|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for row in r["results"].values():
        lines.append(
            f"| {row['n']} | {row['p']} | {row['dense_gflop_per_step']:.1f} "
            f"| {row['dense']['seconds_per_step']:.3f} s "
            f"| {row['reduced']['seconds_per_step'] * 1e3:.3f} ms | {row['speedup']:.0f}x "
            f"| >= {g['speedup']:g}x | {_yes(row['speedup'] >= g['speedup'])} |")
    lines += [
        "",
        f"One-time cost of `span=True` (one call each; restore runs twice per solve) and an "
        f"end-to-end `solve(..., span=True)` of {c['steps']} steps:",
        "",
        "| n | is_orthogonal | span_of (incl. it) | project | restore | sum (s) "
        "| end-to-end (s) | end-to-end s/step |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in r["results"].values():
        rc, e = row["reduction_cost"], row["end_to_end_reduce_true"]
        lines.append(
            f"| {row['n']} | {rc['is_orthogonal']:.2f} | {rc['reduce_data']:.2f} "
            f"| {rc['project']:.2f} | {rc['restore']:.2f} | {rc['total']:.2f} "
            f"| {e['seconds']:.2f} | {e['seconds_per_step'] * 1e3:.2f} ms |")
    lines += [
        "",
        f"Agreement after {c['agree_steps']} steps (all runs, loss and neuron_norm recorded every "
        f"step; relative to the dense engine):",
        "",
        "| n | loss max rel. | neuron_norm max rel. | final W max rel. (Frobenius, per run) "
        "| final a max rel. | goal | met |",
        "|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for row in r["results"].values():
        a = row["agreement"]
        worst = max(a["loss_max_rel"], a["W_final_max_rel"])
        lines.append(
            f"| {row['n']} | {a['loss_max_rel']:.1e} | {a['neuron_norm_max_rel']:.1e} "
            f"| {a['W_final_max_rel']:.1e} | {a['a_final_max_rel']:.1e} "
            f"| <= {g['agreement']:g} | {_yes(worst <= g['agreement'])} |")
    return with_foreign_load(lines, r["foreign_load"])


def main(argv: list[str] | None = None, out: Path | None = None) -> dict[str, Any]:
    """Run alone: print the table, write the raw numbers to ``--out``/reduced.json."""
    ap = parser(__doc__, out)
    ap.add_argument("--steps", type=int, default=STEPS, help="timed steps of the reduced engine")
    ap.add_argument("--dense-steps", type=int, default=DENSE_STEPS,
                    help="timed steps of the dense engine")
    ap.add_argument("--agree-steps", type=int, default=AGREE_STEPS)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)
    r = bench(args.steps, args.dense_steps, args.agree_steps, args.repeats)
    finish("reduced", r, table, args.out)
    return r


if __name__ == "__main__":
    main(out=Path(__file__).resolve().parent / "out")
