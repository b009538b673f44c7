"""Polish an end point to the nearest stationary point, in float64 (docs/math.md §9.5).

Only the non-zero neurons move (a neuron with w_j = 0 has zero gradient, sigma'(0) = 0, and is
left for the escape test). Methods:

* ``"newton"``: Newton's method on grad L = 0, delta = -H^+ grad L (the pseudo-inverse drops the
  eigenvalues below 1e-10 max|lambda|, among them the symmetry modes; MINRES from
  Hessian-vector products above ``spectrum.DENSE_MAX`` parameters), with backtracking on the merit
  ||grad L||. It converges quadratically to the nearest stationary point of any kind (saddles
  included), which is what "did the run stop at a stationary point" asks.
* ``"bfgs"`` / ``"lbfgs"``: scipy's BFGS / L-BFGS-B on L, a descent method: it finds a nearby local
  minimum and leaves saddles.

The result says why it stopped and how far it moved: a polish that moves far (relative to the
parameter norm) means the run had not converged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from shallowflow.model.network import Network
from shallowflow.stationary.derivatives import (
    Problem,
    flat_gradient,
    flatten,
    hessian,
    hvp_operator,
    neuron_index,
    unflatten,
)
from shallowflow.stationary.spectrum import DENSE_MAX

PolishMethod = Literal["newton", "bfgs", "lbfgs"]

RCOND = 1e-10
"""Eigenvalues below RCOND * max|lambda| are dropped from the Newton step (pseudo-inverse)."""


@dataclass(frozen=True)
class Polished:
    """The polished network and how the polish went (docs/math.md §9.5). ``stop``: "gradient
    tolerance", "max iterations", "no progress" (the line search found no decrease of the merit
    ||grad L||) or scipy's message; ``distance`` = ||theta_end - theta_start||_2 over all
    parameters and ``relative_distance`` = distance / max(||theta_start||, 1e-300)."""

    network: Network = field(repr=False)
    method: str
    stop: str
    iterations: int
    distance: float
    relative_distance: float
    loss_before: float
    loss_after: float
    grad_norm_before: float
    grad_norm_after: float


def moving_neurons(net: Network, zero_tol: float = 1e-7) -> np.ndarray:
    """The neurons the polish moves: ||w_j|| > zero_tol * max(1, max_k ||w_k||) (§9.4)."""
    wn = np.linalg.norm(np.asarray(net.W), axis=1)
    return wn > zero_tol * max(1.0, float(wn.max(initial=0.0)))


def _newton_step(net: Network, prob: Problem, idx: np.ndarray, neurons: np.ndarray,
                 grad: np.ndarray) -> np.ndarray:
    if idx.size <= DENSE_MAX:
        lam, V = np.linalg.eigh(hessian(net, prob, neurons))
        keep = np.abs(lam) > RCOND * max(float(np.max(np.abs(lam))), 1e-300)
        return -(V[:, keep] @ ((V[:, keep].T @ grad) / lam[keep]))
    hv = hvp_operator(net, prob, neurons)
    import scipy.sparse.linalg  # here: scipy.optimize alone costs 0.4 s of every start-up

    op = scipy.sparse.linalg.LinearOperator((idx.size, idx.size), matvec=hv, dtype=np.float64)
    step, _ = scipy.sparse.linalg.minres(op, -grad, maxiter=200, rtol=1e-12)
    return step


def polish(net: Network, prob: Problem, method: PolishMethod = "newton", grad_tol: float = 1e-12,
           max_iter: int = 50, zero_tol: float = 1e-7) -> Polished:
    """From ``net``, move the non-zero neurons to the nearest stationary point (``"newton"``) or a
    nearby local minimum (``"bfgs"``, ``"lbfgs"``) until ||grad L||_2 <= ``grad_tol`` or
    ``max_iter`` iterations (docs/math.md §9.5)."""
    p, d = np.asarray(net.W).shape
    theta0 = flatten(net)
    neurons = moving_neurons(net, zero_tol)
    idx = neuron_index(p, d, neurons)
    loss0, g0 = flat_gradient(theta0, prob, p, d)
    theta = theta0.copy()

    def at(sub: np.ndarray) -> np.ndarray:
        full = theta0.copy()
        full[idx] = sub
        return full

    if method == "newton":
        loss, g = loss0, g0
        stop, it = "max iterations", 0
        for it in range(1, max_iter + 1):
            gn = float(np.linalg.norm(g))
            if gn <= grad_tol:
                stop, it = "gradient tolerance", it - 1
                break
            step = _newton_step(unflatten(theta, p, d), prob, idx, neurons, g[idx])
            for alpha in 0.5 ** np.arange(12):
                trial = theta.copy()
                trial[idx] += alpha * step
                t_loss, t_g = flat_gradient(trial, prob, p, d)
                if np.linalg.norm(t_g) < (1 - 1e-4 * alpha) * gn:
                    theta, loss, g = trial, t_loss, t_g
                    break
            else:
                stop = "no progress"
                break
        else:
            if float(np.linalg.norm(g)) <= grad_tol:
                stop = "gradient tolerance"
    elif method in ("bfgs", "lbfgs"):
        import scipy.optimize

        def fun(sub: np.ndarray) -> tuple[float, np.ndarray]:
            value, grad = flat_gradient(at(sub), prob, p, d)
            return value, grad[idx]

        res = scipy.optimize.minimize(
            fun, theta0[idx], jac=True, method="BFGS" if method == "bfgs" else "L-BFGS-B",
            options={"gtol": grad_tol, "maxiter": max_iter} if method == "bfgs"
            else {"gtol": grad_tol, "maxiter": max_iter, "ftol": 0.0})
        theta = at(res.x)
        loss, g = flat_gradient(theta, prob, p, d)
        it = int(res.nit)
        stop = "gradient tolerance" if np.linalg.norm(g) <= grad_tol else f"scipy: {res.message}"
    else:
        raise ValueError(f"method: must be 'newton', 'bfgs' or 'lbfgs' (got {method!r})")
    dist = float(np.linalg.norm(theta - theta0))
    return Polished(unflatten(theta, p, d), method, stop, int(it), dist,
                    dist / max(float(np.linalg.norm(theta0)), 1e-300), float(loss0), float(loss),
                    float(np.linalg.norm(g0)), float(np.linalg.norm(g)))
