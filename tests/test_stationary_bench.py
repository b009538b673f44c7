"""bench/bench_stationary.py: the table of a synthetic result (no timing) and its registration."""

from __future__ import annotations

import bench_stationary as stationary
from dev_suite import BENCHMARKS


def _row(p: int, dense: float | None, lanczos: float) -> dict:
    row = {"p": p, "parameters": 10 * p, "smooth": 10 * (p - 1), "lanczos_s": lanczos,
           "lanczos_first_s": lanczos + 1, "lanczos_iterations": 40, "lanczos_converged": True,
           "verdict_s": 0.5, "verdict_first_s": 1.0, "verdict": "not stationary",
           "spectrum_method": "dense" if dense is not None else "lanczos"}
    if dense is not None:
        row.update(dense_s=dense, dense_first_s=dense + 1)
    return row


def test_table_reports_the_crossover_and_the_goal() -> None:
    r = {"rows": [_row(10, 0.01, 0.02), _row(100, 0.5, 0.05), _row(10_000, None, 20.0)],
         "repeats": 3, "n": 500, "d": 9, "crossover_parameters": 990, "large": 10_000,
         "foreign_cpu_s": 0.0}
    md = stationary.table(r)
    assert "Lanczos is faster from 990 smooth-part parameters on" in md
    last = md.splitlines()[6]
    assert last.startswith("| 100000 | – (–) | 20.000 (21.000) | 40 |") and last.endswith("| yes |")
    assert BENCHMARKS["stationary"].bench is stationary.bench
