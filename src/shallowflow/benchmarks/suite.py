"""The benchmark suite: the registry of benchmarks and the logic that runs them one after another.

Each benchmark module has ``bench(**kwargs) -> dict`` (the raw numbers, JSON-able), ``table(result)
-> str`` (markdown) and ``QUICK`` (keyword arguments of ``bench`` for a run of seconds). Timings
are wall-clock best-of-k with compilation excluded, so run on an otherwise idle machine: before
each benchmark :func:`wait_for_quiet` waits (up to ``max_wait`` seconds) until other processes
keep fewer than ``max_busy`` cores busy, and the CPU time other processes used while it ran is
printed under its table (:class:`~shallowflow.benchmarks.common.ForeignLoad`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from shallowflow.benchmarks import (
    dana_fig3,
    executors,
    gpu,
    limit_process,
    onedim,
    presets,
    reduced,
    startup,
    stationary,
    throughput,
    tiny,
    town_fig1,
)
from shallowflow.benchmarks.common import (
    ForeignLoad,
    load_average,
    machine_info,
    machine_line,
    read_json,
    write_json,
)


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
    "reduced": Benchmark("Reduced vs dense engine on orthogonal data", reduced.bench,
                         reduced.table, reduced.QUICK),
    "town_fig1": Benchmark("Town et al. Figure 1", town_fig1.bench, town_fig1.table,
                           town_fig1.QUICK),
    "limit_process": Benchmark("Algorithm 1 (limit process)", limit_process.bench,
                               limit_process.table, limit_process.QUICK),
    "dana_fig3": Benchmark("DPB Figure 3 protocol and re-batching", dana_fig3.bench,
                           dana_fig3.table, dana_fig3.QUICK),
    "presets": Benchmark("Reproduction presets", presets.bench, presets.table, presets.QUICK),
    "onedim": Benchmark("One-dimensional inputs with a bias: bucketed vs dense step",
                        onedim.bench, onedim.table, onedim.QUICK),
    "stationary": Benchmark("End-state verdict (stationary points)", stationary.bench,
                            stationary.table, stationary.QUICK),
    "startup": Benchmark("Start-up and the compilation cache", startup.bench, startup.table,
                         startup.QUICK),
    "executors": Benchmark("Many small networks: in-process and Dask workers", executors.bench,
                           executors.table, executors.QUICK),
    "gpu": Benchmark("The engine on a GPU", gpu.bench, gpu.table, gpu.QUICK),
}
"""The suite, in the order it runs (and RESULTS.md lists it)."""

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


def check_names(names: Sequence[str]) -> list[str]:
    """``names`` without repeats, in their order; ValueError naming the allowed names if one is
    not a benchmark."""
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise ValueError(f"unknown benchmark {', '.join(map(repr, unknown))}: choose from "
                         f"{', '.join(BENCHMARKS)}")
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
            quick: bool = False, options: Mapping[str, Any] | None = None) -> Section:
    """Wait for a quiet machine, run benchmark ``name`` (with its quick keyword arguments if
    ``quick``, then ``options``), write its raw numbers to ``out/<name>.json``."""
    bm = BENCHMARKS[check_names([name])[0]]
    kwargs = {**(bm.quick if quick else {}), **(options or {})}
    before = wait_for_quiet(max_busy, max_wait)
    result = bm.bench(**kwargs)  # each measures the foreign load itself (ForeignLoad)
    write_json(out, name, result)
    return Section(name, bm.title, bm.table(result), before)


def earlier(name: str, out: Path) -> Section | None:
    """The section of benchmark ``name`` from its last raw numbers in ``out`` (None if none)."""
    result = read_json(out, name)
    if result is None:
        return None
    bm = BENCHMARKS[name]
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime((out / f"{name}.json").stat().st_mtime))
    md = bm.table(result) + f"\n\n(Raw numbers of an earlier run, {stamp}.)"
    return Section(name, bm.title, md, EARLIER)


def run_suite(names: Sequence[str] | None, out: Path, max_busy: float = 0.3,
              max_wait: float = 120.0, quick: bool = False,
              options: Mapping[str, Mapping[str, Any]] | None = None, keep_earlier: bool = False,
              echo: Callable[[str], None] | None = None) -> tuple[list[Section], float]:
    """Run the benchmarks ``names`` (None: all, in the suite's order) and return their sections
    and the total wall time. ``options``: keyword arguments of ``bench`` per name. With
    ``keep_earlier`` the other benchmarks of the suite come from their last raw numbers in
    ``out`` (run if there are none), so the result covers the whole suite. ``echo`` gets each
    section's text as soon as it is ready."""
    chosen = check_names(names) if names else list(BENCHMARKS)
    order = list(BENCHMARKS) if keep_earlier else chosen
    sections: list[Section] = []
    t0 = time.perf_counter()
    for name in order:
        section = earlier(name, out) if name not in chosen else None
        if section is None:
            section = run_one(name, out, max_busy, max_wait, quick, (options or {}).get(name))
        sections.append(section)
        if echo is not None:
            echo(section.text())
    return sections, time.perf_counter() - t0


def results_markdown(sections: Sequence[Section], total: float, notes: Path | None = None,
                     command: str = ".venv/bin/python bench/run_all.py") -> str:
    """bench/RESULTS.md: how to reproduce, the machine, every section, then ``notes`` (the
    hand-written analysis, bench/NOTES.md) if that file exists."""
    info = machine_info()
    alone = ", ".join(f"`.venv/bin/python bench/bench_{name}.py`" for name in BENCHMARKS)
    lines = [
        "# shallowflow benchmarks",
        "",
        "Reproduce with `make bench`, `.venv/bin/python bench/run_all.py` or `shallowflow bench`. "
        f"Each benchmark also runs alone (`shallowflow bench NAME`): {alone}; "
        "raw numbers go to `bench/out/*.json`. The PyTorch baseline needs the optional `bench` "
        "extra (`.venv/bin/pip install torch==2.13.0`, or `pip install -e .[bench]`); without "
        "torch it is skipped.",
        "",
        f"- Command: `{command}`",
        f"- Machine: {machine_line(info)}",
        f"- Date: {info['date']}",
        f"- XLA_FLAGS: {os.environ.get('XLA_FLAGS') or '(unset)'}",
        f"- Total benchmark time: {total:.0f} s",
        "- Timings: wall clock (time.perf_counter), best of k after a call that compiles. Other "
        "processes sharing the cores inflate the times: below each table are the CPU time other "
        "processes used while it ran, and how busy the machine was just before it (the load "
        "average also counts the benchmarks' own, preceding work).",
        "",
    ]
    for s in sections:
        lines += [f"## {s.title}", "", s.markdown, "", f"Just before: {s.before}.", ""]
    if notes is not None and notes.is_file():
        lines += [notes.read_text().strip(), ""]
    return "\n".join(lines)
