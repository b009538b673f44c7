"""Boursier-Flammarion's alignment diagnostics on recorded weights (docs/math.md §2.3, §2.7).

For one run's snapshots a (T, p), W (T, p, d), data X~ (n, d) (bias column included), y (n,) and the
critical directions e_1..e_K of G (``theory.extremal``), per record and neuron:

    cos_nearest_j = max_k cos(w_j, e_k)                 (any type; NaN if K = 0 or w_j = 0)
    cos_typed_j   = max_{k : kind_k = max if a_j > 0, min if a_j < 0} cos(w_j, e_k)   (Theorem 1)
    aligned_j     = cos_typed_j >= cos(delta)
    G_j           = G(w_j/||w_j||),   live_j = (<w_j, x_k> > 0 for some k)
    frac_pos      = #{a_j > 0, aligned} / #{a_j > 0},   frac_pos_live = ... / #{a_j > 0, live}
    positive_mass = sum_{a_j > 0} |a_j| ||w_j||         (negative likewise)
    cone_index_j  = the arc holding w_j (d = 2), cone_count[c] = #{j : cone_index_j = c} (and by sign)

An empty cone (cone_count = 0) is a lost direction: the weights are no longer omnidirectional
(BF §6, App. B.2). The MMV counterparts are in ``theory.alignment`` (docs/math.md §4.2).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from shallowflow.analysis.vectors import norms
from shallowflow.model.activations import RELU, Activation
from shallowflow.model.losses import Loss
from shallowflow.theory.extremal import (
    BF_LOSS,
    CriticalSet,
    G,
    circle_cones,
    extremal_vectors,
    residual_weights,
)

DEFAULT_DELTA = 0.1  # radians: a neuron within this angle of its critical direction is aligned

__all__ = ["DEFAULT_DELTA", "alignment", "run_alignment"]


def _fraction(hit: np.ndarray, among: np.ndarray) -> np.ndarray:
    """#(hit & among) / #among over the neuron axis (NaN where among is empty)."""
    count = among.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, (hit & among).sum(axis=-1) / np.maximum(count, 1), np.nan)


def alignment(a: object, W: object, X: object, y: object, *, time: object | None = None,
              critical: CriticalSet | None = None, delta: float = DEFAULT_DELTA,
              loss: Loss = BF_LOSS, activation: Activation = RELU) -> xr.Dataset:
    """The alignment diagnostics of the module docstring for a (T, p), W (T, p, d), X (n, d), y (n,)
    (docs/math.md §2.7). ``critical``: the directions to align with (default: the extremal vectors
    of G at initialisation, h = 0, from ``extremal_vectors``). Returns a Dataset with dims
    ``time, neuron`` (and ``cone`` for d = 2, ``critical`` for the directions)."""
    a = np.asarray(a, dtype=np.float64)
    W = np.asarray(W, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    T, p, d = W.shape
    c = residual_weights(y, loss=loss)
    crit = extremal_vectors(X, c, activation) if critical is None else critical
    E = crit.directions.reshape(-1, d)
    norm = norms(W)  # exact at any scale: lambda reaches 1e-300 (shallowflow.analysis.vectors)
    U = W / np.where(norm > 0, norm, 1.0)[..., None]
    zero = norm == 0
    cos = U @ E.T  # (T, p, K)
    nan = np.full((T, p), np.nan)
    cos_nearest = np.where(zero, np.nan, cos.max(axis=-1)) if len(E) else nan
    nearest = np.where(zero, -1, cos.argmax(axis=-1)) if len(E) else np.full((T, p), -1)
    typed = np.where(a[..., None] > 0, crit.kinds == "max", np.where(a[..., None] < 0, crit.kinds == "min",
                                                                      False))
    cos_t = np.where(typed, cos, -np.inf)
    cos_typed = cos_t.max(axis=-1, initial=-np.inf)
    cos_typed = np.where(np.isfinite(cos_typed) & ~zero, cos_typed, np.nan)
    with np.errstate(invalid="ignore"):
        aligned = cos_typed >= np.cos(delta)
    live = np.stack([np.any(U[t] @ X.T > 0, axis=-1) for t in range(T)]).reshape(T, p)
    pos, neg = a > 0, a < 0
    mass = np.abs(a) * norm
    data = {
        "cos_nearest": (("time", "neuron"), cos_nearest),
        "nearest": (("time", "neuron"), nearest),
        "cos_typed": (("time", "neuron"), cos_typed),
        "aligned": (("time", "neuron"), aligned),
        "G": (("time", "neuron"), np.where(zero, np.nan, G(U, X, c, activation))),
        "live": (("time", "neuron"), live & ~zero),
        "frac_pos": ("time", _fraction(aligned, pos)),
        "frac_pos_live": ("time", _fraction(aligned, pos & live)),
        "frac_neg": ("time", _fraction(aligned, neg)),
        "frac_neg_live": ("time", _fraction(aligned, neg & live)),
        "positive_mass": ("time", np.where(pos, mass, 0.0).sum(axis=-1)),
        "negative_mass": ("time", np.where(neg, mass, 0.0).sum(axis=-1)),
        "critical_direction": (("critical", "dim"), E),
        "critical_kind": ("critical", crit.kinds),
        "critical_value": ("critical", crit.values),
    }
    coords = {"time": np.arange(T) if time is None else np.asarray(time), "neuron": np.arange(p),
              "critical": np.arange(len(E)), "dim": np.arange(d)}
    if d == 2:
        cones = circle_cones(X)
        idx = cones.index(W)  # (T, p)
        K = len(cones)

        def count(mask: np.ndarray) -> np.ndarray:
            return np.stack([np.bincount(idx[t][mask[t] & (idx[t] >= 0)], minlength=K)
                             for t in range(T)]).reshape(T, K)

        data |= {
            "cone_index": (("time", "neuron"), idx),
            "cone_count": (("time", "cone"), count(np.ones((T, p), dtype=bool))),
            "cone_count_pos": (("time", "cone"), count(pos)),
            "cone_count_neg": (("time", "cone"), count(neg)),
            "cone_lo": ("cone", cones.lo),
            "cone_hi": ("cone", cones.hi),
            "cone_pattern": (("cone", "sample"), cones.patterns),
        }
        coords |= {"cone": np.arange(K), "sample": np.arange(len(X))}
    ds = xr.Dataset(data, coords=coords)
    ds.attrs.update(delta=delta, exact=int(crit.exact), method=crit.method)
    return ds


def run_alignment(ds: xr.Dataset, run: int = 0, X: object | None = None, y: object | None = None,
                  **kwargs: object) -> xr.Dataset:
    """:func:`alignment` of run ``run`` of a results Dataset (variables ``a`` (run, time, neuron),
    ``W`` (run, time, neuron, dim), coordinate ``time``), with the data X, y given or held by the
    Dataset (``train(..., keep_data=True)``: dims ``sample, dim`` or ``run, sample, dim``)."""
    one = ds.isel(run=run)
    X = one["X"].values if X is None else X
    y = one["y"].values if y is None else y
    return alignment(one["a"].values, one["W"].values, X, y, time=one["time"].values,
                     **kwargs)  # type: ignore[arg-type]
