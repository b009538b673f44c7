"""What a reproduction is, and how one is run into a folder.

A :class:`Reproduction` has a name (``dana-fig3``), presets (``quick``: minutes on 2 cores;
``paper``: the paper's sizes) and a ``build`` function. ``build(ctx)`` trains and computes
through the library, draws its figures with ``ctx.figure``, keeps its data with ``ctx.data``, adds
report sections with ``ctx.section`` and returns its :class:`~shallowflow.reproductions.claims.Claim`
list. :func:`run_reproduction` validates the preset and overrides before any work, runs ``build``
in a temporary folder and renames it to ``out`` only on success, then writes ``claims.json``,
``report.md``, ``params.json`` and ``provenance.json`` beside the figures.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import xarray as xr
import yaml

from shallowflow.reproductions import report
from shallowflow.reproductions.claims import Claim, to_json
from shallowflow.store import atomic_dir, provenance, write_netcdf, write_text


@dataclass
class Context:
    """What ``build`` gets: its parameters, its (temporary) output folder and report helpers."""

    params: dict[str, Any]
    folder: Path
    show_progress: bool = True
    figures: list[tuple[str, str]] = field(default_factory=list)
    sections: list[tuple[str, str]] = field(default_factory=list)
    summary: str = ""

    def figure(self, name: str, fig, caption: str) -> None:
        """Save ``fig`` as ``name``.png and list it in the report with ``caption``."""
        path = f"{name}.png"
        fig.savefig(self.folder / path, dpi=120, bbox_inches="tight")
        plt.close(fig)
        self.figures.append((path, caption))

    def data(self, name: str, ds: xr.Dataset) -> None:
        """Keep ``ds`` as ``name``.nc."""
        write_netcdf(ds, self.folder / f"{name}.nc")

    def section(self, heading: str, text: str) -> None:
        self.sections.append((heading, text))


@dataclass(frozen=True)
class Reproduction:
    """A paper experiment with its presets and its build function."""

    name: str
    title: str
    paper: str
    build: Callable[[Context], list[Claim]]
    presets: Mapping[str, Mapping[str, Any]]
    description: str = ""


REGISTRY: dict[str, Reproduction] = {}


def register(rep: Reproduction) -> Reproduction:
    if rep.name in REGISTRY:
        raise ValueError(f"reproduction {rep.name!r} registered twice")
    REGISTRY[rep.name] = rep
    return rep


def resolve_params(rep: Reproduction, preset: str, overrides: list[str] | None = None) -> dict:
    """The preset's parameters with ``key=value`` overrides (values parsed as YAML), checked
    against the preset's keys and types."""
    if preset not in rep.presets:
        raise ValueError(f"preset: {preset!r} is not a preset of {rep.name}; "
                         f"allowed: {', '.join(rep.presets)}")
    params = dict(rep.presets[preset])
    for item in overrides or []:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep:
            raise ValueError(f"--set: expected key=value, got {item!r}")
        if key not in params:
            raise ValueError(f"--set: {key!r} is not a parameter of {rep.name}; "
                             f"allowed: {', '.join(params)}")
        value = yaml.safe_load(raw)
        old = params[key]
        if isinstance(old, float) and isinstance(value, (int, str)) and not isinstance(value, bool):
            try:  # YAML 1.1 reads 1e-12 (no dot) as a string
                value = float(value)
            except ValueError:
                pass
        if old is not None and type(value) is not type(old):
            raise ValueError(f"--set {key}: expected {type(old).__name__} like {old!r}, "
                             f"got {raw!r}")
        params[key] = value
    return params


def run_reproduction(name: str, out: str | Path, preset: str = "quick",
                     overrides: list[str] | None = None, overwrite: bool = False,
                     show_progress: bool = True) -> tuple[Path, list[Claim]]:
    """Run reproduction ``name`` with ``preset`` into the folder ``out`` (created atomically)."""
    from shallowflow.reproductions import catalogue

    reps = catalogue()
    if name not in reps:
        raise ValueError(f"name: unknown reproduction {name!r}; allowed: {', '.join(reps)}")
    rep = reps[name]
    params = resolve_params(rep, preset, overrides)
    start = time.perf_counter()
    with atomic_dir(out, overwrite) as folder:
        ctx = Context(params, folder, show_progress)
        claims = rep.build(ctx)
        wall = time.perf_counter() - start
        write_text(folder / "claims.json", to_json(claims))
        text = report.render(f"{rep.name}: {rep.title}", ctx.summary or rep.description,
                             ctx.figures, claims, ctx.sections, preset, params, wall)
        write_text(folder / "report.md", text)
        write_text(folder / "params.json", json.dumps({"reproduction": name, "preset": preset,
                                                       "params": params, "wall_s": wall},
                                                      indent=2) + "\n")
        write_text(folder / "provenance.json",
                   json.dumps(provenance(reproduction=name, preset=preset), indent=2,
                              default=str) + "\n")
    return Path(out), claims
