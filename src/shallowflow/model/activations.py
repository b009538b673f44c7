"""Activations sigma and their derivative, with sigma'(0) made explicit (docs/math.md §0.2, §0.3).

ReLU is sigma(z) = max(z, 0); leaky ReLU is sigma(z) = max(z, gamma z) with gamma in [0, 1)
(BF, docs/math.md §2.1). The derivative is

    sigma'(z) = 1 if z > 0,   gamma if z < 0,   0 if z == 0,

so ReLU has sigma'(0) = 0 exactly (the element of the Clarke subdifferential all four papers
fix, and what PyTorch returns). ``jnp.maximum`` under autodiff would give 1/2 at 0, which is why the
engine never differentiates through sigma and uses this function instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
from jax import Array


@dataclass(frozen=True)
class Activation:
    """A (leaky) ReLU with negative slope ``leak`` (0 for ReLU). Hashable: a static jit argument."""

    leak: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.leak < 1.0:
            raise ValueError(f"leak: must lie in [0, 1), got {self.leak!r}")

    @property
    def name(self) -> str:
        return "relu" if self.leak == 0.0 else "leaky_relu"

    def __call__(self, z: Array) -> Array:
        """sigma(z) = max(z, leak * z)."""
        if self.leak == 0.0:
            return jnp.where(z > 0, z, jnp.zeros_like(z))
        return jnp.where(z > 0, z, self.leak * z)

    def derivative(self, z: Array) -> Array:
        """sigma'(z): 1 on z > 0, leak on z < 0 and exactly 0 at z = 0."""
        one = jnp.ones_like(z)
        if self.leak == 0.0:
            return jnp.where(z > 0, one, jnp.zeros_like(z))
        return jnp.where(z > 0, one, jnp.where(z < 0, self.leak * one, jnp.zeros_like(z)))


RELU = Activation(0.0)
