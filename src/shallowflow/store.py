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

import io
import json
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import xarray as xr

from shallowflow.errors import UserError, file_problem, shown
from shallowflow.output import read_marker, write_bytes, write_text

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
    """Write ``ds`` to ``path`` atomically (temporary file, then rename): the netCDF file is
    built in memory (:func:`netcdf_image`), then written whole by
    :func:`shallowflow.output.write_bytes`, so a full disk is one
    :class:`~shallowflow.errors.DiskFull` naming ``path`` and its size, and nothing is left.

    HDF5 never writes to the disk itself: when a write fails inside HDF5 (ENOSPC while it
    flushes its metadata at close), the file's close raises, h5netcdf's ``__del__`` closes it
    again later and HDF5 dereferences the half-closed file (a segmentation fault at exit, issue
    32). The image costs one copy of the file in memory while it is written (counted in the
    memory estimate, :mod:`shallowflow.training.preflight`) and about the time of writing
    directly (0.42 s against 0.30 s for one 200 MB variable, 0.9 s against 1.0 s for 200 small
    ones)."""
    write_bytes(path, netcdf_image(ds))


def netcdf_image(ds: xr.Dataset) -> memoryview:
    """The bytes of ``ds`` as a netCDF-4 file, built in memory.

    The file goes through xarray's h5netcdf store directly, locked by xarray's process-wide HDF5
    lock only. ``Dataset.to_netcdf`` would first ask dask which scheduler is active to choose a
    write lock: that imports dask and dask.distributed (0.35 s of every command's start) and, where
    a dask.distributed client is active (the driver of a Dask sweep, every Dask worker), takes a
    ``distributed.Lock``: a round trip to the scheduler before and after the write, and a traceback
    on stderr when the scheduler goes down mid-write. Every file here is written by one process
    under a name of its own, so no cross-process lock is needed."""
    from xarray.backends import H5NetCDFStore
    from xarray.backends.locks import HDF5_LOCK

    image = io.BytesIO()
    store = H5NetCDFStore.open(image, mode="w", lock=HDF5_LOCK, driver_kwds=H5_OPTIONS)
    try:
        ds.dump_to_store(store)
    finally:
        store.close()
    return image.getbuffer()


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


RUN_FILES = ("results.nc", "config.toml")
"""The files every run folder holds (and :func:`load_run` reads)."""
SIGNS = {"sweep": "plan.json", "reproduction": "params.json", "demo": "summary.txt"}
"""The file only that kind of folder holds (how a folder from before markers is told apart)."""
INSTEAD = {
    "sweep": "its runs are in its batches/ and summary.parquet (shallowflow sweep)",
    "reproduction": "judge and draw it again with shallowflow reproduce NAME --from {folder}",
    "demo": "it holds the demo's results_n*.nc and summary.txt",
}
"""What a folder of another kind holds instead of a run, or what to do with it."""
RUN_FOLDER = "a run folder (shallowflow run --out)"


def folder_kind(folder: Path) -> str | None:
    """The kind of a folder shallowflow made (``run``, ``sweep``, ``reproduction``, ``demo``):
    its marker's, or for a folder from before markers the file only that kind holds (a run
    folder's ``results.nc`` last); None where it is none of these."""
    marker = read_marker(folder)
    if marker is not None and isinstance(marker.get("kind"), str):
        return str(marker["kind"])
    kind = next((k for k, sign in SIGNS.items() if (folder / sign).exists()), None)
    return kind or ("run" if (folder / "results.nc").exists() else None)


def check_run_folder(folder: str | Path, field: str = "folder",
                     needs: dict[str, str] | None = None) -> Path:
    """``folder`` if it is a run folder holding its files (:data:`RUN_FILES` and ``needs``:
    name -> what it is needed for), else the one error line that names ``field``, the folder
    or file and what is expected (a missing folder, a file, a sweep, reproduction or demo
    folder, a missing, unreadable or non-regular file); before any work."""
    folder = Path(folder)
    if not folder.exists():
        raise UserError(f"{field}: no such folder: {shown(folder)}; give {RUN_FOLDER}, which "
                        "holds results.nc")
    if not folder.is_dir():
        raise UserError(f"{field}: {shown(folder)} is a file, not a folder; give {RUN_FOLDER}")
    kind = folder_kind(folder)
    if kind in INSTEAD:
        raise UserError(f"{field}: {shown(folder)} is a {kind} folder, not {RUN_FOLDER}; "
                        + INSTEAD[kind].format(folder=folder))
    for name, use in ({name: "" for name in RUN_FILES} | (needs or {})).items():
        problem = file_problem(folder / name)
        if problem == "no such file":
            raise UserError(f"{field}: {shown(folder)} holds no {name}{use and f' ({use})'}; "
                            f"give {RUN_FOLDER}")
        if problem is not None:
            raise UserError(f"{field}: {shown(folder / name)} {problem}; it must be the {name} "
                            "that shallowflow run wrote")
    return folder


def read_input(path: Path, field: str) -> xr.Dataset:
    """A netCDF file shallowflow wrote, read whole, or one error line naming ``field`` and the
    file where HDF5 cannot read it (a damaged, truncated or foreign file)."""
    try:
        return read_netcdf(path)
    except Exception as err:  # whatever HDF5 or the netCDF layer says, the file is unreadable
        raise UserError(f"{field}: {shown(path)} is damaged or not a netCDF file "
                        f"({type(err).__name__}); it must be the {path.name} shallowflow "
                        "wrote") from None


def load_run(folder: str | Path, field: str = "folder") -> xr.Dataset:
    """Load a run directory as one Dataset: probes, status, parameters and data (X, y); a
    folder that is not a run folder, or a damaged or foreign file in it, is named as ``field``
    (:func:`check_run_folder`, :func:`read_input`)."""
    folder = check_run_folder(folder, field)
    results = read_input(folder / "results.nc", field)
    if not {"run", "time"} <= set(results.dims):
        raise UserError(f"{field}: {shown(folder / 'results.nc')} has no run and time axes "
                        f"(it has {sorted(map(str, results.dims))}); it must be the results.nc "
                        "that shallowflow run wrote")
    parts = [results] + [read_input(folder / name, field) for name in ("params.nc", "data.nc")
                         if (folder / name).is_file()]
    ds = xr.merge(parts, compat="override", combine_attrs="override")
    try:
        ds.attrs["config"] = (folder / "config.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"{field}: {shown(folder / 'config.toml')} cannot be read as text "
                        f"({type(err).__name__}); it must be the config.toml that shallowflow "
                        "run wrote") from None
    return ds
