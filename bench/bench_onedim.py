"""The ``onedim`` benchmark alone (shallowflow.benchmarks.onedim), raw numbers to bench/out.

    .venv/bin/python bench/bench_onedim.py

or, anywhere: ``shallowflow bench onedim``.
"""

from pathlib import Path

from shallowflow.benchmarks import onedim

if __name__ == "__main__":
    onedim.main(out=Path(__file__).resolve().parent / "out")
