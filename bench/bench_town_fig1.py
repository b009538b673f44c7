"""The ``town_fig1`` benchmark alone (shallowflow.benchmarks.town_fig1), raw numbers to bench/out.

    .venv/bin/python bench/bench_town_fig1.py [--budget 5000000]

or, anywhere: ``shallowflow bench town_fig1``.
"""

from pathlib import Path

from shallowflow.benchmarks import town_fig1

if __name__ == "__main__":
    town_fig1.main(out=Path(__file__).resolve().parent / "out")
