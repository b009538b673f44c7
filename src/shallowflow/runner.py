"""Run an experiment into a run directory: validate, check the output folder, train, write."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import xarray as xr

from shallowflow.config import Experiment, dump_toml
from shallowflow.preflight import check_memory, estimate
from shallowflow.store import atomic_dir, check_output_dir, provenance, write_run
from shallowflow.training import train

DATA_VARS = ("X", "y")


def run_experiment(exp: Experiment, out: str | Path, overwrite: bool = False,
                   runs: Sequence[int] | None = None, show_progress: bool = True,
                   force: bool = False) -> xr.Dataset:
    """Train ``exp`` and write its run directory to ``out`` (atomically). Returns the results.

    The output location (writable, free space for the estimated results) and the memory are
    checked before any work (``force``: run despite the estimates); a failure leaves ``out``
    absent (or, with ``overwrite``, untouched).
    """
    need = estimate([(exp, exp.runs if runs is None else len(runs))])
    check_memory(need, force)
    check_output_dir(out, overwrite, need.disk, force)
    (ds,) = train(exp, label=exp.name, show_progress=show_progress, keep_data=True, runs=runs,
                  force=force)
    data, ds = ds[list(DATA_VARS)], ds.drop_vars(DATA_VARS)
    with atomic_dir(out, overwrite) as folder:
        write_run(folder, ds, data, dump_toml(exp.model_dump(mode="json")),
                  provenance(seeds=[exp.seed], runs=int(ds.sizes["run"])))
    return ds
