"""The two-layer network, its forward pass and its exact gradient (docs/math.md §0.3).

    h(x) = kappa * sum_j a_j sigma(<w_j, x>),        kappa in {1, 1/p}

A single network is ``Network(a (p,), W (p, d))``: row j of W is the neuron w_j; inputs are rows of
X (n, d) (docs/math.md writes X with columns; the formulas are the same). With the loss
L = c sum_i w_i ell(h(x_i), y_i) and g_i = dL/dh(x_i) = c w_i ell'(h(x_i), y_i):

    dL/dw_j = kappa a_j sum_i g_i sigma'(<w_j, x_i>) x_i  =: kappa a_j M_j
    dL/da_j = kappa sum_i g_i sigma(<w_j, x_i>)  =  kappa <w_j, M_j>

(the last equality is sigma(z) = sigma'(z) z, exact for ReLU and leaky ReLU, also at z = 0). For
the 1/(2n) square loss g_i = -r_i/n, which is docs/math.md §0.3's formula. The gradient is written out,
not autodiffed, so that sigma'(0) = 0 holds exactly, and one step costs two matmuls (4 n d p flops).

:func:`batch_loss_and_gradient` is the one dense implementation, for R runs at once in the engine's
layout (a (R, p), Wt (d, R, p); see :mod:`shallowflow.model.inputs`); :func:`loss_and_gradient` is its
single-network form. A hidden bias is an appended constant input coordinate (:func:`add_bias_column`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jax import Array

from shallowflow.model.activations import Activation
from shallowflow.model.inputs import Inputs, SharedInputs
from shallowflow.model.losses import Loss


class Network(NamedTuple):
    """Parameters of one network: output weights ``a`` (p,) and hidden weights ``W`` (p, d).
    With a leading run axis, a batch of networks: a (R, p), W (R, p, d)."""

    a: Array
    W: Array


class BatchGradient(NamedTuple):
    """Loss, gradient and intermediate quantities of R networks in the engine layout."""

    loss: Array  # (R,)
    grad_a: Array  # (R, p)
    grad_Wt: Array  # (d, R, p)
    Z: Array  # pre-activations (n, R, p)
    active: Array  # Z > 0 (and the persistent mask), (n, R, p)
    output: Array  # h(x_i), (n, R)
    M: Array  # back-projection M_j = sum_i g_i sigma'(z_ij) x_i, (d, R, p)


def add_bias_column(X: Array | np.ndarray) -> Array:
    """x -> (x, 1): a hidden bias as a constant input coordinate (docs/math.md §0.2)."""
    X = jnp.asarray(X)
    return jnp.concatenate([X, jnp.ones((*X.shape[:-1], 1), dtype=X.dtype)], axis=-1)


def batch_loss_and_gradient(
    a: Array,
    Wt: Array,
    inputs: Inputs,
    y: Array,
    kappa: float,
    activation: Activation,
    loss: Loss,
    weights: Array | float = 1.0,
    mask: Array | None = None,
) -> BatchGradient:
    """L, dL/da, dL/dWt of R networks: a (R, p), Wt (d, R, p), labels in ``inputs.labels`` layout.

    ``weights``: sample weights, a scalar or (n, 1)/(n, R) (minibatch estimators). ``mask``
    (n, R, p): persistent activity mask; a pair outside it is inactive (ReLU only). Sample-space
    arrays are computed in the inputs' native order (``inputs.sample_axis``) and returned in the
    canonical one; conversions nobody uses are removed by the compiler. One-dimensional inputs
    with a bias (:class:`~shallowflow.model.inputs.OneDimInputs`) have their own exact step,
    :func:`shallowflow.model.onedim.batch_loss_and_gradient`; the engine chooses between the two
    (:func:`shallowflow.dynamics.gradient.batch_loss_and_gradient`).
    """
    sa, na = inputs.sample_axis, inputs.neuron_axis  # in per-run arrays (n, R) / Z-shaped ones
    Z = inputs.pre(Wt)
    active = Z > 0 if mask is None else (Z > 0) & inputs.native(mask)
    if activation.leak == 0.0:
        S = jnp.where(active, Z, jnp.zeros_like(Z))
        D = active.astype(Z.dtype)
    else:
        S, D = activation(Z), activation.derivative(Z)
    # Z's axes: runs before neurons; (n, R, p) and (R, n, p) append the neurons to the per-run
    # order, (R, p, n) puts them between runs and samples
    z_runs = 1 - sa if na == 2 else 0
    z_samples = 3 - na - z_runs
    if a.shape[0] == 1:  # a single run: a mat-vec (a faster loop on XLA:CPU than the reduction)
        S1 = jnp.squeeze(S, z_runs)
        out = kappa * jnp.expand_dims(S1 @ a[0] if na == 2 else a[0] @ S1, 1 - sa)
    else:
        out = kappa * jnp.sum(S * jnp.expand_dims(a, z_samples), axis=na)
    yl = inputs.labels(y)
    weights = jnp.asarray(weights, Z.dtype)
    w = jnp.broadcast_to(inputs.native(weights) if weights.ndim == 2 else weights, out.shape)
    c = loss.normaliser(w, axis=sa)  # per run
    value = c * jnp.sum(w * loss.pointwise(out, yl), axis=sa)
    g = jnp.expand_dims(c, sa) * w * loss.pointwise_derivative(out, yl)
    M = inputs.post(D * jnp.expand_dims(g, na))
    grad_Wt = kappa * a[None] * M
    grad_a = kappa * jnp.sum(Wt * M, axis=0)
    return BatchGradient(value, grad_a, grad_Wt, inputs.canonical(Z), inputs.canonical(active),
                         inputs.canonical(out), M)


def to_engine_layout(net: Network) -> tuple[Array, Array]:
    """Batched Network (a (R, p), W (R, p, d)) -> (a, Wt (d, R, p)); host arrays stay on the
    host."""
    return net.a, net.W.transpose(2, 0, 1)


def from_engine_layout(a: Array, Wt: Array) -> Network:
    """(a (R, p), Wt (d, R, p)) -> batched Network (a, W (R, p, d))."""
    return Network(a, jnp.transpose(Wt, (1, 2, 0)))


def forward(net: Network, X: Array, kappa: float, activation: Activation) -> Array:
    """h(x_i) for every row x_i of X: kappa * sigma(X W^T) a, shape (n,)."""
    return kappa * (activation(X @ net.W.T) @ net.a)


def loss_and_gradient(
    net: Network,
    X: Array,
    y: Array,
    kappa: float,
    activation: Activation,
    loss: Loss,
    weights: Array | None = None,
) -> tuple[Array, Network, Array]:
    """Return (L, grad L as a Network, pre-activations Z = X W^T (n, p)) for one network.

    ``weights`` (n,) multiply each sample's term (minibatch estimators); None means all ones.
    """
    X = jnp.asarray(X)
    w = 1.0 if weights is None else jnp.asarray(weights)[:, None]
    bg = batch_loss_and_gradient(net.a[None], net.W.T[:, None, :], SharedInputs.of(X),
                                 jnp.asarray(y), kappa, activation, loss, w)
    return bg.loss[0], Network(bg.grad_a[0], bg.grad_Wt[:, 0, :].T), bg.Z[:, 0, :]
