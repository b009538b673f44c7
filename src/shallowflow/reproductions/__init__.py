"""Reproductions of the papers' experiments: ``shallowflow reproduce NAME --preset quick|paper``.

One subpackage per paper (``dana``, ``town``, ``boursier``, ``mmv``), one module per reproduction
holding its :class:`~shallowflow.reproductions.base.Reproduction` (simulate, judge, draw,
protocol) as ``REPRODUCTION``; each paper package lists its reproductions as data and
:func:`catalogue` merges them (:mod:`.index`). See :mod:`.base` for the folder layout and
docs/architecture.md for how to add one.
"""

from __future__ import annotations

from shallowflow.reproductions.base import Reproduction, rejudge, run_reproduction
from shallowflow.reproductions.claims import Claim
from shallowflow.reproductions.index import catalogue, lookup

__all__ = ["Claim", "Reproduction", "catalogue", "lookup", "rejudge", "run_reproduction"]
