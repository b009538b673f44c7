"""The ``gpu`` benchmark alone (shallowflow.benchmarks.gpu), raw numbers to bench/out.

    .venv/bin/python bench/bench_gpu.py [--quick]

or, anywhere: ``shallowflow bench gpu``. On a lent GPU machine, bench/device_check.sh runs it.
"""

from pathlib import Path

from shallowflow.benchmarks import gpu

if __name__ == "__main__":
    gpu.main(out=Path(__file__).resolve().parent / "out")
