"""The ``reduced`` benchmark alone (shallowflow.benchmarks.reduced), raw numbers to bench/out.

    .venv/bin/python bench/bench_reduced.py [--steps 1000] [--dense-steps 6] [--agree-steps 10]

or, anywhere: ``shallowflow bench reduced``.
"""

from pathlib import Path

from shallowflow.benchmarks import reduced

if __name__ == "__main__":
    reduced.main(out=Path(__file__).resolve().parent / "out")
