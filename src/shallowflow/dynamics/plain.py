"""Plain parametrisation: the engine state is (a (R, p), Wt (d, R, p)) itself (docs/math.md §0.3).

    a  <- a  - eta T r dL/da,      Wt <- Wt - eta T dL/dWt

r: the second layer's relative rate (1: plain GD, 0: frozen; docs/math.md §4.5).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jax import Array

from shallowflow.dynamics.parametrisation import PlainView
from shallowflow.model.network import BatchGradient


class PlainCoordinates(NamedTuple):
    a: Array  # (R, p)
    Wt: Array  # (d, R, p)


class Plain:
    """The :class:`~shallowflow.dynamics.parametrisation.Parametrisation` on the weights."""

    name = "plain"
    tied_balance = False
    log_final = False
    dead_stay_put = True  # a - eta * 0 = a, W - eta * 0 = W

    def initial(self, a: Array, Wt: Array, log_lambda: Array | None, tied: bool) -> PlainCoordinates:
        """(lambda a, lambda Wt); unscaled when ``log_lambda`` is None (``tied`` is unavailable)."""
        if log_lambda is not None:
            a, Wt = jnp.exp(log_lambda)[:, None] * a, jnp.exp(log_lambda)[None, :, None] * Wt
        return PlainCoordinates(a, Wt)

    def weights(self, params: PlainCoordinates) -> tuple[Array, Array]:
        """(a, Wt) as the network uses them."""
        return params.a, params.Wt

    def update(self, params: PlainCoordinates, bg: BatchGradient, rate: float, kappa: float,
               rate_a: float, tied: bool) -> PlainCoordinates:
        """One GD step of size rate = eta T, the second layer's of size rate_a * rate (0: frozen;
        ``kappa`` and ``tied`` are not used)."""
        a = params.a - (rate * rate_a) * bg.grad_a if rate_a != 0 else params.a
        return PlainCoordinates(a, params.Wt - rate * bg.grad_Wt)

    def view(self, params: PlainCoordinates, bg: BatchGradient | None, perp_sq: Array,
             log_perp_sq: Array, kappa: float, rate_a: float) -> PlainView:
        """log ||w_j|| = log(||Wt_j||^2 + ||w_perp||^2) / 2, log |a_j|, and ||grad L||^2 =
        ||dL/dWt||^2 (+ r ||dL/da||^2 when the second layer trains at rate r = ``rate_a``)."""
        a, Wt = params
        log_w = 0.5 * jnp.log(jnp.sum(Wt**2, axis=0) + perp_sq)
        log_a = jnp.log(jnp.abs(a))
        grad_norm_sq = None
        if bg is not None:
            grad_norm_sq = jnp.sum(bg.grad_Wt**2, axis=(0, 2))
            if rate_a != 0:
                grad_a_sq = jnp.sum(bg.grad_a**2, axis=1)
                grad_norm_sq = grad_norm_sq + (grad_a_sq if rate_a == 1 else rate_a * grad_a_sq)
        return PlainView(a, Wt, log_w, log_a, grad_norm_sq)


PLAIN = Plain()
