"""The ``tiny`` benchmark alone (shallowflow.benchmarks.tiny), raw numbers to bench/out.

    .venv/bin/python bench/bench_tiny.py [--p 20000] [--steps 20000]

or, anywhere: ``shallowflow bench tiny``.
"""

from pathlib import Path

from shallowflow.benchmarks import tiny

if __name__ == "__main__":
    tiny.main(out=Path(__file__).resolve().parent / "out")
