"""The ``executors`` benchmark alone (shallowflow.benchmarks.executors), raw numbers to bench/out.

    .venv/bin/python bench/bench_executors.py [--networks 100000]

or, anywhere: ``shallowflow bench executors``.
"""

import sys
from pathlib import Path

from shallowflow.benchmarks import executors

if __name__ == "__main__":
    executors.main(sys.argv[1:], out=Path(__file__).resolve().parent / "out")
