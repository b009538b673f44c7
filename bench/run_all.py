"""Run every benchmark, print markdown tables and write bench/RESULTS.md.

    make bench                      or        .venv/bin/python bench/run_all.py

The suite is bench/dev_suite.py: the package's benchmarks (shallowflow.benchmarks, which
``shallowflow bench`` runs anywhere) and the development ones of this folder. Each also runs
alone (bench/bench_<name>.py); raw numbers go to bench/out/<name>.json.
Timings are wall-clock best-of-k with compilation excluded, so run on an otherwise idle machine:
before each benchmark it waits (up to --max-wait seconds) until other processes keep fewer than
--max-busy cores busy, and it records that and the CPU time other processes used while the
benchmark ran next to the tables. bench/NOTES.md (analysis written by hand) is appended to
RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

import dev_suite
from shallowflow.benchmarks import suite, throughput, tiny
from shallowflow.benchmarks.common import machine_info, machine_line
from shallowflow.benchmarks.suite import Section, run_suite

BENCH_DIR = Path(__file__).resolve().parent


def results_markdown(sections: Sequence[Section], total: float, notes: Path | None = None,
                     command: str = ".venv/bin/python bench/run_all.py") -> str:
    """bench/RESULTS.md: how to reproduce, the machine, every section, then ``notes`` (the
    hand-written analysis, bench/NOTES.md) if that file exists."""
    info = machine_info()
    alone = ", ".join(f"`.venv/bin/python bench/bench_{name}.py`" for name in dev_suite.BENCHMARKS)
    lines = [
        "# shallowflow benchmarks",
        "",
        "Reproduce with `make bench` or `.venv/bin/python bench/run_all.py`. Each benchmark also "
        f"runs alone: {alone}; raw numbers go to `bench/out/*.json`. `shallowflow bench` runs the "
        f"package's ({', '.join(suite.BENCHMARKS)}) on any machine. The PyTorch baseline needs "
        "the optional `bench` extra (`.venv/bin/pip install torch==2.13.0`, or "
        "`pip install -e .[bench]`); without torch it is skipped.",
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


def main(argv: list[str] | None = None) -> None:
    """Parse the options, run the suite, write bench/RESULTS.md (unless --no-write)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=throughput.STEPS,
                    help="GD steps of the throughput benchmark")
    ap.add_argument("--tiny-steps", type=int, default=tiny.STEPS,
                    help="GD steps of the tiny run")
    ap.add_argument("--max-busy", type=float, default=0.3,
                    help="first wait until other processes keep fewer cores than this busy")
    ap.add_argument("--max-wait", type=float, default=120.0, help="seconds to wait at most")
    ap.add_argument("--no-write", action="store_true", help="do not rewrite bench/RESULTS.md")
    ap.add_argument("--only", help="comma-separated benchmark names to run; the others' tables "
                    "come from their last raw numbers in bench/out/<name>.json (marked as such)")
    args = ap.parse_args(argv)
    options = {"throughput": {"steps": args.steps}, "tiny": {"steps": args.tiny_steps}}
    sections, total = run_suite(
        None if args.only is None else args.only.split(","), BENCH_DIR / "out", args.max_busy,
        args.max_wait, options=options, keep_earlier=True,
        echo=lambda text: print(f"\n{text}", flush=True), benchmarks=dev_suite.BENCHMARKS)
    print(f"\ntotal benchmark time {total:.0f} s")
    if args.no_write:
        return
    (BENCH_DIR / "RESULTS.md").write_text(results_markdown(sections, total, BENCH_DIR / "NOTES.md"))
    print("wrote bench/RESULTS.md")


if __name__ == "__main__":
    main()
