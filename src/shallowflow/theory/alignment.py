"""Early neuron alignment in binary classification, MMV (docs/math.md §4.1, §4.2).

Model f(x) = Σ_j v_j σ(<w_j, x>) (κ = 1), labels y_i ∈ {−1, +1}, inputs the rows of X (n, d).
Neurons are the rows of W (..., p, d) (the paper's columns of W ∈ R^{D×h}), output weights v (..., p);
leading axes (run, time, ...) are kept. Everything here is numpy on given or recorded arrays.
The measurements on recorded weights (monotone activation patterns, alignment cosines, stable
rank, the A.5 changes; docs/math.md §4.4) are in :mod:`shallowflow.theory.alignment_measures`.

Objects (docs/math.md §4.2):

    I_± = {i : y_i = ±1},   V_± = {j : sign v_j = ±1}          (current signs of v)
    x_+ = Σ_{i ∈ I_+} x_i,  x_− = Σ_{i ∈ I_−} x_i               (class directions)
    x_a(w) = Σ_{i : <x_i, w> > 0} y_i x_i                       (signed activation sum)
    S_+ = {z : 1{<x_i, z> > 0} = 1{y_i > 0} ∀i},  S_− likewise with y_i < 0,
    S_dead = {z : <z, x_i> ≤ 0 ∀i}
    μ = min_{i,k} <x_i y_i, x_k y_k> / (||x_i|| ||x_k||)          (Assumption 1: μ > 0)
    d/dt (w_j/||w_j||) ≈ sign(v_j) P_{w_j} x_a(w_j),  P_w = I − w wᵀ/||w||²     (eq.4)

Theorem 1's constants (docs/math.md §4.2) that the code recovers, with their provenance:

* ζ_1 (Lemma 8: the cap {cos(z, x_±) > √(1−ζ_1)} lies in S_±): **derived** exactly as
  ζ_1 = min( min_i cos(x_+, y_i x_i), min_i cos(−x_−, y_i x_i) )² (the angular distance from x̂_+ to
  the complement of the polyhedral cone S_+ is min_i arcsin cos(x_+, y_i x_i)).
* ζ_2 (eq.26, from Assumption 2): 1 − ζ_2 = max(0, max_{V_+} cos(w_j(0), x_−), max_{V_−} cos(w_j(0), x_+))².
* ζ = min{ζ_1, ζ_2}. **Caution:** the available text reads "ζ := max{ζ_1, ζ_2}"; the proof needs
  both inclusions, i.e. the minimum, which is used here.
* ξ (Lemma 9): **derived** ξ = μ² for n ≥ 2 (cos(·, y_i x_i) is quasi-concave on the cone
  K = cone{y_i x_i}, so its minimum over K is at a generator, i.e. μ; the nearest point outside
  S_+ ∪ S_− then lies at angle arcsin μ). Checked by sampling in tests/test_alignment_theory.py.
* t_1 = 16 log n / (min{ζ, ξ} √μ X_min) (App. C.2, the maximal path; **paper**, legible).
* α = (μ X_min)² / (32 X_max) and L(t) ≤ L(t_2)/(1 + α L(t_2)(t − t_2)) for t ≥ t_2 (App. D.2,
  **rebuilt**).
* ||W||_F² ≤ 2 ||W||_2² + 4 √h ε W_max² (App. D.3 eqs.41–43, **rebuilt**).
* Lemma 1's horizon T = log(1/(√h ε)) / (4 n X_max) (**rebuilt**) and the second term of eq.28,
  ε ≤ (1/√h) exp(−4 n X_max t_1), which is t_1 ≤ T (**derived**).

Constants that could **not** be recovered: the first term of eq.28 (legible as
min{μ, ζ, ξ} √μ X_min / (4 √h n X_max² W_max²), with the factor 4 and the min partly illegible: it is
returned as ``eps_bound_first_term_as_read`` and flagged as uncertain); the bound on t_2 (eq.39:
t_2 ≤ t_1 + 6/(√μ n_+ X_min) + 4/(√μ n_+ X_min) (log(…) + 4 n X_max t_1) with the argument of the
logarithm garbled), so only t_2 = O((1/n) log(1/ε)) is known and t_2 must be read off a run; the
constant hidden in the O(ε) of Lemma 1 beyond 4 ε n √h X_max² W_max² (as rebuilt).

Time units: t_1 and T are in the flow time of the theory's loss, a **sum** of ℓ with
−∂_ŷℓ(y, 0) = y (exponential, or 2 log(1 + e^{−yŷ})). The simulated time is
:func:`time_factor` × theory time (×n for reduction ``mean``, ×2 for shallowflow's unscaled
``logistic`` in the early phase). The loss bound keeps its form and its α under both rescalings
(derived: L_mean(t) = L(t/n)/n and L_logistic(t) = L_2log(t/2)/2 leave α L t unchanged).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from shallowflow.analysis.vectors import norms, units
from shallowflow.dynamics.cones import CONE_NAMES, OTHER, S_DEAD, S_MINUS, S_PLUS

__all__ = [
    "CONE_NAMES",
    "OTHER",
    "S_DEAD",
    "S_MINUS",
    "S_PLUS",
    "Assumption2Check",
    "Theorem1Constants",
    "alignment_time_bound",
    "assumption2",
    "class_directions",
    "cone_agreement",
    "cone_counts",
    "cone_membership",
    "direction_field",
    "frobenius_bound",
    "lemma1_horizon",
    "loss_bound",
    "loss_rate_alpha",
    "mu_separation",
    "pair_sign_agreement",
    "signed_activation_sum",
    "stable_rank_bound",
    "theorem1_constants",
    "time_factor",
    "xi_constant",
    "zeta1_constant",
]

_CHUNK_ENTRIES = 2 ** 24  # entries of a (chunk, p, n) activity block


# ------------------------------------------------------------------------------- validation
def _data(X: object, y: object) -> tuple[np.ndarray, np.ndarray]:
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X, y: need X (n, d) and y (n,), got shapes {X.shape} and {y.shape}")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X, y: entries must be finite")
    bad = ~np.isin(y, (-1.0, 1.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"y: labels must be -1 or +1 (got {y[i]} at index {i}); allowed: -1, +1")
    return X, y


def _weights(W: object, d: int, name: str = "W") -> np.ndarray:
    W = np.asarray(W, dtype=np.float64)
    if W.ndim < 1 or W.shape[-1] != d:
        raise ValueError(f"{name}: last axis must be the input dimension {d}, got shape {W.shape}")
    return W


def _signs(v: object, lead: tuple[int, ...], name: str = "v") -> np.ndarray:
    """sign(v) broadcast to ``lead`` (the shape of W without its last axis)."""
    s = np.sign(np.asarray(v, dtype=np.float64))
    try:
        return np.broadcast_to(s, lead)
    except ValueError:
        raise ValueError(f"{name}: shape {s.shape} does not match the neurons of W {lead}") from None


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos(a, b) along the last axis (broadcast); NaN where a or b is zero."""
    return np.sum(units(a) * units(b), axis=-1)


# ------------------------------------------------------------------------------- data objects
def class_directions(X: object, y: object) -> tuple[np.ndarray, np.ndarray]:
    """x_+ = Σ_{i ∈ I_+} x_i and x_− = Σ_{i ∈ I_−} x_i, each (d,) (docs/math.md §4.2).

    Sums, not means: x̄_± = x_±/|I_±| (docs/math.md §4.3) has the same direction. A class without
    points gives the zero vector.
    """
    X, y = _data(X, y)
    return X[y > 0].sum(axis=0), X[y < 0].sum(axis=0)


def mu_separation(X: object, y: object, block: int = 2048) -> float:
    """μ = min_{i,k} <x_i y_i, x_k y_k> / (||x_i|| ||x_k||) (docs/math.md §4.2, Assumption 1).

    Assumption 1 holds iff μ > 0. Centred MNIST pairs give μ < 0 (they satisfy it only
    approximately: see :func:`pair_sign_agreement`). The n × n cosine matrix is formed in row
    blocks of ``block`` rows. ValueError if some x_i = 0.
    """
    X, y = _data(X, y)
    norms = np.linalg.norm(X, axis=1)
    if np.any(norms == 0):
        raise ValueError(f"X: row {int(np.flatnonzero(norms == 0)[0])} is zero; μ needs x_i != 0")
    U = X * (y / norms)[:, None]
    return float(min(np.min(U[s:s + block] @ U.T) for s in range(0, len(U), block)))


def pair_sign_agreement(X: object, y: object, block: int = 2048) -> float:
    """Fraction of pairs i < k with y_i y_k <x_i, x_k> > 0 (1 iff Assumption 1 holds; docs/math.md §4.2).

    The paper's MNIST check (Fig. 5, left) made a number: centred digit pairs approximately satisfy
    Assumption 1 when this is close to 1. NaN for n < 2.
    """
    X, y = _data(X, y)
    n = len(y)
    if n < 2:
        return float("nan")
    U = X * y[:, None]
    good = 0
    for s in range(0, n, block):
        G = U[s:s + block] @ U.T
        rows = np.arange(s, min(s + block, n))[:, None]
        good += int(np.sum((G > 0) & (np.arange(n)[None, :] > rows)))
    return good / (n * (n - 1) / 2)


# ------------------------------------------------------------------------------- per neuron
def signed_activation_sum(W: object, X: object, y: object, leak: float = 0.0) -> np.ndarray:
    """x_a(w) = Σ_{i : <x_i, w> > 0} y_i x_i (+ leak Σ_{i : <x_i, w> < 0} y_i x_i), docs/math.md §4.2.

    W (..., d) (one or more neurons); returns (..., d). ``leak`` is App. B's leaky-ReLU slope
    (0: ReLU, the paper's main case). Strict inequalities: a point on the neuron's hyperplane
    counts in neither sum.
    """
    X, y = _data(X, y)
    W = _weights(W, X.shape[1])
    pre = W @ X.T
    coef = (pre > 0).astype(np.float64) + leak * (pre < 0)
    return (coef * y) @ X


def cone_membership(W: object, X: object, y: object) -> np.ndarray:
    """Cone of each neuron: codes OTHER = 0, S_PLUS = 1, S_MINUS = 2, S_DEAD = 3 (docs/math.md §4.2).

    W (..., d) (e.g. recorded (time, neuron, dim)); returns int8 (...). With activity
    A_i = 1{<x_i, w> > 0}: S_+ iff A_i = 1{y_i > 0} for all i, S_− iff A_i = 1{y_i < 0} for all i,
    S_dead iff no A_i (so w = 0 is dead). When a class is empty, S_± coincides with S_dead; the
    code is then S_DEAD (dead takes precedence).
    """
    X, y = _data(X, y)
    W = _weights(W, X.shape[1])
    lead = W.shape[:-1]
    flat = W.reshape(-1, X.shape[1])
    out = np.empty(len(flat), dtype=np.int8)
    pos = y > 0
    rows = max(1, _CHUNK_ENTRIES // max(1, len(y)))
    for s in range(0, len(flat), rows):
        A = flat[s:s + rows] @ X.T > 0
        code = np.full(len(A), OTHER, dtype=np.int8)
        code[np.all(A == ~pos, axis=1)] = S_MINUS
        code[np.all(A == pos, axis=1)] = S_PLUS
        code[~A.any(axis=1)] = S_DEAD
        out[s:s + rows] = code
    return out.reshape(lead)


def cone_counts(W: object, X: object, y: object, v: object | None = None) -> np.ndarray:
    """Number of neurons in each cone (OTHER, S_+, S_−, S_dead), docs/math.md §4.2.

    W (..., p, d). Without ``v``: (..., 4). With v (..., p): (..., 2, 4), row 0 counting the
    neurons of V_+ (v_j > 0) and row 1 those of V_− (v_j < 0); neurons with v_j = 0 are in neither
    row. Theorem 1 predicts, after t_1, V_+ only in S_+ or S_dead and V_− only in S_− or S_dead.
    """
    code = cone_membership(W, X, y)
    if code.ndim < 1:
        raise ValueError(f"W: need (..., p, d), got shape {np.shape(W)}")
    one_hot = code[..., None] == np.arange(4)
    if v is None:
        return one_hot.sum(axis=-2)
    s = _signs(v, code.shape)
    return np.stack([(one_hot & (s > 0)[..., None]).sum(axis=-2),
                     (one_hot & (s < 0)[..., None]).sum(axis=-2)], axis=-2)


def cone_agreement(W: object, X: object, y: object) -> np.ndarray:
    """Fraction of points whose activity matches S_+'s and S_−'s pattern, (..., 2) (docs/math.md §4.2).

    W (..., d). Entry 0: (1/n) #{i : 1{<x_i, w> > 0} = 1{y_i > 0}} (1 iff w ∈ S_+); entry 1 the
    same with 1{y_i < 0} (1 iff w ∈ S_−). A graded version of :func:`cone_membership` for data
    that satisfy Assumption 1 only approximately (centred MNIST pairs, where exact membership is
    rare).
    """
    X, y = _data(X, y)
    W = _weights(W, X.shape[1])
    flat = W.reshape(-1, X.shape[1])
    out = np.empty((len(flat), 2))
    pos = y > 0
    rows = max(1, _CHUNK_ENTRIES // max(1, len(y)))
    for s in range(0, len(flat), rows):
        A = flat[s:s + rows] @ X.T > 0
        out[s:s + rows, 0] = np.mean(A == pos, axis=1)
        out[s:s + rows, 1] = np.mean(A == ~pos, axis=1)
    return out.reshape((*W.shape[:-1], 2))


def direction_field(W: object, v: object, X: object, y: object, leak: float = 0.0) -> np.ndarray:
    """Early direction field sign(v_j) P_{w_j} x_a(w_j), P_w = I − w wᵀ/||w||² (docs/math.md §4.2, eq.4).

    W (..., p, d), v (..., p) (or any shape broadcasting to W's neurons); returns (..., p, d), the
    approximate d/dt (w_j/||w_j||) of the sum loss with −∂_ŷℓ(y, 0) = y (divide by
    :func:`time_factor` for other losses). NaN for w_j = 0. Lemma 1 bounds the error by
    4 ε n √h X_max² W_max² on [0, T] (:func:`lemma1_horizon`).
    """
    X, y = _data(X, y)
    W = _weights(W, X.shape[1])
    s = _signs(v, W.shape[:-1])
    xa = signed_activation_sum(W, X, y, leak)
    u = units(W)
    proj = xa - np.sum(u * xa, axis=-1, keepdims=True) * u
    return s[..., None] * proj


# ------------------------------------------------------------------------------- assumption 2
@dataclass(frozen=True)
class Assumption2Check:
    """Assumption 2 of MMV (docs/math.md §4.2) for an initialisation.

    Attributes
    ----------
    max_cos_plus : float
        max_{j ∈ V_+} cos(w_j(0), x_−) (−inf if V_+ is empty or x_− = 0).
    max_cos_minus : float
        max_{j ∈ V_−} cos(w_j(0), x_+) (−inf if V_− is empty or x_+ = 0).
    holds : bool
        Both maxima < 1.
    zeta2 : float
        ζ_2 of eq.26: 1 − max(0, max_cos_plus, max_cos_minus)².
    """

    max_cos_plus: float
    max_cos_minus: float
    holds: bool
    zeta2: float


def assumption2(W0: object, v: object, X: object, y: object, tol: float = 1e-12) -> Assumption2Check:
    """Check max_{j∈V_+} cos(w_j(0), x_−) < 1 and max_{j∈V_−} cos(w_j(0), x_+) < 1 (docs/math.md §4.2).

    W0 (p, d) and v (p,) at initialisation (V_± from the sign of v). A cosine within ``tol`` of 1
    counts as 1 (the assumption fails).
    """
    X, y = _data(X, y)
    W0 = _weights(W0, X.shape[1], "W0")
    if W0.ndim != 2:
        raise ValueError(f"W0: need (p, d), got shape {W0.shape}")
    s = _signs(v, W0.shape[:-1])
    xp, xm = class_directions(X, y)

    def worst(mask: np.ndarray, x: np.ndarray) -> float:
        if not mask.any() or not np.any(x):
            return -math.inf
        c = _cos(W0[mask], x)
        return float(np.nanmax(c)) if np.any(np.isfinite(c)) else -math.inf

    cp, cm = worst(s > 0, xm), worst(s < 0, xp)
    top = max(0.0, cp, cm)
    return Assumption2Check(cp, cm, bool(max(cp, cm) < 1.0 - tol), float(max(0.0, 1.0 - top * top)))


# ------------------------------------------------------------------------------- theorem 1
def zeta1_constant(X: object, y: object) -> float:
    """ζ_1 of Lemma 8 (derived, docs/math.md §4.2): the caps {cos(z, x_±) > √(1 − ζ_1)} lie in S_±.

    ζ_1 = min( min_i cos(x_+, y_i x_i), min_i cos(−x_−, y_i x_i) )², a class without points
    dropping its term; 0 when that minimum is ≤ 0 (no cap fits, e.g. without Assumption 1).
    """
    X, y = _data(X, y)
    U = X * y[:, None]
    xp, xm = class_directions(X, y)
    terms = [np.min(_cos(U, c)) for c in (xp, -xm) if np.any(c)]
    if not terms:
        raise ValueError("X: no non-zero class direction")
    m = float(min(terms))
    return m * m if m > 0 else 0.0


def xi_constant(X: object, y: object) -> float:
    """ξ of Lemma 9 (derived, docs/math.md §4.2): ξ = μ² for μ > 0 and n ≥ 2; 0 if μ ≤ 0.

    Lemma 9 asks sup |cos(z_1, z_2)| ≤ √(1 − ξ) over z_1 ∈ K = cone{y_i x_i} and z_2 outside
    S_+ ∪ S_−; that supremum is √(1 − μ²) (module docstring). n = 1 returns 1 (the set of z_2 is
    empty; any ξ ≤ 1 holds).
    """
    X, y = _data(X, y)
    if len(y) < 2:
        return 1.0
    mu = mu_separation(X, y)
    return mu * mu if mu > 0 else 0.0


def alignment_time_bound(n: int, mu: float, X_min: float, zeta: float, xi: float) -> float:
    """t_1 = 16 log n / (min{ζ, ξ} √μ X_min) (docs/math.md §4.2, Theorem 1.1; App. C.2).

    Flow time of the sum loss (multiply by :func:`time_factor` for simulated time). Infinite when
    μ ≤ 0 or min{ζ, ξ} ≤ 0. The 16 log n bounds the maximal path's travel time
    4 (H_{n_−} + 1/2 + H_{n_+ − 1}) / (min{ζ, ξ} √μ X_min) for n ≥ 3 (H_k harmonic numbers).
    """
    c = min(zeta, xi)
    if mu <= 0 or c <= 0 or X_min <= 0:
        return math.inf
    return 16.0 * math.log(n) / (c * math.sqrt(mu) * X_min)


def loss_rate_alpha(mu: float, X_min: float, X_max: float) -> float:
    """α = (μ X_min)² / (32 X_max) of Theorem 1.2 (docs/math.md §4.2; rebuilt, App. D.2). NaN if μ ≤ 0."""
    return (mu * X_min) ** 2 / (32.0 * X_max) if mu > 0 else math.nan


def loss_bound(t: object, t2: float, loss_t2: float, alpha: float) -> np.ndarray | float:
    """L(t) ≤ L(t_2) / (1 + α L(t_2)(t − t_2)) for t ≥ t_2 (docs/math.md §4.2, Theorem 1.2).

    NaN for t < t_2. The form and α hold in simulated units for either reduction and for the
    unscaled logistic loss, with t, t_2 and L in those units (module docstring).
    """
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = np.where(t >= t2, loss_t2 / (1.0 + alpha * loss_t2 * (t - t2)), np.nan)
    return float(out) if out.ndim == 0 else out


def frobenius_bound(spectral_sq: object, h: int, eps: float, W_max: float) -> np.ndarray | float:
    """||W||_F² ≤ 2 ||W||_2² + 4 √h ε W_max² (docs/math.md §4.2, Theorem 1.3; rebuilt eqs.41–43).

    ``spectral_sq`` = ||W(t)||_2²; ε W_max = max_j ||w_j(0)|| for W(0) = ε W_0 (pass ε = 1 and
    W_max = max_j ||w_j(0)|| for an initialisation that is not written as ε W_0). Holds after t_1
    for the balanced theory initialisation.
    """
    out = 2.0 * np.asarray(spectral_sq, dtype=np.float64) + 4.0 * math.sqrt(h) * eps * W_max ** 2
    return float(out) if out.ndim == 0 else out


def stable_rank_bound(spectral_sq: object, h: int, eps: float, W_max: float) -> np.ndarray | float:
    """||W||_F²/||W||_2² ≤ 2 + 4 √h ε W_max² / ||W||_2² (docs/math.md §4.2, Theorem 1.3); → 2 as W grows."""
    s = np.asarray(spectral_sq, dtype=np.float64)
    with np.errstate(divide="ignore"):
        out = 2.0 + 4.0 * math.sqrt(h) * eps * W_max ** 2 / s
    return float(out) if out.ndim == 0 else out


def lemma1_horizon(n: int, X_max: float, h: int, eps: float) -> float:
    """T = log(1/(√h ε)) / (4 n X_max), Lemma 1's horizon (docs/math.md §4.2; rebuilt, App. B)."""
    return math.log(1.0 / (math.sqrt(h) * eps)) / (4.0 * n * X_max)


def time_factor(loss: str = "exponential", reduction: str = "sum", n: int = 1) -> float:
    """Simulated flow time per unit of the theory's time in the early phase (docs/math.md §4.1).

    The theory uses a sum of ℓ with −∂_ŷℓ(y, 0) = y: ``exponential`` (factor 1) or 2 log(1 + e^{−yŷ});
    shallowflow's ``logistic`` is log(1 + e^{−yŷ}) (factor 2); reduction ``mean`` divides the
    gradient by n (factor n).
    """
    if loss not in ("exponential", "logistic"):
        raise ValueError(f"loss: must be 'exponential' or 'logistic' (got {loss!r})")
    if reduction not in ("sum", "mean"):
        raise ValueError(f"reduction: must be 'sum' or 'mean' (got {reduction!r})")
    return (2.0 if loss == "logistic" else 1.0) * (float(n) if reduction == "mean" else 1.0)


@dataclass(frozen=True)
class Theorem1Constants:
    """Theorem 1's recoverable constants for a data set and an initialisation (docs/math.md §4.2).

    Times are flow times of the theory's sum loss (see :func:`time_factor`); quantities that need
    μ > 0 are inf or NaN without Assumption 1. ``notes`` lists what could not be recovered.
    """

    n: int
    n_plus: int
    n_minus: int
    h: int
    mu: float
    X_min: float
    X_max: float
    W_max: float
    W_min: float
    eps: float
    zeta1: float
    zeta2: float
    zeta: float
    xi: float
    assumption1: bool
    assumption2: bool
    t1: float
    alpha: float
    horizon: float
    eps_bound_second_term: float
    eps_bound_first_term_as_read: float
    notes: tuple[str, ...] = field(default=())


def theorem1_constants(X: object, y: object, W0: object, v: object, eps: float = 1.0) -> Theorem1Constants:
    """μ, X_min/max, W_max/min, ζ_1, ζ_2, ζ, ξ, t_1, α, T and eq.28's terms (docs/math.md §4.2).

    W(0) = ε W_0: pass the shape W0 (h, d) and ε, or the initial weights with ε = 1 (then W_max =
    max_j ||w_j(0)||). v (h,) gives V_± (its sign). eq.28's second term ε ≤ (1/√h) exp(−4 n X_max t_1)
    is t_1 ≤ T (derived); the first term is reported as read, with an uncertain constant. The
    horizon T = log(1/(√h ε))/(4 n X_max) is meaningful only for the split W(0) = ε W_0 with W_0 of
    order one (e.g. [W_0]_ij ~ N(0, 1/D)).
    """
    X, y = _data(X, y)
    W0 = _weights(W0, X.shape[1], "W0")
    if W0.ndim != 2:
        raise ValueError(f"W0: need (h, d), got shape {W0.shape}")
    h, n = W0.shape[0], len(y)
    norms_x = np.linalg.norm(X, axis=1)
    norms_w = norms(W0, axis=1)
    mu = mu_separation(X, y)
    a2 = assumption2(W0, v, X, y)
    z1 = zeta1_constant(X, y) if mu > 0 else 0.0
    xi = xi_constant(X, y)
    zeta = min(z1, a2.zeta2)
    X_min, X_max = float(norms_x.min()), float(norms_x.max())
    W_max, W_min = float(norms_w.max()), float(norms_w.min())
    t1 = alignment_time_bound(n, mu, X_min, zeta, xi)
    second = math.exp(-4.0 * n * X_max * t1) / math.sqrt(h) if math.isfinite(t1) else 0.0
    first = (min(mu, zeta, xi) * math.sqrt(mu) * X_min / (4.0 * math.sqrt(h) * n * X_max ** 2 * W_max ** 2)
             if mu > 0 else 0.0)
    notes = (
        "eq.28 first term: factor 4 and min{mu, zeta, xi} partly illegible (as read)",
        "t_2: only O((1/n) log(1/eps)); eq.39's logarithm is garbled, read t_2 off a run",
        "zeta = min{zeta_1, zeta_2} (the text's max is taken as a slip)",
        "xi = mu^2 derived, not printed",
    )
    return Theorem1Constants(
        n=n, n_plus=int(np.sum(y > 0)), n_minus=int(np.sum(y < 0)), h=h, mu=mu, X_min=X_min,
        X_max=X_max, W_max=W_max, W_min=W_min, eps=float(eps), zeta1=z1, zeta2=a2.zeta2, zeta=zeta,
        xi=xi, assumption1=mu > 0, assumption2=a2.holds, t1=t1,
        alpha=loss_rate_alpha(mu, X_min, X_max),
        horizon=lemma1_horizon(n, X_max, h, eps),
        eps_bound_second_term=second, eps_bound_first_term_as_read=first, notes=notes)
