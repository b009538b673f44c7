"""The catalogue of reproductions, as data (docs/architecture.md, "Reproductions").

Each paper package (:data:`PAPERS`) lists its reproductions in its ``REPRODUCTIONS`` mapping,
name -> ``"module:attribute"``. :func:`catalogue` merges the four, sorted by name, into a mapping
that imports a reproduction's module only when that name is looked up, so looking one name up
(:func:`lookup`) imports exactly its module and the shared helpers it uses; nothing registers
itself at import.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from shallowflow.config import ConfigError
from shallowflow.errors import shown

if TYPE_CHECKING:
    from shallowflow.reproductions.base import Reproduction

PAPERS = ("dana", "town", "boursier", "mmv", "safran", "population")


class Catalogue(Mapping[str, "Reproduction"]):
    """The reproductions by name (sorted); a value is imported when it is first asked for."""

    def __init__(self, targets: Mapping[str, str]) -> None:
        self._targets = dict(sorted(targets.items()))

    def __getitem__(self, name: str) -> Reproduction:
        module, _, attribute = self._targets[name].partition(":")
        return getattr(importlib.import_module(module), attribute)

    def __iter__(self) -> Iterator[str]:
        return iter(self._targets)

    def __len__(self) -> int:
        return len(self._targets)


def catalogue() -> Catalogue:
    """Every reproduction: the paper packages' ``REPRODUCTIONS`` merged (a name listed twice is
    an error); no reproduction module is imported until its name is looked up."""
    targets: dict[str, str] = {}
    for paper in PAPERS:
        listed = importlib.import_module(f"shallowflow.reproductions.{paper}").REPRODUCTIONS
        for name, target in listed.items():
            if name in targets:
                raise ValueError(f"reproduction {name!r} listed twice ({targets[name]}, {target})")
            targets[name] = target
    return Catalogue(targets)


def lookup(name: str) -> Reproduction:
    """The reproduction ``name``; imports its module only (:class:`ConfigError` listing the
    allowed names when it is unknown)."""
    reps = catalogue()
    if name not in reps:
        close = difflib.get_close_matches(name, list(reps), n=3)
        families = ", ".join(sorted({f"{n.split('-')[0]}-…" for n in reps}))
        raise ConfigError(f"name: unknown reproduction {shown(name)}"
                          + (f" (closest: {', '.join(close)})" if close else "")
                          + f"; allowed: a name `shallowflow list` shows ({families})")
    return reps[name]
