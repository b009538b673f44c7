"""End-state verdict (docs/math.md §9): wall time of ``stationary.verdict.end_state`` against
the number of parameters (10^2 to 10^5), and the dense vs Lanczos crossover of the smooth-part
spectrum (goal: 10^5 parameters in under a minute on 2 cores).

Problems: random data X (n = 500, d = 9) and labels N(0, 1), a random network of width p
(p (d + 1) parameters, kappa = 1/p, square loss) with one zero neuron, so that the escape search
(d > 2) runs too. Each row times the dense spectrum (up to ``dense_max`` parameters), the Lanczos
spectrum, and the whole verdict with ``method="auto"``; best of ``repeats`` after one call that
compiles (its time is reported separately).

    .venv/bin/python bench/bench_stationary.py

Raw numbers go to bench/out/stationary.json.
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
    machine_info,
    run_with_options,
    with_foreign_load,
)

GOAL_SECONDS = 60.0
GOAL_PARAMETERS = 100_000
WIDTHS = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000)
"""Widths p; with d = 9 a network has 10 p parameters (10^2 .. 10^5)."""
N_SAMPLES, DIM = 500, 9
DENSE_MAX = 2000
"""Largest size timed with the dense spectrum."""
QUICK = {"widths": (10, 20, 50), "repeats": 1, "dense_max": 500}
"""Keyword arguments of :func:`bench` for a quick run (seconds; not comparable numbers)."""


def problem(p: int, n: int = N_SAMPLES, d: int = DIM, seed: int = 0) -> tuple[Any, Any]:
    """(network, Problem) of one row: random data and network, neuron 0 set to zero."""
    import shallowflow
    from shallowflow.model.network import Network
    from shallowflow.stationary.derivatives import problem as make_problem

    shallowflow.enable_full_precision()
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    a = rng.standard_normal(p)
    W = rng.standard_normal((p, d))
    a[0], W[0] = 0.0, 0.0
    return Network(a, W), make_problem(X, rng.standard_normal(n), "square", 1.0 / p)


def _timed_first(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def measure(p: int, repeats: int = 3, dense_max: int = DENSE_MAX) -> dict[str, Any]:
    """One row: dense (up to ``dense_max`` parameters) and Lanczos spectrum times, the verdict's
    time (auto method), first calls (compilation included) and best of ``repeats``."""
    from shallowflow.stationary.spectrum import smooth_spectrum
    from shallowflow.stationary.verdict import end_state

    net, prob = problem(p)
    smooth = np.ones(p, bool)
    smooth[0] = False
    size = int(smooth.sum()) * (DIM + 1)
    row: dict[str, Any] = {"p": p, "parameters": p * (DIM + 1), "smooth": size}

    def dense() -> Any:
        return smooth_spectrum(net, prob, smooth, "dense")

    def lanczos() -> Any:
        return smooth_spectrum(net, prob, smooth, "lanczos")

    def verdict() -> Any:
        return end_state(net, prob)

    if size <= dense_max:
        row["dense_first_s"], _ = _timed_first(dense)
        row["dense_s"], spec = best_time(dense, repeats, warmup=False)
        row["dense_eig_min"] = spec.eig_min
    row["lanczos_first_s"], _ = _timed_first(lanczos)
    row["lanczos_s"], lan = best_time(lanczos, repeats, warmup=False)
    row.update(lanczos_iterations=lan.iterations, lanczos_converged=lan.converged,
               lanczos_eig_min=lan.eig_min)
    row["verdict_first_s"], _ = _timed_first(verdict)
    row["verdict_s"], v = best_time(verdict, repeats, warmup=False)
    row.update(verdict=v.label, spectrum_method=v.spectrum_method)
    return row


def bench(widths: Sequence[int] = WIDTHS, repeats: int = 3, dense_max: int = DENSE_MAX,
          large: int = 10_000) -> dict[str, Any]:
    """:func:`measure` per width (best of 1 from ``large`` parameters on: each call is tens of
    seconds), and the crossover (smallest smooth-part size from which Lanczos is faster than
    dense)."""
    with ForeignLoad() as foreign:
        rows = [measure(p, repeats if p * (DIM + 1) < large else 1, dense_max) for p in widths]
    faster = [r["smooth"] for r in rows if "dense_s" in r and r["lanczos_s"] < r["dense_s"]]
    return {"name": "stationary", "rows": rows, "repeats": repeats, "n": N_SAMPLES, "d": DIM,
            "crossover_parameters": min(faster) if faster else None, "large": large,
            "foreign_cpu_s": foreign.value, "machine": machine_info()}


def _s(row: dict[str, Any], key: str) -> str:
    return f"{row[key]:.3f}" if key in row else "–"


def table(r: dict[str, Any]) -> str:
    """The markdown table of :func:`bench`'s result."""
    lines = [f"End-state verdict on random networks (n = {r['n']}, d = {r['d']}, square loss, "
             f"one zero neuron), best of {r.get('repeats', 3)} (of 1 from {r.get('large', 10_000)} "
             "parameters on); \"first\" includes compilation.",
             "", "| parameters | dense s (first) | Lanczos s (first) | Lanczos steps | verdict s "
             "(first) | method | goal | met |",
             "|---:|---:|---:|---:|---:|---|---:|:---:|"]
    for row in r["rows"]:
        goal = row["parameters"] >= GOAL_PARAMETERS
        met = "yes" if row["verdict_first_s"] < GOAL_SECONDS else "no"
        lines.append(
            f"| {row['parameters']} | {_s(row, 'dense_s')} ({_s(row, 'dense_first_s')}) | "
            f"{row['lanczos_s']:.3f} ({row['lanczos_first_s']:.3f}) | "
            f"{row['lanczos_iterations']}{'' if row['lanczos_converged'] else ' (not conv.)'} | "
            f"{row['verdict_s']:.3f} ({row['verdict_first_s']:.3f}) | {row['spectrum_method']} | "
            f"{f'< {GOAL_SECONDS:g} s' if goal else ''} | {met if goal else ''} |")
    cross = r.get("crossover_parameters")
    lines += ["", "Dense vs Lanczos crossover: "
              + (f"Lanczos is faster from {cross} smooth-part parameters on."
                 if cross is not None else "Lanczos was never faster in the dense range.")]
    return with_foreign_load(lines, r["foreign_cpu_s"])


def main(argv: list[str] | None = None, out: Path | None = None) -> dict[str, Any]:
    """Run alone: print the table, write the raw numbers to ``--out``/stationary.json."""
    return run_with_options("stationary", __doc__, bench, table, {}, argv, out)


if __name__ == "__main__":
    main(out=Path(__file__).resolve().parent / "out")
