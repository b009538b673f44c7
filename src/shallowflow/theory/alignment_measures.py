"""Measurements on recorded weights for MMV's early alignment (docs/math.md §4.2, §4.4).

What the experiments of MMV read off a trajectory of recorded first-layer weights W (..., p, d) and
output weights v (..., p), the model, shapes and sets being those of
:mod:`shallowflow.theory.alignment` (docs/math.md §4.1, §4.2): violations of the monotone
activation patterns between consecutive records (eqs.7–8), the alignment cosines cos(w̄_±, x_±)
with their bands over V_±, ||W||_2² and the stable rank ||W||_F²/||W||_2², and the two A.5
"changes" (neuron norms and directions), from a full gradient or as finite differences of records
(docs/math.md §4.4). Everything here is numpy on given or recorded arrays; the in-loop probes of
``dynamics/probes.py`` compute the same definitions (docs/math.md §4.5).
"""

from __future__ import annotations

import numpy as np

from shallowflow.analysis.vectors import norms, units
from shallowflow.theory.alignment import _CHUNK_ENTRIES, _cos, _data, _signs, _weights

__all__ = [
    "activation_violations",
    "alignment_cosines",
    "changes_from_gradient",
    "changes_from_snapshots",
    "direction_velocity",
    "spectral_norm_sq",
    "stable_rank",
]


# ------------------------------------------------------------------------------- monotonicity
def activation_violations(W: object, v: object, X: object, y: object, tol: float = 0.0) -> np.ndarray:
    """Violations of monotone activation patterns between consecutive records (docs/math.md §4.2, eq.7-8).

    A neuron of V_+ may only gain positive points and lose negative ones; one of V_− the reverse.
    W (..., time, p, d) recorded weights, v (..., time, p) or (..., p) (constant signs). Returns int
    (..., time − 1, p): for each pair of consecutive records and neuron, the number of points i
    whose activity changed the forbidden way: for sign s_j = sign v_j at both records,
    s_j y_i = +1 and active → inactive, or s_j y_i = −1 and inactive → active. Pairs where v_j
    changed sign or is 0 count nothing. Activity: cos(w_j, x_i) > tol; inactivity: cos ≤ −tol
    (tol = 0: ≤ 0), so with tol > 0 a crossing within the band around the hyperplane is ignored.
    """
    X, y = _data(X, y)
    W = _weights(W, X.shape[1])
    if W.ndim < 3:
        raise ValueError(f"W: need (..., time, p, d), got shape {W.shape}")
    s = _signs(v, W.shape[:-1]) if np.ndim(v) == W.ndim - 1 else _signs(
        np.expand_dims(np.asarray(v), -2), W.shape[:-1])
    Xu = units(X)
    T = W.shape[-3]
    per_record = max(1, int(np.prod(W.shape[:-3], dtype=np.int64)) * W.shape[-2] * len(y))
    step = max(1, _CHUNK_ENTRIES // per_record)
    out = np.zeros((*W.shape[:-3], max(T - 1, 0), W.shape[-2]), dtype=np.int64)
    for a in range(0, T - 1, step):
        b = min(a + step, T - 1)  # pairs (k, k+1) for k in [a, b)
        C = np.nan_to_num(units(W[..., a:b + 1, :, :]) @ Xu.T, nan=0.0)  # cosines; 0 for w_j = 0
        on = C > tol
        off = C <= -tol if tol > 0 else ~on
        sk = s[..., a:b + 1, :]
        same = (sk[..., 1:, :] == sk[..., :-1, :]) & (sk[..., :-1, :] != 0)
        sy = sk[..., :-1, :, None] * y  # (..., pairs, p, n)
        lose = on[..., :-1, :, :] & off[..., 1:, :, :]
        gain = off[..., :-1, :, :] & on[..., 1:, :, :]
        bad = ((sy > 0) & lose) | ((sy < 0) & gain)
        out[..., a:b, :] = np.where(same, bad.sum(axis=-1), 0)
    return out


# ------------------------------------------------------------------------------- recorded quantities
def alignment_cosines(W: object, v: object, x_plus: object, x_minus: object) -> dict[str, np.ndarray]:
    """cos(w̄_±, x_±) and their bands over V_± (docs/math.md §4.4), sets from the current sign of v.

    W (..., p, d), v (..., p), x_plus and x_minus (d,). Returns arrays of shape (...) under the
    keys ``plus`` (cos(w̄_+, x_+), w̄_+ = mean of w_j over V_+), ``plus_min``, ``plus_max``
    (min/max over j ∈ V_+ of cos(w_j, x_+)), and ``minus``, ``minus_min``, ``minus_max``
    likewise with V_− and x_−. NaN where the set is empty or the vectors are zero. The
    directions w_j/||w_j|| are computed once for both classes; cos(w_j, x) = <w_j/||w_j||,
    x/||x||> and the sums over V_± are matrix products.
    """
    W = np.asarray(W, dtype=np.float64)
    d = W.shape[-1]
    s = _signs(v, W.shape[:-1])
    U = units(W)  # (..., p, d); NaN rows where w_j = 0
    out: dict[str, np.ndarray] = {}
    for key, mask, x in (("plus", s > 0, x_plus), ("minus", s < 0, x_minus)):
        x = _weights(x, d, f"x_{key}")
        if x.ndim != 1:
            raise ValueError(f"x_{key}: must be one vector of shape ({d},), got shape {x.shape}")
        c = U @ units(x)  # (..., p): cos(w_j, x); NaN where w_j = 0 or x = 0
        count = mask.sum(axis=-1)
        wbar = (mask[..., None, :].astype(np.float64) @ W)[..., 0, :]  # (..., d): sum over V_±
        with np.errstate(invalid="ignore"):
            out[key] = np.where(count > 0, _cos(wbar, x), np.nan)
        valid = mask & np.isfinite(c)
        lo = np.min(np.where(valid, c, np.inf), axis=-1)
        hi = np.max(np.where(valid, c, -np.inf), axis=-1)
        out[f"{key}_min"] = np.where(np.isfinite(lo), lo, np.nan)
        out[f"{key}_max"] = np.where(np.isfinite(hi), hi, np.nan)
    return out


def spectral_norm_sq(W: object) -> np.ndarray | float:
    """||W||_2², the largest squared singular value over the last two axes (docs/math.md §4.4).

    Computed as the largest eigenvalue of the smaller Gram matrix, W Wᵀ (m × m) for W (..., m, k)
    with m <= k, else Wᵀ W (k × k), all records at once (``np.linalg.eigvalsh`` on the stacked
    Gram matrices): σ_max(W)² = λ_max(W Wᵀ) = λ_max(Wᵀ W). For MMV's records (T, 50, 784) that is
    T symmetric 50 × 50 eigenvalue problems instead of T SVDs of 50 × 784 matrices (about 100x
    faster); the two agree to rounding (a relative 1e−15 of ||W||_2²). Each matrix is scaled by
    the power of two 2^−e nearest its largest entry before its Gram matrix is formed and the
    eigenvalue scaled back by 2^2e (both exact), so the Gram matrix neither underflows nor
    overflows at any scale (entries from 1e−150 to 1e150; the result itself is a float64 only
    inside that range). A zero matrix (or one with an empty axis) gives 0; rounding never makes
    the result negative.
    """
    W = np.asarray(W, dtype=np.float64)
    m, k = W.shape[-2:]
    if m == 0 or k == 0:
        out = np.zeros(W.shape[:-2])
    else:
        _, e = np.frexp(np.max(np.abs(W), axis=(-2, -1)))  # largest |entry| = f 2^e, f in [1/2, 1)
        Ws = np.ldexp(W, -e[..., None, None])
        Wt = np.swapaxes(Ws, -1, -2)
        gram = Ws @ Wt if m <= k else Wt @ Ws
        out = np.ldexp(np.maximum(np.linalg.eigvalsh(gram)[..., -1], 0.0), 2 * e)
    return float(out) if out.ndim == 0 else out


def stable_rank(W: object, spectral_sq: object | None = None) -> np.ndarray | float:
    """||W||_F² / ||W||_2² over the last two axes (docs/math.md §4.4); NaN where W = 0.
    ``spectral_sq``: ||W||_2² when the caller has it (:func:`spectral_norm_sq` of the same W),
    else computed here."""
    W = np.asarray(W, dtype=np.float64)
    fro = np.sum(W * W, axis=(-2, -1))
    spec = np.asarray(spectral_norm_sq(W) if spectral_sq is None else spectral_sq)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(spec > 0, fro / np.where(spec > 0, spec, 1.0), np.nan)
    return float(out) if out.ndim == 0 else out


def changes_from_gradient(W: object, grad_W: object) -> tuple[np.ndarray, np.ndarray]:
    """The two A.5 "changes" of one full-gradient flow step (docs/math.md §4.4).

    W and grad_W = ∇_W L, both (..., p, d). Returns (norms, directions), each (...):

        norms      = Σ_j |<−∇_{w_j} L, w_j/||w_j||>|                  = Σ_j |d||w_j||/dt|
        directions = Σ_j ||(I − w̄_j w̄_jᵀ)(−∇_{w_j} L)|| / ||w_j||      = Σ_j ||d(w_j/||w_j||)/dt||

    with w̄_j = w_j/||w_j||; neurons with w_j = 0 are left out of both sums.
    """
    W = np.asarray(W, dtype=np.float64)
    G = -np.asarray(grad_W, dtype=np.float64)
    norm = norms(W)
    u = np.nan_to_num(units(W))
    radial = np.sum(G * u, axis=-1)
    tangential = np.linalg.norm(G - radial[..., None] * u, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        direc = np.where(norm > 0, tangential / np.where(norm > 0, norm, 1.0), 0.0)
    return np.sum(np.where(norm > 0, np.abs(radial), 0.0), axis=-1), np.sum(direc, axis=-1)


def direction_velocity(W: object, t: object) -> np.ndarray:
    """Finite-difference d(w_j/||w_j||)/dt between consecutive records (docs/math.md §4.2, §4.4).

    W (..., time, p, d), t (time,) increasing. Returns (..., time − 1, p, d),
    (w̄_j(t_{k+1}) − w̄_j(t_k)) / (t_{k+1} − t_k) with w̄ = w/||w||; NaN where w_j = 0 at either
    record. Compare with :func:`shallowflow.theory.alignment.direction_field` at t_k (Lemma 1) for
    records one step apart.
    """
    W = np.asarray(W, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    if W.ndim < 3 or t.shape != (W.shape[-3],):
        raise ValueError(f"W, t: need W (..., time, p, d) and t (time,), got {W.shape} and {t.shape}")
    dt = np.diff(t)
    if np.any(dt <= 0):
        raise ValueError(f"t: record times must increase (got {t.tolist()})")
    return np.diff(units(W), axis=-3) / dt[:, None, None]


def changes_from_snapshots(W: object, t: object) -> tuple[np.ndarray, np.ndarray]:
    """The two A.5 "changes" as finite differences of consecutive records (docs/math.md §4.4).

    W (..., time, p, d), t (time,) increasing record times. Returns (norms, directions), each
    (..., time − 1), for the interval [t_k, t_{k+1}]:

        norms      = Σ_j | ||w_j(t_{k+1})|| − ||w_j(t_k)|| | / (t_{k+1} − t_k)
        directions = Σ_j || w_j(t_{k+1})/||w_j(t_{k+1})|| − w_j(t_k)/||w_j(t_k)|| || / (t_{k+1} − t_k)

    Neurons that are zero at either record are left out. One GD step apart (Δt = step size) this
    matches :func:`changes_from_gradient` at t_k to first order in the step.
    """
    vel = direction_velocity(W, t)
    W = np.asarray(W, dtype=np.float64)
    dt = np.diff(np.asarray(t, dtype=np.float64))
    norm = norms(W)
    ok = (norm[..., 1:, :] > 0) & (norm[..., :-1, :] > 0)
    dn = np.where(ok, np.abs(np.diff(norm, axis=-2)), 0.0) / dt[:, None]
    du = np.where(ok, np.linalg.norm(np.nan_to_num(vel), axis=-1), 0.0)
    return dn.sum(axis=-1), du.sum(axis=-1)
