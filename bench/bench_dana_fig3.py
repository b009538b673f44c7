"""DPB Figure 3 protocol (d = 100, p = p(n, 0.05), 25 runs per n, per-run data): wall time,
useful GFLOP/s against numpy's batched-matmul rate on the same shapes, and the saving of
re-batching (runs that reached the loss threshold leave the compiled batch).

Useful flops: 4 n d p per run and GD step actually needed (a run stops at L < 1/(2n) or at
t_inf), summed over runs. Without re-batching a stopped run is still computed (frozen) until
every run of its batch has stopped. Each mode runs in a fresh process, so both include their
compilations (re-batching compiles each smaller batch size once). The default grid is the part
of the paper preset's grid around the transition this simulation finds (n = 1700..2100, where
runs stop at very different times); ``--paper`` runs the paper preset's whole Gaussian grid
(n = 1500..3500 step 50: extension plus the paper's grid).

    .venv/bin/python bench/bench_dana_fig3.py [--paper] [--runs 25]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ForeignLoad, best_time, foreign_load_line, machine_info, write_json

D, SEED = 100, 0
SUBSET = (1700, 1800, 1900, 2000, 2100)


def batched_roofline(R: int, n: int, d: int, p: int, repeats: int = 3) -> float:
    """numpy GFLOP/s of the per-run GEMM pair Z_r = X_r W_r^T, M_r = G_r^T X_r (4 n d p R flops)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((R, n, d))
    W = rng.standard_normal((R, p, d))
    G = rng.standard_normal((R, n, p))
    t_f, _ = best_time(lambda: np.matmul(X, W.transpose(0, 2, 1)), repeats)
    t_b, _ = best_time(lambda: np.matmul(G.transpose(0, 2, 1), X), repeats)
    return 4.0 * R * n * d * p / (t_f + t_b) / 1e9


def run_grid(ns: list[int], runs: int, rebatch: bool) -> dict[str, Any]:
    import shallowflow.dynamics.gd as gd
    from shallowflow.reproductions.dana.convergence import convergence_experiment, run_point

    original = gd._compaction
    if not rebatch:
        gd._compaction = lambda *args: None
    try:
        rows, t0 = [], time.perf_counter()
        for k, n in enumerate(ns):
            exp = convergence_experiment(n, D, None, runs, SEED + 1000 * k)
            t = time.perf_counter()
            res = run_point(exp, show_progress=False)
            wall = time.perf_counter() - t
            p = exp.model.width
            steps = res.stop_time.values  # lr = 1: flow time = steps
            rows.append({"n": n, "p": p, "wall_s": wall, "budget": exp.train.duration,
                         "mean_steps": float(steps.mean()),
                         "useful_gflop": float(4.0 * n * D * p * steps.sum() / 1e9),
                         "converged": float(res.converged_text.mean())})
        total = time.perf_counter() - t0
    finally:
        gd._compaction = original
    flop = sum(r["useful_gflop"] for r in rows)
    return {"rows": rows, "wall_s": total, "useful_gflop": flop, "gflops": flop / total}


def _fresh_process(ns: list[int], runs: int, rebatch: bool) -> dict[str, Any]:
    """run_grid in a new Python process (its own, empty compilation cache)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "grid.json"
        subprocess.run([sys.executable, __file__, "--grid", ",".join(map(str, ns)), "--runs",
                        str(runs), "--mode", "on" if rebatch else "off", "--json", str(out)],
                       check=True)
        return json.loads(out.read_text())


def bench(paper: bool = False, runs: int = 25) -> dict[str, Any]:
    from shallowflow.theory.good_init import neurons_for

    ns = list(range(1500, 3501, 50)) if paper else list(SUBSET)
    with ForeignLoad() as foreign:
        off = _fresh_process(ns, runs, False)
        on = _fresh_process(ns, runs, True)
        n_mid = ns[len(ns) // 2]
        roof = batched_roofline(runs, n_mid, D, neurons_for(n_mid))
    return {"name": "dana_fig3", "ns": ns, "runs": runs, "rebatch": on, "no_rebatch": off,
            "roofline_gflops": roof, "roofline_shape": [runs, n_mid, D, neurons_for(n_mid)],
            "saving": off["wall_s"] / on["wall_s"], "foreign_cpu_s": foreign.value,
            "machine": machine_info()}


def table(r: dict[str, Any]) -> str:
    on, off = r["rebatch"], r["no_rebatch"]
    lines = [
        f"DPB Fig. 3 protocol, d = {D}, {r['runs']} runs per n, n in {r['ns'][0]}..{r['ns'][-1]} "
        f"({len(r['ns'])} values), p = p(n, 0.05), per-run data, float64, GD lr = 1 until "
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
        "",
        foreign_load_line(r["foreign_cpu_s"]),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paper", action="store_true", help="the paper preset's whole Gaussian grid")
    ap.add_argument("--runs", type=int, default=25)
    ap.add_argument("--grid", help=argparse.SUPPRESS)  # internal: one mode in this process
    ap.add_argument("--mode", choices=("on", "off"), help=argparse.SUPPRESS)
    ap.add_argument("--json", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.grid:
        grid = run_grid([int(v) for v in args.grid.split(",")], args.runs, args.mode == "on")
        Path(args.json).write_text(json.dumps(grid))
        sys.exit(0)
    result = bench(args.paper, args.runs)
    write_json("dana_fig3", result)
    print(table(result))
