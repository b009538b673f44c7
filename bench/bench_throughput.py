"""The ``throughput`` benchmark alone (shallowflow.benchmarks.throughput), raw numbers to bench/out.

    .venv/bin/python bench/bench_throughput.py [--steps 300] [--repeats 2]

or, anywhere: ``shallowflow bench throughput``.
"""

from pathlib import Path

from shallowflow.benchmarks import throughput

if __name__ == "__main__":
    throughput.main(out=Path(__file__).resolve().parent / "out")
