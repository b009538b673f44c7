"""The training engine (docs/math.md §0.3): compiled, batched gradient descent in a registered
parametrisation (:mod:`~shallowflow.dynamics.driver`), called with what to record, when to stop
and how to run (:mod:`~shallowflow.dynamics.options`), a progress meter and a cancellation token
(:mod:`~shallowflow.dynamics.control`), and its record schedule."""

from shallowflow.dynamics.control import CancelToken, Progress
from shallowflow.dynamics.driver import EngineResult, solve
from shallowflow.dynamics.engine_config import PARAMETRISATIONS, EngineConfig
from shallowflow.dynamics.options import EngineOptions, SaveAt, StopWhen
from shallowflow.dynamics.schedule import record_schedule

__all__ = ["PARAMETRISATIONS", "CancelToken", "EngineConfig", "EngineOptions", "EngineResult",
           "Progress", "SaveAt", "StopWhen", "record_schedule", "solve"]
