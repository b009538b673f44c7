"""Run every benchmark, print markdown tables and write bench/RESULTS.md.

    make bench                      or        .venv/bin/python bench/run_all.py

The benchmarks live in the package (shallowflow.benchmarks; ``shallowflow bench`` runs them
anywhere). Each also runs alone (bench/bench_<name>.py); raw numbers go to bench/out/<name>.json.
Timings are wall-clock best-of-k with compilation excluded, so run on an otherwise idle machine:
before each benchmark it waits (up to --max-wait seconds) until other processes keep fewer than
--max-busy cores busy, and it records that and the CPU time other processes used while the
benchmark ran next to the tables. bench/NOTES.md (analysis written by hand) is appended to
RESULTS.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from shallowflow.benchmarks import throughput, tiny
from shallowflow.benchmarks.suite import results_markdown, run_suite

BENCH_DIR = Path(__file__).resolve().parent


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
        echo=lambda text: print(f"\n{text}", flush=True))
    print(f"\ntotal benchmark time {total:.0f} s")
    if args.no_write:
        return
    (BENCH_DIR / "RESULTS.md").write_text(results_markdown(sections, total, BENCH_DIR / "NOTES.md"))
    print("wrote bench/RESULTS.md")


if __name__ == "__main__":
    main()
