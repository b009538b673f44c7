"""Run every benchmark, print markdown tables and write bench/RESULTS.md.

    make bench                      or        .venv/bin/python bench/run_all.py

Each benchmark also runs alone (bench/bench_throughput.py, bench/bench_tiny.py,
bench/bench_reduced.py, bench/bench_town_fig1.py, bench/bench_limit_process.py,
bench/bench_dana_fig3.py, bench/bench_presets.py) and writes its raw
numbers to bench/out/<name>.json. Timings are wall-clock best-of-k with compilation excluded,
so run on an otherwise idle machine: before each benchmark it waits (up to --max-wait seconds)
until other processes keep fewer than --max-busy cores busy, and it records that and the CPU time
other processes used while the benchmark ran next to the tables. bench/NOTES.md (analysis written by
hand) is appended to RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_dana_fig3
import bench_limit_process
import bench_presets
import bench_reduced
import bench_throughput
import bench_tiny
import bench_town_fig1
from _common import (
    BENCH_DIR,
    ForeignLoad,
    foreign_load_line,
    load_average,
    machine_info,
    machine_line,
    write_json,
)


def _load() -> str:
    la = load_average()
    return "n/a" if la is None else f"{la[0]:.2f}"


def wait_for_quiet(max_busy: float, max_wait_s: float, window_s: float = 3.0) -> str:
    """Wait (up to ``max_wait_s``) until other processes keep fewer than ``max_busy`` cores busy
    over a ``window_s`` window; return a description of the last window."""
    t0 = time.monotonic()
    while True:
        with ForeignLoad() as foreign:
            time.sleep(window_s)
        busy = foreign.value
        if busy is None or busy < max_busy or time.monotonic() - t0 >= max_wait_s:
            shown = "n/a" if busy is None else f"{busy:.2f}"
            return f"{shown} cores busy with other processes, 1-minute load average {_load()}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=bench_throughput.STEPS,
                    help="GD steps of the throughput benchmark")
    ap.add_argument("--tiny-steps", type=int, default=bench_tiny.STEPS,
                    help="GD steps of the tiny run")
    ap.add_argument("--max-busy", type=float, default=0.3,
                    help="first wait until other processes keep fewer cores than this busy")
    ap.add_argument("--max-wait", type=float, default=120.0, help="seconds to wait at most")
    ap.add_argument("--no-write", action="store_true", help="do not rewrite bench/RESULTS.md")
    ap.add_argument("--only", help="comma-separated benchmark names to run; the others' tables "
                    "come from their last raw numbers in bench/out/<name>.json (marked as such)")
    args = ap.parse_args(argv)
    only = None if args.only is None else set(args.only.split(","))

    runs: list[tuple[str, str, Callable[[], Any], Callable[[Any], str]]] = [
        ("Batched throughput", "throughput", lambda: bench_throughput.bench(args.steps),
         bench_throughput.table),
        ("Long tiny run vs PyTorch", "tiny", lambda: bench_tiny.bench(steps=args.tiny_steps),
         bench_tiny.table),
        ("Reduced vs dense engine on orthogonal data", "reduced", bench_reduced.bench,
         bench_reduced.table),
        ("Town et al. Figure 1", "town_fig1", bench_town_fig1.bench, bench_town_fig1.table),
        ("Algorithm 1 (limit process)", "limit_process", bench_limit_process.bench,
         bench_limit_process.table),
        ("DPB Figure 3 protocol and re-batching", "dana_fig3", bench_dana_fig3.bench,
         bench_dana_fig3.table),
        ("Reproduction presets", "presets", bench_presets.bench, bench_presets.table),
    ]
    sections: list[tuple[str, str, str]] = []
    t_start = time.perf_counter()
    for title, name, fn, table in runs:
        earlier = BENCH_DIR / "out" / f"{name}.json"
        if only is not None and name not in only and earlier.is_file():
            result = json.loads(earlier.read_text())
            result = result["rows"] if set(result) == {"rows"} else result
            stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(earlier.stat().st_mtime))
            md = table(result) + f"\n\n(Raw numbers of an earlier run, {stamp}.)"
            print(f"\n## {title}\n\n{md}", flush=True)
            sections.append((title, md, "earlier run"))
            continue
        before = wait_for_quiet(args.max_busy, args.max_wait)
        with ForeignLoad() as foreign:
            result = fn()
        write_json(name, result if isinstance(result, dict) else {"rows": result})
        md = table(result)
        if "CPU time used by other processes" not in md:
            md += "\n\n" + foreign_load_line(foreign.value)
        print(f"\n## {title}\n\n{md}\n\nJust before: {before}.", flush=True)
        sections.append((title, md, before))
    total = time.perf_counter() - t_start
    print(f"\ntotal benchmark time {total:.0f} s")
    if args.no_write:
        return
    info = machine_info()
    command = ".venv/bin/python bench/run_all.py"
    lines = [
        "# shallowflow benchmarks",
        "",
        "Reproduce with `make bench` or `.venv/bin/python bench/run_all.py`. "
        "Each benchmark also runs alone: "
        "`.venv/bin/python bench/bench_throughput.py`, `.venv/bin/python bench/bench_tiny.py`, "
        "`.venv/bin/python bench/bench_reduced.py`, `.venv/bin/python bench/bench_town_fig1.py`, "
        "`.venv/bin/python bench/bench_limit_process.py`, `.venv/bin/python bench/bench_dana_fig3.py`, "
        "`.venv/bin/python bench/bench_presets.py`; "
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
    for title, md, load in sections:
        lines += [f"## {title}", "", md, "", f"Just before: {load}.", ""]
    notes = BENCH_DIR / "NOTES.md"  # hand-written analysis, kept across re-runs
    if notes.is_file():
        lines += [notes.read_text().strip(), ""]
    (BENCH_DIR / "RESULTS.md").write_text("\n".join(lines))
    print("wrote bench/RESULTS.md")


if __name__ == "__main__":
    main()
