"""What a reproduction is, and how one is run into a folder (docs/architecture.md,
"Reproductions").

A :class:`Reproduction` is four small pieces and its presets:

- ``simulate(params, train) -> xarray.Dataset``: everything the claims and figures need, trained
  through ``train`` (the one training entry point, :func:`shallowflow.training.train` with the
  caller's progress and executor settings) and the theory modules;
- ``judge(ds, params) -> list[Claim]``: the verdicts, a pure function of the saved Dataset;
- ``draw(ds, params) -> list[Figure]``: the figures, from the saved Dataset;
- ``protocol(ds, params) -> list[(heading, text)]``: the report's prose sections.

Presets are typed: ``params`` is a pydantic model (:class:`Params`: ranges, one line of doc per
field), and ``--set key=value`` values are TOML literals as for experiments.

:func:`run_reproduction` validates the parameters and the output folder before any work, runs
``simulate``, writes ``results.nc``, reads it back and judges and draws *the saved file*, so a
re-judged folder (:func:`rejudge`, ``shallowflow reproduce NAME --from DIR``) gives the same
claims by construction. The folder holds ``results.nc``, the figures, ``claims.json``,
``report.md``, ``params.json`` and ``provenance.json``; it is written atomically.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr
from pydantic import BaseModel, ConfigDict, ValidationError

from shallowflow import enable_full_precision
from shallowflow.batch_store import BatchStore
from shallowflow.certificate import DEFAULT_PRECISION, Precision
from shallowflow.config import ConfigError, format_validation_error, split_override
from shallowflow.executors import Executor
from shallowflow.output import claim, write_text
from shallowflow.reproductions import report
from shallowflow.reproductions.claims import Claim, to_json
from shallowflow.reproductions.index import lookup
from shallowflow.store import provenance, read_netcdf, write_netcdf
from shallowflow.training import Trainer, trainer

RESULTS = "results.nc"


class Params(BaseModel):
    """Base of every reproduction's parameter model: unknown keys refused, values frozen. Give
    each field a ``Field(..., description=...)`` line and its allowed range."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class Figure:
    """A drawn figure: saved as ``name``.png, listed in the report with ``caption``. ``movie``
    (optional): writes the figure's animation into the given folder and returns its path
    (e.g. ``functools.partial(plots.animate.animate, ds, run=0)`` on ``folder / "name.gif"``);
    it is written beside the PNG, on a re-judge too, and linked in the report."""

    name: str
    fig: Any  # matplotlib.figure.Figure
    caption: str
    movie: Callable[[Path], Path] | None = None


Section = tuple[str, str]


def run_time(ds: xr.Dataset, runs: bool = False) -> Section:
    """The protocol section "Run time": the simulation's wall time (``simulate_wall_s`` in the
    Dataset's attributes), with the number of runs when ``runs``."""
    text = f"Simulation wall time {ds.attrs['simulate_wall_s']:.1f} s on this machine"
    return ("Run time", f"{text} ({ds.sizes['run']} runs)." if runs else f"{text}.")


@dataclass(frozen=True)
class Reproduction:
    """A paper experiment: its presets and its four pieces (module docstring)."""

    name: str
    title: str
    paper: str
    params: type[Params]
    presets: Mapping[str, Mapping[str, Any]]
    simulate: Callable[[Any, Trainer], xr.Dataset]
    judge: Callable[[xr.Dataset, Any], list[Claim]]
    draw: Callable[[xr.Dataset, Any], list[Figure]]
    protocol: Callable[[xr.Dataset, Any], list[Section]]
    summary: str = ""

    def __post_init__(self) -> None:
        for preset, values in self.presets.items():  # a broken preset fails at import
            try:
                self.params.model_validate(dict(values))
            except ValidationError as err:
                raise ValueError(f"{self.name} preset {preset!r}: {err}") from None


def _validate(rep: Reproduction, values: Mapping[str, Any], source: str) -> Params:
    try:
        return rep.params.model_validate(dict(values))
    except ValidationError as err:
        lines = format_validation_error(err).splitlines()
        raise ConfigError("\n".join(f"{rep.name}.{line} [{source}]" for line in lines)) from None


def resolve_params(rep: Reproduction, preset: str, overrides: list[str] | None = None) -> Params:
    """The preset's parameters with ``key=value`` overrides (values are TOML literals, as for
    experiments), validated by the reproduction's parameter model."""
    if preset not in rep.presets:
        raise ConfigError(f"preset: {preset!r} is not a preset of {rep.name}; "
                          f"allowed: {', '.join(rep.presets)}")
    values = dict(rep.presets[preset])
    for item in overrides or []:
        parts, value = split_override(item)
        key = ".".join(parts)
        if key not in rep.params.model_fields:
            raise ConfigError(f"--set: {key!r} is not a parameter of {rep.name}; "
                              f"allowed: {', '.join(rep.params.model_fields)}")
        values[key] = value
    return _validate(rep, values, f"preset {preset}")


def _finish(rep: Reproduction, folder: Path, ds: xr.Dataset, params: Params, preset: str,
            wall: float, precision: str, extra: Mapping[str, Any]) -> list[Claim]:
    """Judge, draw and write the report of a saved Dataset into ``folder`` (``precision``: the
    line saying what precision it was trained in)."""
    import matplotlib.pyplot as plt

    claims = rep.judge(ds, params)
    figures = rep.draw(ds, params)
    listed = []
    for f in figures:
        f.fig.savefig(folder / f"{f.name}.png", dpi=120, bbox_inches="tight")
        plt.close(f.fig)
        listed.append((f"{f.name}.png", f.caption))
        if f.movie is not None:
            movie = f.movie(folder)
            listed.append((movie.name, f"Animation of {f.name}: one frame per recorded snapshot."))
    values = params.model_dump(mode="json")
    write_text(folder / "claims.json", to_json(claims))
    text = report.render(f"{rep.name}: {rep.title}", rep.summary, listed, claims,
                         rep.protocol(ds, params), preset, values, wall, precision)
    write_text(folder / "report.md", text)
    write_text(folder / "params.json", json.dumps({"reproduction": rep.name, "preset": preset,
                                                   "params": values, "wall_s": wall,
                                                   "precision": precision, **extra},
                                                  indent=2) + "\n")
    write_text(folder / "provenance.json",
               json.dumps(provenance(reproduction=rep.name, preset=preset), indent=2,
                          default=str) + "\n")
    return claims


def batch_store(out: str | Path) -> Path:
    """Where a reproduction into ``out`` keeps its finished batches until it is complete (a
    :class:`~shallowflow.batch_store.BatchStore` of the Datasets as trained): the hidden sibling
    folder ``.<out name>.batches`` (kept when the run is interrupted, removed when it
    succeeds)."""
    out = Path(out)
    return out.parent / f".{out.name}.batches"


def run_reproduction(name: str, out: str | Path, preset: str = "quick",
                     overrides: list[str] | None = None, overwrite: bool = False,
                     show_progress: bool = True, executor: Executor | None = None,
                     force: bool = False, resume: bool = False,
                     precision: Precision = DEFAULT_PRECISION) -> tuple[Path, list[Claim]]:
    """Run reproduction ``name`` with ``preset`` into the folder ``out`` (created atomically).
    The output location is checked before any work; each training call checks the memory it
    needs (``force``: train anyway). Every finished batch is kept in :func:`batch_store` until
    the folder is complete; ``resume`` reads the batches an interrupted run finished instead of
    training them again (without it, they are discarded and everything is trained).
    ``precision``: float64 (default) or float32, certified on a sample of runs rerun in float64
    (:class:`~shallowflow.certificate.Precision`); the report says which, with the verdict."""
    rep = lookup(name)
    params = resolve_params(rep, preset, overrides)
    with claim(out, "reproduction", overwrite) as place:
        enable_full_precision()
        store = BatchStore(batch_store(out))
        if not resume:
            store.discard()
        start = time.perf_counter()
        try:
            with place.writing() as folder:
                train = trainer(show_progress, executor, force, store.folder, precision)
                write_netcdf(rep.simulate(params, train), folder / RESULTS)
                ds = read_netcdf(folder / RESULTS)
                distances = np.concatenate(train.distances) if train.distances else None
                claims = _finish(rep, folder, ds, params, preset, time.perf_counter() - start,
                                 precision.describe(distances), {})
        except BaseException:
            if not store.files():  # nothing to resume from: leave nothing behind
                store.discard()
            raise
        store.discard()
    return Path(out), claims


def stored_batches(out: str | Path) -> list[Path]:
    """The finished batches an interrupted reproduction into ``out`` kept (:func:`batch_store`)."""
    return BatchStore(batch_store(out)).files()


def rejudge(name: str, source: str | Path, out: str | Path,
            overwrite: bool = False) -> tuple[Path, list[Claim]]:
    """Judge and draw a saved reproduction folder ``source`` again, without training, into the
    new folder ``out`` (its ``results.nc`` is copied there)."""
    rep = lookup(name)
    source = Path(source)
    saved_file, results = source / "params.json", source / RESULTS
    if not saved_file.is_file() or not results.is_file():
        raise ConfigError(f"--from: {str(source)!r} is not a reproduction folder (needs "
                          f"params.json and {RESULTS})")
    try:
        saved = json.loads(saved_file.read_text())
    except json.JSONDecodeError as err:
        raise ConfigError(f"--from: {saved_file.name} is not valid JSON ({err})") from None
    if saved.get("reproduction") != name:
        raise ConfigError(f"--from: {str(source)!r} holds reproduction "
                          f"{saved.get('reproduction')!r}, not {name!r}")
    params = _validate(rep, saved.get("params", {}), f"{saved_file}")
    with claim(out, "reproduction", overwrite) as place:
        start = time.perf_counter()
        ds = read_netcdf(results)
        with place.writing() as folder:
            write_netcdf(ds, folder / RESULTS)
            claims = _finish(rep, folder, ds, params, saved.get("preset", "?"),
                             time.perf_counter() - start,
                             saved.get("precision", DEFAULT_PRECISION.describe()),
                             {"rejudged_from": source.name,
                              "simulation_wall_s": saved.get("wall_s")})
    return Path(out), claims
