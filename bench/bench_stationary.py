"""The ``stationary`` benchmark alone (shallowflow.benchmarks.stationary), raw numbers to bench/out.

    .venv/bin/python bench/bench_stationary.py

or, anywhere: ``shallowflow bench stationary``.
"""

from pathlib import Path

from shallowflow.benchmarks import stationary

if __name__ == "__main__":
    stationary.main(out=Path(__file__).resolve().parent / "out")
