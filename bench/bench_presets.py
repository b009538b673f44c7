"""Wall time of reproduction presets on this machine (`shallowflow reproduce NAME --preset P`),
compilation included, each in this process one after the other. Default: the town-fig1 paper
preset (Town et al. Fig. 1: m = 6, n = d = 64, lambda from 1e-5 to e^-1000, GD lr = 0.01).

    .venv/bin/python bench/bench_presets.py [NAME:PRESET ...]

Raw numbers go to bench/out/presets.json.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shallowflow.benchmarks.common import (
    ForeignLoad,
    finish,
    machine_info,
    parser,
    with_foreign_load,
)

DEFAULT = ("town-fig1:paper",)
QUICK = {"items": ("town-fig1:quick",)}
"""Keyword arguments of :func:`bench` for a quick run (seconds; not comparable numbers)."""


def bench(items: Sequence[str] = DEFAULT) -> dict[str, Any]:
    """Run every ``NAME:PRESET`` of ``items`` (preset ``quick`` if left out) into a temporary
    folder; wall time and the claims' verdicts of each."""
    from shallowflow.reproductions import run_reproduction

    rows = []
    with ForeignLoad() as foreign, tempfile.TemporaryDirectory() as tmp:
        for item in items:
            name, _, preset = item.partition(":")
            t0 = time.perf_counter()
            _, claims = run_reproduction(name, Path(tmp) / name, preset or "quick",
                                         show_progress=False)
            rows.append({"name": name, "preset": preset or "quick",
                         "seconds": time.perf_counter() - t0,
                         "verdicts": [c.verdict for c in claims]})
    return {"name": "presets", "rows": rows, "foreign_cpu_s": foreign.value,
            "machine": machine_info()}


def table(r: dict[str, Any]) -> str:
    """The markdown table of :func:`bench`'s result (verdict counts per preset)."""
    lines = ["Reproduction presets, wall time including compilation (`shallowflow reproduce NAME "
             "--preset P`).", "", "| reproduction | preset | seconds | verdicts |",
             "|---|---|---:|---|"]
    for row in r["rows"]:
        verdicts = ", ".join(f"{v} x{row['verdicts'].count(v)}" for v in dict.fromkeys(row["verdicts"]))
        lines.append(f"| {row['name']} | {row['preset']} | {row['seconds']:.1f} | {verdicts} |")
    return with_foreign_load(lines, r["foreign_cpu_s"])


def main(argv: list[str] | None = None, out: Path | None = None) -> dict[str, Any]:
    """Run alone: print the table, write the raw numbers to ``--out``/presets.json."""
    ap = parser(__doc__, out)
    ap.add_argument("items", nargs="*", default=list(DEFAULT), metavar="NAME:PRESET")
    args = ap.parse_args(argv)
    r = bench(tuple(args.items))
    finish("presets", r, table, args.out)
    return r


if __name__ == "__main__":
    main(out=Path(__file__).resolve().parent / "out")
