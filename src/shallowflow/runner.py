"""Run an experiment into a run directory: validate, check the output folder, train, write."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import xarray as xr

from shallowflow.config import Experiment, dump_toml
from shallowflow.experiment import RunRef, batch_data, prepare_batch, run_batch
from shallowflow.progress import step_progress
from shallowflow.store import atomic_dir, check_output_dir, provenance, write_run


def run_experiment(exp: Experiment, out: str | Path, overwrite: bool = False,
                   runs: Sequence[int] | None = None, show_progress: bool = True) -> xr.Dataset:
    """Train ``exp`` and write its run directory to ``out`` (atomically). Returns the results.

    The output folder is checked before any work; a failure leaves it absent (or, with
    ``overwrite``, untouched).
    """
    check_output_dir(out, overwrite)
    refs = [RunRef(exp, int(i)) for i in (range(exp.runs) if runs is None else runs)]
    batch = prepare_batch(refs)  # builds and validates the data before training
    with step_progress(f"{exp.name}: {exp.runs} run(s)", show_progress) as update:
        ds = run_batch(batch, progress=update)
    seeds = sorted({exp.seed})
    with atomic_dir(out, overwrite) as folder:
        write_run(folder, ds, batch_data(batch), dump_toml(exp.model_dump(mode="json")),
                  provenance(seeds=seeds, runs=int(ds.sizes["run"])))
    return ds
