"""The ``presets`` benchmark alone (shallowflow.benchmarks.presets), raw numbers to bench/out.

    .venv/bin/python bench/bench_presets.py [NAME:PRESET ...]

or, anywhere: ``shallowflow bench presets``.
"""

from pathlib import Path

from shallowflow.benchmarks import presets

if __name__ == "__main__":
    presets.main(out=Path(__file__).resolve().parent / "out")
