"""Run directories, netCDF I/O and provenance. Nothing is ever half-written: a directory or file is
written under a temporary name beside its destination and renamed into place.

A run directory holds::

    config.toml       the resolved experiment (every default filled in)
    provenance.json   package, git commit, JAX and platform versions, seeds, command, timestamps
    results.nc        probes (run, time, ...) and per-run status; coordinates time (flow time) and step
    params.nc         initial and final parameters (and W snapshots when recorded)
    data.nc           the training data X, y (the bias column included when configured)
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import xarray as xr

from shallowflow.errors import UserError, shown
from shallowflow.output import atomic_file, write_text

PARAM_VARS = ("a_init", "W_init", "a_final", "W_final", "W", "log_norm_final", "log_abs_a_final")
ENGINE = "h5netcdf"
H5_OPTIONS = {"locking": False}
"""h5py's options for every file here: no HDF5 file locks. Every file is written under a
temporary name of its own and renamed whole, so no reader meets a half-written one; HDF5's locks
only added failures ("unable to lock file", errno 11: a batch file read while HDF5 still held
the lock of its writing, with two batches in flight, seen on a GPU machine)."""


def git_commit() -> str | None:
    """The commit of the shallowflow source tree, if it is a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def provenance(seeds: list[int] | None = None, **extra: Any) -> dict[str, Any]:
    """Versions and platform facts that make a result traceable."""
    import jax
    import numpy as np

    from shallowflow import __version__

    return {
        "shallowflow": __version__,
        "git_commit": git_commit(),
        "jax": jax.__version__,
        "numpy": np.__version__,
        "xarray": xr.__version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "jax_backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "x64": bool(jax.config.jax_enable_x64),
        "seeds": seeds,
        "command": sys.argv,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **extra,
    }


def write_netcdf(ds: xr.Dataset, path: str | Path) -> None:
    """Write ``ds`` to ``path`` atomically (temporary file, then rename), under a local lock.

    The file goes through xarray's h5netcdf store directly, locked by xarray's process-wide HDF5
    lock only. ``Dataset.to_netcdf`` would first ask dask which scheduler is active to choose a
    write lock: that imports dask and dask.distributed (0.35 s of every command's start) and, where
    a dask.distributed client is active (the driver of a Dask sweep, every Dask worker), takes a
    ``distributed.Lock``: a round trip to the scheduler before and after the write, and a traceback
    on stderr when the scheduler goes down mid-write. Every file here is written by one process
    under a name of its own, so no cross-process lock is needed."""
    from xarray.backends import H5NetCDFStore
    from xarray.backends.locks import HDF5_LOCK

    with atomic_file(path) as tmp:
        store = H5NetCDFStore.open(str(tmp), mode="w", lock=HDF5_LOCK, driver_kwds=H5_OPTIONS)
        try:
            ds.dump_to_store(store)
        finally:
            store.close()


def open_netcdf(path: str | Path) -> xr.Dataset:
    """Open a netCDF file lazily (close it, or use ``with``), without HDF5 file locks."""
    return xr.open_dataset(path, engine=ENGINE, driver_kwds=H5_OPTIONS)


def read_netcdf(path: str | Path) -> xr.Dataset:
    """Read a netCDF file fully into memory (the file is closed on return)."""
    with open_netcdf(path) as ds:
        return ds.load()


def read_record(path: Path, field: str) -> dict[str, Any]:
    """A JSON object shallowflow wrote (``plan.json``, ``params.json``), or one error line
    naming ``field`` and the file where it is unreadable, not JSON or not an object (a damaged
    or foreign file)."""
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        detail = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise UserError(f"{field}: {shown(path)} is damaged or unreadable "
                        f"({shown(detail, bare=True)}); it must be the JSON file shallowflow "
                        "wrote") from None
    if not isinstance(record, dict):
        raise UserError(f"{field}: {shown(path)} is damaged: it holds {type(record).__name__} "
                        f"{json.dumps(record)[:40]}, not the JSON object shallowflow wrote")
    return record


def write_run(folder: Path, ds: xr.Dataset, data: xr.Dataset, config_toml: str,
              prov: dict[str, Any]) -> None:
    """Write the files of a run directory into ``folder`` (usually the temporary folder of
    :meth:`shallowflow.output.OutputFolder.writing`)."""
    params = [v for v in PARAM_VARS if v in ds]
    write_netcdf(ds.drop_vars(params), folder / "results.nc")
    write_netcdf(ds[params], folder / "params.nc")
    write_netcdf(data, folder / "data.nc")
    write_text(folder / "config.toml", config_toml)
    write_text(folder / "provenance.json", json.dumps(prov, indent=2, default=str) + "\n")


def check_run_folder(folder: str | Path) -> Path:
    """``folder`` if it holds a run's results, else the error that says so (before any work)."""
    folder = Path(folder)
    if not (folder / "results.nc").is_file():
        raise FileNotFoundError(f"run: {shown(folder)} holds no results.nc; is it a run folder?")
    return folder


def load_run(folder: str | Path) -> xr.Dataset:
    """Load a run directory as one Dataset: probes, status, parameters and data (X, y)."""
    folder = check_run_folder(folder)
    parts = [read_netcdf(folder / "results.nc")]
    for name in ("params.nc", "data.nc"):
        if (folder / name).is_file():
            parts.append(read_netcdf(folder / name))
    ds = xr.merge(parts, compat="override", combine_attrs="override")
    ds.attrs["config"] = (folder / "config.toml").read_text()
    return ds
