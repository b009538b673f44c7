"""The Hessian of the population loss in the hidden weights, assembled from its closed-form blocks
(docs/math.md §11.3), batched over runs.

With the residual network's directions D = (w_1..w_p, v_1..v_k) and output weights gamma =
(kappa a, -b) (:mod:`shallowflow.model.population`), L = 1/2 sum_{m,m'} gamma_m gamma_m' K(d_m,
d_m'), and for u, v != 0 at angle theta (c = cos theta, P = v^ - c u^, Q = u^ - c v^, both of norm
sin theta):

    grad^2_u K(u, v)  = |v| / (2 pi |u|) (sin theta (I - u^ u^T) + P P^T / sin theta),
    d^2 K / du dv     = ((pi - theta) I + (u^ P^T + v^ Q^T) / sin theta) / (2 pi),

so the (i, j) block of d^2 L / dW^2 is

    i = j:   gamma_i^2 (1 + alpha^2) / 2 I + gamma_i sum_{m != i} gamma_m grad^2_u K_alpha(w_i, d_m),
    i != j:  gamma_i gamma_j d^2 K_alpha(w_i, w_j) / du dv,

with K_alpha = alpha <u, v> + (1 - alpha)^2 K (leaky ReLU, §11.4: the linear part adds alpha I
to the cross blocks only). sin theta is floored at sqrt(eps) in the divisions, as
:mod:`shallowflow.model.arccos_kernel` floors d^2J/dc^2: both terms it divides are O(theta^2) at
parallel and antiparallel pairs, where the blocks have the limits of §11.3. A covariance Sigma =
L L^T (x = L z) acts by whitening: w -> L^T w, and each block becomes L H~ L^T (§11.6).

This is the W block, the whole Hessian when the output weights are frozen (the Safran-Shamir
setting); it equals ``jax.hessian`` of the closed-form loss
(:func:`~shallowflow.model.population.population_hessian` with ``train_a`` False) and costs
O((p + k)^2 d^2) instead of a second derivative through the kernel, the cost of a census
(docs/math.md §11.8). Defined where no student neuron is zero (NaN there).
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
from jax import Array

from shallowflow.model.arccos_kernel import SIN_FLOOR, angle
from shallowflow.model.population import Teacher, _residual


def _unit(U: Array) -> tuple[Array, Array]:
    norm = jnp.sqrt(jnp.sum(U * U, axis=-1))
    return norm, U / norm[..., None]


@partial(jax.jit, static_argnames=("kappa", "leak"))
def hessian_in_weights(a: Array, W: Array, teacher: Teacher, kappa: float = 1.0,
                       leak: float = 0.0, chol: Array | None = None) -> Array:
    """d^2 L / dW^2 of networks a (..., p), W (..., p, d) in W.ravel() order: (..., p d, p d)
    (module docstring; docs/math.md §11.3)."""
    p, d = W.shape[-2:]
    _, D, gamma = _residual(a, W, teacher, kappa, chol)  # whitened (..., p + k, d)
    norm, Dh = _unit(D)
    Uh, nu = Dh[..., :p, :], norm[..., :p]
    c = jnp.clip(jnp.einsum("...id,...md->...im", Uh, Dh), -1.0, 1.0)  # (..., p, p + k)
    sine = jnp.sqrt((1.0 - c) * (1.0 + c))
    safe = jnp.maximum(sine, SIN_FLOOR)
    P = Dh[..., None, :, :] - c[..., None] * Uh[..., :, None, :]  # v^ - c u^, (..., p, m, d)
    eye = jnp.eye(d, dtype=W.dtype)
    # diagonal blocks: sum over m != i of gamma_m grad^2_u K(w_i, d_m)
    other = 1.0 - jnp.eye(p, p + D.shape[-2] - p, dtype=W.dtype)  # 0 at m = i
    weight = other * gamma[..., None, :] * norm[..., None, :] / (2.0 * math.pi * nu[..., :, None])
    tangent = jnp.eye(d, dtype=W.dtype) - Uh[..., :, :, None] * Uh[..., :, None, :]
    curv = (jnp.sum(weight * sine, axis=-1)[..., None, None] * tangent
            + jnp.einsum("...im,...imd,...ime->...ide", weight / safe, P, P))
    diag = gamma[..., :p, None, None] * (1.0 - leak) ** 2 * curv \
        + (gamma[..., :p] ** 2 * (1.0 + leak**2) / 2.0)[..., None, None] * eye
    # cross blocks i != j: gamma_i gamma_j d^2 K(w_i, w_j) / du dv
    cs, ss, Ps = c[..., :p], sine[..., :p], P[..., :p, :]
    Q = jnp.swapaxes(Ps, -2, -3)  # Q_ij = u^_i - c v^_j = P_ji
    cross = ((math.pi - angle(cs))[..., None, None] * eye
             + (Uh[..., :, None, :, None] * Ps[..., :, :, None, :]
                + Dh[..., None, :p, :, None] * Q[..., :, :, None, :])
             / jnp.maximum(ss, SIN_FLOOR)[..., None, None]) / (2.0 * math.pi)
    cross = (1.0 - leak) ** 2 * cross + leak * eye
    cross = gamma[..., :p, None, None, None] * gamma[..., None, :p, None, None] * cross
    blocks = jnp.where(jnp.eye(p, dtype=bool)[..., None, None], diag[..., :, None, :, :],
                       cross)  # (..., p, p, d, d)
    if chol is not None:
        blocks = chol @ blocks @ chol.T
    return jnp.swapaxes(blocks, -2, -3).reshape(*W.shape[:-2], p * d, p * d)
