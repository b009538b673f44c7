"""Training losses and their derivative with respect to the network output (docs/math.md §0.3, §6).

Every loss is L(theta) = c * sum_i ell(h(x_i), y_i) with c = 1/n ("mean") or c = 1 ("sum"):

    square       ell = (yhat - y)^2 / 2     (DPB, TBLEL spec: L = 1/(2n) sum r^2)       §1.1, §3.1
    mse          ell = (yhat - y)^2         (BF code, PyTorch MSELoss: L = 1/n sum r^2)  §2.1
    exponential  ell = exp(-y yhat)         (MMV, labels +-1)                            §4.1
    logistic     ell = log(1 + exp(-y yhat))                                             §4.1

``derivative`` returns dL/d(yhat_i) = c * ell'(yhat_i, y_i), the vector the gradient formulas of
docs/math.md §0.3 contract against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import jax
import jax.numpy as jnp
from jax import Array

LossName = Literal["square", "mse", "exponential", "logistic"]
Reduction = Literal["mean", "sum"]
LOSS_NAMES: tuple[str, ...] = ("square", "mse", "exponential", "logistic")


@dataclass(frozen=True)
class Loss:
    """A loss ``name`` with reduction ``mean`` (c = 1/n) or ``sum`` (c = 1). Hashable (jit-static)."""

    name: LossName = "square"
    reduction: Reduction = "mean"

    def __post_init__(self) -> None:
        if self.name not in LOSS_NAMES:
            raise ValueError(f"loss: unknown name {self.name!r}; allowed: {', '.join(LOSS_NAMES)}")
        if self.reduction not in ("mean", "sum"):
            raise ValueError(f"reduction: must be 'mean' or 'sum', got {self.reduction!r}")

    def pointwise(self, out: Array, y: Array) -> Array:
        """ell(yhat_i, y_i) for each sample."""
        if self.name == "square":
            return 0.5 * (out - y) ** 2
        if self.name == "mse":
            return (out - y) ** 2
        margin = y * out
        if self.name == "exponential":
            return jnp.exp(-margin)
        return jnp.logaddexp(0.0, -margin)

    def pointwise_derivative(self, out: Array, y: Array) -> Array:
        """d ell / d yhat for each sample."""
        if self.name == "square":
            return out - y
        if self.name == "mse":
            return 2.0 * (out - y)
        margin = y * out
        if self.name == "exponential":
            return -y * jnp.exp(-margin)
        return -y * jax.nn.sigmoid(-margin)

    def normaliser(self, weights: Array, axis: int | None = None) -> Array:
        """c: 1/(sum of the sample weights over ``axis``) for ``mean``, 1 for ``sum`` (weights are
        1 in full batch)."""
        total = jnp.sum(weights, axis=axis)
        return 1.0 / total if self.reduction == "mean" else jnp.ones_like(total)

    def quadratic_coefficient(self, n: int) -> float:
        """c in L = c Σ_i r_i² (r_i = yhat_i - y_i) over n samples, for the square losses: 1/(2n) for
        'square', 1/n for 'mse' (reduction 'sum': 1/2 and 1). ValueError for the other losses."""
        if self.name not in ("square", "mse"):
            raise ValueError(f"loss: {self.name!r} is not a square loss; L = c Σ r² needs 'square' or 'mse'")
        c = 0.5 if self.name == "square" else 1.0
        return c / n if self.reduction == "mean" else c

    def value(self, out: Array, y: Array) -> Array:
        """L = c * sum_i ell(yhat_i, y_i)."""
        c = 1.0 / out.shape[-1] if self.reduction == "mean" else 1.0
        return c * jnp.sum(self.pointwise(out, y), axis=-1)

    def derivative(self, out: Array, y: Array) -> Array:
        """dL/dyhat_i = c * ell'(yhat_i, y_i)."""
        c = 1.0 / out.shape[-1] if self.reduction == "mean" else 1.0
        return c * self.pointwise_derivative(out, y)
