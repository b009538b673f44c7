"""The ``startup`` benchmark alone (shallowflow.benchmarks.startup), raw numbers to bench/out.

    .venv/bin/python bench/bench_startup.py

or, anywhere: ``shallowflow bench startup``.
"""

from pathlib import Path

from shallowflow.benchmarks import startup

if __name__ == "__main__":
    startup.main(out=Path(__file__).resolve().parent / "out")
