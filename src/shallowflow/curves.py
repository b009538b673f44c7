"""Measurements on recorded curves: when a curve crosses a level, when a neuron grows, how many
points are fitted, how much a loss rises between records.

Every function takes recorded arrays with time on the last axis (``values (..., T)``) and works
on any leading shape (runs, neurons, ...), so a reproduction measures a whole batch in one call.
The definitions are in docs/math.md §8 (measurement conventions).
"""

from __future__ import annotations

import math

import numpy as np

GROWN_NORM = 0.1  # ||w_j|| above which a neuron counts as O(1) ("grown")
FIT_FRACTION = 0.5  # a point is fitted once h(x_i) >= 50% of y_i (Town et al. App. A.1)


def first_crossing(values: np.ndarray, t: np.ndarray, levels: np.ndarray, *,
                   inclusive: bool = False, below_at_start: str = "start") -> np.ndarray:
    """First time each level is crossed from above, by linear interpolation between records.

    ``values (..., T)``, ``t (..., T)`` (or broadcastable), ``levels (K,)``; returns
    ``(..., K)``. A level is crossed at the first record with ``values < level`` (``<=`` with
    ``inclusive``); the time is t0 + (v0 - level) / (v0 - v1) (t1 - t0) between that record and
    the one before. NaN where the curve never crosses. A curve already below at its first record
    gives its first time (``below_at_start = "start"``) or NaN (``"nan"``).
    """
    if below_at_start not in ("start", "nan"):
        raise ValueError(f"below_at_start: 'start' or 'nan', got {below_at_start!r}")
    values = np.asarray(values, float)
    t = np.broadcast_to(np.asarray(t, float), values.shape)
    levels = np.asarray(levels, float)
    lv = levels[:, None]
    below = values[..., None, :] <= lv if inclusive else values[..., None, :] < lv  # (..., K, T)
    i = np.argmax(below, axis=-1)  # first record below (0 if none)
    prev = np.maximum(i - 1, 0)

    def at(v: np.ndarray, idx: np.ndarray) -> np.ndarray:  # v (..., T) at idx (..., K)
        return np.take_along_axis(v, idx, axis=-1)

    v0, v1, t0, t1 = at(values, prev), at(values, i), at(t, prev), at(t, i)
    start = t0 if below_at_start == "start" else np.nan
    with np.errstate(divide="ignore", invalid="ignore"):  # i = 0: no interpolation
        frac = (v0 - levels) / (v0 - v1)
        out = np.where(i == 0, start, t0 + frac * (t1 - t0))
    return np.where(below.any(axis=-1), out, np.nan)


def crossing_times(loss: np.ndarray, t: np.ndarray, plateaus: np.ndarray) -> np.ndarray:
    """Jump times between consecutive plateaus (L_{k-1}, L_k): the first crossing of their
    midpoint (docs/math.md §8.3). loss, t (..., T); plateaus (K+1,); returns (..., K)."""
    plateaus = np.asarray(plateaus, float)
    return first_crossing(loss, t, 0.5 * (plateaus[:-1] + plateaus[1:]))


def growth_times(log_norm: np.ndarray, t: np.ndarray, fraction: float = 0.5,
                 level: float = GROWN_NORM) -> np.ndarray:
    """(..., m) first time each neuron's norm reaches ``fraction`` of its final (last recorded)
    norm, for the neurons whose final norm is at least ``level`` (O(1)); NaN for the others. A
    fixed threshold would not do: at finite lambda a neuron waiting for a close next jump already
    has norm lambda^{-e_j}, e.g. 0.15 for e_j = -0.008 at lambda = 1e-100. log_norm (..., T, m),
    t (..., T)."""
    final = log_norm[..., -1, :]
    first = np.argmax(log_norm >= (final + math.log(fraction))[..., None, :], axis=-2)
    return np.where(final < math.log(level), np.nan, np.take_along_axis(t, first, axis=-1))


def fitted_counts(output: np.ndarray, y: np.ndarray, fraction: float = FIT_FRACTION) -> np.ndarray:
    """Number of points with h(x_i) >= fraction y_i (same sign), output (..., n)."""
    return np.sum((output * np.sign(y) >= fraction * np.abs(y)) & (y != 0), axis=-1)


def max_rise(loss: np.ndarray) -> np.ndarray:
    """Largest relative increase of the loss between consecutive records, per curve (finite
    records only; -inf when there is none). loss (..., T); returns (...)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        rise = np.diff(loss, axis=-1) / loss[..., :-1]
    rise = np.where(np.isfinite(rise), rise, -np.inf)
    return rise.max(axis=-1, initial=-np.inf)
