"""Reproductions of the papers' experiments: ``shallowflow reproduce NAME --preset quick|paper``.

One subpackage per paper (``dana``, ``town``), one module per figure; each registers a
:class:`~shallowflow.reproductions.base.Reproduction` (simulate, judge, draw, protocol). See
:mod:`.base` for the folder layout and docs/architecture.md for how to add one.
"""

from __future__ import annotations

import importlib
import pkgutil

from shallowflow.reproductions.base import REGISTRY, Reproduction, rejudge, run_reproduction
from shallowflow.reproductions.claims import Claim

PAPER_PACKAGES = ("shallowflow.reproductions.dana", "shallowflow.reproductions.town",
                  "shallowflow.reproductions.boursier", "shallowflow.reproductions.mmv")


def catalogue() -> dict[str, Reproduction]:
    """All registered reproductions: importing every module of the paper packages registers
    them (a module registers its reproduction at import)."""
    for pkg in PAPER_PACKAGES:
        package = importlib.import_module(pkg)
        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{pkg}.{info.name}")
    return dict(sorted(REGISTRY.items()))


__all__ = ["Claim", "Reproduction", "catalogue", "rejudge", "run_reproduction"]
