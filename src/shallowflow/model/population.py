"""The population square loss of a student against a teacher on Gaussian inputs, with its
gradient and Hessian in closed form (docs/math.md §11).

Student h(x) = kappa sum_j a_j sigma(<w_j, x>), teacher h*(x) = sum_k b_k sigma(<v_k, x>), no
hidden bias, sigma the ReLU or the leaky ReLU of slope alpha, x ~ N(0, Sigma) with Sigma = L L^T
(L = ``chol``, None for the identity). The residual h - h* is itself a network with p + k
neurons: directions D = (w_1..w_p, v_1..v_k) and output weights gamma = (kappa a, -b), so with
the kernel K_alpha of :mod:`shallowflow.model.arccos_kernel` (docs/math.md §11.1, §11.4)

    L(a, W) = 1/2 E[(h - h*)^2] = 1/2 gamma^T K_alpha(L^T D, L^T D) gamma
            = 1/2 [kappa^2 a^T K_ss a - 2 kappa a^T K_st b + b^T K_tt b],

    M_j := E[(h - h*)(x) sigma'(<w_j, x>) x] = L sum_m gamma_m grad_u K_alpha(L^T w_j, L^T d_m),
    dL/dw_j = kappa a_j M_j,        dL/da_j = kappa <w_j, M_j>

(docs/math.md §11.2, §11.6: x = L z with z ~ N(0, I) turns <w, x> into <L^T w, z>). M_j is the
population form of the engine's back-projection (docs/math.md §0.3), and dL/da_j = kappa <w_j,
M_j> holds because grad_u K(u, v) . u = K(u, v) (K is positively homogeneous in u).

**Log-norm coordinates** (docs/math.md §11.5). M_j depends on w_j through its direction only and
on the other neurons through the products a_i |w_i|: evaluated at the unit directions U and the
output weights a_eff = s exp(alpha + rho), the loss and M are exact at any scale (a_eff may
underflow to 0 at lambda = 1e-300; the terms it multiplies are then negligible, never infinite).

Arrays carry a leading run axis (any leading batch axes): a (..., p), W (..., p, d); the teacher
b (k,), V (k, d) (or with the same leading axes); ``chol`` (d, d). The loss is a sum of O(1)
terms that cancel at a global minimum: its absolute accuracy is the rounding of those terms
(about 1e-16 |b|^2), while M (hence the gradient) is accurate to rounding relative to its terms.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from shallowflow.model.activations import Activation
from shallowflow.model.arccos_kernel import kernel_and_pullback, kernel_matrix, self_kernel
from shallowflow.model.inputs import PopulationInputs
from shallowflow.model.losses import Loss
from shallowflow.model.network import BatchGradient


class Teacher(NamedTuple):
    """The teacher h*(x) = sum_k b_k sigma(<v_k, x>): output weights ``b`` (k,), neurons ``V`` (k, d)."""

    b: Array
    V: Array


class PopulationGradient(NamedTuple):
    """Loss, gradient and back-projection of R networks on the population (docs/math.md §11.2)."""

    loss: Array  # (...,)
    grad_a: Array  # dL/da, (..., p)
    grad_W: Array  # dL/dW, (..., p, d)
    M: Array  # M_j = E[(h - h*) sigma'(<w_j, x>) x], (..., p, d)


def whiten(W: Array, chol: Array | None) -> Array:
    """Rows w -> L^T w (W L), so that <w, x> = <L^T w, z> for x = L z (docs/math.md §11.6);
    ``chol`` None is the identity."""
    return W if chol is None else W @ chol


def _residual(a: Array, W: Array, teacher: Teacher, kappa: float,
              chol: Array | None) -> tuple[Array, Array, Array]:
    """(whitened student rows (..., p, d), whitened directions D (..., p + k, d), output weights
    gamma = (kappa a, -b) (..., p + k)) of the residual network h - h*."""
    batch = a.shape[:-1]
    Ws = whiten(W, chol)
    V = jnp.broadcast_to(whiten(jnp.asarray(teacher.V, W.dtype), chol), (*batch, *teacher.V.shape[-2:]))
    b = jnp.broadcast_to(jnp.asarray(teacher.b, a.dtype), (*batch, teacher.b.shape[-1]))
    return Ws, jnp.concatenate([Ws, V], axis=-2), jnp.concatenate([kappa * a, -b], axis=-1)


def _half_quadratic_form(D: Array, gamma: Array, leak: float) -> Array:
    """1/2 gamma^T K_alpha(D, D) gamma with the diagonal K_alpha(d, d) = (1 + alpha^2) |d|^2 / 2 exact."""
    K = kernel_matrix(D, D, leak)
    eye = jnp.eye(D.shape[-2], dtype=bool)
    K = jnp.where(eye, self_kernel(D, leak)[..., None, :], K)
    return 0.5 * jnp.einsum("...i,...ij,...j->...", gamma, K, gamma)


@partial(jax.jit, static_argnames=("kappa", "leak"))
def population_loss(a: Array, W: Array, teacher: Teacher, kappa: float = 1.0, leak: float = 0.0,
                    chol: Array | None = None) -> Array:
    """L = 1/2 E[(h - h*)^2] per network, (...,) (docs/math.md §11.2). Differentiable (jax.grad,
    jax.hessian) where no neuron is zero: its Hessian is the end-state Hessian (docs/math.md §11.3)."""
    _, D, gamma = _residual(a, W, teacher, kappa, chol)
    return _half_quadratic_form(D, gamma, leak)


@partial(jax.jit, static_argnames=("kappa", "leak"))
def population_gradient(a: Array, W: Array, teacher: Teacher, kappa: float = 1.0, leak: float = 0.0,
                        chol: Array | None = None) -> PopulationGradient:
    """L, dL/da = kappa <w_j, M_j>, dL/dW = kappa a_j M_j and M in closed form (docs/math.md §11.2),
    O((p + k) p d) per network; a zero neuron has M_j = 0 (sigma'(0) = 0). One matrix of angles
    between the student's rows and all p + k directions serves the loss's student rows and M
    (:func:`~shallowflow.model.arccos_kernel.kernel_and_pullback`); the teacher's block
    b^T K_tt b is computed once for all runs that share the teacher."""
    Ws, D, gamma = _residual(a, W, teacher, kappa, chol)
    p = a.shape[-1]
    K, Mw = kernel_and_pullback(Ws, D, gamma[..., None, :], leak)  # (..., p, p + k), whitened M~
    K_ss = jnp.where(jnp.eye(p, dtype=bool), self_kernel(Ws, leak)[..., None, :], K[..., :p])
    g_s = gamma[..., :p]
    V = whiten(jnp.asarray(teacher.V, W.dtype), chol)
    teacher_part = _half_quadratic_form(V, -jnp.asarray(teacher.b, a.dtype), leak)
    loss = (0.5 * jnp.einsum("...i,...ij,...j->...", g_s, K_ss, g_s)
            + jnp.einsum("...i,...ij,...j->...", g_s, K[..., p:], gamma[..., p:]) + teacher_part)
    M = Mw if chol is None else Mw @ jnp.swapaxes(chol, -1, -2)
    return PopulationGradient(loss, kappa * jnp.sum(Ws * Mw, axis=-1), kappa * a[..., None] * M, M)


def lognorm_weights(s: Array, alpha: Array, rho: Array, U: Array) -> tuple[Array, Array]:
    """(a_eff, U) with a_eff = s exp(alpha + rho): the network a_eff sigma(<u, x>) = a sigma(<w, x>)
    for w = exp(rho) u, a = s exp(alpha) (docs/math.md §11.5); U (..., p, d) unit rows."""
    return s * jnp.exp(alpha + rho), U


def population_gradient_lognorm(s: Array, alpha: Array, rho: Array, U: Array, teacher: Teacher,
                                kappa: float = 1.0, leak: float = 0.0,
                                chol: Array | None = None) -> PopulationGradient:
    """The loss and M of the network w_j = exp(rho_j) u_j, a_j = s_j exp(alpha_j), from its
    directions and log-norms only (docs/math.md §11.5): exact at lambda = 1e-300. ``grad_a`` is
    kappa <u_j, M_j> = (dL/da_j) / |w_j| and ``grad_W`` kappa a_eff_j M_j, the gradient at
    (a_eff, U) that the log-norm step of docs/math.md §0.3 takes."""
    a_eff, U = lognorm_weights(s, alpha, rho, U)
    return population_gradient(a_eff, U, teacher, kappa, leak, chol)


@partial(jax.jit, static_argnames=("kappa", "leak", "train_a"))
def population_hessian(a: Array, W: Array, teacher: Teacher, kappa: float = 1.0, leak: float = 0.0,
                       chol: Array | None = None, train_a: bool = True) -> Array:
    """The Hessian of L for one network (a (p,), W (p, d)) in theta = (a, W.ravel()) ((p + p d)
    square), or in W.ravel() alone when ``train_a`` is False (output weights fixed, the
    Safran-Shamir setting): jax.hessian of :func:`population_loss` (docs/math.md §11.3)."""
    p, d = W.shape
    if not train_a:
        return jax.hessian(lambda w: population_loss(a, w.reshape(p, d), teacher, kappa, leak,
                                                     chol))(W.ravel())
    theta = jnp.concatenate([a, W.ravel()])
    return jax.hessian(lambda t: population_loss(t[:p], t[p:].reshape(p, d), teacher, kappa, leak,
                                                 chol))(theta)


def batch_loss_and_gradient(a: Array, Wt: Array, inputs: PopulationInputs, kappa: float,
                            activation: Activation, loss: Loss) -> BatchGradient:
    """L, dL/da, dL/dWt and M of R networks in the engine layout (a (R, p), Wt (d, R, p); see
    :mod:`shallowflow.model.network`) on the population ``inputs`` (docs/math.md §11.2): the
    engine's gradient for :class:`~shallowflow.model.inputs.PopulationInputs`. Z, the activity
    and the outputs have no sample (n = 0). Only the square loss has a closed form (ValueError
    otherwise, and for the reduction 'sum', infinite here)."""
    if loss.name != "square" or loss.reduction != "mean":
        raise ValueError(f"loss: the population loss needs 'square' with reduction 'mean', got "
                         f"{loss.name!r} with {loss.reduction!r}")
    pg = population_gradient(a, jnp.transpose(Wt, (1, 2, 0)), Teacher(inputs.b, inputs.V), kappa,
                             activation.leak, inputs.chol)
    M = jnp.transpose(pg.M, (2, 0, 1))  # (d, R, p)
    none = jnp.zeros((0, *a.shape), a.dtype)
    return BatchGradient(pg.loss, pg.grad_a, kappa * a[None] * M, none, none > 0,
                         jnp.zeros((0, a.shape[0]), a.dtype), M)
