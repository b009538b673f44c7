"""The spectrum of the smooth-part Hessian with the rescaling-symmetry modes set aside
(docs/math.md §9.2).

The loss is invariant under a_j -> c a_j, w_j -> w_j / c (ReLU is positively homogeneous), so at
a stationary point the Hessian has the zero mode

    s_j = (a_j e_{a_j}, -w_j e_{w_j}) / sqrt(a_j^2 + ||w_j||^2)

for every neuron j of the smooth part (H s_j = -(dS/dc)^T grad L = 0). These q orthonormal
vectors (disjoint supports) are projected out: the spectrum reported is that of P H P on the
complement of their span, P = I - sum_j s_j s_j^T, i.e. N - q eigenvalues for N parameters.

* :func:`dense_spectrum`: all N - q eigenvalues (one symmetric eigendecomposition, the modes
  shifted above the spectrum and dropped), for small networks.
* :func:`lanczos_spectrum`: the extreme eigenvalues of P H P from Hessian-vector products, by
  Lanczos with full reorthogonalisation (Golub and Van Loan, Matrix Computations, §10.1), for
  large ones. A Ritz value theta_min is the Rayleigh quotient of its Ritz vector, so theta_min < 0
  certifies negative curvature whatever the convergence; the residual |beta_k s_ki| bounds the
  distance to an eigenvalue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from shallowflow.model.network import Network
from shallowflow.stationary.derivatives import Problem, hessian, hvp_operator, neuron_index

SpectrumMethod = Literal["auto", "dense", "lanczos"]

DENSE_MAX = 200
"""Largest smooth-part size for which ``method="auto"`` builds the dense Hessian (the measured
crossover, bench ``stationary``)."""


@dataclass(frozen=True)
class Spectrum:
    """Extreme eigenvalues of the smooth-part Hessian with the symmetry modes projected out.

    ``eigenvalues``: all of them in ascending order (dense), or the final Ritz values (Lanczos).
    ``vector_min``: a unit eigen/Ritz vector of ``eig_min`` in smooth-part coordinates
    (:func:`~shallowflow.stationary.derivatives.neuron_index` order). ``residual_min/max``:
    ||P H P v - theta v|| of the two extreme Ritz pairs (0 for dense). ``converged``: both
    residuals below the tolerance (always True for dense)."""

    method: str
    size: int  # N, parameters of the smooth part
    symmetry_modes: int  # q, projected out
    eig_min: float
    eig_max: float
    eigenvalues: np.ndarray = field(repr=False)
    vector_min: np.ndarray = field(repr=False)
    residual_min: float = 0.0
    residual_max: float = 0.0
    iterations: int = 0
    converged: bool = True

    @property
    def scale(self) -> float:
        """max |eigenvalue|, the scale the curvature tolerance is relative to."""
        return max(abs(self.eig_min), abs(self.eig_max)) if self.size > self.symmetry_modes else 0.0


def symmetry_modes(net: Network, neurons: np.ndarray) -> np.ndarray:
    """The orthonormal symmetry directions s_j (N, q) of the ``neurons`` (boolean mask), in the
    coordinates of :func:`~shallowflow.stationary.derivatives.neuron_index`, as a dense matrix;
    neurons with a_j = w_j = 0 give none (docs/math.md §9.2)."""
    A, Wm = _mode_blocks(net, neurons)
    q, d = Wm.shape
    keep = np.flatnonzero(np.abs(A) + np.abs(Wm).sum(axis=1) > 0)
    V = np.zeros((q * (d + 1), keep.size))
    for col, j in enumerate(keep):
        V[j, col] = A[j]
        V[q + j * d: q + (j + 1) * d, col] = Wm[j]
    return V


def _mode_blocks(net: Network, neurons: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The symmetry modes in block form: s_j = (A_j at a_j, Wm_j at w_j), unit norm (zero for a
    neuron with a_j = w_j = 0)."""
    idx = np.flatnonzero(np.asarray(neurons))
    A = np.asarray(net.a, np.float64)[idx]
    Wm = -np.asarray(net.W, np.float64)[idx]
    norm = np.sqrt(A**2 + np.sum(Wm**2, axis=1))
    safe = np.where(norm > 0, norm, 1.0)
    return A / safe, Wm / safe[:, None]


def projector(net: Network, neurons: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """v -> P v = v - sum_j <s_j, v> s_j in O(N) (the modes have disjoint supports, §9.2)."""
    A, Wm = _mode_blocks(net, neurons)
    q, d = Wm.shape

    def project(v: np.ndarray) -> np.ndarray:
        va, vw = v[:q], v[q:].reshape(q, d)
        c = A * va + np.sum(Wm * vw, axis=1)
        return np.concatenate([va - c * A, (vw - c[:, None] * Wm).ravel()])

    return project


def dense_spectrum(H: np.ndarray, V: np.ndarray) -> Spectrum:
    """All eigenvalues of H on the complement of span(V) (V orthonormal, N x q), docs/math.md
    §9.2: the eigenvalues of P H P + c V V^T with c above the spectrum (c = 1 + 2 max row sum of
    |H|) are those of H on the complement plus q copies of c, which are dropped."""
    H = 0.5 * (H + H.T)
    N, q = H.shape[0], V.shape[1]
    if N - q <= 0:
        return Spectrum("dense", N, q, 0.0, 0.0, np.zeros(0), np.zeros(N))
    if q:
        HV = H @ V
        PHP = H - HV @ V.T - V @ HV.T + V @ (V.T @ HV) @ V.T
        c = 1.0 + 2.0 * float(np.max(np.sum(np.abs(H), axis=1)))
        PHP = 0.5 * (PHP + PHP.T) + c * (V @ V.T)
    else:
        PHP = H
    import scipy.linalg  # here, not at import: keeps scipy out of a plain run's start-up

    evals, evecs = scipy.linalg.eigh(PHP, driver="evd")
    evals, evecs = evals[: N - q], evecs[:, : N - q]
    return Spectrum("dense", N, q, float(evals[0]), float(evals[-1]), evals, evecs[:, 0])


def lanczos_spectrum(matvec: Callable[[np.ndarray], np.ndarray], size: int,
                     project: Callable[[np.ndarray], np.ndarray] | None = None, modes: int = 0,
                     max_iter: int = 300, rtol: float = 1e-8, seed: int = 0,
                     check_every: int = 10) -> Spectrum:
    """Extreme eigenvalues of P H P (P projects out span(V)) by Lanczos with full
    reorthogonalisation, from ``matvec`` v -> H v (docs/math.md §9.2).

    ``project``: v -> P v (None: no projection), ``modes``: q, the rank of I - P.
    q_{k+1} beta_k = P H P q_k - alpha_k q_k - beta_{k-1} q_{k-1}, reorthogonalised twice against
    every earlier q; the Ritz values are the eigenvalues of the tridiagonal T_k. Stops when
    both extreme residuals |beta_k s_{k,i}| are below ``rtol`` * max|theta|, when the Krylov space
    is invariant (exact), or after ``max_iter`` steps (at most N - q)."""
    q_sym = modes
    dim = size - q_sym
    if dim <= 0:
        return Spectrum("lanczos", size, q_sym, 0.0, 0.0, np.zeros(0), np.zeros(size))
    if project is None:
        def project(v: np.ndarray) -> np.ndarray:
            return v

    rng = np.random.default_rng(seed)
    v = project(rng.standard_normal(size))
    v = project(v)
    steps = min(max_iter, dim)
    basis = np.zeros((steps + 1, size))
    basis[0] = v / np.linalg.norm(v)
    alphas: list[float] = []
    betas: list[float] = []
    theta = np.zeros(0)
    S = np.zeros((0, 0))
    converged = False
    res_min = res_max = np.inf
    for k in range(steps):
        w = project(matvec(project(basis[k])))
        alpha = float(basis[k] @ w)
        alphas.append(alpha)
        w = w - alpha * basis[k] - (betas[-1] * basis[k - 1] if k > 0 else 0.0)
        B = basis[: k + 1]
        for _ in range(2):  # full reorthogonalisation ("twice is enough")
            w = project(w - B.T @ (B @ w))
        beta = float(np.linalg.norm(w))
        last = k == steps - 1
        invariant = beta <= 1e-13 * max(1.0, max(abs(x) for x in alphas))
        if invariant or last or (k + 1) % check_every == 0:
            import scipy.linalg

            theta, S = scipy.linalg.eigh_tridiagonal(np.asarray(alphas), np.asarray(betas))
            res_min = abs(beta * S[-1, 0]) if not invariant else 0.0
            res_max = abs(beta * S[-1, -1]) if not invariant else 0.0
            scale = max(1e-300, float(np.max(np.abs(theta))))
            converged = invariant or (res_min <= rtol * scale and res_max <= rtol * scale)
            if converged or last:
                break
        betas.append(beta)
        basis[k + 1] = w / beta
    B = basis[: len(alphas)]
    vec = B.T @ S[:, 0]
    return Spectrum("lanczos", size, q_sym, float(theta[0]), float(theta[-1]), theta,
                    vec / np.linalg.norm(vec), float(res_min), float(res_max), len(alphas),
                    bool(converged))


def smooth_spectrum(net: Network, prob: Problem, neurons: np.ndarray,
                    method: SpectrumMethod = "auto", dense_max: int = DENSE_MAX,
                    max_iter: int = 300, rtol: float = 1e-8, seed: int = 0) -> Spectrum:
    """The spectrum of the Hessian restricted to the parameters of ``neurons`` (the smooth part,
    a boolean (p,) mask), symmetry modes projected out: dense up to ``dense_max`` parameters
    (``method="auto"``), Lanczos from Hessian-vector products above (docs/math.md §9.2)."""
    neurons = np.asarray(neurons, dtype=bool)
    p, d = np.asarray(net.W).shape
    size = int(neuron_index(p, d, neurons).size)
    if method == "auto":
        method = "dense" if size <= dense_max else "lanczos"
    if method == "dense":
        return dense_spectrum(hessian(net, prob, neurons), symmetry_modes(net, neurons))
    if method == "lanczos":
        A, Wm = _mode_blocks(net, neurons)
        modes = int(np.count_nonzero(np.abs(A) + np.abs(Wm).sum(axis=1)))
        return lanczos_spectrum(hvp_operator(net, prob, neurons), size, projector(net, neurons),
                                modes, max_iter, rtol, seed)
    raise ValueError(f"method: must be 'auto', 'dense' or 'lanczos' (got {method!r})")
