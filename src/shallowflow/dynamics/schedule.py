"""Record schedules: the steps at which probes are evaluated."""

from __future__ import annotations

import numpy as np


def record_schedule(steps: int, every: int | None = None, points: int = 0) -> np.ndarray:
    """Sorted unique record steps in [0, steps]: 0, ``steps``, every ``every``-th step (linear)
    and ``points`` geometrically spaced steps between 1 and ``steps`` (log schedule)."""
    if steps < 0:
        raise ValueError(f"steps: must be >= 0, got {steps}")
    marks = [np.array([0, steps], dtype=np.int64)]
    if every:
        marks.append(np.arange(0, steps + 1, every, dtype=np.int64))
    if points and steps > 0:
        marks.append(np.unique(np.round(np.geomspace(1, steps, points)).astype(np.int64)))
    return np.unique(np.concatenate(marks))
