"""The model table: width, output scale, activation and hidden bias."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from shallowflow.config.spec_types import StrictModel


class ModelSpec(StrictModel):
    """h(x) = kappa sum_j a_j sigma(<w_j, x>) (docs/math.md §0.3)."""

    width: int = Field(gt=0, description="number of hidden neurons p")
    kappa: Literal["1", "1/p"] = Field("1", description="output scale: 1 or 1/p (DPB)")
    activation: Literal["relu", "leaky_relu"] = "relu"
    leak: float = Field(0.0, ge=0, lt=1, description="negative slope of leaky_relu")
    bias: bool = Field(False, description="hidden bias as an appended constant input 1")

    @model_validator(mode="after")
    def _leak(self) -> ModelSpec:
        if self.activation == "relu" and self.leak != 0:
            raise ValueError(f"leak: must be 0 for activation 'relu', got {self.leak}")
        if self.activation == "leaky_relu" and self.leak == 0:
            raise ValueError("leak: activation 'leaky_relu' needs leak in (0, 1), got 0")
        return self

