"""End states on the population loss of Gaussian inputs (docs/math.md §11.3, §11.8): the verdict
of :mod:`shallowflow.stationary.verdict` with the exact population derivatives in place of the
finite-data ones.

The loss, gradient and back-projection M are the closed forms of
:mod:`shallowflow.model.population` (§11.2); the Hessian is ``jax.hessian`` of the closed-form
loss (:func:`~shallowflow.model.population.population_hessian`, exact: §11.3, §11.7). L is twice
continuously differentiable wherever no student neuron is zero, parallel and antiparallel pairs
included (§11.3); with Gaussian inputs no non-zero neuron is dead and there are no kink pairs.
So the sorting of §9.4 reduces to: **zero** neurons (||w_j|| <= tol_zero max(1, max ||w_k||)),
where L is not differentiable, and **smooth** ones. The smooth part gets the spectrum of §9.2
(the rescaling modes projected out when the output weights are trained; none when they are
frozen, the Safran-Shamir setting ``train_a`` False, whose Hessian is the W block). A zero neuron
gets the escape test of §9.3 with the population residual correlation G(u) = sum_n gamma_n K(u,
d_n) on the sphere, searched by projected gradient (its gradient is the closed-form
back-projection M at direction u: the zero neuron replaced by u with a_j = 0 leaves h unchanged,
and G(u) = <u, M(u)> by homogeneity). The decision rules are those of
:mod:`shallowflow.stationary.verdict`: global minimum (L - floor <= tol_loss), not stationary,
saddle, strict local minimum (no zero neuron and eig_min > tol_curv), degenerate (the rest: a
zero neuron where no escape was found is reported as "not twice differentiable").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from shallowflow.model.activations import RELU, Activation
from shallowflow.model.network import Network
from shallowflow.model.population import Teacher, population_gradient, population_hessian
from shallowflow.model.population_hessian import hessian_in_weights
from shallowflow.model.run_attrs import RunAttrs
from shallowflow.precision import float64
from shallowflow.stationary.derivatives import as_network, neuron_index
from shallowflow.stationary.escape import Extrema
from shallowflow.stationary.spectrum import dense_spectrum, symmetry_modes
from shallowflow.stationary.verdict import (
    Escape,
    Tolerances,
    Verdict,
    _descends,
    _escape_at,
    end_states,
    near_zero,
)


class PopulationProblem(NamedTuple):
    """The population a network is judged on (docs/math.md §11): the teacher (b (k,), V (k, d)),
    the covariance's Cholesky factor (None: identity), the model's kappa and activation, and
    whether the output weights are trained (False: frozen, second_layer_rate = 0)."""

    b: np.ndarray
    V: np.ndarray
    chol: np.ndarray | None = None
    kappa: float = 1.0
    activation: Activation = RELU
    train_a: bool = True


def population_problem(b: object, V: object, chol: object | None = None, kappa: float = 1.0,
                       activation: Activation = RELU, train_a: bool = True) -> PopulationProblem:
    """A :class:`PopulationProblem` with float64 arrays (an empty ``chol`` is the identity)."""
    chol = None if chol is None or np.size(chol) == 0 else np.asarray(chol, np.float64)
    return PopulationProblem(np.asarray(b, np.float64), np.asarray(V, np.float64), chol,
                             float(kappa), activation, bool(train_a))


def _args(prob: PopulationProblem) -> tuple[Teacher, float, float, jax.Array | None]:
    chol = None if prob.chol is None else jnp.asarray(prob.chol)
    return Teacher(jnp.asarray(prob.b), jnp.asarray(prob.V)), prob.kappa, prob.activation.leak, chol


def gradient(net: Network, prob: PopulationProblem) -> tuple[float, np.ndarray, np.ndarray]:
    """(L, the gradient over the trained parameters (a then W.ravel(), or W.ravel() alone when
    the output weights are frozen), M (p, d)) in closed form (docs/math.md §11.2)."""
    with float64():
        pg = population_gradient(jnp.asarray(net.a), jnp.asarray(net.W), *_args(prob))
        ga, gW, M = np.asarray(pg.grad_a), np.asarray(pg.grad_W), np.asarray(pg.M)
        g = np.concatenate([ga, gW.ravel()]) if prob.train_a else gW.ravel()
        return float(pg.loss), g, M


def hessian(net: Network, prob: PopulationProblem) -> np.ndarray:
    """The Hessian of L over the trained parameters (docs/math.md §11.3), exact where no neuron
    is zero."""
    with float64():
        return np.asarray(population_hessian(jnp.asarray(net.a), jnp.asarray(net.W),
                                             *_args(prob), train_a=prob.train_a))


def smooth_index(p: int, d: int, smooth: np.ndarray, train_a: bool) -> np.ndarray:
    """Positions of the smooth neurons' parameters in the trained parameters (the a-entries
    first when trained, as :func:`~shallowflow.stationary.derivatives.neuron_index`)."""
    if train_a:
        return neuron_index(p, d, smooth)
    idx = np.flatnonzero(smooth)
    return (idx[:, None] * d + np.arange(d)[None, :]).ravel()


def residual_extrema(net: Network, prob: PopulationProblem, j: int, starts: int = 16,
                     iterations: int = 200, seed: int = 0) -> Extrema:
    """max and min over unit u of G(u) = E[(h - h*)(x) sigma(<u, x>)] (docs/math.md §11.3), the
    residual correlation a zero neuron j sees: projected gradient ascent and descent on the
    sphere from ``starts`` random directions and the teacher's and students' own, with
    grad G(u) = M_j at w_j = u, a_j = 0 (closed form). A search: values are true values of G."""
    a, W = np.asarray(net.a, np.float64).copy(), np.asarray(net.W, np.float64)
    p, d = W.shape
    rng = np.random.default_rng(seed)
    U0 = np.concatenate([rng.standard_normal((starts, d)), prob.V, W[np.linalg.norm(W, axis=1) > 0]])
    U0 /= np.linalg.norm(U0, axis=1, keepdims=True)
    a[j] = 0.0
    teacher, kappa, leak, chol = _args(prob)

    def values(U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Ws = np.broadcast_to(W, (U.shape[0], p, d)).copy()
        Ws[:, j] = U
        with float64():
            M = np.asarray(population_gradient(jnp.asarray(np.broadcast_to(a, (U.shape[0], p))),
                                               jnp.asarray(Ws), teacher, kappa, leak, chol).M)
        return np.sum(U * M[:, j], axis=1), M[:, j]

    best = {}
    for sign in (1.0, -1.0):
        U = U0.copy()
        step = 1.0
        for _ in range(iterations):
            _, grad = values(U)
            U = U + sign * step * (grad - np.sum(grad * U, axis=1, keepdims=True) * U)
            U /= np.linalg.norm(U, axis=1, keepdims=True)
        G, _ = values(U)
        i = int(np.argmax(sign * G))
        best[sign] = (float(G[i]), U[i])
    return Extrema(best[1.0][0], best[1.0][1], best[-1.0][0], best[-1.0][1], False, "search",
                   2 * U0.shape[0])


def decide(excess: float, grad_norm: float, eig_min: float, tol_curv: float, zero: int,
           escape: Escape | None, tol: Tolerances, local_min: bool = True) -> tuple[str, str]:
    """(label, reason) of the rules of :mod:`shallowflow.stationary.verdict` on the population
    (module docstring): ``excess`` = L - floor, ``eig_min`` of the smooth part (nan: none),
    ``zero`` zero neurons, ``escape`` a descending escape at one of them (None: none found)."""
    if excess <= tol.loss:
        return "global minimum", f"L - floor = {excess:.3g} <= {tol.loss:.3g}"
    if grad_norm > tol.grad:
        return "not stationary", f"||grad L||_2 = {grad_norm:.3g} > {tol.grad:.3g}"
    if np.isfinite(eig_min) and eig_min < -tol_curv:
        return "saddle", f"smooth-part eigenvalue {eig_min:.3g} < -{tol_curv:.3g}"
    if escape is not None:
        return "saddle", (f"order-{escape.order} escape at zero neuron {escape.neuron}: "
                          f"{escape.value:.3g}")
    if local_min and not zero and np.isfinite(eig_min) and eig_min > tol_curv:
        return "strict local minimum", f"smallest eigenvalue {eig_min:.3g} > {tol_curv:.3g}"
    if zero:
        return "degenerate", (f"not twice differentiable: {zero} zero neuron(s), no escape "
                              "found")
    return "degenerate", f"eigenvalue {eig_min:.3g} within {tol_curv:.3g}"


def population_end_state(net: Network, prob: PopulationProblem, floor: float = 0.0,
                         tol: Tolerances = Tolerances(), escape_starts: int = 16,
                         seed: int = 0) -> Verdict:
    """The verdict of one network on the population loss (module docstring; docs/math.md §11.3,
    §9.4, §9.6), as a :class:`~shallowflow.stationary.verdict.Verdict` (no dead neurons and no
    kink pairs exist here; ``spectrum_method`` "dense")."""
    net = as_network(net.a, net.W)
    p, d = net.W.shape
    loss, g, M = gradient(net, prob)
    grad_norm, grad_max = float(np.linalg.norm(g)), float(np.max(np.abs(g), initial=0.0))
    wn = np.linalg.norm(net.W, axis=1)
    zero, a_zero = near_zero(wn, tol.zero), near_zero(net.a, tol.zero)
    smooth = ~zero
    coupling = prob.kappa * np.linalg.norm(M, axis=1)
    coupling_max = float(coupling[smooth].max(initial=0.0)) if prob.train_a else 0.0
    spec = None
    eig_min = eig_max = np.nan
    if smooth.any():  # the zero neurons add nothing to h: the smooth block is the sub-network's
        sub = Network(net.a[smooth], net.W[smooth])
        H = hessian(sub, prob)
        keep = np.ones(int(smooth.sum()), dtype=bool)
        modes = symmetry_modes(sub, keep) if prob.train_a else np.zeros((H.shape[0], 0))
        spec = dense_spectrum(H, modes)
        if spec.size > spec.symmetry_modes:
            eig_min, eig_max = spec.eig_min, spec.eig_max
    tol_curv = tol.curvature * max(1.0, spec.scale if spec is not None else 0.0)
    negative = bool(np.isfinite(eig_min) and eig_min < -tol_curv)
    escapes = [_escape_at(j, float(net.a[j]), residual_extrema(net, prob, j, escape_starts,
                                                               seed=seed),
                          prob.kappa, bool(a_zero[j]))
               for j in np.flatnonzero(zero)]
    descending = [e for e in escapes if _descends(e, tol.grad, tol_curv)]
    pool = descending or escapes
    best = min(pool, key=lambda e: (e.order, e.value)) if pool else None
    local_min = bool(grad_norm <= tol.grad and coupling_max <= tol_curv and not descending
                     and not negative)
    label, reason = decide(loss - floor, grad_norm, eig_min, tol_curv, int(zero.sum()),
                           descending[0] if descending else None, tol, local_min)
    tols = {"grad": tol.grad, "loss": tol.loss, "curvature": tol_curv, "zero": tol.zero,
            "kink": tol.kink}
    return Verdict(label, reason, float(loss), float(floor), grad_norm, grad_max,
                   int(zero.sum()), 0, 0, int(smooth.sum()),
                   int(smooth_index(p, d, smooth, prob.train_a).size),
                   spec.symmetry_modes if spec is not None else 0, float(eig_min), float(eig_max),
                   "dense" if spec is not None else "none", True, negative, coupling_max, best,
                   False, local_min, np.nan, np.nan, tols, spec)


def hessian_spectra(a: np.ndarray, W: np.ndarray, prob: PopulationProblem,
                    chunk: int = 32) -> np.ndarray:
    """All eigenvalues (R, N) of the Hessians of R networks with frozen output weights (a (R,
    p), W (R, p, d); the Safran-Shamir setting, no symmetry modes: docs/math.md §11.3), from the
    closed-form blocks (:func:`~shallowflow.model.population_hessian.hessian_in_weights`),
    ``chunk`` networks at a time (one compiled shape: the last chunk is padded), one batched
    ``eigvalsh`` per chunk. For networks without zero neurons (NaN rows otherwise)."""
    if prob.train_a:
        raise ValueError("hessian_spectra: for frozen output weights (train_a False) only")
    teacher, kappa, leak, chol = _args(prob)
    R = a.shape[0]
    out = []
    for start in range(0, R, chunk):
        idx = np.minimum(np.arange(start, start + chunk), R - 1)  # padded with the last run
        with float64():
            H = np.asarray(hessian_in_weights(jnp.asarray(a[idx]), jnp.asarray(W[idx]), teacher,
                                              kappa, leak, chol))
        take = min(chunk, R - start)
        H = H[:take]
        good = np.all(np.isfinite(H), axis=(1, 2))
        eig = np.full(H.shape[:2], np.nan)
        if good.any():
            eig[good] = np.linalg.eigvalsh(0.5 * (H[good] + np.swapaxes(H[good], -1, -2)))
        out.append(eig)
    return np.concatenate(out) if out else np.zeros((0, W.shape[1] * W.shape[2]))


def population_end_states(ds: xr.Dataset, *, at: str | int = "final",
                          tol: Tolerances = Tolerances(), floor: float = 0.0,
                          runs: Sequence[int] | None = None,
                          progress: Callable[[int, int], None] | None = None) -> xr.Dataset:
    """The verdict of every run of a population results Dataset (its teacher ``teacher_b``,
    ``teacher_V``, factor ``covariance_chol`` and the attributes ``kappa``, ``leak``,
    ``second_layer_rate``), as :func:`~shallowflow.stationary.verdict.end_states` writes it
    (docs/math.md §11.3): :func:`population_end_state` per run."""
    attrs = RunAttrs.of(ds)
    prob = population_problem(ds["teacher_b"].values, ds["teacher_V"].values,
                              ds["covariance_chol"].values if "covariance_chol" in ds else None,
                              attrs.kappa, Activation(attrs.leak), attrs.second_layer_rate != 0)
    d = ds["teacher_V"].shape[-1]
    return end_states(ds, np.zeros((0, d)), np.zeros(0), at=at, floor=floor, tol=tol,
                      runs=runs, progress=progress,
                      judge_network=lambda net: population_end_state(net, prob, floor, tol))
