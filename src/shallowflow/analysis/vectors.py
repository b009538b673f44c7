"""Norms and directions of rows of vectors, exact at any scale (docs/math.md §2.7).

``np.linalg.norm`` squares the entries, so a neuron of scale lambda / sqrt(m) gets the norm 0 once
lambda^2 / m is below the smallest normal float (about 1e-154 per entry in float64: the
Boursier-Flammarion alignment study runs lambda down to 1e-300) and +inf above 1e154. Dividing by
the largest entry first keeps every finite, nonzero row's norm and direction exact to rounding.
"""

from __future__ import annotations

import numpy as np


def norms(x: object, axis: int = -1) -> np.ndarray:
    """||x|| along ``axis`` = peak ||x / peak||, peak = max |x_i| (0 for a zero row)."""
    x = np.asarray(x, dtype=np.float64)
    peak = np.max(np.abs(x), axis=axis, keepdims=True)
    scaled = x / np.where(peak > 0, peak, 1.0)
    return np.squeeze(peak, axis) * np.linalg.norm(scaled, axis=axis)


def units(x: object, axis: int = -1) -> np.ndarray:
    """x / ||x|| along ``axis`` (:func:`norms`); NaN where x = 0."""
    x = np.asarray(x, dtype=np.float64)
    norm = np.expand_dims(norms(x, axis), axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm > 0, x / np.where(norm > 0, norm, 1.0), np.nan)
