"""The local executor trains batches side by side (shallowflow.runtime.executors.LocalExecutor): the
results do not depend on how many are in flight, they overlap, a failure leaves the others
going, a stop reaches the batches in flight, and the memory estimate counts them."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from shallowflow.config import experiment_from_mapping
from shallowflow.errors import Cancelled, Failure
from shallowflow.runtime.executors import LocalExecutor
from shallowflow.runtime.progress import LineProgress
from shallowflow.training import preflight
from shallowflow.training.entry import train


def spec(seed: int, width: int, n: int = 300, d: int = 40) -> dict:
    return {"name": f"e{seed}", "seed": seed, "runs": 4,
            "data": {"kind": "sphere", "n": n, "d": d, "per_run": True},
            "model": {"width": width}, "init": {"scheme": "gaussian", "scale": 0.5},
            "train": {"lr": 0.05, "steps": 300, "stop_loss": 0.02},
            "record": {"points": 9, "probes": ["loss", "neuron_norm", "a"]}}


def test_batches_in_flight_change_nothing(monkeypatch):
    """Three batches (other widths: other batches), one at a time and all three at once with a
    single core slot (the most contended case): the same records bit for bit."""
    from shallowflow.dynamics import driver

    exps = [experiment_from_mapping(spec(k, width=4 + k)) for k in range(3)]
    alone = train(exps, show_progress=False, executor=LocalExecutor(1))
    one_slot = threading.BoundedSemaphore(1)
    monkeypatch.setattr(driver, "core_slots", lambda: one_slot)
    together = train(exps, show_progress=False, executor=LocalExecutor(3))
    for a, b in zip(alone, together, strict=True):
        for name in ("loss", "neuron_norm", "a", "stop_step"):
            np.testing.assert_array_equal(a[name].values, b[name].values)


def run_all(executor: LocalExecutor, task, count: int) -> list[tuple[int, object]]:
    with LineProgress(enabled=False) as bar:
        return list(executor.run(task, list(range(count)), bar, str))


def test_the_next_batch_starts_while_one_trains():
    """Batch 0 waits for batch 1 to start: one batch at a time, it would wait in vain."""
    started = [threading.Event() for _ in range(3)]

    def task(k, progress, cancel):
        started[k].set()
        if k == 0 and not started[1].wait(timeout=10):
            raise RuntimeError("batch 1 did not start while batch 0 ran")
        return k * 10

    out = run_all(LocalExecutor(2), task, 3)
    assert sorted(out) == [(0, 0), (1, 10), (2, 20)]
    out = run_all(LocalExecutor(1), lambda k, progress, cancel: k, 3)
    assert out == [(0, 0), (1, 1), (2, 2)]  # one at a time: in order


def test_a_failing_batch_leaves_the_others_going():
    def task(k, progress, cancel):
        if k == 1:
            raise ValueError("bad batch")
        return k

    out = dict(run_all(LocalExecutor(2), task, 4))
    assert isinstance(out[1], Failure) and "bad batch" in out[1].line
    assert [out[k] for k in (0, 2, 3)] == [0, 2, 3]


def test_a_stop_reaches_the_batches_in_flight():
    """The caller stops after the first result: the batch still in flight ends at its next step
    (its cancellation token raises), and no further batch starts."""
    seen: list[str] = []
    quick = threading.Event()

    def task(k, progress, cancel):
        if k == 0:
            return "first"
        quick.set()
        for step in range(5000):  # seconds without the stop
            try:
                progress(step, 5000)
                cancel.check()
            except Cancelled:
                seen.append(f"batch {k} cancelled")
                raise
            threading.Event().wait(0.001)
        return "never"

    with LineProgress(enabled=False) as bar:
        results = LocalExecutor(2).run(task, list(range(5)), bar, str)
        assert next(results) == (0, "first")
        assert quick.wait(timeout=10)
        results.close()  # the caller stops
    assert seen == ["batch 1 cancelled"]


def test_the_memory_estimate_counts_the_batches_in_flight(monkeypatch):
    """Two batches in flight: one more batch's working set than one at a time, namely the
    working set of a job of one batch."""
    exp = experiment_from_mapping(spec(0, width=30, n=2000, d=100))
    jobs = [(exp, 4), (exp, 4)]
    monkeypatch.setattr(preflight, "IN_FLIGHT", 1)
    one, single = preflight.estimate(jobs, hold=False), preflight.estimate(jobs[:1], hold=False)
    monkeypatch.setattr(preflight, "IN_FLIGHT", 2)
    two = preflight.estimate(jobs, hold=False)
    working = single.memory - preflight.RUNTIME_BYTES - 4 * preflight.PLAN_BYTES_PER_RUN
    assert working > 0
    assert two.memory - one.memory == pytest.approx(working)
