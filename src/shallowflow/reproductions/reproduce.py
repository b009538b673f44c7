"""Running a reproduction into a folder, and judging a saved one again (docs/architecture.md,
"Reproductions").

:func:`run_reproduction` validates the parameters and claims the output folder before any work,
runs ``simulate``, writes ``results.nc``, reads it back and judges and draws *the saved file*, so
a re-judged folder (:func:`rejudge`, ``shallowflow reproduce NAME --from DIR``) gives the same
claims by construction. The folder holds ``results.nc``, the figures, ``claims.json``,
``report.md``, ``params.json``, ``provenance.json`` and any tables the reproduction writes
(:attr:`~shallowflow.reproductions.base.Reproduction.tables`, CSV); it is written atomically.

The disk, before any work (what a run or sweep checks at once, a reproduction checks in parts,
since its training calls are known only as it goes): the output place needs at least
:data:`FOLDER_FLOOR` free for the figures and the report; each training call checks the free
space for the files of the batches it will keep, with the floor still free after them
(:func:`shallowflow.training.entry.train_chains`, the estimate runs and sweeps use);
``force`` skips both. A disk that fills anyway (``results.nc``, built in memory by
:func:`shallowflow.store.write_netcdf`, a figure, a batch file) is one error naming the file and
its size (:class:`~shallowflow.errors.DiskFull`), with the finished batches kept beside the
output for ``resume``.

Where the time goes (:class:`RunTimes`): every report has one "Run time" section, written here
for every reproduction, with the wall time split into training, measures, figures and writing
(and, for a re-judged folder, the saved run's split beside the re-judge's).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from shallowflow import enable_full_precision
from shallowflow.config import ConfigError
from shallowflow.errors import shown
from shallowflow.machine import available_cores
from shallowflow.output import claim, disk_errors, write_text
from shallowflow.reproductions import report
from shallowflow.reproductions.base import (
    RESULTS,
    Params,
    Reproduction,
    Section,
    _validate,
    resolve_params,
)
from shallowflow.reproductions.claims import Claim, to_json
from shallowflow.reproductions.index import lookup
from shallowflow.runtime.executors import Executor
from shallowflow.runtime.progress import Phases
from shallowflow.store import provenance, read_netcdf, read_record, write_netcdf
from shallowflow.training.batch_store import kept_beside
from shallowflow.training.certificates import DEFAULT_PRECISION, Precision
from shallowflow.training.entry import trainer

FOLDER_FLOOR = 64 * 2**10
"""Bytes a reproduction folder needs at least beside ``results.nc``: one figure at 120 dpi
(40-200 KiB in the catalogue's quick presets) and the report's text files (about 10 KiB)."""


RUN_TIME = "Run time"
"""The heading of the report's one run-time section; a reproduction's own section of that name
(:func:`shallowflow.reproductions.base.run_time`) is folded into it."""


@dataclass
class RunTimes:
    """Where a reproduction's wall time went, in seconds (the report's "Run time" section and
    ``times`` in ``params.json``):

    - ``training``: inside the trainer's calls (:attr:`shallowflow.training.entry.Trainer.seconds`:
      preparing batches, compiling, stepping, certificates; a chain's own work between steps);
    - ``simulate_measures``: the rest of ``simulate`` (records turned into curves, theory);
    - ``judging``: ``judge`` and ``method`` (the report's sections) on the saved file;
    - ``figures``: ``draw``, the PNG files and any animation;
    - ``writing``: ``results.nc`` written and read back, and ``claims.json``.

    Each part is the time between two :class:`~shallowflow.runtime.progress.Phases` lines, so
    the parts add up to the wall time from the claimed folder to the report (the report's own
    files, milliseconds, are written after it)."""

    training: float = 0.0
    simulate_measures: float = 0.0
    judging: float = 0.0
    figures: float = 0.0
    writing: float = 0.0

    @property
    def measures(self) -> float:
        return self.simulate_measures + self.judging

    @property
    def total(self) -> float:
        return self.training + self.measures + self.figures + self.writing

    def describe(self) -> str:
        """``training T s, measures M s (in simulate S s, judging J s), figures F s, writing
        W s``."""
        return (f"training {self.training:.1f} s, measures {self.measures:.1f} s (in simulate "
                f"{self.simulate_measures:.1f} s, judging {self.judging:.1f} s), figures "
                f"{self.figures:.1f} s, writing {self.writing:.1f} s")

    @classmethod
    def of(cls, saved: object) -> RunTimes | None:
        """The split a ``params.json`` saved under ``times`` (None where it saved none: a
        folder written before the split was kept, or not a mapping of numbers)."""
        if not isinstance(saved, dict) or set(saved) != set(cls.__dataclass_fields__):
            return None
        if not all(isinstance(v, float | int) and not isinstance(v, bool) for v in saved.values()):
            return None
        return cls(**{k: float(v) for k, v in saved.items()})


def _machine_line(load: float | None) -> str:
    cores = len(available_cores())
    where = f"{cores} core{'s' if cores != 1 else ''}"
    return where if load is None else f"{where}, load average {load:.1f} at the start"


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # not offered on this system
        return None


def _trained(saved: Mapping[str, Any]) -> tuple[float | None, RunTimes | None]:
    """The wall time and split of the run that trained a saved folder, from its ``params.json``
    (a re-judged folder keeps its source's under ``simulation_wall_s``, ``simulation_times``)."""
    again = "rejudged_from" in saved
    wall = saved.get("simulation_wall_s" if again else "wall_s")
    times = RunTimes.of(saved.get("simulation_times" if again else "times"))
    ok = isinstance(wall, float | int) and not isinstance(wall, bool)
    return (float(wall) if ok else None), times


def run_time_section(times: RunTimes, load: float | None, own: list[str],
                     saved: Mapping[str, Any] | None = None) -> Section:
    """The report's "Run time" section: the wall time of this command split into its parts
    (:class:`RunTimes`), the part other than training beside the training, the machine, the
    reproduction's own run-time notes (``own``) and, for a re-judged folder, what the saved
    ``params.json`` (``saved``) says of the run that trained it."""
    rest = times.total - times.training
    lines = [f"Wall time {times.total:.1f} s on this machine ({_machine_line(load)}): "
             f"{times.describe()}."]
    if saved is None:
        lines.append(f"Everything but training: {rest:.1f} s"
                     + (f", {rest / times.training:.2f} x the training." if times.training > 0
                        else "."))
    else:
        wall, before = _trained(saved)
        took = f"the run that trained it took {wall:.1f} s" if wall is not None else ""
        split = (f"{before.describe()}" if before is not None
                 else "its split into parts was not recorded")
        lines.append("Re-judged from a saved folder, without training; "
                     + (f"{took}: {split}." if took else f"{split}."))
    return (RUN_TIME, " ".join(lines + [t.strip() for t in own if t.strip()]))


def _finish(rep: Reproduction, folder: Path, ds: xr.Dataset, params: Params, preset: str,
            precision: str, extra: Mapping[str, Any], phases: Phases, times: RunTimes,
            load: float | None, saved: Mapping[str, Any] | None = None) -> list[Claim]:
    """Judge, draw and write the report of a saved Dataset into ``folder`` (``precision``: the
    line saying what precision it was trained in), saying on stderr what it does and how long
    each part took (``phases``), and adding each part's seconds to ``times``; ``saved``: the
    ``params.json`` of a re-judged folder."""
    claims = rep.judge(ds, params)
    sections = rep.method(ds, params)
    times.judging += phases.done(f"{len(claims)} claims judged")
    import matplotlib.pyplot as plt  # loading it is part of the figures

    figures = rep.draw(ds, params)
    times.figures += phases.done(f"{len(figures)} figure(s) drawn")
    listed = []
    for f in figures:
        with disk_errors(folder / f"{f.name}.png"):
            f.fig.savefig(folder / f"{f.name}.png", dpi=120, bbox_inches="tight")
        plt.close(f.fig)
        listed.append((f"{f.name}.png", f.caption))
        times.figures += phases.done(f"{f.name}.png written")
        if f.movie is not None:
            movie = f.movie(folder)  # written through output.atomic_file
            listed.append((movie.name, f"Animation of {f.name}: one frame per recorded snapshot."))
            times.figures += phases.done(f"{movie.name} written")
    for table_name, table in (rep.tables(ds, params) if rep.tables is not None else {}).items():
        write_text(folder / table_name, table.to_csv(index=False))
        times.writing += phases.done(f"{table_name} written")
    values = params.model_dump(mode="json")
    write_text(folder / "claims.json", to_json(claims))
    times.writing += phases.done("claims.json written")
    own = [text for heading, text in sections if heading == RUN_TIME]
    sections = [s for s in sections if s[0] != RUN_TIME]
    sections += [run_time_section(times, load, own, saved), report.cite_section(rep.name)]
    text = report.render(f"{rep.name}: {rep.title}", rep.summary, listed, claims, sections,
                         preset, values, precision)
    write_text(folder / "report.md", text)
    write_text(folder / "params.json", json.dumps({"reproduction": rep.name, "preset": preset,
                                                   "params": values, "wall_s": times.total,
                                                   "times": asdict(times),
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
        phases, times, load = Phases(rep.name, show_progress), RunTimes(), _load()
        with place.writing() as folder:
            train = trainer(show_progress, executor, force, store.folder, precision,
                            FOLDER_FLOOR)
            simulated = rep.simulate(params, train)
            times.training = sum(train.seconds)
            simulate_s = phases.done(f"simulated: training {times.training:.1f} s")
            times.simulate_measures = max(0.0, simulate_s - times.training)
            write_netcdf(simulated, folder / RESULTS)
            ds = read_netcdf(folder / RESULTS)
            times.writing += phases.done(f"{RESULTS} written and read back")
            distances = np.concatenate(train.distances) if train.distances else None
            claims = _finish(rep, folder, ds, params, preset, precision.describe(distances),
                             {}, phases, times, load)
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
    wall, before = _trained(saved)
    with claim(out, "reproduction", overwrite) as place:
        phases, times, load = Phases(rep.name, show_progress), RunTimes(), _load()
        ds = read_netcdf(results)
        with place.writing() as folder:
            write_netcdf(ds, folder / RESULTS)
            times.writing += phases.done(f"{RESULTS} read and copied")
            try:
                claims = _finish(rep, folder, ds, params, saved.get("preset", "?"),
                                 saved.get("precision", DEFAULT_PRECISION.describe()),
                                 {"rejudged_from": source.name,
                                  "simulation_wall_s": wall,
                                  "simulation_times": None if before is None else asdict(before)},
                                 phases, times, load, saved)
            except (KeyError, IndexError, AttributeError) as err:  # what the saved file lacks
                raise ConfigError(
                    f"--from: {results} does not hold what {name} judges (missing "
                    f"{' '.join(str(err).split())[:80]}); it must be the {RESULTS} that "
                    f"`shallowflow reproduce {name}` wrote") from None
    return Path(out), claims
