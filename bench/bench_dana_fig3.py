"""The ``dana_fig3`` benchmark alone (shallowflow.benchmarks.dana_fig3), raw numbers to bench/out.

    .venv/bin/python bench/bench_dana_fig3.py [--paper] [--runs 25]

or, anywhere: ``shallowflow bench dana_fig3``.
"""

from pathlib import Path

from shallowflow.benchmarks import dana_fig3

if __name__ == "__main__":
    dana_fig3.main(out=Path(__file__).resolve().parent / "out")
