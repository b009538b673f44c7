"""Plain parametrisation: the engine state is (a (R, p), Wt (d, R, p)) itself (MATH.md §0.3).

    a  <- a  - eta T dL/da,        Wt <- Wt - eta T dL/dWt
"""

from __future__ import annotations

from typing import NamedTuple

from jax import Array

from shallowflow.network import BatchGradient


class PlainParams(NamedTuple):
    a: Array  # (R, p)
    Wt: Array  # (d, R, p)


def weights(params: PlainParams) -> tuple[Array, Array]:
    """(a, Wt) as the network uses them."""
    return params.a, params.Wt


def update(params: PlainParams, bg: BatchGradient, rate: float, train_a: bool) -> PlainParams:
    """One GD step of size rate = eta T."""
    a = params.a - rate * bg.grad_a if train_a else params.a
    return PlainParams(a, params.Wt - rate * bg.grad_Wt)

