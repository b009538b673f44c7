"""Running a reproduction into a folder, and judging a saved one again (docs/architecture.md,
"Reproductions").

:func:`run_reproduction` validates the parameters and claims the output folder before any work,
runs ``simulate``, writes ``results.nc``, reads it back and judges and draws *the saved file*, so
a re-judged folder (:func:`rejudge`, ``shallowflow reproduce NAME --from DIR``) gives the same
claims by construction. The folder holds ``results.nc``, the figures, ``claims.json``,
``report.md``, ``params.json`` and ``provenance.json``; it is written atomically.

The disk, before any work (what a run or sweep checks at once, a reproduction checks in parts,
since its training calls are known only as it goes): the output place needs at least
:data:`FOLDER_FLOOR` free for the figures and the report; each training call checks the free
space for the files of the batches it will keep, with the floor still free after them
(:func:`shallowflow.training.entry.train_chains`, the estimate runs and sweeps use);
``force`` skips both. A disk that fills anyway (``results.nc``, built in memory by
:func:`shallowflow.store.write_netcdf`, a figure, a batch file) is one error naming the file and
its size (:class:`~shallowflow.errors.DiskFull`), with the finished batches kept beside the
output for ``resume``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from shallowflow import enable_full_precision
from shallowflow.config import ConfigError
from shallowflow.errors import shown
from shallowflow.output import claim, disk_errors, write_text
from shallowflow.reproductions import report
from shallowflow.reproductions.base import RESULTS, Params, Reproduction, _validate, resolve_params
from shallowflow.reproductions.claims import Claim, to_json
from shallowflow.reproductions.index import lookup
from shallowflow.runtime.executors import Executor
from shallowflow.store import provenance, read_netcdf, read_record, write_netcdf
from shallowflow.training.batch_store import kept_beside
from shallowflow.training.certificates import DEFAULT_PRECISION, Precision
from shallowflow.training.entry import trainer

FOLDER_FLOOR = 64 * 2**10
"""Bytes a reproduction folder needs at least beside ``results.nc``: one figure at 120 dpi
(40-200 KiB in the catalogue's quick presets) and the report's text files (about 10 KiB)."""


def _finish(rep: Reproduction, folder: Path, ds: xr.Dataset, params: Params, preset: str,
            wall: float, precision: str, extra: Mapping[str, Any],
            show_progress: bool = True) -> list[Claim]:
    """Judge, draw and write the report of a saved Dataset into ``folder`` (``precision``: the
    line saying what precision it was trained in), saying on stderr what it does and how long
    each part took (``show_progress``)."""
    import matplotlib.pyplot as plt

    from shallowflow.runtime.progress import Phases

    done = Phases(rep.name, show_progress).done
    claims = rep.judge(ds, params)
    done(f"{len(claims)} claims judged")
    figures = rep.draw(ds, params)
    done(f"{len(figures)} figure(s) drawn")
    listed = []
    for f in figures:
        with disk_errors(folder / f"{f.name}.png"):
            f.fig.savefig(folder / f"{f.name}.png", dpi=120, bbox_inches="tight")
        plt.close(f.fig)
        listed.append((f"{f.name}.png", f.caption))
        done(f"{f.name}.png written")
        if f.movie is not None:
            movie = f.movie(folder)  # written through output.atomic_file
            listed.append((movie.name, f"Animation of {f.name}: one frame per recorded snapshot."))
            done(f"{movie.name} written")
    values = params.model_dump(mode="json")
    write_text(folder / "claims.json", to_json(claims))
    text = report.render(f"{rep.name}: {rep.title}", rep.summary, listed, claims,
                         [*rep.method(ds, params), report.cite_section(rep.name)], preset,
                         values, wall, precision)
    write_text(folder / "report.md", text)
    write_text(folder / "params.json", json.dumps({"reproduction": rep.name, "preset": preset,
                                                   "params": values, "wall_s": wall,
                                                   "precision": precision, **extra},
                                                  indent=2) + "\n")
    write_text(folder / "provenance.json",
               json.dumps(provenance(reproduction=rep.name, preset=preset), indent=2,
                          default=str) + "\n")
    return claims


def run_reproduction(name: str, out: str | Path, preset: str = "quick",
                     overrides: list[str] | None = None, overwrite: bool = False,
                     show_progress: bool = True, executor: Executor | None = None,
                     force: bool = False, resume: bool = False,
                     precision: Precision = DEFAULT_PRECISION) -> tuple[Path, list[Claim]]:
    """Run reproduction ``name`` with ``preset`` into the folder ``out`` (created atomically).
    The output location is checked before any work; each training call checks the memory and
    disk it needs (the module's docstring; ``force``: train anyway). Every finished batch is
    kept :func:`~shallowflow.training.batch_store.beside` the output until the folder is
    complete; ``resume`` reads the batches an interrupted run finished instead of training them
    again (without it, they are discarded and everything is trained).
    ``precision``: float64 (default) or float32, certified on a sample of runs rerun in float64
    (:class:`~shallowflow.training.certificates.Precision`); the report says which, with the verdict."""
    rep = lookup(name)
    params = resolve_params(rep, preset, overrides)
    with claim(out, "reproduction", overwrite, FOLDER_FLOOR, force) as place, \
            kept_beside(out, resume) as store:
        enable_full_precision()
        start = time.perf_counter()
        with place.writing() as folder:
            train = trainer(show_progress, executor, force, store.folder, precision,
                            FOLDER_FLOOR)
            write_netcdf(rep.simulate(params, train), folder / RESULTS)
            ds = read_netcdf(folder / RESULTS)
            distances = np.concatenate(train.distances) if train.distances else None
            claims = _finish(rep, folder, ds, params, preset, time.perf_counter() - start,
                             precision.describe(distances), {}, show_progress)
    return Path(out), claims


def rejudge(name: str, source: str | Path, out: str | Path, overwrite: bool = False,
            show_progress: bool = True) -> tuple[Path, list[Claim]]:
    """Judge and draw a saved reproduction folder ``source`` again, without training, into the
    new folder ``out`` (its ``results.nc`` is copied there)."""
    rep = lookup(name)
    source = Path(source)
    saved_file, results = source / "params.json", source / RESULTS
    if not saved_file.is_file() or not results.is_file():
        raise ConfigError(f"--from: {shown(source)} is not a reproduction folder (needs "
                          f"params.json and {RESULTS})")
    saved = read_record(saved_file, "--from")
    if saved.get("reproduction") != name:
        raise ConfigError(f"--from: {shown(source)} holds reproduction "
                          f"{shown(saved.get('reproduction'))}, not {shown(name)}")
    params = _validate(rep, saved.get("params", {}), f"{saved_file}")
    with claim(out, "reproduction", overwrite) as place:
        start = time.perf_counter()
        ds = read_netcdf(results)
        with place.writing() as folder:
            write_netcdf(ds, folder / RESULTS)
            try:
                claims = _finish(rep, folder, ds, params, saved.get("preset", "?"),
                                 time.perf_counter() - start,
                                 saved.get("precision", DEFAULT_PRECISION.describe()),
                                 {"rejudged_from": source.name,
                                  "simulation_wall_s": saved.get("wall_s")}, show_progress)
            except (KeyError, IndexError, AttributeError) as err:  # what the saved file lacks
                raise ConfigError(
                    f"--from: {results} does not hold what {name} judges (missing "
                    f"{' '.join(str(err).split())[:80]}); it must be the {RESULTS} that "
                    f"`shallowflow reproduce {name}` wrote") from None
    return Path(out), claims
