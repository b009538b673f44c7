"""Quantities recorded along a trajectory, computed inside the compiled loop (MATH.md §0.3, §1.4).

Each probe maps a :class:`ProbeContext` (one run at one record point) to an array whose trailing
dimensions are named by ``Probe.dims``; the engine stacks them to (run, time, *dims).

    loss            L(theta)
    pl_curvature    mu = T ||grad L||^2 / L = -(dL/dt)/L      (local PL curvature, MATH.md §1.4(1));
                    the gradient is over the trained parameters only
    balance_drift   max_j |(a_j^2 - ||w_j||^2) - (a_j(0)^2 - ||w_j(0)||^2)|  (0 for gradient flow,
                    MATH.md §0.3; O(step) for GD)
    neuron_norm     ||w_j||
    a               a_j (second-layer weights)
    active_count    #{i : <w_j, x_i> > 0}
    dead_neurons    #{j : active_count_j = 0}
    param_norm_sq   ||theta||^2 = sum_j a_j^2 + ||w_j||^2   (MATH.md §3.5)
    output          h(x_i)   (optional)
    W               full hidden weights (optional snapshots; ``record.snapshots``)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import jax.numpy as jnp
from jax import Array

from shallowflow.network import BatchGradient


class ProbeContext(NamedTuple):
    """Everything a probe may read: R runs at one record point, in the engine layout
    (a (R, p), Wt (d, R, p); see :mod:`shallowflow.network`)."""

    a: Array
    Wt: Array
    a0: Array
    Wt0: Array
    grad: BatchGradient
    time_scale: float
    train_second_layer: bool


def _grad_norm_sq(c: ProbeContext) -> Array:
    g = jnp.sum(c.grad.grad_Wt**2, axis=(0, 2))
    return g + jnp.sum(c.grad.grad_a**2, axis=1) if c.train_second_layer else g


def _norm_sq(Wt: Array) -> Array:
    return jnp.sum(Wt**2, axis=0)  # (R, p)


def _active_count(c: ProbeContext) -> Array:
    return jnp.sum(c.grad.active, axis=0)


@dataclass(frozen=True)
class Probe:
    """A named recorded quantity: its function (context -> array with leading run axis), the names
    of its trailing dimensions and its meaning."""

    name: str
    dims: tuple[str, ...]
    description: str
    fn: Callable[[ProbeContext], Array]


_ALL = [
    Probe("loss", (), "training loss L", lambda c: c.grad.loss),
    Probe(
        "pl_curvature", (), "local PL curvature T ||grad L||^2 / L",
        lambda c: c.time_scale * _grad_norm_sq(c) / c.grad.loss,
    ),
    Probe(
        "balance_drift", (), "max_j |a_j^2 - ||w_j||^2 - (same at t=0)|",
        lambda c: jnp.max(jnp.abs((c.a**2 - _norm_sq(c.Wt)) - (c.a0**2 - _norm_sq(c.Wt0))), axis=1),
    ),
    Probe("neuron_norm", ("neuron",), "||w_j||", lambda c: jnp.sqrt(_norm_sq(c.Wt))),
    Probe("a", ("neuron",), "second-layer weight a_j", lambda c: c.a),
    Probe("active_count", ("neuron",), "#samples with <w_j, x_i> > 0", _active_count),
    Probe(
        "dead_neurons", (), "#neurons active on no sample",
        lambda c: jnp.sum(_active_count(c) == 0, axis=1),
    ),
    Probe(
        "param_norm_sq", (), "||theta||^2 = sum a_j^2 + ||W||_F^2",
        lambda c: jnp.sum(c.a**2, axis=1) + jnp.sum(_norm_sq(c.Wt), axis=1),
    ),
    Probe("output", ("sample",), "network output h(x_i)", lambda c: c.grad.output.T),
    Probe("W", ("neuron", "dim"), "hidden weights (snapshot)",
          lambda c: jnp.transpose(c.Wt, (1, 2, 0))),
]

PROBES: dict[str, Probe] = {p.name: p for p in _ALL}
DEFAULT_PROBES: tuple[str, ...] = (
    "loss", "pl_curvature", "balance_drift", "neuron_norm", "a", "active_count", "dead_neurons",
    "param_norm_sq",
)
