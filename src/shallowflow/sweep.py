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
``summary.parquet`` (one row per run) is rebuilt, written whole and atomically, from the batch
files, taking the rows of a batch the previous summary already held from it while that batch's
file is not newer (so a resume of 10^5 finished runs reads no batch file).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from shallowflow.config import (
    DIGEST,
    ConfigError,
    Experiment,
    apply_overrides,
    copy_tree,
    dump_toml,
    experiment_from_mapping,
    read_mapping,
    set_path,
    split_override,
)
from shallowflow.config.spec_types import label_problem
from shallowflow.errors import BatchesFailed, shown
from shallowflow.output import atomic_file, claim, clean_stale, write_marker, write_text
from shallowflow.runtime.executors import Executor, LocalExecutor
from shallowflow.stationary import end_table
from shallowflow.stationary.verdict import TABLE_FIELDS
from shallowflow.store import open_netcdf, provenance, read_record
from shallowflow.training import entry as training
from shallowflow.training.batch_store import BatchStore
from shallowflow.training.batches import RunRef
from shallowflow.training.entry import Batch
from shallowflow.training.preflight import check_memory, estimate


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


def sweep_from_mapping(mapping: dict[str, Any], root: Path | None = None,
                       overrides: list[str] | None = None) -> Sweep:
    """Validate a sweep mapping: base experiment (with ``overrides``), grid and every point."""
    allowed = {"name", "base", "grid", "max_batch"}
    extra = set(mapping) - allowed
    if extra:
        raise ConfigError(f"sweep: unknown field(s) {shown(sorted(extra))}; allowed: {sorted(allowed)}")
    base = mapping.get("base")
    if isinstance(base, str):
        base = read_mapping((root or Path.cwd()) / base, "sweep.base")
    if not isinstance(base, dict):
        raise ConfigError(f"sweep.base: must be a file name or an inline table, got {shown(base)}")
    base = apply_overrides(base, overrides or [])
    grid = mapping.get("grid", {})
    if not isinstance(grid, dict):
        raise ConfigError(f"sweep.grid: must be a table of dotted keys, got {shown(grid)}")
    for key, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"sweep.grid.{shown(key, bare=True)}: must be a non-empty list of values, got "
                              f"{shown(values)}")
    for item in overrides or []:  # the grid would silently override the --set value
        parts = split_override(item)[0]
        for key in grid:
            shorter = min(len(parts), len(key.split(".")))
            if parts[:shorter] == key.split(".")[:shorter]:
                raise ConfigError(f"--set: {shown('.'.join(parts))} is also set by the grid key "
                                  f"{shown(key)}, which would replace it at every point (got "
                                  f"{shown(item)}); change the grid in the sweep file instead")
    name = mapping.get("name", "sweep")
    if (problem := label_problem(name)) is not None:
        raise ConfigError(f"sweep.name: {problem}, got {shown(name)}")
    max_batch = mapping.get("max_batch", 256)
    if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
        raise ConfigError(f"sweep.max_batch: must be an integer >= 1, got {shown(max_batch)}")
    if overrides:  # a bad --set is the user's override, not a grid point's
        try:
            experiment_from_mapping(base)
        except ConfigError as err:
            if not any(str(err).startswith(k) for k in grid):
                raise ConfigError(f"{err} [the base experiment with --set]") from None
    points = []
    keys = list(grid)
    for pid, combo in enumerate(itertools.product(*(grid[k] for k in keys))):
        values = dict(zip(keys, combo, strict=True))
        m = base
        for k, v in values.items():
            m = copy_tree(m)
            set_path(m, k.split("."), v, "grid")
        try:
            exp = experiment_from_mapping(m)
        except ConfigError as err:
            lines = str(err).splitlines()
            raise ConfigError("\n".join(f"{line} [sweep grid point {pid}: {shown(values)}]"
                                         for line in lines)) from None
        points.append(Point(pid, values, exp))
    return Sweep(name, points, max_batch, grid)


def load_sweep(path: str | Path, overrides: list[str] | None = None) -> Sweep:
    """Read and validate a sweep file (TOML or YAML): its base experiment (a path relative to
    the sweep file) with ``overrides`` (``--set`` literals; a key the grid sets is refused) and
    every grid point, each named in its error before any work."""
    path = Path(path)
    return sweep_from_mapping(read_mapping(path, "sweep"), path.parent, overrides)


def plan(sweep: Sweep) -> list[Batch]:
    """All runs of the sweep grouped into batches (:func:`shallowflow.training.entry.plan`), each
    run tagged with its grid point so batch ids are unique to the sweep."""
    members = [(pt.id, RunRef(pt.experiment, r)) for pt in sweep.points
               for r in range(pt.experiment.runs)]
    return training.plan([r for _, r in members], sweep.max_batch, [p for p, _ in members])


def sweep_store(out: str | Path) -> BatchStore:
    """The finished batches of the sweep folder ``out``: ``out/batches/<id>.nc``, each with its
    runs' grid points (coordinate ``point``, the batch's tags) and its id (attribute ``batch``)."""
    return BatchStore(Path(out) / "batches", tag="point")


def input_files(sweep: Sweep) -> dict[str, str]:
    """The files the sweep's specs read (every field called ``path``: data files, given
    initial networks), each with the SHA-256 of its content."""
    paths: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "path" and isinstance(value, str):
                    paths.add(value)
                walk(value)

    for p in sweep.points:
        walk(p.experiment.model_dump(mode="json", context=DIGEST))
    return {path: hashlib.sha256(Path(path).read_bytes()).hexdigest() for path in sorted(paths)}


def _plan_record(sweep: Sweep, batches: list[Batch]) -> dict[str, Any]:
    return {
        "name": sweep.name,
        "grid": sweep.grid,
        "points": [{"id": p.id, "values": p.values,
                    "experiment": p.experiment.model_dump(mode="json")} for p in sweep.points],
        "batches": [b.id for b in batches],
        "inputs": input_files(sweep),
    }


def _check_resumable(out: Path, record: dict[str, Any]) -> None:
    """Refuse to resume a folder that is not this sweep's: no plan, another spec, an input file
    whose content changed, or a damaged batch file (named, to be deleted:
    :meth:`BatchStore.check <shallowflow.training.batch_store.BatchStore.check>`)."""
    plan_file = out / "plan.json"
    if not plan_file.is_file():
        raise ConfigError(f"out: {shown(out)} is not a sweep folder (no plan.json)")
    saved = read_record(plan_file, "out")
    current = json.loads(json.dumps(record))
    old_inputs, new_inputs = saved.pop("inputs", None), current.pop("inputs")
    if saved != current:
        raise ConfigError(f"out: the sweep in {shown(out)} was planned from a different spec; "
                          "resume needs the same sweep file and --set values")
    for path, digest in new_inputs.items():
        if old_inputs is not None and old_inputs.get(path) != digest:
            raise ConfigError(f"{shown(path)}: the file changed since the sweep in {shown(out)} was "
                              "planned (its SHA-256 differs); restore it, or run the changed "
                              "data into a new sweep folder")
    sweep_store(out).check(current["batches"])


def run_sweep(sweep: Sweep, out: str | Path, resume: bool = False,
              executor: Executor | None = None, show_progress: bool = True,
              after_batch: Callable[[str], None] | None = None,
              force: bool = False) -> pd.DataFrame:
    """Run (or resume) ``sweep`` into ``out``; returns the per-run summary table.

    ``executor`` runs the batches (default: in this process); it is the caller's, as for
    :func:`~shallowflow.reproductions.run_reproduction`: checked by it before (the command line
    builds it with :func:`~shallowflow.runtime.executors.make_executor` and checks it before any work)
    and closed by it after. Before any work: the memory, the output location and free space,
    and on resume that the folder holds this sweep with unchanged input files and readable batch
    files; temporary files of killed runs are removed.
    ``after_batch(batch_id)`` is called after each batch is written (used by tests to interrupt).
    A batch that raises is named with its grid point in
    :class:`~shallowflow.errors.BatchesFailed` once the others are written (the summary then
    holds theirs; ``resume`` runs the failed ones).
    """
    out = Path(out)
    jobs = [(p.experiment, p.experiment.runs) for p in sweep.points]
    need = estimate(jobs, sweep.max_batch, hold=False)
    check_memory(need, force)
    batches = plan(sweep)
    record = _plan_record(sweep, batches)
    with claim(out, "sweep", need=need.disk, force=force, resume=True) as place:
        if place.existed and not resume:
            raise ConfigError(f"out: {shown(out)} already exists; pass --resume to continue "
                              "that sweep, or choose a new folder")
        if place.existed:
            _check_resumable(out, record)
            clean_stale(out)
        else:
            _start(out, sweep, record)
        return _run_pending(sweep, out, batches, executor or LocalExecutor(), show_progress,
                            after_batch)


SWEEP_ENTRIES = ("plan.json", "sweep.toml", "provenance.json", "batches", "summary.parquet")
"""What a sweep folder holds (its marker lists them: :mod:`shallowflow.output`)."""


def _start(out: Path, sweep: Sweep, record: dict[str, Any]) -> None:
    """Make a new sweep folder: its plan, spec, provenance and marker (all or none of them: a
    folder that cannot be completed, e.g. on a full disk, is removed again)."""
    out.mkdir()
    try:
        write_text(out / "plan.json", json.dumps(record, indent=1) + "\n")
        write_text(out / "sweep.toml", dump_toml({"name": sweep.name, "grid": sweep.grid}))
        write_text(out / "provenance.json",
                   json.dumps(provenance(seeds=sorted({p.experiment.seed for p in sweep.points})),
                              indent=2, default=str) + "\n")
        write_marker(out, "sweep", SWEEP_ENTRIES)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)
        raise


def _run_pending(sweep: Sweep, out: Path, batches: list[Batch], runner: Executor,
                 show_progress: bool, after_batch: Callable[[str], None] | None) -> pd.DataFrame:
    """Run the batches of ``sweep`` that ``out`` does not hold yet, then summarise."""
    store = sweep_store(out)
    store.prepare()
    pending = store.pending(batches)
    done_runs = sum(b.size for b in batches) - sum(b.size for b in pending)
    task = functools.partial(training.train_batch_file, store=store)
    points = {p.id: p.values for p in sweep.points}

    def name(batch: Batch) -> str:
        where = sorted(set(batch.tags))
        return f"{training.describe(batch)} of grid point(s) " + \
            ", ".join(f"{p} {points[p]}" for p in where)

    try:
        for batch, _ in training.execute(task, pending, sweep.name, show_progress,
                                         runner, done_runs, name):
            if after_batch is not None:
                after_batch(batch.id)
    except BatchesFailed:
        _wrap_up(out)  # the summary of what finished; --resume runs the failed batches
        raise  # (a full disk, DiskFull, stops at once: the summary is made on --resume)
    return _wrap_up(out)


def _wrap_up(out: Path) -> pd.DataFrame:
    """Remove what a worker killed while writing left in ``batches/`` (its batch was run again)
    and rebuild the summary."""
    sweep_store(out).clean()
    return summarise(out)


def batch_ids(out: str | Path) -> list[str]:
    """The ids of every batch of the sweep folder ``out``, in plan order."""
    return json.loads((Path(out) / "plan.json").read_text())["batches"]


def batch_files(out: str | Path) -> list[Path]:
    """The finished batch files of a sweep folder, in plan order."""
    return sweep_store(out).files(batch_ids(out))


def load_batches(out: str | Path) -> list[xr.Dataset]:
    """All finished batch Datasets of a sweep folder, in plan order (all in memory: for large
    sweeps read :func:`batch_files` one at a time)."""
    store = sweep_store(out)
    return [store.read(i) for i in batch_ids(out) if store.holds(i)]


SUMMARY_VARIABLES = ("loss", "stopped", "stop_step", "diverged", "diverge_step", "run_index",
                     "seed", "point", "precision_rel", *TABLE_FIELDS)
"""What :func:`summarise` reads of a batch file (not the parameters, most of its bytes)."""


def _summary_part(path: Path) -> xr.Dataset:
    with open_netcdf(path) as full:
        return full[[v for v in SUMMARY_VARIABLES if v in full.variables]].load()


def _batch_rows(ds: xr.Dataset, values: dict[int, dict[str, Any]]) -> pd.DataFrame:
    """The summary rows of one batch (see :func:`summarise`)."""
    runs, loss = ds.sizes["run"], ds["loss"].values
    point = ds["point"].values.astype(np.int64)
    columns: dict[str, Any] = {"point": point}
    for key in values[int(point[0])]:
        columns[key] = [values[int(p)][key] for p in point]
    columns.update({
        "run_index": ds["run_index"].values.astype(np.int64),
        "seed": ds["seed"].values.astype(np.int64),
        "batch": [ds.attrs["batch"]] * runs,
        "loss_init": loss[:, 0].astype(np.float64),
        "loss_final": loss[:, -1].astype(np.float64),
        "loss_min": np.fmin.reduce(loss, axis=1).astype(np.float64),  # NaN only if all are
        "stopped": ds["stopped"].values.astype(bool),
        "stop_step": ds["stop_step"].values.astype(np.int64),
        "diverged": ds["diverged"].values.astype(bool),
        "diverge_step": ds["diverge_step"].values.astype(np.int64),
        "final_time": np.full(runs, float(ds["time"].values[-1])),
    })
    if "precision_rel" in ds:  # float32 runs rerun in float64 (NaN: not rerun)
        columns["precision_rel"] = ds["precision_rel"].values.astype(np.float64)
    ends = end_table(ds).drop(columns="run").reset_index(drop=True)
    return pd.concat([pd.DataFrame(columns), ends], axis=1)


def _summarised(path: Path, files: list[Path]) -> pd.DataFrame | None:
    """The rows of the existing summary ``path`` for the batches in ``files`` that it already
    holds and that were not rewritten after it (None when there is no readable summary)."""
    try:
        old = pd.read_parquet(path)
        stamp = path.stat().st_mtime_ns
    except Exception:  # no summary, or an unreadable one: rebuilt from the batch files
        return None
    if "batch" not in old:
        return None
    fresh = {f.stem for f in files if f.stat().st_mtime_ns <= stamp}
    return old[old["batch"].isin(fresh)]


def summarise(out: str | Path) -> pd.DataFrame:
    """Rebuild ``summary.parquet``: one row per finished run, with its grid values, why it
    stopped (``stop_reason``, ``end_step``), with ``train.precision_certificate`` its distance to
    float64 (``precision_rel``) and, with ``train.end_state``, its end-state verdict
    (``label``, ``grad_norm``, ``eig_min``, ...: :func:`shallowflow.stationary.end_table`).

    The rows of a batch come from its file, read with only the variables the table needs (one
    file at a time: the memory does not grow with the sweep), or from the summary being
    replaced, for a batch it already holds whose file is not newer than it (a resume that finds
    everything done reads no batch file). Rows of batches whose file is gone are dropped."""
    out = Path(out)
    record = json.loads((out / "plan.json").read_text())
    values = {p["id"]: p["values"] for p in record["points"]}
    files = batch_files(out)
    kept = _summarised(out / "summary.parquet", files)
    done = set() if kept is None else set(kept["batch"])
    parts = [] if kept is None or not len(kept) else [kept]
    parts += [_batch_rows(_summary_part(f), values) for f in files if f.stem not in done]
    if kept is not None and len(parts) > 1 and list(parts[0].columns) != list(parts[1].columns):
        parts = [_batch_rows(_summary_part(f), values) for f in files]  # another layout: redo
    table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if len(table):
        table = table.sort_values(["point", "run_index"]).reset_index(drop=True)
    with atomic_file(out / "summary.parquet") as tmp:
        table.to_parquet(tmp, index=False)
    return table
