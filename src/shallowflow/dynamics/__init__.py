"""Training engines: compiled, batched gradient descent (``gd``) and its record schedule."""

from shallowflow.dynamics.gd import EngineConfig, EngineResult, simulate
from shallowflow.dynamics.schedule import record_schedule

__all__ = ["EngineConfig", "EngineResult", "record_schedule", "simulate"]
