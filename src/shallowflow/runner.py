"""Run folders: run an experiment into one (validate, check the output folder, train, write), and
certify the end states of its runs (``shallowflow certify``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import get_args

import xarray as xr

from shallowflow.config import Experiment, dump_toml, read_mapping
from shallowflow.errors import UserError, shown
from shallowflow.output import claim, claim_files
from shallowflow.runtime.progress import Phases
from shallowflow.stationary import end_states, end_table
from shallowflow.stationary.polish import PolishMethod
from shallowflow.stationary.population_state import population_end_states
from shallowflow.store import check_run_folder, load_run, provenance, write_netcdf, write_run
from shallowflow.training.batch_store import kept_beside
from shallowflow.training.batches import DATA_VARIABLES
from shallowflow.training.entry import train
from shallowflow.training.preflight import check_memory, estimate

POLISH_METHODS = ("none", *get_args(PolishMethod))


def run_experiment(exp: Experiment, out: str | Path, overwrite: bool = False,
                   runs: Sequence[int] | None = None, show_progress: bool = True,
                   force: bool = False, resume: bool = False) -> xr.Dataset:
    """Train ``exp`` and write its run directory to ``out`` (atomically). Returns the results.

    The output location (writable, free space for the estimated results: the run folder and
    the finished batches kept beside it until it is written) and the memory are checked before
    any work (``force``: run despite the estimates), and the place is held for the whole command
    (:func:`shallowflow.output.claim`); a failure leaves ``out`` absent (or, with ``overwrite``,
    untouched). ``overwrite`` replaces only a folder shallowflow made. Every finished batch is
    kept :func:`~shallowflow.training.batch_store.beside` ``out`` until the folder is written;
    ``resume`` reads the batches an interrupted or failed command finished instead of training
    them again (a disk that filled while the folder was written: free space and resume).
    """
    need = estimate([(exp, exp.runs if runs is None else len(runs))])
    check_memory(need, force)
    with claim(out, "run", overwrite, 2 * need.disk, force) as place, \
            kept_beside(out, resume) as store:
        (ds,) = train(exp, label=exp.name, show_progress=show_progress, keep_data=True,
                      runs=runs, force=force, store=store.folder)
        names = [v for v in DATA_VARIABLES if v in ds]
        data, ds = ds[names], ds.drop_vars(names)
        with place.writing() as folder:
            write_run(folder, ds, data, dump_toml(exp.model_dump(mode="json")),
                      provenance(seeds=[exp.seed], runs=int(ds.sizes["run"])))
    return ds


END_STATE_FILES = ("end_state.nc", "end_state.csv")
"""What ``shallowflow certify`` writes into a run folder, both or neither."""
NEEDS = {"data.nc": "the training data, without which the loss cannot be evaluated"}
"""What certify reads beside a run folder's results."""


def certify_run(folder: str | Path, polish: str = "none", at: str = "final",
                overwrite: bool = False, show_progress: bool = False,
                field: str = "RUN_DIR", force: bool = False) -> xr.Dataset:
    """Certify the end state of every run of a run folder (docs/math.md §9.6) and write
    ``end_state.nc`` (the ``end_*`` Dataset, polished networks included) and ``end_state.csv``
    (:func:`~shallowflow.stationary.end_table`) beside its results, both or neither. ``at``:
    "final" or a record index of the snapshots a, W. Before any work: the run folder and its
    files (named as ``field``), the options, and the pair of output files together (neither a
    folder nor a link; replaced only with ``overwrite`` and where shallowflow wrote them; room
    on the disk, unless ``force``), held for the whole call
    (:func:`shallowflow.output.claim_files`). ``show_progress``: say on stderr what it does, a
    bar over the runs."""
    folder = check_run_folder(folder, field, NEEDS)
    if polish not in POLISH_METHODS:
        raise UserError(f"--polish: unknown method (got {shown(polish)}); allowed: "
                        f"{', '.join(POLISH_METHODS)}")
    if at != "final" and not at.lstrip("-").isdigit():
        raise UserError(f"--at: must be 'final' or a record index (got {shown(at)})")
    files = [folder / name for name in END_STATE_FILES]
    need = 2 * sum(f.stat().st_size for f in (folder / "params.nc", folder / "results.nc")
                   if f.is_file())  # polished networks beside the end states: at most this
    with claim_files(files, overwrite, need, field, lock=folder / "end_state",
                     force=force) as place:
        phases = Phases("certify", show_progress)
        ds = load_run(folder, field)
        where = _record_index(ds, at, folder, field)
        if "teacher_V" in ds and polish != "none":
            raise UserError(f"--polish: {folder} trained on the population (data.kind "
                            f"'gaussian_teacher'), which the polish cannot read (it needs "
                            f"samples); allowed: none (got {shown(polish)})")
        if "leak" not in ds.attrs:  # folders written before the activation was stored
            model = read_mapping(folder / "config.toml", field).get("model", {})
            ds.attrs["leak"] = float(model.get("leak", 0.0))
        phases.done(f"{ds.sizes['run']} run(s) read from {folder}")
        with phases.counting("run(s) certified", ds.sizes["run"]) as step:
            if "teacher_V" in ds:  # the population: exact derivatives (docs/math.md §11.3)
                end = population_end_states(ds, at=where, progress=lambda done, total: step())
            else:
                end = end_states(ds, at=where, polish_method=None if polish == "none"
                                 else polish, progress=lambda done, total: step())
        for name in ("stop_reason", "end_step"):
            if name in ds:
                end[name] = ds[name]
        with place.writing() as (nc, csv):
            write_netcdf(end, nc)
            end_table(end).to_csv(csv, index=False)
        phases.done(f"{' and '.join(map(str, files))} written")
    return end


def _record_index(ds: xr.Dataset, at: str, folder: Path, field: str) -> str | int:
    """``at`` as :func:`~shallowflow.stationary.end_states` takes it, checked against what
    the run folder recorded (a foreign results.nc, without the networks or the model's scale,
    is named as ``field``)."""
    snapshots = "a" in ds and "W" in ds
    missing = [name for name, there in (
        ("the final networks a_final, W_final", {"a_final", "W_final"} <= set(ds) or snapshots),
        ("the data X, y", {"X", "y"} <= set(ds) or "teacher_V" in ds),
        ("the model's scale kappa", "kappa" in ds.attrs))
        if not there]
    if missing:
        raise UserError(f"{field}: the files of {folder} hold no {' and no '.join(missing)}; "
                        "they must be the results.nc, params.nc and data.nc that shallowflow "
                        "run wrote")
    if at == "final":
        return at
    if not -ds.sizes["time"] <= int(at) < ds.sizes["time"]:
        raise UserError(f"--at: must be 'final' or a record index in "
                        f"{-ds.sizes['time']}..{ds.sizes['time'] - 1} (got {shown(at)})")
    if not snapshots:
        raise UserError(f"--at: {folder} recorded no snapshots of a and W (record the probes "
                        "'a' and 'W'); only 'final' can be certified")
    return int(at)
