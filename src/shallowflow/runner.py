"""Run folders: run an experiment into one (validate, check the output folder, train, write), and
certify the end states of its runs (``shallowflow certify``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import get_args

import xarray as xr

from shallowflow.config import Experiment, dump_toml, read_mapping
from shallowflow.errors import OutputError, UserError
from shallowflow.output import atomic_file, claim, exclusive, record_entries
from shallowflow.stationary import end_states, end_table
from shallowflow.stationary.polish import PolishMethod
from shallowflow.store import load_run, provenance, write_netcdf, write_run
from shallowflow.training.entry import train
from shallowflow.training.preflight import check_memory, estimate

POLISH_METHODS = ("none", *get_args(PolishMethod))

DATA_VARS = ("X", "y")


def run_experiment(exp: Experiment, out: str | Path, overwrite: bool = False,
                   runs: Sequence[int] | None = None, show_progress: bool = True,
                   force: bool = False) -> xr.Dataset:
    """Train ``exp`` and write its run directory to ``out`` (atomically). Returns the results.

    The output location (writable, free space for the estimated results) and the memory are
    checked before any work (``force``: run despite the estimates), and the place is held for
    the whole command (:func:`shallowflow.output.claim`); a failure leaves ``out`` absent (or,
    with ``overwrite``, untouched). ``overwrite`` replaces only a folder shallowflow made.
    """
    need = estimate([(exp, exp.runs if runs is None else len(runs))])
    check_memory(need, force)
    with claim(out, "run", overwrite, need.disk, force) as place:
        (ds,) = train(exp, label=exp.name, show_progress=show_progress, keep_data=True,
                      runs=runs, force=force)
        data, ds = ds[list(DATA_VARS)], ds.drop_vars(DATA_VARS)
        with place.writing() as folder:
            write_run(folder, ds, data, dump_toml(exp.model_dump(mode="json")),
                      provenance(seeds=[exp.seed], runs=int(ds.sizes["run"])))
    return ds


END_STATE_FILES = ("end_state.nc", "end_state.csv")
"""What ``shallowflow certify`` writes into a run folder."""


def certify_run(folder: str | Path, polish: str = "none", at: str = "final",
                overwrite: bool = False) -> xr.Dataset:
    """Certify the end state of every run of a run folder (docs/math.md §9.6) and write
    ``end_state.nc`` (the ``end_*`` Dataset, polished networks included) and ``end_state.csv``
    (:func:`~shallowflow.stationary.end_table`) beside its results, atomically. ``at``: "final"
    or a record index of the snapshots a, W. Everything is checked before any work."""
    folder = Path(folder)
    if not (folder / "results.nc").is_file():
        raise UserError(f"{folder}: holds no results.nc; certify takes a run folder (written "
                        "by shallowflow run)")
    if not (folder / "data.nc").is_file():
        raise UserError(f"{folder}: holds no data.nc, so the loss cannot be evaluated; certify "
                        "takes a run folder written by shallowflow run")
    if polish not in POLISH_METHODS:
        raise UserError(f"--polish: unknown method (got {polish!r}); allowed: "
                        f"{', '.join(POLISH_METHODS)}")
    with exclusive(folder / "end_state", "end_state"):
        return _certify(folder, polish, at, overwrite)


def _certify(folder: Path, polish: str, at: str, overwrite: bool) -> xr.Dataset:
    existing = [name for name in END_STATE_FILES if (folder / name).exists()
                or (folder / name).is_symlink()]
    if existing and not overwrite:
        raise OutputError(f"{folder / existing[0]}: exists; pass --overwrite to replace it")
    for name in existing:  # --overwrite replaces files, never a folder or what a link points to
        if (folder / name).is_symlink() or not (folder / name).is_file():
            raise OutputError(f"{folder / name}: is not a file (a folder or a link); "
                              "--overwrite replaces only the files certify wrote: move it away")
    ds = load_run(folder)
    where: str | int = at
    if at != "final":
        if not at.lstrip("-").isdigit() or not -ds.sizes["time"] <= int(at) < ds.sizes["time"]:
            raise UserError(f"--at: must be 'final' or a record index in "
                            f"{-ds.sizes['time']}..{ds.sizes['time'] - 1} (got {at!r})")
        if "a" not in ds or "W" not in ds:
            raise UserError(f"--at: {folder} recorded no snapshots of a and W (record the "
                            "probes 'a' and 'W'); only 'final' can be certified")
        where = int(at)
    if "leak" not in ds.attrs:  # folders written before the activation was stored
        model = read_mapping(folder / "config.toml", "config").get("model", {})
        ds.attrs["leak"] = float(model.get("leak", 0.0))
    end = end_states(ds, at=where, polish_method=None if polish == "none" else polish)
    for name in ("stop_reason", "end_step"):
        if name in ds:
            end[name] = ds[name]
    table = end_table(end)
    write_netcdf(end, folder / "end_state.nc")
    with atomic_file(folder / "end_state.csv") as tmp:
        table.to_csv(tmp, index=False)
    record_entries(folder, END_STATE_FILES)
    return end
