"""The ``limit_process`` benchmark alone (shallowflow.benchmarks.limit_process), raw numbers to bench/out.

    .venv/bin/python bench/bench_limit_process.py

or, anywhere: ``shallowflow bench limit_process``.
"""

from pathlib import Path

from shallowflow.benchmarks import limit_process

if __name__ == "__main__":
    limit_process.main(out=Path(__file__).resolve().parent / "out")
