"""The engine call's arguments as objects (shallowflow.dynamics.options, .control): frozen values
equal and hashable when their fields are, a progress meter advanced per segment and a
cancellation token that stops the call at its next segment."""

from __future__ import annotations

import numpy as np
import pytest

from shallowflow.dynamics import (
    CancelToken,
    EngineConfig,
    EngineOptions,
    Progress,
    SaveAt,
    StopWhen,
    record_schedule,
    solve,
)
from shallowflow.errors import Cancelled
from shallowflow.model.network import Network


def test_options_are_values():
    """Equal fields: equal objects with equal hashes, whether given as arrays or tuples."""
    sched = record_schedule(100, every=10)
    assert SaveAt(sched) == SaveAt(tuple(int(s) for s in sched))
    assert hash(SaveAt(sched)) == hash(SaveAt(sched.copy()))
    assert SaveAt(sched).budget == 100 and SaveAt(sched).schedule.dtype == np.int64
    stop = StopWhen(loss=np.array([0.5, -np.inf], np.float32), seconds=3.0)
    assert stop == StopWhen(loss=(0.5, -np.inf), seconds=3.0)
    assert hash(stop) == hash(StopWhen(loss=[0.5, -np.inf], seconds=3.0))
    assert EngineOptions(threads=2) == EngineOptions(threads=2) != EngineOptions()
    assert len({EngineOptions(), EngineOptions(), EngineOptions(span=True)}) == 2


def test_bad_values_are_refused():
    for steps in ([1, 2], [0, 2, 2], [], [[0, 1]]):
        with pytest.raises(ValueError, match="schedule"):
            SaveAt(np.array(steps))
    with pytest.raises(ValueError, match="stop_loss"):
        StopWhen(loss=np.zeros((2, 2)))


def test_progress_and_cancel_token():
    seen: list[tuple[int, int]] = []
    meter = Progress(report=lambda done, total: seen.append((done, total)))
    meter.start(10)
    meter.advance(4)
    meter.advance(0)
    meter.advance(6)
    assert seen == [(4, 10), (4, 10), (10, 10)]
    parent = CancelToken()
    child = CancelToken(parent=parent)
    child.check()
    parent.cancel()
    assert child.cancelled
    with pytest.raises(Cancelled):
        child.check()


def _problem(R: int = 4):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(R, 10, 3)), rng.normal(size=(R, 10))
    return Network(rng.normal(size=(R, 5)), rng.normal(size=(R, 5, 3))), X, y


@pytest.mark.parametrize("threads", [1, 2])
def test_a_cancelled_token_stops_the_call(threads):
    """The token cancelled during the first segment: the call raises Cancelled after it, whole
    batch or shards."""
    net, X, y = _problem()
    token, seen = CancelToken(), []

    def report(done: int, total: int) -> None:
        token.cancel()
        seen.append(done)

    with pytest.raises(Cancelled):
        solve(EngineConfig(lr=0.01, probes=("loss",)), net, X, y,
                 saveat=SaveAt(record_schedule(200, every=1)),
                 options=EngineOptions(threads=threads, records_per_call=4),
                 progress=Progress(report=report), cancel=token)
    assert seen and max(seen) < 200
