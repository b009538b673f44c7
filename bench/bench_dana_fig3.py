"""DPB Figure 3 protocol (d = 100, p = p(n, 0.05), 25 runs per n, per-run data): wall time,
useful GFLOP/s against numpy's batched-matmul rate on the same shapes, and the saving of
re-batching (runs that reached the loss threshold leave the compiled batch).

Useful flops: 4 n d p per run and GD step actually needed (a run stops at L < 1/(2n) or at
t_inf, docs/math.md §1.3), summed over runs; useful GFLOP/s = that / wall time, and its ratio to
numpy's GFLOP/s on the per-run GEMM pair is the fraction of the (batched-small) roofline; beside
it, the fraction of the machine's large-GEMM rate, XLA's rate on the step's two products alone
(:func:`xla_products_rate`, the most a step in one thread of runs can reach), the engine's step
alone at n = STEP_N (:func:`step_rate`: with its shards of runs, one per core, and in one
thread) and, per core, the authors' kind of PyTorch loop (one network at the middle n, one
thread), measured in the same run. Without re-batching a
stopped run is still computed (frozen) until every run of its batch has stopped. Each mode runs in
a fresh process, so both include their compilations (re-batching compiles each smaller batch size
once). The default grid is the part of the paper preset's grid around the transition this
simulation finds (n = 1700..2100, where runs stop at very different times); ``--paper`` runs the
paper preset's whole Gaussian grid (n = 1500..3500 step 50: extension plus the paper's grid).

The step alone and the large GEMM are also measured in turn, ``--rounds`` times (default 3):
on a VM both rates move with the neighbours' load, and each round's ratio is reported.

``--dtype float32`` trains every run in float32 (the references then in float32 too; the raw
numbers go to ``dana_fig3_float32.json``).

    .venv/bin/python bench/bench_dana_fig3.py [--paper] [--runs 25] [--dtype float32] [--rounds 3]

(by default the grid around the transition, in float64); raw numbers go to
bench/out/dana_fig3.json.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from shallowflow.benchmarks.common import (
    ForeignLoad,
    best_time,
    cpu_count,
    finish,
    large_gemm_rate,
    machine_info,
    parser,
    torch_loop_rate,
    with_foreign_load,
)

D, SEED = 100, 0
SUBSET = (1700, 1800, 1900, 2000, 2100)
STEP_N = 3000  # the step alone is measured at the shape issue 14 names (DPB Experiment 1)
PAPER_GRID = tuple(range(1500, 3501, 50))
ROUNDS = 3  # alternations of the large GEMM and the step alone (:func:`alternated`)
QUICK = {"ns": (100, 150), "runs": 4, "rounds": 1}
"""Keyword arguments of :func:`bench` for a quick run (seconds; not comparable numbers)."""


def batched_roofline(R: int, n: int, d: int, p: int, repeats: int = 3,
                     dtype: str = "float64") -> float:
    """numpy GFLOP/s of the per-run GEMM pair Z_r = X_r W_r^T, M_r = G_r^T X_r (4 n d p R flops)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((R, n, d)).astype(dtype)
    W = rng.standard_normal((R, p, d)).astype(dtype)
    G = rng.standard_normal((R, n, p)).astype(dtype)
    t_f, _ = best_time(lambda: np.matmul(X, W.transpose(0, 2, 1)), repeats)
    t_b, _ = best_time(lambda: np.matmul(G.transpose(0, 2, 1), X), repeats)
    return 4.0 * R * n * d * p / (t_f + t_b) / 1e9


def xla_products_rate(R: int, n: int, d: int, p: int, dtype: str = "float64",
                      steps: int = 100, repeats: int = 5) -> float:
    """XLA's GFLOP/s of the two products of a step alone, Z_r = W_r X_r^T and M_r = G_r X_r
    (4 n d p R flops per step), in the fastest layout found (W (p, d), X^T kept beside X, 2-D
    products, one run after another, each product split between the cores; bench/NOTES.md):
    the ceiling of a step in one thread of runs. The engine's shards (a run per core, each
    product on one core) are not bound by it."""
    import jax

    from shallowflow import enable_full_precision

    enable_full_precision()  # else float64 arrays silently become float32 ones
    rng = np.random.default_rng(0)
    X = rng.standard_normal((R, n, d)).astype(dtype)
    args = (jax.device_put(X), jax.device_put(np.ascontiguousarray(X.transpose(0, 2, 1))),
            jax.device_put((rng.standard_normal((R, p, d)) / d).astype(dtype)))

    def run(X: jax.Array, Xt: jax.Array, W: jax.Array) -> jax.Array:
        def step(_: int, W: jax.Array) -> jax.Array:
            # G = Z / n keeps the values bounded; the barrier keeps XLA from reassociating
            # (W Xt) X into W (Xt X), a loop-invariant product and a p x d x d one per step
            return W - jax.lax.optimization_barrier(W @ Xt) @ X / n
        return jax.lax.fori_loop(0, steps, step, W)

    fn = jax.jit(lambda X, Xt, W: jax.lax.map(lambda a: run(*a), (X, Xt, W)))
    first = fn(*args).block_until_ready()  # compiles
    if first.dtype != dtype:
        raise RuntimeError(f"xla_products_rate: computed in {first.dtype}, not {dtype}")
    t, _ = best_time(lambda: fn(*args).block_until_ready(), repeats)
    return 4.0 * R * n * d * p * steps / t / 1e9


def step_rate(R: int, n: int, dtype: str = "float64", threads: int | None = None,
              steps: tuple[int, int] = (30, 330), repeats: int = 3) -> float:
    """The engine's GFLOP/s on the protocol's step alone (4 n d p R flops per step): ``train``
    of R runs at n for ``steps[1]`` and ``steps[0]`` steps (no early stop), best of ``repeats``
    each after a compiling call, the difference of the two times over the difference of steps
    (compilation, data generation and the call's fixed costs cancel). ``threads``: the driver's
    shards (None: its policy, one per core; 1: the whole batch in one thread)."""
    from shallowflow.dynamics import EngineOptions
    from shallowflow.reproductions.dana.convergence_grids import convergence_experiment
    from shallowflow.training.entry import train

    def run(count: int) -> float:
        exp = convergence_experiment(n, D, None, R, SEED).with_train(
            dtype=dtype, duration=float(count), stop_loss=0.0)
        return best_time(lambda: train(exp, show_progress=False), repeats)[0]

    with _default(EngineOptions.__init__, "threads", threads):
        short, long = run(steps[0]), run(steps[1])
    p = convergence_experiment(n, D, None, 1, SEED).model.width
    return 4.0 * n * D * p * R * (steps[1] - steps[0]) / (long - short) / 1e9


def alternated(R: int, n: int, dtype: str, rounds: int) -> list[dict[str, float]]:
    """The large GEMM and the step alone (:func:`step_rate`, R runs at n) measured in turn,
    ``rounds`` times in this process. Where cores and cache are shared with other machines (a
    VM) both rates move, and not together: one pair of measurements can land anywhere in the
    spread, so each round's pair is kept and the table gives every round's ratio
    (bench/NOTES.md)."""
    out = []
    for _ in range(rounds):
        gemm = large_gemm_rate(np.dtype(dtype))
        out.append({"large_gemm_gflops": gemm, "step_gflops": step_rate(R, n, dtype, repeats=2)})
    return out


@contextlib.contextmanager
def _default(fn: Callable[..., Any], name: str, value: Any) -> Iterator[None]:
    """Temporarily change the default of ``fn``'s parameter ``name`` (every caller that leaves
    it out, wherever it imported ``fn`` from, gets ``value``)."""
    params = inspect.signature(fn).parameters
    if name not in params:
        raise RuntimeError(f"{fn.__qualname__} has no parameter {name!r}")
    if params[name].kind is inspect.Parameter.KEYWORD_ONLY:
        old_kw = dict(fn.__kwdefaults__)
        fn.__kwdefaults__ = {**old_kw, name: value}
        try:
            yield
        finally:
            fn.__kwdefaults__ = old_kw
        return
    with_default = [p for p in params.values() if p.default is not p.empty
                    and p.kind is not inspect.Parameter.KEYWORD_ONLY]
    old = fn.__defaults__
    defaults = list(old)
    defaults[[p.name for p in with_default].index(name)] = value
    fn.__defaults__ = tuple(defaults)
    try:
        yield
    finally:
        fn.__defaults__ = old


def run_grid(ns: Sequence[int], runs: int, rebatch: bool, dtype: str = "float64") -> dict[str, Any]:
    """Train the protocol's runs at every n (one batch per n, as the reproduction does) with
    re-batching on or off; per n the wall time, mean steps run and useful GFLOP."""
    from shallowflow.dynamics import EngineOptions
    from shallowflow.reproductions.dana.convergence_grids import convergence_experiment
    from shallowflow.training.entry import train

    with _default(EngineOptions.__init__, "rebatch", rebatch):
        rows, t0 = [], time.perf_counter()
        for k, n in enumerate(ns):
            exp = convergence_experiment(n, D, None, runs, SEED + 1000 * k).with_train(dtype=dtype)
            t = time.perf_counter()
            ds = train(exp, show_progress=False, keep_data=True)[0]
            wall = time.perf_counter() - t
            p = exp.model.width
            # lr = 1: flow time = steps; a run that did not stop ran the whole budget
            steps = np.where(ds.stopped.values, ds.stop_step.values, int(ds.step[-1]))
            # the paper text's rule (dana.convergence_grids): smallest recorded loss < C_y^- / (2n)
            text = np.nanmin(ds.loss.values, axis=1) < np.abs(ds.y.values).min(axis=-1) / (2 * n)
            rows.append({"n": n, "p": p, "wall_s": wall, "budget": exp.train.duration,
                         "mean_steps": float(steps.mean()),
                         "useful_gflop": float(4.0 * n * D * p * steps.sum() / 1e9),
                         "converged": float(text.mean())})
        total = time.perf_counter() - t0
    flop = sum(r["useful_gflop"] for r in rows)
    return {"rows": rows, "wall_s": total, "useful_gflop": flop, "gflops": flop / total}


def _fresh_process(ns: Sequence[int], runs: int, rebatch: bool, dtype: str) -> dict[str, Any]:
    """run_grid in a new Python process (its own, empty compilation cache)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "grid.json"
        subprocess.run([sys.executable, str(Path(__file__).resolve()), "--grid",
                        ",".join(map(str, ns)), "--runs", str(runs), "--mode",
                        "on" if rebatch else "off", "--dtype", dtype, "--json", str(out)],
                       check=True)
        return json.loads(out.read_text())


def bench(paper: bool = False, runs: int = 25, ns: Sequence[int] | None = None,
          dtype: str = "float64", rounds: int = ROUNDS) -> dict[str, Any]:
    """Both modes, each in a fresh process, and numpy's rate on the middle n's shapes; saving =
    wall time without / with re-batching. ``ns``: the grid (default: SUBSET, or the paper
    preset's with ``paper``); ``rounds``: alternations of the large GEMM and the step alone
    (:func:`alternated`; 0: none)."""
    if rounds < 0:
        raise ValueError(f"--rounds: must be >= 0, got {rounds}")
    from shallowflow.theory.good_init import neurons_for

    ns = list(ns) if ns is not None else list(PAPER_GRID if paper else SUBSET)
    with ForeignLoad() as foreign:
        off = _fresh_process(ns, runs, False, dtype)
        on = _fresh_process(ns, runs, True, dtype)
        n_mid = ns[len(ns) // 2]
        roof = batched_roofline(runs, n_mid, D, neurons_for(n_mid), dtype=dtype)
        products = xla_products_rate(runs, n_mid, D, neurons_for(n_mid), dtype=dtype)
        step = {"sharded": step_rate(runs, STEP_N, dtype), "one_thread": step_rate(
            runs, STEP_N, dtype, threads=1)}
        gemm = large_gemm_rate(np.dtype(dtype))
        torch_rate = torch_loop_rate(n_mid, D, neurons_for(n_mid), dtype, 50)
        torch_step = torch_loop_rate(STEP_N, D, neurons_for(STEP_N), dtype, 50)
        turns = alternated(runs, STEP_N, dtype, rounds)
    return {"name": "dana_fig3", "dtype": dtype, "ns": ns, "runs": runs, "rebatch": on, "no_rebatch": off,
            "roofline_gflops": roof, "roofline_shape": [runs, n_mid, D, neurons_for(n_mid)],
            "large_gemm_gflops": gemm, "xla_products_gflops": products,
            "step_gflops": step, "step_n": STEP_N, "alternated": turns,
            "torch_loop_gflops_per_core": torch_rate, "torch_loop_step_n": torch_step,
            "cores": cpu_count(), "saving": off["wall_s"] / on["wall_s"],
            "foreign_cpu_s": foreign.value, "machine": machine_info()}


def table(r: dict[str, Any]) -> str:
    """The markdown table of :func:`bench`'s result."""
    on, off = r["rebatch"], r["no_rebatch"]
    lines = [
        f"DPB Fig. 3 protocol, d = {D}, {r['runs']} runs per n, n in {r['ns'][0]}..{r['ns'][-1]} "
        f"({len(r['ns'])} values), p = p(n, 0.05), per-run data, {r.get('dtype', 'float64')}, "
        "GD lr = 1 until "
        "L < 1/(2n) or t_inf. Wall times include compilation (each mode in a fresh process). "
        "Roofline: numpy batched "
        f"matmul pair on shapes (R, n, d, p) = {tuple(r['roofline_shape'])}.",
        "",
        "| n | p | converged | mean steps / budget | wall s (re-batching) | wall s (without) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for a, b in zip(on["rows"], off["rows"], strict=True):
        lines.append(f"| {a['n']} | {a['p']} | {a['converged']:.2f} | {a['mean_steps']:.0f} / "
                     f"{a['budget']:.0f} | {a['wall_s']:.1f} | {b['wall_s']:.1f} |")
    lines += [
        "",
        f"Total: {on['wall_s']:.1f} s with re-batching, {off['wall_s']:.1f} s without "
        f"(saving {r['saving']:.2f}x). Useful GFLOP/s {on['gflops']:.1f} (with) and "
        f"{off['gflops']:.1f} (without) against numpy's {r['roofline_gflops']:.1f}: "
        f"{100 * on['gflops'] / r['roofline_gflops']:.0f}% of the roofline with re-batching "
        "(goal 60%).",
    ]
    if "large_gemm_gflops" in r:
        per_core = on["gflops"] / r["cores"]
        torch_rate = r["torch_loop_gflops_per_core"]
        step_torch = r.get("torch_loop_step_n") or torch_rate
        lines.append(
            f"Against the machine's large-GEMM rate (numpy 2048 x 2048, {r['cores']} cores, "
            f"{r['large_gemm_gflops']:.1f} GFLOP/s): "
            f"{100 * on['gflops'] / r['large_gemm_gflops']:.0f}% (goal 85%). "
            + (f"XLA's two products alone on the same shapes, one run after another, each "
               f"split between the cores (the ceiling of a step in one thread of runs): "
               f"{r['xla_products_gflops']:.1f} GFLOP/s, "
               f"{100 * r['xla_products_gflops'] / r['large_gemm_gflops']:.0f}% of the large "
               f"GEMM; the engine reaches {100 * on['gflops'] / r['xla_products_gflops']:.0f}% "
               "of it. " if "xla_products_gflops" in r else "")
            + (f"The step alone (engine, {r['runs']} runs at n = "
               f"{r.get('step_n', r['roofline_shape'][1])}, "
               f"no compilation or data generation): {r['step_gflops']['sharded']:.1f} GFLOP/s "
               f"with a shard of runs per core ("
               f"{100 * r['step_gflops']['sharded'] / r['large_gemm_gflops']:.0f}% of the "
               f"large GEMM, {r['step_gflops']['sharded'] / r['cores'] / step_torch:.2f}x the "
               f"PyTorch loop per core at that n), {r['step_gflops']['one_thread']:.1f} with the whole "
               "batch in one thread. " if "step_gflops" in r and torch_rate else "")
            + "Per core "
            f"{per_core:.1f} GFLOP/s, against "
            + (f"{torch_rate:.1f} for the authors' kind of PyTorch loop (one network at the "
               f"middle n, one thread, {r.get('dtype', 'float64')}): "
               f"{per_core / torch_rate:.2f}x."
               if torch_rate else "no PyTorch loop (torch is not installed)."))
    if r.get("alternated"):
        ratios = [t["step_gflops"] / t["large_gemm_gflops"] for t in r["alternated"]]
        lines.append(
            f"The step alone at n = {r['step_n']} and the large GEMM measured in turn, "
            f"{len(ratios)} round(s): "
            + ", ".join(f"{t['step_gflops']:.1f} / {t['large_gemm_gflops']:.1f} GFLOP/s "
                        f"({100 * q:.0f}%)" for t, q in zip(r["alternated"], ratios, strict=True))
            + f"; from {100 * min(ratios):.0f}% to {100 * max(ratios):.0f}% of the large GEMM "
            "(goal 85%).")
    return with_foreign_load(lines, r["foreign_cpu_s"])


def main(argv: list[str] | None = None, out: Path | None = None) -> dict[str, Any] | None:
    """Run alone: print the table, write the raw numbers to ``--out``/dana_fig3.json. With the
    internal ``--grid`` one mode runs in this process (what :func:`_fresh_process` starts)."""
    ap = parser(__doc__, out)
    ap.add_argument("--paper", action="store_true", help="the paper preset's whole Gaussian grid")
    ap.add_argument("--runs", type=int, default=25)
    ap.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    ap.add_argument("--rounds", type=int, default=ROUNDS,
                    help="alternations of the large GEMM and the step alone (>= 0)")
    ap.add_argument("--grid", help=argparse.SUPPRESS)  # internal: one mode in this process
    ap.add_argument("--mode", choices=("on", "off"), help=argparse.SUPPRESS)
    ap.add_argument("--json", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.grid:
        grid = run_grid([int(v) for v in args.grid.split(",")], args.runs, args.mode == "on",
                        args.dtype)
        Path(args.json).write_text(json.dumps(grid))
        return None
    if args.rounds < 0:
        ap.error(f"--rounds: must be >= 0, got {args.rounds}")
    r = bench(args.paper, args.runs, dtype=args.dtype, rounds=args.rounds)
    finish("dana_fig3" if args.dtype == "float64" else f"dana_fig3_{args.dtype}", r, table,
           args.out)
    return r


if __name__ == "__main__":
    main(out=Path(__file__).resolve().parent / "out")
