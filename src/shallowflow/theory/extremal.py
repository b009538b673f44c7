"""Boursier-Flammarion's function G, its pattern vectors D_A and extremal vectors (docs/math.md §2.3,
§2.7).

Inputs are the rows of X (n, d) (bias column included for 1-D data: x~ = (x, 1)). With the residual
weights c_k = -dL/dh(x_k) = -c ell'(h(x_k), y_k) (c = 1/n for the mean; at initialisation h = 0),

    G(w)   = sum_k c_k sigma(<w, x_k>)  = -(1/n) sum_k d_1 ell(h(x_k), y_k) sigma(<w, x_k>),
    A(w)   = (sign <w, x_k>)_k in {-1, 0, 1}^n                      (activation pattern),
    D_A    = sum_k c_k sigma'_A(k) x_k,  sigma'_A(k) = 1, gamma, 0 for A_k = 1, -1, 0,
    grad G = D_{A(w)} on each open cone,

so for BF's loss (``mse``, mean: ell = (yhat - y)^2) and h = 0, c_k = 2 y_k / n and
G(w) = (2/n) sum_k y_k sigma(<w, x_k>) (docs/math.md §2.3). G is the negative of
``stationary.escape.correlation`` with g_k = dL/dh(x_k) (docs/math.md §9.3), which this module
evaluates with c = -g.

Critical directions (docs/math.md §2.7): G is linear on each open cone S_A, so u on the sphere in
S_A is critical iff u = +D_A/||D_A|| (a strict local maximum: D_A is an extremal vector,
A(D_A) = A, Definition 1) or u = -D_A/||D_A|| (a strict local minimum: A(-D_A) = A). Positive
neurons (a_j > 0) align with the maxima, negative ones with the minima (Theorem 1). For d = 2 the
cones are the arcs between consecutive directions orthogonal to the x_k
(``stationary.escape.circle_boundaries``) and the enumeration is exact; there G can also have a
strict local extremum at an arc end (a kink), where the pattern has a zero and the paper's
minimal-norm pattern vector (:func:`min_norm_pattern_vector`) is G(u) u: a critical direction too
(``smooth = False``). For d > 2 the open cones are found by sampling and the fixed-point map
u <- +-D_{A(u)}/||D_{A(u)}||; every vector reported satisfies the definition exactly, but
completeness is not proven and kinks are not searched.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from shallowflow.analysis.vectors import units
from shallowflow.model.activations import RELU, Activation
from shallowflow.model.losses import Loss
from shallowflow.precision import float64
from shallowflow.stationary.escape import circle_boundaries, correlation

BF_LOSS = Loss("mse", "mean")  # BF's code: PyTorch MSELoss, (1/n) sum (yhat - y)^2 (docs/math.md §2.1)
TOL = 1e-12  # relative tolerance (to sum_k |c_k| ||x_k||) for a zero vector or a zero slope

__all__ = [
    "BF_LOSS",
    "Cones",
    "CriticalSet",
    "G",
    "circle_cones",
    "circle_local_extrema",
    "extremal_vectors",
    "gradient",
    "min_norm_pattern_vector",
    "pattern",
    "pattern_vector",
    "residual_weights",
    "sphere_gradient",
]


def residual_weights(y: object, output: object | None = None, loss: Loss = BF_LOSS) -> np.ndarray:
    """c_k = -dL/dh(x_k) = -c ell'(h(x_k), y_k), (n,), so that G(w) = sum_k c_k sigma(<w, x_k>) is
    BF's G (eq.7) at the network with outputs ``output`` (default 0: initialisation); for ``mse``
    with mean, c_k = (2/n)(y_k - h(x_k)) (docs/math.md §2.3). Computed in float64
    (:func:`shallowflow.precision.float64`)."""
    y = np.asarray(y, dtype=np.float64)
    h = np.zeros_like(y) if output is None else np.asarray(output, dtype=np.float64)
    with float64():
        return -np.asarray(loss.normaliser(np.ones(y.shape[-1]))) * np.asarray(
            loss.pointwise_derivative(h, y), dtype=np.float64)


def _scale(X: np.ndarray, c: np.ndarray) -> float:
    """sum_k |c_k| ||x_k||: the size of G's values and of every ||D_A|| (bounds both)."""
    return float(np.sum(np.abs(c) * np.linalg.norm(X, axis=1)))


def G(W: object, X: object, c: object, activation: Activation = RELU) -> np.ndarray:
    """G(w) = sum_k c_k sigma(<w, x_k>) for W (..., d); returns (...) (docs/math.md §2.3).
    ``stationary.escape.correlation`` with the weights c."""
    W = np.asarray(W, dtype=np.float64)
    return correlation(W.reshape(-1, W.shape[-1]), X, c, activation).reshape(W.shape[:-1])


def pattern(W: object, X: object) -> np.ndarray:
    """A(w) = (sign <w, x_k>)_k with sign(0) = 0, int8 (..., n) for W (..., d) (docs/math.md §2.3)."""
    return np.sign(np.asarray(W, dtype=np.float64) @ np.asarray(X, dtype=np.float64).T).astype(np.int8)


def pattern_vector(A: object, X: object, c: object, activation: Activation = RELU) -> np.ndarray:
    """D_A = sum_k c_k sigma'_A(k) x_k with sigma'_A(k) = 1 (A_k = 1), gamma (A_k = -1), 0 (A_k = 0),
    for patterns A (..., n); returns (..., d) (docs/math.md §2.3)."""
    A = np.asarray(A)
    slope = np.where(A > 0, 1.0, np.where(A < 0, activation.leak, 0.0))
    return (slope * np.asarray(c, dtype=np.float64)) @ np.asarray(X, dtype=np.float64)


def min_norm_pattern_vector(A: object, X: object, c: object,
                            activation: Activation = RELU) -> np.ndarray:
    """The minimal-norm element of {sum_k c_k s_k x_k : s_k = sigma'_A(k) where A_k != 0,
    s_k in [gamma, 1] where A_k = 0} for one pattern A (n,): BF's D_A on a cone boundary
    (docs/math.md §2.7; box-constrained least squares). Equals :func:`pattern_vector` when no
    non-zero input sits on the boundary."""
    from scipy.optimize import lsq_linear

    A = np.asarray(A)
    X = np.asarray(X, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    base = pattern_vector(A, X, c, activation)
    Z = (A == 0) & np.any(X != 0, axis=1) & (c != 0)
    if not Z.any():
        return base
    M = (c[Z, None] * X[Z]).T  # (d, |Z|)
    s = lsq_linear(M, -base, bounds=(activation.leak, 1.0), tol=1e-15, lsq_solver="exact").x
    return base + M @ s


def gradient(W: object, X: object, c: object, activation: Activation = RELU) -> np.ndarray:
    """D_{A(w)} (..., d): the gradient of G on the open cone of w (with sigma'(0) = 0 on a
    boundary, the code's convention, docs/math.md §0.3)."""
    return pattern_vector(pattern(W, X), X, c, activation)


def sphere_gradient(W: object, X: object, c: object, activation: Activation = RELU) -> np.ndarray:
    """(I - u u^T) D_{A(u)} at u = w/||w|| (..., d): the direction field of eq.8, which a positive
    (negative) balanced neuron follows (against) in the early phase (docs/math.md §2.3)."""
    W = np.asarray(W, dtype=np.float64)
    U = units(W)
    D = gradient(U, X, c, activation)
    return D - np.sum(D * U, axis=-1, keepdims=True) * U


@dataclass(frozen=True)
class Cones:
    """The activation cones of 2-D inputs: arc i is the open set of angles (lo[i], hi[i]) (radians,
    lo in [0, 2 pi), hi = the next boundary, + 2 pi for the arc that wraps), with pattern
    ``patterns[i]`` (n,) (docs/math.md §2.7)."""

    lo: np.ndarray
    hi: np.ndarray
    patterns: np.ndarray = field(repr=False)

    def __len__(self) -> int:
        return len(self.lo)

    def index(self, W: object) -> np.ndarray:
        """The arc holding each w (..., 2): int (...), -1 for w = 0. An angle on a boundary goes to
        the arc that starts there."""
        W = np.asarray(W, dtype=np.float64)
        theta = np.mod(np.arctan2(W[..., 1], W[..., 0]), 2 * np.pi)
        i = np.mod(np.searchsorted(self.lo, theta, side="right") - 1, len(self.lo))
        return np.where(np.any(W != 0, axis=-1), i, -1)


def circle_cones(X: object) -> Cones:
    """The arcs between consecutive directions orthogonal to the x_k (d = 2), each with its constant
    activation pattern, taken at the arc's midpoint (docs/math.md §2.7): at most 2n arcs."""
    X = np.asarray(X, dtype=np.float64)
    if X.shape[1] != 2:
        raise ValueError(f"X: circle cones need d = 2, got d = {X.shape[1]}")
    lo = circle_boundaries(X)
    if lo.size == 0:  # no non-zero input: one cone, the whole circle
        lo = np.zeros(1)
    hi = np.concatenate([lo[1:], [lo[0] + 2 * np.pi]])
    mid = 0.5 * (lo + hi)
    return Cones(lo, hi, pattern(np.stack([np.cos(mid), np.sin(mid)], axis=1), X))


@dataclass(frozen=True)
class CriticalSet:
    """Critical directions of G on the unit sphere (docs/math.md §2.7), K of them.

    ``directions (K, d)`` unit vectors; ``patterns (K, n)`` their A(u) (0 for the samples
    orthogonal to a kink); ``values (K,)`` G(u)
    (= +-||D_A|| for a smooth one); ``kinds (K,)`` "max" or "min" (strict local type);
    ``smooth (K,)`` True for u = +-D_A/||D_A|| inside its open cone (an extremal vector,
    Definition 1, or its min-type mirror), False for a kink (an arc end, d = 2);
    ``exact``: the enumeration is complete (d = 2) or a search result (d > 2)."""

    directions: np.ndarray = field(repr=False)
    patterns: np.ndarray = field(repr=False)
    values: np.ndarray
    kinds: np.ndarray
    smooth: np.ndarray
    exact: bool
    method: str

    def __len__(self) -> int:
        return len(self.values)

    def select(self, keep: np.ndarray) -> CriticalSet:
        """The subset ``keep`` (boolean or indices)."""
        return CriticalSet(self.directions[keep], self.patterns[keep], self.values[keep],
                           self.kinds[keep], self.smooth[keep], self.exact, self.method)


def _smooth_critical(patterns: np.ndarray, X: np.ndarray, c: np.ndarray,
                     activation: Activation) -> tuple[list[np.ndarray], list[str], list[np.ndarray]]:
    """Among the patterns (K, n), the u = +D_A/||D_A|| with A(u) = A (max) and u = -D_A/||D_A|| with
    A(u) = A (min), D_A != 0: Definition 1 tested exactly (docs/math.md §2.7)."""
    D = pattern_vector(patterns, X, c, activation)
    norm = np.linalg.norm(D, axis=1)
    dirs, kinds, pats = [], [], []
    for sign, kind in ((1.0, "max"), (-1.0, "min")):
        ok = norm > TOL * _scale(X, c)
        U = sign * D[ok] / norm[ok, None]
        hit = np.all(pattern(U, X) == patterns[ok], axis=1)
        dirs += list(U[hit])
        kinds += [kind] * int(hit.sum())
        pats += list(patterns[ok][hit])
    return dirs, kinds, pats


def _assemble(dirs: list[np.ndarray], pats: list[np.ndarray], kinds: list[str], smooth: list[bool],
              X: np.ndarray, c: np.ndarray, activation: Activation, exact: bool,
              method: str) -> CriticalSet:
    d, n = X.shape[1], X.shape[0]
    U = np.array(dirs, dtype=np.float64).reshape(-1, d)
    return CriticalSet(U, np.array(pats, dtype=np.int8).reshape(-1, n), G(U, X, c, activation),
                       np.array(kinds, dtype="<U3"), np.array(smooth, dtype=bool), exact, method)


def circle_local_extrema(X: object, c: object, activation: Activation = RELU) -> CriticalSet:
    """All strict local maxima and minima of G on the circle (d = 2), exactly (docs/math.md §2.7).

    On arc i, G(u) = <u, D_i>: an interior critical point is +-D_i/||D_i|| if it lies in the open
    arc (smooth). At the boundary b between arcs i-1 and i, with the tangent t = (-sin b, cos b),
    the one-sided slopes are s_- = <t, D_{i-1}> and s_+ = <t, D_i>: a kink maximum if s_- > 0 > s_+,
    a kink minimum if s_- < 0 < s_+ (slopes within 1e-12 sum_k |c_k| ||x_k|| of 0 count as 0, so
    the ends of a flat arc, D = 0, are not reported). A kink's pattern is that of the arc after it
    with 0 for the samples orthogonal to it (those whose sign changes there)."""
    X = np.asarray(X, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    cones = circle_cones(X)
    dirs, kinds, pats = _smooth_critical(cones.patterns, X, c, activation)
    smooth = [True] * len(dirs)
    if len(cones) > 1:
        D = pattern_vector(cones.patterns, X, c, activation)
        t = np.stack([-np.sin(cones.lo), np.cos(cones.lo)], axis=1)
        s_minus = np.sum(t * np.roll(D, 1, axis=0), axis=1)
        s_plus = np.sum(t * D, axis=1)
        tol = TOL * _scale(X, c)
        B = np.stack([np.cos(cones.lo), np.sin(cones.lo)], axis=1)
        P = np.where(np.roll(cones.patterns, 1, axis=0) == cones.patterns, cones.patterns, 0)
        for keep, kind in (((s_minus > tol) & (s_plus < -tol), "max"),
                           ((s_minus < -tol) & (s_plus > tol), "min")):
            dirs += list(B[keep])
            pats += list(P[keep])
            kinds += [kind] * int(keep.sum())
            smooth += [False] * int(keep.sum())
    order = np.argsort(np.mod(np.arctan2(*np.array(dirs).reshape(-1, 2).T[::-1]), 2 * np.pi))
    out = _assemble(dirs, pats, kinds, smooth, X, c, activation, True, "circle")
    return out.select(order)


def extremal_vectors(X: object, c: object, activation: Activation = RELU, *, starts: int = 4096,
                     iters: int = 20, seed: int = 0, method: str = "auto") -> CriticalSet:
    """The critical directions of G on the sphere: u = D_A/||D_A|| (local max; D_A is an
    extremal vector, A(D_A) = A), u = -D_A/||D_A|| (local min; A(-D_A) = A) and, for d = 2, the
    kink extrema (docs/math.md §2.7).

    ``method``: "circle" (d = 2: :func:`circle_local_extrema`, every arc and every arc end, exact,
    kinks included), "search" (open cones only: patterns of
    +-the data directions and ``starts`` random unit directions, each followed for up to ``iters``
    steps of the fixed-point map u <- +-D_{A(u)}/||D_{A(u)}||, every pattern met tested; exact
    verification of each result, completeness not proven), "auto" (circle for d = 2, else search).
    """
    X = np.asarray(X, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    d = X.shape[1]
    if method == "auto":
        method = "circle" if d == 2 else "search"
    if method == "circle":
        return circle_local_extrema(X, c, activation)
    if method != "search":
        raise ValueError(f"method: 'auto', 'circle' or 'search', got {method!r}")
    rng = np.random.default_rng(seed)
    data = X[np.linalg.norm(X, axis=1) > 0]
    data = data / np.linalg.norm(data, axis=1, keepdims=True)
    R = rng.standard_normal((starts, d))
    U0 = np.concatenate([data, -data, R / np.linalg.norm(R, axis=1, keepdims=True)])
    seen = [pattern(U0, X)]
    tol = TOL * _scale(X, c)
    for sign in (1.0, -1.0):
        U = U0
        for _ in range(iters):
            D = gradient(U, X, c, activation)
            norm = np.linalg.norm(D, axis=1)
            U = sign * D[norm > tol] / norm[norm > tol, None]
            if len(U) == 0:
                break
            seen.append(pattern(U, X))
    patterns = np.unique(np.concatenate(seen), axis=0)
    zero_input = ~np.any(X != 0, axis=1)  # A_k = 0 always; any other zero is a cone boundary
    patterns = patterns[np.all((patterns != 0) | zero_input, axis=1)]
    dirs, kinds, pats = _smooth_critical(patterns, X, c, activation)
    return _assemble(dirs, pats, kinds, [True] * len(dirs), X, c, activation, False, "search")
