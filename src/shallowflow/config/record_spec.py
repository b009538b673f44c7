"""The ``[record]`` table: when and what to record."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from shallowflow.config.spec_types import StrictModel
from shallowflow.dynamics.probes import DEFAULT_PROBES, PROBES
from shallowflow.errors import shown


class RecordSpec(StrictModel):
    """When and what to record: the union of a linear (``every``) schedule, a geometric
    (``points``) one and explicit lists of steps (``at_steps``) and flow times (``at_times``,
    rounded to the nearest step); step 0 and the last step are always recorded, entries past
    the last step are ignored. Runs trained in one batch record at the union of their
    schedules."""

    every: int | None = Field(None, gt=0, description="record every this many steps")
    points: int = Field(100, ge=0, description="geometrically spaced record points")
    at_steps: tuple[Annotated[int, Field(ge=0)], ...] = Field(
        (), description="explicit record steps (e.g. an author's checkpoint list)")
    at_times: tuple[Annotated[float, Field(ge=0)], ...] = Field(
        (), description="explicit record flow times (step * lr), rounded to steps")
    probes: tuple[str, ...] = DEFAULT_PROBES
    snapshots: bool = Field(False, description="also record all hidden weights W")

    @model_validator(mode="after")
    def _probes(self) -> RecordSpec:
        unknown = [p for p in self.probes if p not in PROBES]
        if unknown:
            raise ValueError(f"probes: unknown {unknown}; allowed: {', '.join(PROBES)}")
        if "loss" not in self.probes:
            raise ValueError(f"probes: must include 'loss', which every summary of a run reads "
                             f"(got {shown(list(self.probes))})")
        return self
