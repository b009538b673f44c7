"""Estimates drawn with their intervals.

A percentile bootstrap interval need not contain its point estimate (a skewed statistic with few
runs), so an interval is drawn as the segment from its lower to its upper bound, never as
``errorbar`` offsets from the estimate (matplotlib refuses negative offsets). A bound that is not
finite is drawn at the estimate (the side stays open).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def interval_bars(ax: Any, at: Any, centre: Any, lo: Any, hi: Any, *, horizontal: bool = False,
                  color: str = "k", ms: float = 4, label: str | None = None) -> None:
    """Markers at ``centre`` and segments [lo, hi] at the positions ``at`` (vertical segments;
    horizontal ones with ``horizontal``, the positions then being y values)."""
    at, centre = np.atleast_1d(np.asarray(at, float)), np.atleast_1d(np.asarray(centre, float))
    lo = np.where(np.isfinite(lo), lo, centre)
    hi = np.where(np.isfinite(hi), hi, centre)
    if horizontal:
        ax.hlines(at, lo, hi, color=color, lw=1)
        ax.plot(centre, at, "o", color=color, ms=ms, label=label)
    else:
        ax.vlines(at, lo, hi, color=color, lw=1)
        ax.plot(at, centre, "o", color=color, ms=ms, label=label)
