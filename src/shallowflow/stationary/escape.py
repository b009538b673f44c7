"""The residual correlation function and the escape test for zero neurons (docs/math.md §9.3).

With g_k = dL/dh(x_k) (``derivatives.output_derivative``), the residual correlation function is

    G(u) = sum_k g_k sigma(<u, x_k>),      u on the unit sphere S^{d-1}.

A neuron with w_j = 0 adds kappa (a_j + b) sigma(<u, x_k>) t to the outputs when it moves to
(a_j + b, t u), so the loss changes by kappa (a_j + b) t G(u) + O(t^2 (a_j + b)^2): at first order
if a_j != 0 (descent iff a_j G(u) < 0 for some u), at second order if a_j = 0 (descent iff G(u) != 0
for some u, with b of the sign opposite to G(u)). The extrema of G on the sphere decide (§9.3).
This extends Boursier-Flammarion's G to theta != 0 (docs/math.md §2.3: at theta = 0 and their
mse loss, G_BF = -G) and gives the rate of Town et al.'s jump rule (§3.4: on orthonormal data at a
saddle theta^(k), -min G = c_L ||D_j^(k)|| for a positive neuron whose mask holds every unfitted
positive point, square loss, T = 1). No function of ``shallowflow.theory`` computes G for general
data; Algorithm 1 (``theory.saddle_process``) is specific to orthonormal data (§9.3).

G is positively homogeneous and linear on each activation cone, G(u) = <u, D_A>,
D_A = sum_k g_k sigma'_A(k) x_k, so its critical directions on the sphere are the extremal vectors
D_A / ||D_A|| with A(D_A) = A (§2.3).

* d <= 2 (1-D data with a bias, inputs (x, 1)): exact. The circle is cut by the 2n directions
  orthogonal to the x_k into arcs on which G(u) = <u, D_A>; the maximum of a linear function on an
  arc is at an end or at D_A / ||D_A||, so the extremum is the best of at most 6n candidates.
* d > 2: a search. From +-the data directions (64 at most), +-D_all / ||D_all|| and 32 random
  starts, projected ascent u <- normalise(u + eta D_{A(u)}) with step shrinking, alternated with
  the fixed-point jump u <- D_{A(u)} / ||D_{A(u)}|| when it improves. Each value found is a
  value of G, so a found escape is certain; "no escape" is a search result, not a proof.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from shallowflow.model.activations import RELU, Activation


@dataclass(frozen=True)
class Extrema:
    """max and min of G on the unit sphere and unit directions attaining them (docs/math.md §9.3).
    ``exact``: proven extrema (d <= 2); otherwise the best values a search found (true values of G,
    bounds on the extrema from inside)."""

    maximum: float
    argmax: np.ndarray = field(repr=False)
    minimum: float
    argmin: np.ndarray = field(repr=False)
    exact: bool
    method: str  # "circle" (exact, d <= 2), "search" (d > 2) or "none" (g = 0 or no data)
    candidates: int  # directions evaluated


def _act(z: np.ndarray, activation: Activation) -> np.ndarray:
    return np.where(z > 0, z, activation.leak * z)


def _dact(z: np.ndarray, activation: Activation) -> np.ndarray:
    return np.where(z > 0, 1.0, np.where(z < 0, activation.leak, 0.0))


def correlation(U: object, X: object, g: object, activation: Activation = RELU) -> np.ndarray:
    """G(u) = sum_k g_k sigma(<u, x_k>) for each row u of U (m, d) (or one u (d,)) (§9.3)."""
    U = np.asarray(U, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    g = np.asarray(g, dtype=np.float64)
    out = _act(np.atleast_2d(U) @ X.T, activation) @ g
    return out if U.ndim == 2 else out[0]


def _evaluate(U: np.ndarray, X: np.ndarray, g: np.ndarray, activation: Activation,
              chunk: int = 4096) -> np.ndarray:
    return np.concatenate([correlation(U[i:i + chunk], X, g, activation)
                           for i in range(0, len(U), chunk)]) if len(U) else np.zeros(0)


def _unit(V: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(V, axis=-1, keepdims=True)
    return np.where(n > 0, V / np.where(n > 0, n, 1.0), 0.0)


def _pick(U: np.ndarray, values: np.ndarray, d: int, exact: bool, method: str) -> Extrema:
    i, k = int(np.argmax(values)), int(np.argmin(values))
    return Extrema(float(values[i]), U[i].copy(), float(values[k]), U[k].copy(), exact, method,
                   len(U))


def circle_boundaries(X: np.ndarray) -> np.ndarray:
    """The sorted distinct angles in [0, 2 pi) of the directions orthogonal to the non-zero x_k
    (d = 2): the ends of the arcs on which the activation pattern is constant (docs/math.md §9.3)."""
    X = np.asarray(X, dtype=np.float64)
    Xn = X[np.linalg.norm(X, axis=1) > 0]
    phi = np.arctan2(Xn[:, 1], Xn[:, 0])
    return np.unique(np.mod(np.concatenate([phi + np.pi / 2, phi - np.pi / 2]), 2 * np.pi))


def circle_candidates(X: np.ndarray, g: np.ndarray, activation: Activation = RELU) -> np.ndarray:
    """The candidate unit directions of the exact search for d = 2 (docs/math.md §9.3): the 2n
    boundary directions orthogonal to each x_k and +-D_A / ||D_A|| for the pattern A of each arc."""
    X = np.asarray(X, dtype=np.float64)
    bounds = circle_boundaries(X)
    if bounds.size == 0:
        return np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    nxt = np.concatenate([bounds[1:], [bounds[0] + 2 * np.pi]])
    mid = 0.5 * (bounds + nxt)
    M = np.stack([np.cos(mid), np.sin(mid)], axis=1)
    D = (_dact(M @ X.T, activation) * g[None, :]) @ X  # D_A of each arc (arcs, 2)
    Dn = _unit(D)
    B = np.stack([np.cos(bounds), np.sin(bounds)], axis=1)
    return np.concatenate([B, Dn[np.linalg.norm(D, axis=1) > 0], -Dn[np.linalg.norm(D, axis=1) > 0]])


def _ascend(U: np.ndarray, X: np.ndarray, g: np.ndarray, activation: Activation,
            iters: int, patience: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Projected ascent of G from the rows of U, with step doubling/quartering and fixed-point
    jumps; a start stops when its step has shrunk below 1e-10 of the scale
    1 / (sum |g_k| max ||x_k||) or it gained less than 1e-10 of sum |g_k| max ||x_k|| in
    ``patience`` consecutive iterations (docs/math.md §9.3)."""
    scale = max(float(np.sum(np.abs(g)) * np.max(np.linalg.norm(X, axis=1))), 1e-300)
    U = U.copy()
    eta = np.full(len(U), 1.0 / scale)
    val = correlation(U, X, g, activation)
    idle = np.zeros(len(U), dtype=int)
    live = np.arange(len(U))
    for _ in range(iters):
        if live.size == 0:
            break
        u, e, v = U[live], eta[live], val[live]
        D = (_dact(u @ X.T, activation) * g[None, :]) @ X  # gradient D_{A(u)}
        jump = _unit(D)
        jump_val = correlation(jump, X, g, activation)
        step = _unit(u + e[:, None] * D)
        step_val = correlation(step, X, g, activation)
        use_jump = (jump_val > v) & (jump_val >= step_val) & (np.linalg.norm(D, axis=1) > 0)
        use_step = (step_val > v) & ~use_jump
        new_val = np.where(use_jump, jump_val, np.where(use_step, step_val, v))
        U[live] = np.where(use_jump[:, None], jump, np.where(use_step[:, None], step, u))
        idle[live] = np.where(new_val - v > 1e-10 * scale, 0, idle[live] + 1)
        val[live] = new_val
        eta[live] = np.where(use_step, e * 2.0, np.where(use_jump, e, e * 0.25))
        live = live[(eta[live] * scale >= 1e-10) & (idle[live] < patience)]
    return U, val


def extrema(X: object, g: object, activation: Activation = RELU, starts: int = 32,
            iters: int = 100, max_data_starts: int = 64, seed: int = 0) -> Extrema:
    """max and min of G(u) = sum_k g_k sigma(<u, x_k>) on the unit sphere and their directions:
    exact for d <= 2 (:func:`circle_candidates`), by the extremal-vector search otherwise
    (docs/math.md §9.3)."""
    X = np.asarray(X, dtype=np.float64)
    g = np.asarray(g, dtype=np.float64)
    n, d = X.shape
    if n == 0 or not np.any(g) or not np.any(X):
        e = np.zeros(d)
        e[0] = 1.0
        return Extrema(0.0, e, 0.0, e.copy(), True, "none", 0)
    if d == 1:
        U = np.array([[1.0], [-1.0]])
        return _pick(U, correlation(U, X, g, activation), d, True, "circle")
    if d == 2:
        U = circle_candidates(X, g, activation)
        return _pick(U, _evaluate(U, X, g, activation), d, True, "circle")
    rng = np.random.default_rng(seed)
    data = _unit(X[np.linalg.norm(X, axis=1) > 0])
    if len(data) > max_data_starts:
        data = data[rng.choice(len(data), max_data_starts, replace=False)]
    D_all = _unit((g @ X)[None, :])
    base = np.concatenate([data, -data, D_all, -D_all, _unit(rng.standard_normal((starts, d)))])
    Umax, vmax = _ascend(base, X, g, activation, iters)
    Umin, vmin = _ascend(base, X, -g, activation, iters)
    i, k = int(np.argmax(vmax)), int(np.argmax(vmin))
    return Extrema(float(vmax[i]), Umax[i].copy(), float(-vmin[k]), Umin[k].copy(), False,
                   "search", 2 * len(base))
