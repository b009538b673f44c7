"""Reproductions of the papers' experiments: ``shallowflow reproduce NAME --preset quick|paper``.

One subpackage per paper (``dana``, ``town``, ``boursier``, ``mmv``), one module per reproduction
holding its :class:`~shallowflow.reproductions.base.Reproduction` (simulate, judge, draw,
method) as ``REPRODUCTION``; each paper package lists its reproductions as data and
:func:`catalogue` merges them (:mod:`.index`). See :mod:`.reproduce` for the folder layout and
docs/architecture.md for how to add one.
"""

from __future__ import annotations

from shallowflow.reproductions.base import Reproduction
from shallowflow.reproductions.claims import Claim
from shallowflow.reproductions.index import catalogue, lookup
from shallowflow.reproductions.reproduce import rejudge, run_reproduction

__all__ = ["Claim", "Reproduction", "catalogue", "lookup", "rejudge", "run_reproduction"]
