"""Algorithm 1 (the limit saddle-to-saddle process, docs/math.md §3.4) at n = 10^4 points,
m = 100 neurons: wall time of ``shallowflow.theory.saddle_process.limit_process`` (goal: under 1 s).

Data: X = I_n (passed as None, the identity), labels N(0, 1), signs uniform in {-1, +1},
directions uniform on the sphere, c_L = 1/n. A second row passes a dense random orthonormal
X (n = 2000, d = 2000) to include the mask product X W^T.

    .venv/bin/python bench/bench_limit_process.py

Raw numbers go to bench/out/limit_process.json.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from shallowflow.benchmarks.common import (
    ForeignLoad,
    best_time,
    machine_info,
    run_with_options,
    with_foreign_load,
)

GOAL_SECONDS = 1.0
PROBLEMS = ((10_000, 100, False), (2_000, 100, True))
"""(n, m, dense X) of each row; d = n."""
QUICK = {"problems": ((1_000, 20, False), (200, 20, True)), "repeats": 2}
"""Keyword arguments of :func:`bench` for a quick run (seconds; not comparable numbers)."""


def problem(n: int, m: int, d: int, dense: bool, seed: int = 0) -> dict[str, Any]:
    """Keyword arguments of ``limit_process`` for a random problem (X = None: the identity)."""
    rng = np.random.default_rng(seed)
    X = np.linalg.qr(rng.standard_normal((d, n)))[0].T if dense else None
    return {"X": X, "y": rng.standard_normal(n), "signs": rng.choice([-1.0, 1.0], m),
            "directions": rng.standard_normal((m, d)), "c_L": 1.0 / n}


def bench(problems: Sequence[tuple[int, int, bool]] = PROBLEMS, repeats: int = 5) -> dict[str, Any]:
    """Best of ``repeats`` wall times of ``limit_process`` on each problem."""
    from shallowflow.theory.saddle_process import limit_process

    rows = []
    with ForeignLoad() as foreign:
        for n, m, dense in problems:
            args = problem(n, m, n, dense)
            seconds, proc = best_time(lambda a=args: limit_process(**a), repeats=repeats)
            rows.append({"n": n, "m": m, "X": "dense orthonormal" if dense else "identity (None)",
                         "seconds": seconds, "jumps": len(proc.tau)})
    return {"name": "limit_process", "rows": rows, "repeats": repeats,
            "foreign_cpu_s": foreign.value, "machine": machine_info()}


def table(r: dict[str, Any]) -> str:
    """The markdown table of :func:`bench`'s result."""
    lines = ["Algorithm 1 on random problems (labels N(0,1), random signs and directions), best of "
             f"{r.get('repeats', 5)}.",
             "", "| n | m | X | jumps | seconds | goal | met |", "|---:|---:|---|---:|---:|---:|:---:|"]
    for row in r["rows"]:
        lines.append(f"| {row['n']} | {row['m']} | {row['X']} | {row['jumps']} | "
                     f"{row['seconds']:.3f} | < {GOAL_SECONDS:g} s | "
                     f"{'yes' if row['seconds'] < GOAL_SECONDS else 'no'} |")
    return with_foreign_load(lines, r["foreign_cpu_s"])


def main(argv: list[str] | None = None, out: Path | None = None) -> dict[str, Any]:
    """Run alone: print the table, write the raw numbers to ``--out``/limit_process.json."""
    return run_with_options("limit_process", __doc__, bench, table, {}, argv, out)


if __name__ == "__main__":
    main(out=Path(__file__).resolve().parent / "out")
