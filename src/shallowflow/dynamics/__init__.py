"""The training engine (docs/math.md §0.3): compiled, batched gradient descent in a registered
parametrisation (:mod:`~shallowflow.dynamics.driver`) and its record schedule."""

from shallowflow.dynamics.config import PARAMETRISATIONS, EngineConfig
from shallowflow.dynamics.driver import EngineResult, simulate
from shallowflow.dynamics.schedule import record_schedule

__all__ = ["PARAMETRISATIONS", "EngineConfig", "EngineResult", "record_schedule", "simulate"]
