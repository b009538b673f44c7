"""What a reproduction is: its parameters, figures and four pieces (docs/architecture.md,
"Reproductions"; running one into a folder is :mod:`shallowflow.reproductions.reproduce`).

A :class:`Reproduction` is four small pieces and its presets:

- ``simulate(params, train) -> xarray.Dataset``: everything the claims and figures need, trained
  through ``train`` (the one training entry point, :func:`shallowflow.training.entry.train` with the
  caller's progress and executor settings) and the theory modules;
- ``judge(ds, params) -> list[Claim]``: the verdicts, a pure function of the saved Dataset;
- ``draw(ds, params) -> list[Figure]``: the figures, from the saved Dataset;
- ``method(ds, params) -> list[(heading, text)]``: the report's prose sections;
- optionally ``tables(ds, params) -> {file name: DataFrame}``: CSV tables written beside the
  figures (e.g. ``census.csv`` of safran-minima), so that anyone can recount what the claims
  count.

Presets are typed: ``params`` is a pydantic model (:class:`Params`: ranges, one line of doc per
field), and ``--set key=value`` values are TOML literals as for experiments.

"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import xarray as xr
from pydantic import ValidationError

from shallowflow.config import ConfigError, StrictModel, format_validation_error, split_override
from shallowflow.errors import shown
from shallowflow.reproductions.claims import Claim
from shallowflow.training.entry import Trainer

RESULTS = "results.nc"


class Params(StrictModel):
    """Base of every reproduction's parameter model: unknown keys, non-finite numbers and
    true/false where a number is asked for refused, values frozen
    (:class:`~shallowflow.config.StrictModel`). Give each field a ``Field(...,
    description=...)`` line and its allowed range."""


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
    """A reproduction's note for the report's one "Run time" section, which
    :func:`shallowflow.reproductions.reproduce.run_time_section` writes for every reproduction
    (the wall time split into training, measures, figures and writing) and into which a method
    section of this heading is folded: the number of runs trained when ``runs``, else nothing."""
    return ("Run time", f"Runs trained: {ds.sizes['run']}." if runs else "")


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
    method: Callable[[xr.Dataset, Any], list[Section]]
    summary: str = ""
    tables: Callable[[xr.Dataset, Any], dict[str, Any]] | None = None
    """Optional: tables from the saved Dataset, file name (``census.csv``) -> pandas DataFrame,
    written as CSV into the folder beside the figures (on a re-judge too)."""

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
        raise ConfigError(f"preset: {shown(preset)} is not a preset of {rep.name}; "
                          f"allowed: {', '.join(rep.presets)}")
    values = dict(rep.presets[preset])
    for item in overrides or []:
        parts, value = split_override(item)
        key = ".".join(parts)
        if key not in rep.params.model_fields:
            raise ConfigError(f"--set: {shown(key)} is not a parameter of {rep.name}; "
                              f"allowed: {', '.join(rep.params.model_fields)}")
        values[key] = value
    return _validate(rep, values, f"preset {preset}")
