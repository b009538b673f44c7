"""Loss, gradient, Hessian and Hessian-vector products of one network (docs/math.md §9.1).

One network ``Network(a (p,), W (p, d))``, data X (n, d) (a hidden bias is a column of ones,
``add_bias_column``), labels y (n,), a :class:`~shallowflow.model.losses.Loss` and the output scale
kappa:

    L(theta) = c sum_i ell(h(x_i), y_i),      h(x) = kappa sum_j a_j sigma(<w_j, x>).

The parameters are flattened as theta = (a_1 .. a_p, w_1 .. w_p) (``flatten``). The gradient is
``network.loss_and_gradient`` (sigma'(0) = 0, docs/math.md §0.3), never re-implemented here. The
Hessian is the automatic second derivative of the loss written with the same forward pass
(``network.forward``): sigma(z) = where(z > 0, z, 0), so sigma' = 1{z > 0} and sigma'' = 0. It is
the Hessian of L wherever no pre-activation <w_j, x_i> of a non-zero neuron is 0 (the smooth
part, §9.1), and elsewhere the Hessian of the piece on which the pairs at a kink are inactive.
Everything is float64: each function computes inside :func:`shallowflow.precision.float64` (the
caller's JAX settings are left as they are) and returns numpy arrays.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from shallowflow.model.activations import RELU, Activation
from shallowflow.model.losses import Loss
from shallowflow.model.network import Network, forward, loss_and_gradient
from shallowflow.precision import float64


class Problem(NamedTuple):
    """The data and model constants a network is judged on (docs/math.md §9.1)."""

    X: np.ndarray  # (n, d), float64, bias column included if the model has one
    y: np.ndarray  # (n,)
    loss: Loss
    kappa: float
    activation: Activation = RELU


def problem(X: object, y: object, loss: Loss | str = "square", kappa: float = 1.0,
            activation: Activation = RELU) -> Problem:
    """A :class:`Problem` with float64 arrays (``loss`` may be a name, reduction ``mean``)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (n, d) and y (n,), got {X.shape} and {y.shape}")
    return Problem(X, y, Loss(loss) if isinstance(loss, str) else loss, float(kappa), activation)


def as_network(a: object, W: object) -> Network:
    """``Network(a, W)`` as float64 numpy arrays, a (p,) and W (p, d)."""
    a = np.asarray(a, dtype=np.float64)
    W = np.asarray(W, dtype=np.float64)
    if a.ndim != 1 or W.ndim != 2 or W.shape[0] != a.shape[0]:
        raise ValueError(f"a must be (p,) and W (p, d), got {a.shape} and {W.shape}")
    return Network(a, W)


def flatten(net: Network) -> np.ndarray:
    """theta = (a_1 .. a_p, w_11 .. w_1d, .., w_p1 .. w_pd), shape (p (d + 1),)."""
    return np.concatenate([np.asarray(net.a, np.float64).ravel(),
                           np.asarray(net.W, np.float64).ravel()])


def unflatten(theta: object, p: int, d: int) -> Network:
    """The inverse of :func:`flatten`."""
    theta = np.asarray(theta, dtype=np.float64)
    return Network(theta[:p].copy(), theta[p:].reshape(p, d).copy())


def neuron_index(p: int, d: int, neurons: np.ndarray) -> np.ndarray:
    """Positions in theta of the parameters (a_j, w_j) of the ``neurons`` (a boolean (p,) mask or
    indices), a-entries first: the coordinates of the smooth part (docs/math.md §9.1)."""
    idx = np.flatnonzero(np.asarray(neurons)) if np.asarray(neurons).dtype == bool \
        else np.asarray(neurons, dtype=int)
    w_pos = p + idx[:, None] * d + np.arange(d)[None, :]
    return np.concatenate([idx, w_pos.ravel()])


@functools.partial(jax.jit, static_argnames=("kappa", "activation", "loss"))
def _outputs(a: jax.Array, W: jax.Array, X: jax.Array, y: jax.Array, kappa: float,
             activation: Activation, loss: Loss) -> tuple[jax.Array, jax.Array]:
    out = forward(Network(a, W), X, kappa, activation)
    return loss.value(out, y), loss.derivative(out, y)


def _evaluate(net: Network, prob: Problem) -> tuple[np.ndarray, np.ndarray]:
    with float64():
        value, derivative = _outputs(jnp.asarray(net.a), jnp.asarray(net.W), jnp.asarray(prob.X),
                                     jnp.asarray(prob.y), prob.kappa, prob.activation, prob.loss)
        return np.asarray(value), np.asarray(derivative)


def loss_value(net: Network, prob: Problem) -> float:
    """L(theta) = c sum_i ell(h(x_i), y_i) from ``network.forward`` (docs/math.md §0.3)."""
    return float(_evaluate(net, prob)[0])


def output_derivative(net: Network, prob: Problem) -> np.ndarray:
    """g_i = dL/dh(x_i) = c ell'(h(x_i), y_i), shape (n,) (docs/math.md §0.3, §9.3)."""
    return np.asarray(_evaluate(net, prob)[1])


@functools.partial(jax.jit, static_argnames=("kappa", "activation", "loss"))
def _loss_and_gradient(a: jax.Array, W: jax.Array, X: jax.Array, y: jax.Array, kappa: float,
                       activation: Activation, loss: Loss) -> tuple[jax.Array, ...]:
    value, grad, Z = loss_and_gradient(Network(a, W), X, y, kappa, activation, loss)
    return value, grad.a, grad.W, Z


def gradient(net: Network, prob: Problem) -> tuple[float, Network, np.ndarray]:
    """(L, grad L as a Network, pre-activations Z = X W^T (n, p)) from
    ``network.loss_and_gradient`` (compiled once per shape): dL/dw_j = kappa a_j M_j,
    dL/da_j = kappa <w_j, M_j>, M_j = sum_i g_i sigma'(<w_j, x_i>) x_i (docs/math.md §0.3,
    §9.1)."""
    with float64():
        value, ga, gW, Z = _loss_and_gradient(jnp.asarray(net.a), jnp.asarray(net.W),
                                              jnp.asarray(prob.X), jnp.asarray(prob.y),
                                              prob.kappa, prob.activation, prob.loss)
        return float(value), Network(np.asarray(ga), np.asarray(gW)), np.asarray(Z)


def flat_gradient(theta: object, prob: Problem, p: int, d: int) -> tuple[float, np.ndarray]:
    """(L, grad L) at the flat parameters ``theta`` (:func:`gradient`, flattened)."""
    value, grad, _ = gradient(unflatten(theta, p, d), prob)
    return value, flatten(grad)


def flat_loss(prob: Problem, p: int, d: int) -> Callable[[jax.Array], jax.Array]:
    """theta -> L(theta) as a JAX function of the flat parameters, written with
    ``network.forward``: the function whose second derivatives are the Hessian (§9.1). Its data
    are float64 JAX arrays: call it and its derivatives inside
    :func:`shallowflow.precision.float64` (or after :func:`shallowflow.enable_full_precision`)."""
    with float64():
        X, y = jnp.asarray(prob.X), jnp.asarray(prob.y)
    return functools.partial(_loss, X=X, y=y, loss=prob.loss, kappa=prob.kappa,
                             activation=prob.activation, p=p, d=d)


def _loss(theta: jax.Array, X: jax.Array, y: jax.Array, loss: Loss, kappa: float,
          activation: Activation, p: int, d: int) -> jax.Array:
    net = Network(theta[:p], theta[p:].reshape(p, d))
    return loss.value(forward(net, X, kappa, activation), y)


_STATIC = ("loss", "kappa", "activation", "p", "d")


@functools.partial(jax.jit, static_argnames=_STATIC)
def _hessian(theta: jax.Array, X: jax.Array, y: jax.Array, loss: Loss, kappa: float,
             activation: Activation, p: int, d: int) -> jax.Array:
    return jax.hessian(_loss)(theta, X, y, loss, kappa, activation, p, d)


@functools.partial(jax.jit, static_argnames=_STATIC)
def _hvp(theta: jax.Array, v: jax.Array, X: jax.Array, y: jax.Array, loss: Loss, kappa: float,
         activation: Activation, p: int, d: int) -> jax.Array:
    def grad(t: jax.Array) -> jax.Array:
        return jax.grad(_loss)(t, X, y, loss, kappa, activation, p, d)

    return jax.jvp(grad, (theta,), (v,))[1]


def _static(prob: Problem, p: int, d: int) -> dict[str, object]:
    return {"loss": prob.loss, "kappa": prob.kappa, "activation": prob.activation, "p": p, "d": d}


def hessian(net: Network, prob: Problem, neurons: np.ndarray | None = None) -> np.ndarray:
    """The dense Hessian d^2 L / d theta^2 (jax.hessian of :func:`flat_loss`), restricted to the
    parameters of ``neurons`` (a boolean mask; None: all) in the order of :func:`neuron_index`.
    On the smooth part this is the Hessian of L (docs/math.md §9.1). Compiled once per shape and
    model (the data are arguments)."""
    p, d = net.W.shape
    with float64():
        H = np.asarray(_hessian(jnp.asarray(flatten(net)), jnp.asarray(prob.X),
                                jnp.asarray(prob.y), **_static(prob, p, d)))
    if neurons is None:
        return H
    idx = neuron_index(p, d, neurons)
    return H[np.ix_(idx, idx)]


def hvp_operator(net: Network, prob: Problem,
                 neurons: np.ndarray | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """v -> H v (forward-over-reverse: ``jax.jvp`` of ``jax.grad`` of :func:`flat_loss`); with
    ``neurons`` the operator acts on the coordinates of :func:`neuron_index` only (the vector is
    embedded with zeros elsewhere and the product restricted), so the compiled shape does not
    depend on which neurons are smooth (docs/math.md §9.1). Compiled once per shape and model;
    each product is computed in float64 (:func:`shallowflow.precision.float64`)."""
    p, d = net.W.shape
    with float64():
        theta = jnp.asarray(flatten(net))
        X, y = jnp.asarray(prob.X), jnp.asarray(prob.y)
    static = _static(prob, p, d)

    def full(v: np.ndarray) -> np.ndarray:
        with float64():
            return np.asarray(_hvp(theta, jnp.asarray(v, dtype=jnp.float64), X, y, **static))

    if neurons is None:
        return full
    idx = neuron_index(p, d, neurons)
    size = theta.shape[0]

    def restricted(v: np.ndarray) -> np.ndarray:
        embedded = np.zeros(size)
        embedded[idx] = v
        return full(embedded)[idx]

    return restricted
