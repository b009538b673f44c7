"""``shallowflow bench [NAME ...]``: run the benchmark suite (or some of it) on this machine.

The command line calls :func:`bench`; it prints the markdown table of each benchmark with its
ratios (the engine's GFLOP/s against numpy's rate on the same GEMMs, the speed-up against a plain
PyTorch loop where torch is installed, a note where it is not) and writes the raw numbers as JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from shallowflow.benchmarks.common import DEFAULT_OUT, machine_info, machine_line
from shallowflow.benchmarks.suite import BENCHMARKS, Benchmark, check_names, run_suite


def listing(names: Sequence[str] | None = None,
            benchmarks: Mapping[str, Benchmark] = BENCHMARKS) -> str:
    """One line per benchmark of ``benchmarks`` (all, or ``names``): its name and title."""
    chosen = check_names(names, benchmarks) if names else list(benchmarks)
    width = max(map(len, chosen))
    return "\n".join(f"{name:<{width}}  {benchmarks[name].title}" for name in chosen)


def _header(quick: bool) -> str:
    info = machine_info()
    lines = ["# shallowflow benchmarks", "", f"- Machine: {machine_line(info)}",
             f"- Date: {info['date']}"]
    if not info["torch"]:
        lines.append("- PyTorch: not installed, its baseline is skipped (`pip install "
                     "shallowflow[bench]` adds it)")
    if quick:
        lines.append("- Quick mode: small sizes and few steps; the numbers are not comparable "
                     "with full runs")
    return "\n".join(lines)


def bench(names: Sequence[str] | None = None, list_only: bool = False, out: Path | None = None,
          max_wait: float = 120.0, quick: bool = False, max_busy: float = 0.3,
          echo: Callable[[str], None] | None = None,
          benchmarks: Mapping[str, Benchmark] = BENCHMARKS) -> str:
    """Run benchmarks and return the markdown text (header, one section per benchmark, footer).

    names: benchmarks to run, in this order (None or empty: the whole suite); an unknown name
        raises ValueError naming the allowed ones (a development benchmark: the script that
        runs it), before anything runs.
    list_only: run nothing; return one line per benchmark (name and title).
    out: folder for the raw numbers, ``<out>/<name>.json`` (default ``./bench-results``).
    max_wait: seconds to wait at most, before each benchmark, for other processes to keep fewer
        than ``max_busy`` cores busy (0: start at once).
    quick: small sizes and few steps (seconds per benchmark; numbers not comparable).
    echo: called with each piece of the text as soon as it is ready (the suite takes minutes;
        pieces of a run end with an empty line); the return value is all of it.
    benchmarks: the suite (default: the package's; bench/dev_suite.py passes all of them).
    """
    if list_only:
        text = listing(names, benchmarks)
        if echo is not None:
            echo(text)
        return text
    chosen = check_names(names, benchmarks) if names else None
    folder = DEFAULT_OUT if out is None else Path(out)
    pieces: list[str] = []

    def section(text: str) -> None:
        pieces.append(text)
        if echo is not None:
            echo(text + "\n")

    section(_header(quick))
    _, total = run_suite(chosen, folder, max_busy, max_wait, quick, echo=section,
                         benchmarks=benchmarks)
    section(f"Total benchmark time {total:.0f} s; raw numbers in {folder}/.")
    return "\n\n".join(pieces)
