"""Quantities recorded along a trajectory, computed inside the compiled loop (docs/math.md §0.3, §1.4).

Each probe maps a :class:`ProbeContext` (one run at one record point) to an array whose trailing
dimensions are named by ``Probe.dims``; the engine stacks them to (run, time, *dims).

    loss            L(theta)
    pl_curvature    mu = T ||grad L||^2 / L = -(dL/dt)/L      (local PL curvature, docs/math.md §1.4(1));
                    the gradient is over the trained parameters only
    balance_drift   max_j |(a_j^2 - ||w_j||^2) - (a_j(0)^2 - ||w_j(0)||^2)|  (0 for gradient flow,
                    docs/math.md §0.3; O(step) for GD)
    neuron_norm     ||w_j||
    a               a_j (second-layer weights)
    active_count    #{i : <w_j, x_i> > 0}
    dead_neurons    #{j : active_count_j = 0}
    param_norm_sq   ||theta||^2 = sum_j a_j^2 + ||w_j||^2   (docs/math.md §3.5)
    log_norm        log ||w_j|| (exact in the log-norm engine, docs/math.md §3.2)
    balance_log_drift  max_j |log(|a_j|/||w_j||) - (value at 0)|: relative balancedness
    output          h(x_i)   (optional)
    active          pair activity (sample, neuron)   (optional)
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
    """Everything a probe may read: R runs at one record point, in plain units and the engine
    layout (a (R, p), Wt (d, R, p); see :mod:`shallowflow.network`). Norms include the constant
    part of w_j outside the data span when the engine works in the span."""

    a: Array
    Wt: Array
    norm_sq: Array  # ||w_j||^2, (R, p)
    log_norm: Array  # log ||w_j||, (R, p) (exact also when ||w_j|| underflows)
    log_abs_a: Array  # log |a_j|, (R, p)
    grad_norm_sq: Array  # ||grad L||^2 over the trained parameters, (R,)
    grad: BatchGradient
    balance0: Array  # a_j(0)^2 - ||w_j(0)||^2
    log_ratio0: Array  # log|a_j(0)| - log||w_j(0)||
    time_scale: float


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
        lambda c: c.time_scale * c.grad_norm_sq / c.grad.loss,
    ),
    Probe(
        "balance_drift", (), "max_j |a_j^2 - ||w_j||^2 - (same at t=0)|",
        lambda c: jnp.max(jnp.abs(c.a**2 - c.norm_sq - c.balance0), axis=1),
    ),
    Probe(
        "balance_log_drift", (), "max_j |log(|a_j| / ||w_j||) - (same at t=0)| (relative)",
        lambda c: jnp.max(jnp.abs(c.log_abs_a - c.log_norm - c.log_ratio0), axis=1),
    ),
    Probe("neuron_norm", ("neuron",), "||w_j||", lambda c: jnp.sqrt(c.norm_sq)),
    Probe("log_norm", ("neuron",), "log ||w_j||", lambda c: c.log_norm),
    Probe("a", ("neuron",), "second-layer weight a_j", lambda c: c.a),
    Probe("active_count", ("neuron",), "#samples with <w_j, x_i> > 0", _active_count),
    Probe(
        "dead_neurons", (), "#neurons active on no sample",
        lambda c: jnp.sum(_active_count(c) == 0, axis=1),
    ),
    Probe(
        "param_norm_sq", (), "||theta||^2 = sum a_j^2 + ||W||_F^2",
        lambda c: jnp.sum(c.a**2 + c.norm_sq, axis=1),
    ),
    Probe("output", ("sample",), "network output h(x_i)", lambda c: c.grad.output.T),
    Probe("active", ("sample", "neuron"), "pair activity <w_j, x_i> > 0 (mask included)",
          lambda c: jnp.transpose(c.grad.active, (1, 0, 2))),
    Probe("W", ("neuron", "dim"), "hidden weights (snapshot)",
          lambda c: jnp.transpose(c.Wt, (1, 2, 0))),
]

PROBES: dict[str, Probe] = {p.name: p for p in _ALL}
DEFAULT_PROBES: tuple[str, ...] = (
    "loss", "pl_curvature", "balance_drift", "neuron_norm", "a", "active_count", "dead_neurons",
    "param_norm_sq",
)
