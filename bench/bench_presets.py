"""Wall time of reproduction presets on this machine (`shallowflow reproduce NAME --preset P`),
compilation included, each in this process one after the other. Default: the town-fig1 paper
preset (Town et al. Fig. 1: m = 6, n = d = 64, lambda from 1e-5 to e^-1000, GD lr = 0.01).

    .venv/bin/python bench/bench_presets.py [NAME:PRESET ...]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ForeignLoad, foreign_load_line, machine_info, write_json

DEFAULT = ("town-fig1:paper",)


def bench(items: tuple[str, ...] = DEFAULT) -> dict[str, Any]:
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
    lines = ["Reproduction presets, wall time including compilation (`shallowflow reproduce NAME "
             "--preset P`).", "", "| reproduction | preset | seconds | verdicts |",
             "|---|---|---:|---|"]
    for row in r["rows"]:
        verdicts = ", ".join(f"{v} x{row['verdicts'].count(v)}" for v in dict.fromkeys(row["verdicts"]))
        lines.append(f"| {row['name']} | {row['preset']} | {row['seconds']:.1f} | {verdicts} |")
    lines += ["", foreign_load_line(r["foreign_cpu_s"])]
    return "\n".join(lines)


if __name__ == "__main__":
    result = bench(tuple(sys.argv[1:]) or DEFAULT)
    write_json("presets", result)
    print(table(result))
