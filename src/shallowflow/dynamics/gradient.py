"""The engine's gradient for every inputs layout: the step chooses its path here.

One-dimensional inputs with a bias (:class:`~shallowflow.model.inputs.OneDimInputs`) take the exact
bucketed step of :mod:`shallowflow.model.onedim` (docs/math.md §10); the population
(:class:`~shallowflow.model.inputs.PopulationInputs`) the closed form of
:mod:`shallowflow.model.population` (docs/math.md §11); every other layout takes the dense one of
:mod:`shallowflow.model.network`. All give the same :class:`~shallowflow.model.network.BatchGradient`.
"""

from __future__ import annotations

from jax import Array

from shallowflow.model import network, onedim, population
from shallowflow.model.activations import Activation
from shallowflow.model.inputs import Inputs, OneDimInputs, PopulationInputs
from shallowflow.model.losses import Loss
from shallowflow.model.network import BatchGradient


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
    hint: Array | None = None,
) -> BatchGradient:
    """L, dL/da, dL/dWt of R networks (:func:`shallowflow.model.network.batch_loss_and_gradient`, same
    arguments) on the path of ``inputs``: :func:`shallowflow.model.onedim.batch_loss_and_gradient` for
    :class:`~shallowflow.model.inputs.OneDimInputs`, with ``hint`` its search start
    (:func:`shallowflow.model.onedim.cells`); the closed form of
    :func:`shallowflow.model.population.batch_loss_and_gradient` for
    :class:`~shallowflow.model.inputs.PopulationInputs` (no samples: ``y``, ``weights`` and
    ``mask`` unused); the dense path otherwise, where ``hint`` is ignored."""
    if isinstance(inputs, PopulationInputs):
        return population.batch_loss_and_gradient(a, Wt, inputs, kappa, activation, loss)
    if isinstance(inputs, OneDimInputs):
        return onedim.batch_loss_and_gradient(a, Wt, inputs, y, kappa, activation, loss, weights,
                                              mask, hint)
    return network.batch_loss_and_gradient(a, Wt, inputs, y, kappa, activation, loss, weights, mask)
