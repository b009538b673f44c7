"""The parametrisation interface: how the engine stores the networks it trains (docs/math.md §0.3).

A parametrisation holds the R networks of a batch as engine coordinates ``params``, a pytree
whose leaves are (R, p) or (d, R, p) arrays (run axis R), and takes in them the GD step

    W <- W - eta T grad_W L,    a <- a - eta T r grad_a L          (rate = eta T)

with r the second layer's relative rate (``EngineConfig.layer_rate``; 1: plain GD, 0: frozen;
docs/math.md §4.5)

The implementations are :mod:`~shallowflow.dynamics.plain` (the weights themselves) and
:mod:`~shallowflow.dynamics.lognorm` (log-norm coordinates for tiny initialisations); the engine
looks one up once, by the name ``EngineConfig.parametrisation``, in
:data:`~shallowflow.dynamics.engine_config.PARAMETRISATIONS`.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol

import jax.numpy as jnp
from jax import Array

from shallowflow.model.network import BatchGradient

Coordinates = Any
"""The engine's coordinates of a batch of networks, a parametrisation's state (a pytree of (R, p)
and (d, R, p) arrays: :class:`~shallowflow.dynamics.plain.PlainCoordinates`,
:class:`~shallowflow.dynamics.lognorm.LogNormCoordinates`); not a reproduction's ``Params``."""


class PlainView(NamedTuple):
    """The parameters in plain units, as the probes read them (docs/math.md §0.3)."""

    a: Array  # a_j, (R, p)
    Wt: Array  # w_j in the engine basis, (d, R, p)
    log_norm: Array  # log ||w_j||, the constant out-of-span part included, (R, p)
    log_abs_a: Array  # log |a_j|, (R, p)
    grad_norm_sq: Array | None  # ||grad L||^2 per run, (R,); None without a gradient


class Parametrisation(Protocol):
    """Engine coordinates of a batch of networks and the GD step in them."""

    name: str  # the registry name (EngineConfig.parametrisation)
    tied_balance: bool  # whether the tied balance a_j = s_j ||w_j|| is available
    log_final: bool  # whether results carry log ||w_j||, log |a_j| at the end (exact at tiny scale)
    dead_stay_put: bool  # whether a neuron with a zero gradient keeps its coordinates exactly, so
    # dead ReLU neurons may leave the step loop (:mod:`~shallowflow.dynamics.live`)

    def initial(self, a: Array, Wt: Array, log_lambda: Array | None, tied: bool) -> Coordinates:
        """Coordinates of the network lambda (a, Wt), log lambda = ``log_lambda`` (R,) (None:
        lambda = 1); ``tied``: put the second layer on the balanced manifold |a_j| = ||w_j||."""
        ...

    def weights(self, params: Coordinates) -> tuple[Array, Array]:
        """(a, Wt) for the forward pass: the gradient ``BatchGradient`` is taken at these."""
        ...

    def update(self, params: Coordinates, bg: BatchGradient, rate: float, kappa: float,
               rate_a: float, tied: bool) -> Coordinates:
        """One GD step of size rate = eta T from the gradient ``bg`` at :meth:`weights`, the
        second layer's at rate_a * rate (``rate_a`` = r >= 0; 0: the second layer is frozen)."""
        ...

    def view(self, params: Coordinates, bg: BatchGradient | None, perp_sq: Array, log_perp_sq: Array,
             kappa: float, rate_a: float) -> PlainView:
        """The parameters in plain units; ``perp_sq`` (R, p) = ||w_perp||^2 outside the data span
        and its log ``log_perp_sq``; from ``bg`` (None: no gradient) the squared gradient norm in
        the flow's metric, ||grad_W L||^2 + r ||grad_a L||^2 = -(dL/dt)/T (r = ``rate_a``)."""
        ...


def log_shift(a: Array, log_lambda: Array | None) -> Array:
    """log lambda per run (R,) for the network lambda (a, Wt): ``log_lambda``, or 0 when None."""
    return jnp.zeros((a.shape[0],), a.dtype) if log_lambda is None else log_lambda
