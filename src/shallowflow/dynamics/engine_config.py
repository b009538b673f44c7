"""Compile-time engine settings and the registry of parametrisations (docs/math.md §0.3)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from shallowflow.dynamics.lognorm import LOGNORM
from shallowflow.dynamics.parametrisation import Parametrisation
from shallowflow.dynamics.plain import PLAIN
from shallowflow.dynamics.probes import DEFAULT_PROBES, PROBES
from shallowflow.model.activations import RELU, Activation
from shallowflow.model.losses import Loss

PARAMETRISATIONS: dict[str, Parametrisation] = {c.name: c for c in (PLAIN, LOGNORM)}


def _names(names: list[str]) -> str:
    return " or ".join(repr(n) for n in names)


@dataclass(frozen=True)
class EngineConfig:
    """Compile-time settings shared by all runs of a batch (hashable: a static jit argument)."""

    activation: Activation = RELU
    loss: Loss = field(default_factory=Loss)
    kappa: float = 1.0
    lr: float = 0.1
    time_scale: float = 1.0
    train_second_layer: bool = True
    second_layer_rate: float = 1.0  # r: da/dt = -T r grad_a L (docs/math.md §4.5); 0: frozen
    batch_size: int | None = None
    probes: tuple[str, ...] = DEFAULT_PROBES
    parametrisation: str = "plain"  # a key of PARAMETRISATIONS
    tied_balance: bool = False  # a_j = s_j ||w_j|| exactly (parametrisations that offer it)
    activity_mask: bool = False
    onedim: bool = False  # inputs (x, 1): the exact bucketed step (shallowflow.model.onedim, math.md §10)

    @property
    def coordinates(self) -> Parametrisation:
        """The :class:`~shallowflow.dynamics.parametrisation.Parametrisation` named by
        ``parametrisation``."""
        return PARAMETRISATIONS[self.parametrisation]

    @property
    def layer_rate(self) -> float:
        """The second layer's rate relative to the first's, r (0 when it is frozen):
        a <- a - eta T r grad_a L, W <- W - eta T grad_W L (docs/math.md §4.5)."""
        return self.second_layer_rate if self.train_second_layer else 0.0

    @property
    def needs(self) -> frozenset[str]:
        """The batch constants the recorded probes read (``probes.Probe.needs``)."""
        return frozenset().union(*(PROBES[p].needs for p in self.probes if p in PROBES))

    def __post_init__(self) -> None:
        if self.parametrisation not in PARAMETRISATIONS:
            raise ValueError(f"parametrisation: must be {_names(list(PARAMETRISATIONS))}, got "
                             f"{self.parametrisation!r}")
        if self.tied_balance and not self.coordinates.tied_balance:
            tied = [name for name, c in PARAMETRISATIONS.items() if c.tied_balance]
            raise ValueError(f"tied_balance: only with parametrisation {_names(tied)}")
        if not (math.isfinite(self.second_layer_rate) and self.second_layer_rate >= 0):
            raise ValueError(f"second_layer_rate: must be finite and >= 0, got "
                             f"{self.second_layer_rate}")
        if self.tied_balance and self.second_layer_rate != 1.0:
            raise ValueError("second_layer_rate: tied balance keeps |a_j| = ||w_j||, which the "
                             f"flow conserves only at rate 1 (got {self.second_layer_rate})")
        if self.activity_mask and (self.activation.leak != 0 or self.batch_size is not None):
            raise ValueError("activity_mask: needs ReLU (leak 0) and full-batch GD")
        if self.onedim and self.activation.leak != 0:
            raise ValueError("onedim: needs ReLU (leak 0); the leaky ReLU takes the dense path")
        if self.onedim and self.batch_size is not None:
            raise ValueError("onedim: needs full-batch GD; SGD (batch_size) takes the dense path")
        if self.onedim and self.activity_mask:
            raise ValueError("onedim: not with activity_mask (a mask per pair is O(n p))")
        unknown = [p for p in self.probes if p not in PROBES]
        if unknown:
            raise ValueError(f"probes: unknown {unknown}; allowed: {', '.join(PROBES)}")
        if not self.lr > 0:
            raise ValueError(f"lr: must be > 0, got {self.lr}")
