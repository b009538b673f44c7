"""Algorithm 1 (the limit saddle-to-saddle process, MATH.md §3.4) at n = 10^4 points, m = 100
neurons: wall time of ``shallowflow.theory.saddle_process.limit_process`` (goal: under 1 s).

Data: X = I_n (passed as None, the identity), labels N(0, 1), signs uniform in {-1, +1},
directions uniform on the sphere, c_L = 1/n. A second row passes a dense random orthonormal
X (n = 2000, d = 2000) to include the mask product X W^T.

    .venv/bin/python bench/bench_limit_process.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ForeignLoad, best_time, foreign_load_line, machine_info, write_json

GOAL_SECONDS = 1.0


def problem(n: int, m: int, d: int, dense: bool, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    X = np.linalg.qr(rng.standard_normal((d, n)))[0].T if dense else None
    return {"X": X, "y": rng.standard_normal(n), "signs": rng.choice([-1.0, 1.0], m),
            "directions": rng.standard_normal((m, d)), "c_L": 1.0 / n}


def bench() -> dict[str, Any]:
    from shallowflow.theory.saddle_process import limit_process

    rows = []
    with ForeignLoad() as foreign:
        for n, m, dense in ((10_000, 100, False), (2_000, 100, True)):
            args = problem(n, m, n, dense)
            seconds, proc = best_time(lambda a=args: limit_process(**a), repeats=5)
            rows.append({"n": n, "m": m, "X": "dense orthonormal" if dense else "identity (None)",
                         "seconds": seconds, "jumps": len(proc.tau)})
    return {"name": "limit_process", "rows": rows, "foreign_cpu_s": foreign.value,
            "machine": machine_info()}


def table(r: dict[str, Any]) -> str:
    lines = ["Algorithm 1 on random problems (labels N(0,1), random signs and directions), best of 5.",
             "", "| n | m | X | jumps | seconds | goal | met |", "|---:|---:|---|---:|---:|---:|:---:|"]
    for row in r["rows"]:
        lines.append(f"| {row['n']} | {row['m']} | {row['X']} | {row['jumps']} | "
                     f"{row['seconds']:.3f} | < {GOAL_SECONDS:g} s | "
                     f"{'yes' if row['seconds'] < GOAL_SECONDS else 'no'} |")
    lines += ["", foreign_load_line(r["foreign_cpu_s"])]
    return "\n".join(lines)


if __name__ == "__main__":
    result = bench()
    write_json("limit_process", result)
    print(table(result))
