"""What an engine call is asked (:func:`~shallowflow.dynamics.driver.solve`), in the manner
of a differential-equation solver's ``solve(..., saveat=...)``: :class:`SaveAt`, the steps at
which the probes are recorded; :class:`StopWhen`, the rules that end a run before the last of
them; :class:`EngineOptions`, how the engine runs (they change the numbers at most to rounding).

All three are frozen values, hashable and equal when their fields are equal (arrays are kept as
tuples); they stay on the host and never reach a compiled program, whose static settings are
the :class:`~shallowflow.dynamics.engine_config.EngineConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from jax import Array

from shallowflow.dynamics.live import SkipDead


def _per_run(name: str, values: Array | np.ndarray | tuple[float, ...] | None,
             ) -> tuple[float, ...] | None:
    """Per-run values (R,) as a tuple of floats (exact for float32 and float64), None as is."""
    if values is None:
        return None
    host = np.asarray(values, np.float64)
    if host.ndim != 1:
        raise ValueError(f"{name}: must be one value per run, shape (R,), got shape {host.shape}")
    return tuple(host.tolist())


@dataclass(frozen=True)
class SaveAt:
    """The record schedule: probes are recorded at ``steps``, strictly increasing steps starting
    at 0 (see :func:`~shallowflow.dynamics.schedule.record_schedule`); the last one is the step
    budget. Which probes are recorded is compiled in: ``EngineConfig.probes``."""

    steps: tuple[int, ...]

    def __post_init__(self) -> None:
        host = np.asarray(self.steps, dtype=np.int64)
        if host.ndim != 1 or len(host) == 0 or host[0] != 0 or np.any(np.diff(host) <= 0):
            raise ValueError("schedule: must be a strictly increasing 1-D array of steps starting "
                             "at 0")
        object.__setattr__(self, "steps", tuple(host.tolist()))

    @property
    def schedule(self) -> np.ndarray:
        """The record steps as an int64 array (record,)."""
        return np.asarray(self.steps, dtype=np.int64)

    @property
    def budget(self) -> int:
        """The last record step: a run still running there ends ("steps")."""
        return self.steps[-1]


@dataclass(frozen=True)
class StopWhen:
    """When a run ends before the step budget (:attr:`SaveAt.budget`); each rule off by default.

    ``loss`` (R,): once the run's loss is below its threshold ("loss"). ``grad`` (R,): once
    ||grad L||_2 is below its threshold at a record point after step 0 ("gradient"). ``seconds``:
    the wall-clock budget of the whole call, compilation included, tested between compiled
    segments (at most 1/50 of the steps each); runs still running then end "time" with their
    results up to that point. A run whose loss or parameters become non-finite always ends
    "diverged" (``shallowflow.dynamics.state``)."""

    loss: tuple[float, ...] | None = None
    grad: tuple[float, ...] | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "loss", _per_run("stop_loss", self.loss))
        object.__setattr__(self, "grad", _per_run("stop_grad", self.grad))


@dataclass(frozen=True)
class EngineOptions:
    """How the engine runs a batch; results equal bit for bit unless said otherwise.

    ``span``: train in the span basis of the data (:mod:`~shallowflow.dynamics.span`; X must be an
    array; results equal to rounding). ``rebatch``: once at most half of the batch still runs,
    continue with the running runs only (frozen runs' records are exact copies of their last one; a
    new shape compiles once; :mod:`~shallowflow.dynamics.rebatch`). ``skip_dead``: step only the
    neurons active on some sample, the dead ones keeping their parameters exactly
    (:mod:`~shallowflow.dynamics.live`; results equal to rounding; "auto": when it saves enough
    work, "on": whenever possible, "off": never; only where the parametrisation keeps dead neurons
    exactly and the activation is ReLU), looked for at each segment's start, segments ending at
    record points and at :func:`~shallowflow.dynamics.live.check_steps` (``dead_check_every``: every
    that many steps; None: the powers of two). ``threads``: shards of runs advanced side by side,
    each in a thread of its own (None: one per core where runs are contracted in blocks of a size
    fixed by the shapes, and the results are bit for bit those of one shard; else one;
    :func:`~shallowflow.dynamics.compilation.shards`). ``records_per_call``: record points per
    compiled segment (at most)."""

    span: bool = False
    rebatch: bool = True
    skip_dead: SkipDead = "auto"
    dead_check_every: int | None = None
    threads: int | None = None
    records_per_call: int = 64

    def __post_init__(self) -> None:
        if self.dead_check_every is not None and not self.dead_check_every >= 1:
            raise ValueError(f"dead_check_every: must be >= 1 or None, got {self.dead_check_every}")
