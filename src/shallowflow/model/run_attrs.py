"""The attributes of a results Dataset, typed: :class:`RunAttrs`, written once by
:func:`shallowflow.training.batches.to_dataset` (:meth:`RunAttrs.to_attrs`) and read by every module
that needs them (:meth:`RunAttrs.of`: the loss, the output scale, the activation, ...), instead of
string look-ups with defaults scattered over the readers.

A results file written before an attribute existed reads it as the field's default below, the one
place those defaults live. The attributes survive netCDF (numbers, strings; booleans are written
as 0/1, and an absent ``step_certificate`` is not written). It lives with the model because the
rooms that read it (stationary, theory, plots, reproductions) all stand above this one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

TIME_UNITS = "flow time: step * lr (dtheta/dt = -T grad L)"


@dataclass(frozen=True)
class RunAttrs:
    """What a batch's Dataset says of how its runs were trained (docs/math.md §0.3)."""

    experiment: str = ""  # the experiment's name
    lr: float = math.nan  # the step size eta: flow time per step
    kappa: float = 1.0  # the output scale: h(x) = kappa sum_j a_j sigma(<w_j, x>)
    time_scale: float = 1.0  # T: dtheta/dt = -T grad L
    loss_name: str = "square"
    activation: str = "relu"
    leak: float = 0.0  # the leaky ReLU's negative slope (0: ReLU)
    reduction: str = "mean"
    dtype: str = "float64"
    time_units: str = TIME_UNITS
    parametrisation: str = "plain"
    balance: str = "free"
    second_layer_rate: float = 1.0  # r: da/dt = -T r grad_a L (0: frozen)
    activity_mask: int = 0  # 1: the persistent activity mask was on
    span: int = 0  # 1: trained in the span of the data
    neurons_stepped: int = -1  # per run at the narrowest (train.skip_dead); -1: not known
    notes: str = ""  # the automatic engine choices, one per line
    step_certificate: str | None = None  # the step certificate's verdict (train.step_certificate)

    def to_attrs(self) -> dict[str, Any]:
        """The Dataset attributes (``step_certificate`` only when there is one)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.step_certificate is None:
            del out["step_certificate"]
        return out

    @classmethod
    def of(cls, ds: Any) -> RunAttrs:
        """The attributes of ``ds`` (a Dataset, or its ``attrs`` mapping); an absent one takes
        the field's default; other attributes are ignored."""
        attrs = getattr(ds, "attrs", ds)
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in attrs:
                default = f.default if f.default is not None else ""
                values[f.name] = type(default)(_scalar(attrs[f.name]))
        return cls(**values)


def log_lambda_of(ds: Any) -> Any:
    """The coordinate ``log_lambda`` (run,) of a results Dataset: the effective log initial scale
    (``Experiment.log_lambda``); a file written before the name read ``log_scale``."""
    return ds["log_lambda"] if "log_lambda" in ds.coords or "log_lambda" in ds else ds["log_scale"]


def _scalar(value: Any) -> Any:
    """A netCDF attribute as a Python scalar (numpy scalars and 1-element arrays included)."""
    item = getattr(value, "item", None)
    return item() if callable(item) and getattr(value, "size", 1) == 1 else value
