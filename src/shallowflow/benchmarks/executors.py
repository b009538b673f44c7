"""Many small networks through the executors: a sweep of ``networks`` networks (n = 64, d = 16,
p = 16, GD, ``steps`` steps, several widths so that there are many batches) run in-process, on a
local Dask cluster of 1 worker and of 2 workers (each pinned to its own core).

Reported per executor: wall time of ``run_sweep`` (a fresh output folder; compilation included),
networks per second, the driver's peak resident memory growth, the output size, and the time of a
``--resume`` that finds every batch done. The speed-up of 2 workers over 1 is the scaling on this
machine (goal >= 1.8x on 2 cores: each worker's batches run on one core). Results are checked
equal across executors.

    shallowflow bench executors      or      python -m shallowflow.benchmarks.executors
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from shallowflow.benchmarks.common import (
    ForeignLoad,
    machine_info,
    run_with_options,
    with_foreign_load,
)

NETWORKS, STEPS, WIDTHS, MAX_BATCH = 100_000, 2_000, (14, 15, 16, 17), 2_500
QUICK = {"networks": 400, "steps": 200, "max_batch": 50}
"""Keyword arguments of :func:`bench` for a quick run (seconds; not comparable numbers)."""
GOAL_SCALING = 1.8


def sweep_spec(networks: int, steps: int, max_batch: int) -> dict[str, Any]:
    """The sweep: ``networks`` runs spread over the widths ``WIDTHS`` (n = 64, d = 16 sphere
    data, DPB init, GD lr 1, records at the start and the end)."""
    runs = max(1, networks // len(WIDTHS))
    return {
        "name": "many", "max_batch": max_batch,
        "base": {"runs": runs, "data": {"kind": "sphere", "n": 64, "d": 16},
                 "model": {"width": 16, "kappa": "1/p"}, "init": {"scheme": "dpb"},
                 "train": {"lr": 1.0, "steps": steps, "time_scale": "width"},
                 "record": {"points": 2, "probes": ["loss"]}},
        "grid": {"model.width": list(WIDTHS)},
    }


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _one(spec: dict[str, Any], folder: Path, executor: str, workers: int | None) -> dict[str, Any]:
    from shallowflow.sweep import run_sweep, sweep_from_mapping

    sw = sweep_from_mapping(spec)
    before = _rss_mb()
    t0 = time.perf_counter()
    table = run_sweep(sw, folder, executor=executor, workers=workers, show_progress=False)
    seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    run_sweep(sw, folder, resume=True, executor=executor, workers=workers, show_progress=False)
    resume = time.perf_counter() - t1
    return {"seconds": seconds, "networks": len(table), "networks_per_s": len(table) / seconds,
            "resume_s": resume, "driver_peak_rss_growth_mb": _rss_mb() - before,
            "output_mb": _size(folder) / 2**20, "final_loss": table["loss_final"].to_numpy()
            if "loss_final" in table else None}


def bench(networks: int = NETWORKS, steps: int = STEPS, max_batch: int = MAX_BATCH
          ) -> dict[str, Any]:
    """The sweep in-process, on 1 Dask worker and on 2 (see the module docstring)."""
    spec = sweep_spec(networks, steps, max_batch)
    out: dict[str, Any] = {"name": "executors",
                           "config": {"networks": networks, "steps": steps, "max_batch": max_batch,
                                      "widths": list(WIDTHS), "n": 64, "d": 16,
                                      "dtype": "float64"}}
    with tempfile.TemporaryDirectory(prefix="shallowflow-executors-") as tmp, \
            ForeignLoad() as load:
        for key, executor, workers in (("local", "local", None), ("dask_1", "dask", 1),
                                       ("dask_2", "dask", 2)):
            out[key] = _one(spec, Path(tmp) / key, executor, workers)
    same = all(np.array_equal(out["local"]["final_loss"], out[k]["final_loss"])
               for k in ("dask_1", "dask_2")) if out["local"]["final_loss"] is not None else None
    for key in ("local", "dask_1", "dask_2"):
        out[key].pop("final_loss")
    out.update(scaling=out["dask_1"]["seconds"] / out["dask_2"]["seconds"], equal_results=same,
               goal_scaling=GOAL_SCALING, foreign_load=load.value, machine=machine_info())
    return out


def table(r: dict[str, Any]) -> str:
    """The markdown table of :func:`bench`'s result."""
    c = r["config"]
    lines = [
        f"{c['networks']} networks (n = {c['n']}, d = {c['d']}, widths {c['widths']}), "
        f"{c['steps']} GD steps, batches of at most {c['max_batch']}, {c['dtype']}.",
        "",
        "| executor | wall (s) | networks/s | resume, all done (s) | driver RSS growth (MB) "
        "| output (MB) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, label in (("local", "in-process"), ("dask_1", "Dask, 1 worker"),
                       ("dask_2", "Dask, 2 workers")):
        e = r[key]
        lines.append(f"| {label} | {e['seconds']:.1f} | {e['networks_per_s']:.0f} | "
                     f"{e['resume_s']:.2f} | {e['driver_peak_rss_growth_mb']:.0f} | "
                     f"{e['output_mb']:.1f} |")
    met = "yes" if r["scaling"] >= r["goal_scaling"] else "no"
    lines += ["", f"Scaling, 2 workers over 1: **{r['scaling']:.2f}x** (goal >= "
              f"{r['goal_scaling']:g}x: {met}); final losses equal across executors: "
              f"{r['equal_results']}."]
    return with_foreign_load(lines, r["foreign_load"])


def main(argv: list[str] | None = None, out: Path | None = None) -> dict[str, Any]:
    """Run alone: print the table, write the raw numbers to ``--out``/executors.json."""
    options = {"networks": NETWORKS, "steps": STEPS, "max_batch": MAX_BATCH}
    return run_with_options("executors", __doc__, bench, table, options, argv, out)


if __name__ == "__main__":
    main()
