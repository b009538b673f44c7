"""The suite ``shallowflow bench`` runs: the registry of benchmarks and the logic that runs them.

Each benchmark module has ``bench(**kwargs) -> dict`` (the raw numbers, JSON-able), ``table(result)
-> str`` (markdown) and ``QUICK`` (keyword arguments of ``bench`` for a run of seconds). Timings
are wall-clock best-of-k with compilation excluded, so run on an otherwise idle machine: before
each benchmark :func:`wait_for_quiet` waits (up to ``max_wait`` seconds) until other processes
keep fewer than ``max_busy`` cores busy, and the CPU time other processes used while it ran is
printed under its table (:class:`~shallowflow.benchmarks.common.ForeignLoad`).

The package holds the machine measurement (:data:`BENCHMARKS`); the development benchmarks
(:data:`DEVELOPMENT`) live in the repository's bench/, whose suite passes its own registry as
``benchmarks`` to the functions here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from shallowflow.benchmarks import throughput, tiny
from shallowflow.benchmarks.common import ForeignLoad, load_average, read_json, write_json
from shallowflow.errors import shown


class Benchmark(NamedTuple):
    """One benchmark: its title, ``bench(**kwargs) -> result``, ``table(result) -> markdown`` and
    the keyword arguments of a quick run."""

    title: str
    bench: Callable[..., dict[str, Any]]
    table: Callable[[dict[str, Any]], str]
    quick: Mapping[str, Any]


BENCHMARKS: dict[str, Benchmark] = {
    "throughput": Benchmark("Batched throughput", throughput.bench, throughput.table,
                            throughput.QUICK),
    "tiny": Benchmark("Long tiny run vs PyTorch", tiny.bench, tiny.table, tiny.QUICK),
}
"""What ``shallowflow bench`` runs to measure a machine, in this order: the engine's throughput
against numpy's GEMM rates, and a long tiny run against plain PyTorch."""

DEVELOPMENT = ("reduced", "town_fig1", "limit_process", "dana_fig3", "presets", "onedim",
               "stationary", "startup", "executors", "gpu", "population")
"""The development benchmarks, not in the package: each runs as bench/bench_NAME.py of the
repository (all of them: bench/run_all.py)."""

EARLIER = "earlier run"
"""``Section.before`` of a section built from earlier raw numbers."""


@dataclass(frozen=True)
class Section:
    """One benchmark's markdown (table and notes) and how busy the machine was just before."""

    name: str
    title: str
    markdown: str
    before: str

    def text(self) -> str:
        """The section as printed while the suite runs."""
        tail = "" if self.before == EARLIER else f"\n\nJust before: {self.before}."
        return f"## {self.title}\n\n{self.markdown}{tail}"


def check_names(names: Sequence[str],
                benchmarks: Mapping[str, Benchmark] = BENCHMARKS) -> list[str]:
    """``names`` without repeats, in their order; ValueError if one is not in ``benchmarks``:
    naming the allowed names, or, for a development benchmark, the script that runs it."""
    unknown = [n for n in names if n not in benchmarks and n not in DEVELOPMENT]
    if unknown:
        raise ValueError(f"unknown benchmark {', '.join(map(shown, unknown))}: choose from "
                         f"{', '.join(benchmarks)}")
    moved = [n for n in names if n not in benchmarks]
    if moved:
        raise ValueError("; ".join(f"{n} is a development benchmark: run bench/bench_{n}.py in "
                                   "shallowflow's repository" for n in dict.fromkeys(moved)))
    return list(dict.fromkeys(names))


def _load() -> str:
    la = load_average()
    return "n/a" if la is None else f"{la[0]:.2f}"


def wait_for_quiet(max_busy: float, max_wait_s: float, window_s: float = 3.0) -> str:
    """Wait (up to ``max_wait_s``) until other processes keep fewer than ``max_busy`` cores busy
    over a ``window_s`` window; return a description of the last window (``max_wait_s <= 0``:
    no wait, nothing measured)."""
    if max_wait_s <= 0:
        return f"not measured (no wait), 1-minute load average {_load()}"
    t0 = time.monotonic()
    while True:
        with ForeignLoad() as foreign:
            time.sleep(window_s)
        busy = foreign.value
        if busy is None or busy < max_busy or time.monotonic() - t0 >= max_wait_s:
            shown = "n/a" if busy is None else f"{busy:.2f}"
            return f"{shown} cores busy with other processes, 1-minute load average {_load()}"


def run_one(name: str, out: Path, max_busy: float = 0.3, max_wait: float = 120.0,
            quick: bool = False, options: Mapping[str, Any] | None = None,
            benchmarks: Mapping[str, Benchmark] = BENCHMARKS) -> Section:
    """Wait for a quiet machine, run benchmark ``name`` of ``benchmarks`` (with its quick keyword
    arguments if ``quick``, then ``options``), write its raw numbers to ``out/<name>.json``."""
    bm = benchmarks[check_names([name], benchmarks)[0]]
    kwargs = {**(bm.quick if quick else {}), **(options or {})}
    before = wait_for_quiet(max_busy, max_wait)
    result = bm.bench(**kwargs)  # each measures the foreign load itself (ForeignLoad)
    write_json(out, name, result)
    return Section(name, bm.title, bm.table(result), before)


def earlier(name: str, out: Path,
            benchmarks: Mapping[str, Benchmark] = BENCHMARKS) -> Section | None:
    """The section of benchmark ``name`` of ``benchmarks`` from its last raw numbers in ``out``
    (None if none)."""
    result = read_json(out, name)
    if result is None:
        return None
    bm = benchmarks[name]
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime((out / f"{name}.json").stat().st_mtime))
    md = bm.table(result) + f"\n\n(Raw numbers of an earlier run, {stamp}.)"
    return Section(name, bm.title, md, EARLIER)


def run_suite(names: Sequence[str] | None, out: Path, max_busy: float = 0.3,
              max_wait: float = 120.0, quick: bool = False,
              options: Mapping[str, Mapping[str, Any]] | None = None, keep_earlier: bool = False,
              echo: Callable[[str], None] | None = None,
              benchmarks: Mapping[str, Benchmark] = BENCHMARKS) -> tuple[list[Section], float]:
    """Run the benchmarks ``names`` of ``benchmarks`` (None: all, in its order) and return their
    sections and the total wall time. ``options``: keyword arguments of ``bench`` per name. With
    ``keep_earlier`` the other benchmarks of the suite come from their last raw numbers in
    ``out`` (run if there are none), so the result covers the whole suite. ``echo`` gets each
    section's text as soon as it is ready."""
    chosen = check_names(names, benchmarks) if names else list(benchmarks)
    order = list(benchmarks) if keep_earlier else chosen
    sections: list[Section] = []
    t0 = time.perf_counter()
    for name in order:
        section = earlier(name, out, benchmarks) if name not in chosen else None
        if section is None:
            section = run_one(name, out, max_busy, max_wait, quick, (options or {}).get(name),
                              benchmarks)
        sections.append(section)
        if echo is not None:
            echo(section.text())
    return sections, time.perf_counter() - t0

