"""The ``[train]`` table: loss, step, optimizer, stopping, engine choices and certificates."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator

from shallowflow.config.spec_types import StrictModel
from shallowflow.errors import shown


class TrainSpec(StrictModel):
    """theta <- theta - lr * T * grad L; one step is ``lr`` units of flow time (docs/math.md §0.3)."""

    loss: Literal["square", "mse", "exponential", "logistic"] = "square"
    reduction: Literal["mean", "sum"] = "mean"
    lr: float = Field(gt=0, description="step size eta (flow time per step)")
    steps: int | None = Field(None, ge=0, description="number of steps")
    duration: float | None = Field(None, gt=0, description="flow time; steps = ceil(duration/lr)")
    time_scale: float | Literal["width"] = Field(1.0, description="T: a number or 'width' (T = p)")
    optimizer: Literal["gd", "sgd"] = "gd"
    batch_size: int | None = Field(None, gt=0)
    second_layer_rate: float = Field(
        1.0, ge=0, description="the second layer's learning rate over the first's, r: "
        "da/dt = -T r grad_a L (1: plain GD, 0: the second layer frozen, the first trained "
        "alone; docs/math.md §4.5)")
    stop_loss: float | None = Field(None, ge=0, description="freeze a run once L < stop_loss")
    stop_grad: float | None = Field(
        None, gt=0, description="end a run once ||grad L||_2 < stop_grad (tested at record points)")
    max_seconds: float | None = Field(
        None, gt=0, description="wall-clock budget of each batch; runs then end with their "
        "results so far (stop reason 'time')")
    dtype: Literal["float64", "float32"] = "float64"
    onedim: Literal["auto", "on", "off"] = Field(
        "auto", description="exact bucketed step for one input coordinate plus a bias "
        "(docs/math.md §10; auto: when it pays)")
    skip_dead: Literal["auto", "on", "off"] = Field(
        "auto", description="step only the neurons active on some sample; dead ReLU neurons keep "
        "their parameters exactly (docs/math.md §0.3; results equal to rounding; auto: when it "
        "pays)")
    dead_check_every: int | None = Field(
        None, ge=1, description="train.skip_dead: look for dead neurons every this many steps "
        "besides the record points (None: at steps 1, 2, 4, 8, ...; docs/math.md §0.3)")
    parametrisation: Literal["auto", "plain", "lognorm"] = Field(
        "auto", description="lognorm: the log-norm parametrisation (auto: when lambda^2 underflows)")
    balance: Literal["free", "tied"] = Field(
        "free", description="lognorm: 'free' is plain GD; 'tied' keeps a_j = s_j ||w_j|| exactly")
    activity_mask: Literal["auto", "on", "off"] = Field(
        "auto", description="persistent activity mask (auto: on for orthogonal data)")
    span: Literal["auto", "on", "off"] = Field(
        "auto", description="train in the span of the data (auto: when n < d or rows are orthogonal)")
    step_certificate: int = Field(0, ge=0, le=2, description="rerun at lr/2 (1) and lr/4 (2)")
    step_certificate_tol: float | None = Field(None, gt=0, description="required relative step certificate")
    precision_certificate: int = Field(
        0, ge=0, description="float32 runs: rerun this many runs of each batch (its first ones) "
        "in float64 and record their distance (docs/math.md §8.13)")
    precision_certificate_tol: float | None = Field(
        None, gt=0, description="required relative precision certificate")
    polish: Literal["none", "newton", "bfgs", "lbfgs"] = Field(
        "none", description="polish each end point to the nearest stationary point "
        "(docs/math.md §9.5); the polished network and the distance moved are recorded")
    end_state: bool = Field(
        False, description="certify each end state (minimum, saddle, not stationary; "
        "docs/math.md §9.6), of the polished point when train.polish is set")

    @model_validator(mode="before")
    @classmethod
    def _removed(cls, data: object) -> object:
        if isinstance(data, dict) and "layers" in data:
            raise ValueError(REMOVED_LAYERS)
        return data

    @model_validator(mode="after")
    def _consistent(self) -> TrainSpec:
        if (self.steps is None) == (self.duration is None):
            raise ValueError("steps/duration: give exactly one of train.steps or train.duration")
        if self.n_steps > MAX_STEPS:
            given = (f"got {self.steps}" if self.steps is not None else
                     f"duration / lr gives {self.n_steps:.3g}")
            raise ValueError(f"{'steps' if self.steps is not None else 'duration'}: at most "
                             f"{MAX_STEPS:.0e} steps, more than a day at a microsecond a step "
                             f"({given}); ask for fewer steps")
        if isinstance(self.time_scale, float) and not self.time_scale > 0:
            raise ValueError(f"time_scale: must be > 0 or 'width', got {self.time_scale}")
        if self.optimizer == "sgd" and self.batch_size is None:
            raise ValueError("batch_size: optimizer 'sgd' needs train.batch_size")
        if self.optimizer == "gd" and self.batch_size is not None:
            raise ValueError("batch_size: only for optimizer 'sgd' (gd is full batch)")
        if self.optimizer == "sgd" and self.activity_mask == "on":
            raise ValueError("activity_mask: 'on' needs full-batch GD, not sgd")
        if self.optimizer == "sgd" and self.span == "on":
            raise ValueError("span: 'on' needs full-batch GD, not sgd")
        if self.step_certificate_tol is not None and self.step_certificate == 0:
            raise ValueError("step_certificate_tol: needs train.step_certificate >= 1")
        if self.precision_certificate and self.dtype != "float32":
            raise ValueError(f"precision_certificate: reruns float32 runs in float64; needs "
                             f"train.dtype = 'float32' (got {shown(self.dtype)})")
        if self.precision_certificate_tol is not None and self.precision_certificate == 0:
            raise ValueError("precision_certificate_tol: needs train.precision_certificate >= 1")
        if self.dead_check_every is not None and self.skip_dead == "off":
            raise ValueError(f"dead_check_every: looks for dead neurons to skip; needs "
                             f"train.skip_dead 'auto' or 'on' (got {shown(self.skip_dead)})")
        if self.optimizer == "sgd" and self.onedim == "on":
            raise ValueError("onedim: 'on' needs full-batch GD, not sgd")
        if self.second_layer_rate != 1.0 and self.balance == "tied":
            raise ValueError(f"second_layer_rate: balance 'tied' keeps |a_j| = ||w_j||, which "
                             f"the flow keeps only at rate 1 (got {self.second_layer_rate})")
        if self.onedim == "on" and "on" in (self.activity_mask, self.span):
            raise ValueError("onedim: 'on' excludes activity_mask 'on' and span 'on'")
        return self

    @property
    def n_steps(self) -> int:
        if self.steps is not None:
            return self.steps
        return math.ceil(self.duration / self.lr - 1e-9)  # type: ignore[operator]


REMOVED_LAYERS = "layers: removed; use train.second_layer_rate = 0"
"""The message for the old ``train.layers`` ("both"/"first"): ``second_layer_rate = 0`` freezes the
second layer, as ``layers = "first"`` did."""

MAX_STEPS = 10**11
"""The most steps a run may ask for: 10^11 steps take more than a day at a microsecond a step,
faster than the engine steps any network (a count beyond it can never finish)."""

CLASSIFICATION_LOSSES = ("exponential", "logistic")
"""Losses of a margin y h(x): their labels must be +1 or -1 (docs/math.md §4.1)."""
