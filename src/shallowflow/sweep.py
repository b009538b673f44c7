"""Sweeps: grids of experiments, planned into batches of equal shapes, run resumably.

A sweep file (TOML/YAML) names a base experiment and a grid of dotted keys::

    name = "width-sweep"
    base = "base.toml"          # relative to the sweep file, or an inline [base] table
    max_batch = 256             # at most this many runs per compiled batch
    [grid]
    "model.width" = [10, 20, 40]
    "init.scale"  = [1e-3, 1e-2]

Every grid point is validated before any work. Runs whose specs differ only in batchable fields
(seed, init scale, stop_loss, data seed) share one compiled, vmapped batch. Each finished batch is
written atomically to ``batches/<id>.nc``; ``resume`` skips batches already on disk, so a sweep
killed at any moment and resumed yields exactly the results of an uninterrupted one. The summary
``summary.parquet`` (one row per run) is rebuilt from the batch files, never appended to.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from shallowflow import training
from shallowflow.config import (
    ConfigError,
    Experiment,
    apply_overrides,
    dump_toml,
    experiment_from_mapping,
    read_mapping,
)
from shallowflow.executors import StepCallback, make_executor
from shallowflow.experiment import RunRef
from shallowflow.store import atomic_file, provenance, read_netcdf, write_netcdf, write_text
from shallowflow.training import Batch


@dataclass(frozen=True)
class Point:
    """One grid point: its index, the grid values that define it and its experiment."""

    id: int
    values: dict[str, Any]
    experiment: Experiment


@dataclass(frozen=True)
class Sweep:
    name: str
    points: list[Point]
    max_batch: int
    grid: dict[str, list[Any]]


def _set_path(mapping: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    result = json.loads(json.dumps(mapping))
    node = result
    *head, last = dotted.split(".")
    for key in head:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ConfigError(f"grid: {dotted!r}: {key!r} is not a table")
    node[last] = value
    return result


def sweep_from_mapping(mapping: dict[str, Any], root: Path | None = None,
                       overrides: list[str] | None = None) -> Sweep:
    """Validate a sweep mapping: base experiment, grid and every grid point."""
    allowed = {"name", "base", "grid", "max_batch"}
    extra = set(mapping) - allowed
    if extra:
        raise ConfigError(f"sweep: unknown field(s) {sorted(extra)}; allowed: {sorted(allowed)}")
    base = mapping.get("base")
    if isinstance(base, str):
        base = read_mapping((root or Path.cwd()) / base)
    if not isinstance(base, dict):
        raise ConfigError("sweep.base: must be a file name or an inline table")
    base = apply_overrides(base, overrides or [])
    grid = mapping.get("grid", {})
    if not isinstance(grid, dict) or not all(isinstance(v, list) and v for v in grid.values()):
        raise ConfigError("sweep.grid: must map dotted keys to non-empty lists of values")
    max_batch = mapping.get("max_batch", 256)
    if not isinstance(max_batch, int) or max_batch < 1:
        raise ConfigError(f"sweep.max_batch: must be an integer >= 1, got {max_batch!r}")
    points = []
    keys = list(grid)
    for pid, combo in enumerate(itertools.product(*(grid[k] for k in keys))):
        values = dict(zip(keys, combo, strict=True))
        m = base
        for k, v in values.items():
            m = _set_path(m, k, v)
        try:
            exp = experiment_from_mapping(m)
        except ConfigError as err:
            raise ConfigError(f"sweep grid point {pid} {values}: {err}") from None
        points.append(Point(pid, values, exp))
    return Sweep(str(mapping.get("name", "sweep")), points, max_batch, grid)


def load_sweep(path: str | Path, overrides: list[str] | None = None) -> Sweep:
    path = Path(path)
    return sweep_from_mapping(read_mapping(path), path.parent, overrides)


def plan(sweep: Sweep) -> list[Batch]:
    """All runs of the sweep grouped into batches (:func:`shallowflow.training.plan`), each
    run tagged with its grid point so batch ids are unique to the sweep."""
    members = [(pt.id, RunRef(pt.experiment, r)) for pt in sweep.points
               for r in range(pt.experiment.runs)]
    return training.plan([r for _, r in members], sweep.max_batch, [p for p, _ in members])


def write_batch(out: Path, batch: Batch, progress: StepCallback | None = None) -> str:
    """Train one batch and write it atomically to ``out/batches/<id>.nc`` with each run's grid
    point (the batch's tags); returns the batch id."""
    ds = training.train_batch(batch, progress)
    ds = ds.assign_coords(point=("run", np.array(batch.tags, dtype=np.int64)))
    ds.attrs["batch"] = batch.id
    write_netcdf(ds, out / "batches" / f"{batch.id}.nc")
    return batch.id


def _plan_record(sweep: Sweep, batches: list[Batch]) -> dict[str, Any]:
    return {
        "name": sweep.name,
        "grid": sweep.grid,
        "points": [{"id": p.id, "values": p.values,
                    "experiment": p.experiment.model_dump(mode="json")} for p in sweep.points],
        "batches": [b.id for b in batches],
    }


def run_sweep(sweep: Sweep, out: str | Path, resume: bool = False,
              executor: str = "local", address: str | None = None,
              show_progress: bool = True,
              after_batch: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Run (or resume) ``sweep`` into ``out``; returns the per-run summary table.

    ``after_batch(batch_id)`` is called after each batch is written (used by tests to interrupt).
    """
    out = Path(out)
    runner = make_executor(executor, address)  # an unknown executor is refused before any work
    batches = plan(sweep)
    record = _plan_record(sweep, batches)
    plan_file = out / "plan.json"
    if out.exists():
        if not resume:
            raise ConfigError(f"out: {str(out)!r} already exists; pass --resume to continue "
                              "that sweep, or choose a new folder")
        if not plan_file.is_file():
            raise ConfigError(f"out: {str(out)!r} is not a sweep folder (no plan.json)")
        if json.loads(plan_file.read_text()) != json.loads(json.dumps(record)):
            raise ConfigError(f"out: the sweep in {str(out)!r} was planned from a different "
                              "spec; resume needs the same sweep file and --set values")
    else:
        out.mkdir(parents=True)
        write_text(plan_file, json.dumps(record, indent=1) + "\n")
        write_text(out / "sweep.toml", dump_toml({"name": sweep.name, "grid": sweep.grid}))
        write_text(out / "provenance.json",
                   json.dumps(provenance(seeds=sorted({p.experiment.seed for p in sweep.points})),
                              indent=2, default=str) + "\n")
    (out / "batches").mkdir(exist_ok=True)
    pending = [b for b in batches if not (out / "batches" / f"{b.id}.nc").is_file()]
    done_runs = sum(b.size for b in batches) - sum(b.size for b in pending)
    task = functools.partial(write_batch, out)
    for batch, _ in training.execute(task, pending, sweep.name, show_progress,
                                     runner, done_runs):
        if after_batch is not None:
            after_batch(batch.id)
    return summarise(out)


def load_batches(out: str | Path) -> list[xr.Dataset]:
    """All finished batch Datasets of a sweep folder, in plan order."""
    out = Path(out)
    ids = json.loads((out / "plan.json").read_text())["batches"]
    return [read_netcdf(out / "batches" / f"{i}.nc") for i in ids
            if (out / "batches" / f"{i}.nc").is_file()]


def summarise(out: str | Path) -> pd.DataFrame:
    """Rebuild ``summary.parquet``: one row per finished run, with its grid values."""
    out = Path(out)
    record = json.loads((out / "plan.json").read_text())
    values = {p["id"]: p["values"] for p in record["points"]}
    rows = []
    for ds in load_batches(out):
        loss = ds["loss"].values
        for r in range(ds.sizes["run"]):
            pid = int(ds["point"].values[r])
            rows.append({
                "point": pid, **{k: v for k, v in values[pid].items()},
                "run_index": int(ds["run_index"].values[r]), "seed": int(ds["seed"].values[r]),
                "batch": ds.attrs["batch"], "loss_init": float(loss[r, 0]),
                "loss_final": float(loss[r, -1]), "loss_min": float(np.nanmin(loss[r])),
                "stopped": bool(ds["stopped"].values[r]),
                "stop_step": int(ds["stop_step"].values[r]),
                "diverged": bool(ds["diverged"].values[r]),
                "diverge_step": int(ds["diverge_step"].values[r]),
                "final_time": float(ds["time"].values[-1]),
            })
    table = pd.DataFrame(rows)
    if len(table):
        table = table.sort_values(["point", "run_index"]).reset_index(drop=True)
    with atomic_file(out / "summary.parquet") as tmp:
        table.to_parquet(tmp, index=False)
    return table
