"""Prototype (not library code): the engine's compiled segment under other XLA CPU options.

jaxlib 0.10 hands many CPU fusions (dots, and also elementwise ops and reductions) to the YNNPACK
library ("ynn_fusion" in the optimised HLO). For this engine's small, memory-bound reductions
(``S @ a``, the loss, the finiteness sums) that is much slower than XLA's own fused loops. This
script re-jits ``shallowflow.dynamics.gd._segment`` with ``compiler_options`` (a per-function
setting, no global XLA_FLAGS needed), swaps it in for the duration of a measurement, and times
both benchmarks' workloads (shortened) with the stock and modified options.

    .venv/bin/python bench/proto_xla_options.py
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jax

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_throughput
import bench_tiny
from _common import ForeignLoad, foreign_load_line
from shallowflow.dynamics import gd, record_schedule, simulate

VARIANTS: dict[str, dict[str, Any] | None] = {
    "stock": None,
    "no ynn fusions": {"xla_cpu_experimental_ynn_fusion_type": ""},
    "ynn dots only": {"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_INDIVIDUAL_DOT"},
}


@contextmanager
def segment_options(options: dict[str, Any] | None):
    """Temporarily replace gd._segment by a re-jitted copy compiled with ``options``."""
    stock = gd._segment
    if options is not None:
        gd._segment = jax.jit(stock.__wrapped__, static_argnums=0, compiler_options=options)
    try:
        yield
    finally:
        gd._segment = stock


def timed(cfg: Any, net: Any, X: Any, y: Any, steps: int, repeats: int = 2) -> float:
    simulate(cfg, net, X, y, record_schedule(1, every=1))  # compile
    sched = record_schedule(steps, every=steps)
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        simulate(cfg, net, X, y, sched)
        best = min(best, time.perf_counter() - t0)
    return best


def bench() -> list[dict[str, Any]]:
    cfg, net0, X, y = bench_throughput.setup()
    n, d, p, R = bench_throughput.N, bench_throughput.D, bench_throughput.P, bench_throughput.RUNS
    steps, tsteps = 100, 2000
    tcfg, tnet, tX, ty = bench_tiny.problem()
    rows = []
    for name, opts in VARIANTS.items():
        with segment_options(opts):
            row: dict[str, Any] = {"variant": name, "options": opts}
            for dtype in ("float32", "float64"):
                net = jax.tree_util.tree_map(lambda v, dt=dtype: v.astype(dt), net0)
                t = timed(cfg, net, X.astype(dtype), y.astype(dtype), steps)
                row[f"gflops_{dtype}"] = 4.0 * n * d * p * R * steps / t / 1e9
            row["tiny_us_per_step"] = timed(tcfg, tnet, tX, ty, tsteps) / tsteps * 1e6
            print(row, flush=True)
            rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "Prototype `bench/proto_xla_options.py`: the unchanged engine segment re-jitted with XLA "
        "`compiler_options` (throughput workload 100 steps, tiny workload 2000 steps).",
        "",
        "| XLA CPU options of `_segment` | throughput float32 | throughput float64 | tiny |",
        "|---|---:|---:|---:|",
    ]
    for r in rows:
        opts = "stock" if r["options"] is None else ", ".join(
            f"`{k}={v!r}`" for k, v in r["options"].items())
        lines.append(f"| {opts} | {r['gflops_float32']:.1f} GFLOP/s "
                     f"| {r['gflops_float64']:.1f} GFLOP/s | {r['tiny_us_per_step']:.0f} us/step |")
    return "\n".join(lines)


if __name__ == "__main__":
    with ForeignLoad() as foreign:
        result = bench()
    print(table(result))
    print(foreign_load_line(foreign.value))
