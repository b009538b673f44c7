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


def first_rise(values: np.ndarray, t: np.ndarray, levels: np.ndarray, *, inclusive: bool = False,
               above_at_start: str = "start") -> np.ndarray:
    """First time each level is crossed from below: :func:`first_crossing` of ``-values`` at
    ``-levels`` (docs/math.md §8.2, mirrored): the first record with ``values > level`` (``>=``
    with ``inclusive``), interpolated linearly with the record before. values, t (..., T), levels
    (K,); returns (..., K)."""
    return first_crossing(-np.asarray(values, float), t, -np.asarray(levels, float),
                          inclusive=inclusive, below_at_start=above_at_start)


def settling_time(values: np.ndarray, t: np.ndarray, rtol: float = 1e-3, atol: float = 0.0) -> np.ndarray:
    """(...) first time after which the curve stays within tol = rtol |v_end| + atol of its last
    recorded value v_end (docs/math.md §8.11): with k the last record where |v - v_end| > tol, the
    linear interpolation of the crossing of tol by |v - v_end| between records k and k + 1; the
    first time when no record is outside. values, t (..., T). Relative to the last record: a run
    not yet converged settles at its end."""
    values = np.asarray(values, float)
    t = np.broadcast_to(np.asarray(t, float), values.shape)
    dev = np.abs(values - values[..., -1:])
    tol = rtol * np.abs(values[..., -1:]) + atol
    outside = dev > tol
    T = values.shape[-1]
    last = T - 1 - np.argmax(outside[..., ::-1], axis=-1)  # last record outside (if any)
    k = np.minimum(last, T - 2)[..., None]

    def at(v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return np.take_along_axis(v, idx, axis=-1)[..., 0]

    d0, d1, t0, t1 = at(dev, k), at(dev, k + 1), at(t, k), at(t, k + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = t0 + (d0 - tol[..., 0]) / (d0 - d1) * (t1 - t0)
    return np.where(outside.any(axis=-1), cross, t[..., 0])


BF_ALIGN_LEVEL = 0.9  # fraction of the live positive neurons aligned: end of the alignment phase
BF_GROWTH_FRACTION = 0.01  # positive mass / its final value: end of Phase 2a (growth has started)
BF_FIT_FRACTION = 0.01  # (L - L_lim)/(L(0) - L_lim): end of Phase 2 (output at the OLS line)
BF_SETTLE_RTOL = 1e-3  # relative band around the final loss: convergence


def bf_phase_ends(t: np.ndarray, loss: np.ndarray, positive_mass: np.ndarray, aligned: np.ndarray,
                  *, limit_loss: np.ndarray | float | None = None, align_level: float = BF_ALIGN_LEVEL,
                  growth_fraction: float = BF_GROWTH_FRACTION, fit_fraction: float = BF_FIT_FRACTION,
                  settle_rtol: float = BF_SETTLE_RTOL) -> dict[str, np.ndarray]:
    """The ends of Boursier-Flammarion's training phases read off recorded curves (docs/math.md
    §8.11; the phases of §2.4). All curves (..., T), t (..., T) or (T,); returns (...) per key:

    * ``alignment``: first rise (:func:`first_rise`, inclusive) of ``aligned`` (e.g. the fraction
      of live positive neurons within delta of an extremal vector, ``theory.bf_alignment``) to
      ``align_level``;
    * ``phase2a``: first rise of log(positive_mass / positive_mass(end)) to log(growth_fraction)
      (positive_mass = sum_{a_j > 0} |a_j| ||w_j||: the positive neurons have started to grow);
    * ``phase2``: first crossing (:func:`first_crossing`) of the normalised excess loss
      (L - L_lim)/(L(t_0) - L_lim) below ``fit_fraction``, L_lim = ``limit_loss`` (the OLS loss
      for Theorem 2) or, by default, the last recorded loss;
    * ``convergence``: :func:`settling_time` of the loss with ``settle_rtol``.

    NaN where a curve never reaches its level."""
    loss = np.asarray(loss, float)
    L_lim = loss[..., -1] if limit_loss is None else np.broadcast_to(np.asarray(limit_loss, float),
                                                                      loss.shape[:-1])
    mass = np.asarray(positive_mass, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_mass = np.log(mass / mass[..., -1:])
        excess = (loss - L_lim[..., None]) / (loss[..., :1] - L_lim[..., None])
    return {
        "alignment": first_rise(aligned, t, [align_level], inclusive=True)[..., 0],
        "phase2a": first_rise(rel_mass, t, [math.log(growth_fraction)], inclusive=True)[..., 0],
        "phase2": first_crossing(excess, t, [fit_fraction])[..., 0],
        "convergence": settling_time(loss, t, settle_rtol),
    }


EVENT_DROP = 0.05
"""log(L_k / L_{k+1}) above this between consecutive records: the loss is dropping (§8.12)."""


def growth_events(t: np.ndarray, loss: np.ndarray, drop: float = EVENT_DROP) -> list[tuple[int, int]]:
    """The growth events of a run read off its loss (T,): maximal runs of consecutive records
    over which the loss falls by more than a factor e^drop per record (on a geometric record
    schedule: a fall faster than a power of t); each as (first, last) record index, the last
    being the first record after the fall (the network after the growth)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        fall = np.log(loss[:-1] / loss[1:]) > drop
    events, k = [], 0
    while k < len(fall):
        if fall[k]:
            j = k
            while j + 1 < len(fall) and fall[j + 1]:
                j += 1
            events.append((k, j + 1))
            k = j + 1
        else:
            k += 1
    return events
