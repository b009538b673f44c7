"""The two-layer network as a pytree, its forward pass and its exact gradient (MATH.md §0.3).

    h(x) = kappa * sum_j a_j sigma(<w_j, x>),        kappa in {1, 1/p}

with a of shape (p,) and W of shape (p, d): row j of W is the neuron w_j. Inputs are rows of
X (n, d) (MATH.md writes X with columns; the formulas are the same). With g_i = dL/dyhat_i:

    dL/da_j = kappa * sum_i g_i sigma(<w_j, x_i>)
    dL/dw_j = kappa * a_j * sum_i g_i sigma'(<w_j, x_i>) x_i

(for the 1/(2n) square loss g_i = -r_i/n, which is MATH.md §0.3's formula). The gradient is written
out, not autodiffed, so that sigma'(0) = 0 holds exactly and one step costs two matmuls
(4 n d p flops). A hidden bias is an appended constant input coordinate (``add_bias_column``).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jax import Array

from shallowflow.activations import Activation
from shallowflow.losses import Loss


class Network(NamedTuple):
    """Parameters of one network: output weights ``a`` (p,) and hidden weights ``W`` (p, d)."""

    a: Array
    W: Array


def add_bias_column(X: Array | np.ndarray) -> Array:
    """x -> (x, 1): a hidden bias as a constant input coordinate (MATH.md §0.2)."""
    X = jnp.asarray(X)
    return jnp.concatenate([X, jnp.ones((*X.shape[:-1], 1), dtype=X.dtype)], axis=-1)


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
    """Return (L, grad L, pre-activations Z = X W^T) at ``net``.

    ``weights`` (n,) multiply each sample's term (minibatch estimators); None means all ones.
    """
    Z = X @ net.W.T
    S = activation(Z)
    out = kappa * (S @ net.a)
    w = jnp.ones_like(y) if weights is None else weights
    c = loss.normaliser(w)
    value = c * jnp.sum(w * loss.pointwise(out, y))
    g = c * w * loss.pointwise_derivative(out, y)
    grad_a = kappa * (S.T @ g)
    G = activation.derivative(Z) * g[:, None]
    grad_W = (kappa * net.a)[:, None] * (G.T @ X)
    return value, Network(grad_a, grad_W), Z
