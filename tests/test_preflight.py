"""The estimates made before any work, against what a job really records and writes, and the
plain progress lines used without a terminal."""

from __future__ import annotations

import itertools

import pytest

from shallowflow.config import experiment_from_mapping
from shallowflow.errors import human
from shallowflow.runner import run_experiment
from shallowflow.runtime.progress import LineProgress
from shallowflow.training.batches import schedule_of
from shallowflow.training.preflight import estimate, record_points, record_size


def exp_with(steps=500, every=None, points=50, at_steps=(), at_times=(), probes=None,
             snapshots=False, runs=2):
    record = {"every": every, "points": points, "at_steps": list(at_steps),
              "at_times": list(at_times), "snapshots": snapshots}
    if probes is not None:
        record["probes"] = probes
    return experiment_from_mapping({
        "runs": runs, "data": {"kind": "sphere", "n": 30, "d": 7}, "model": {"width": 11},
        "init": {"scheme": "dpb"}, "train": {"lr": 0.1, "steps": steps},
        "record": {k: v for k, v in record.items() if v is not None}})


@pytest.mark.parametrize(("steps", "every", "points", "at_steps", "at_times"), list(
    itertools.product([0, 1, 7, 1000], [None, 1, 3], [0, 5, 200], [(), (2, 2, 900)],
                      [(), (0.35, 50.0)])))
def test_record_points_bound_the_real_schedule(steps, every, points, at_steps, at_times):
    exp = exp_with(steps, every, points, at_steps, at_times)
    assert len(schedule_of(exp)) <= record_points(exp)


def test_record_size_counts_the_probe_shapes():
    exp = exp_with(probes=["loss", "neuron_norm", "output", "active"], snapshots=True)
    n, p, d = 30, 11, 7
    assert record_size(exp) == 1 + p + n + n * p + p * d


def test_disk_estimate_bounds_what_a_run_writes(tmp_path):
    """The estimate is an upper bound on the bytes of the results, within a small factor."""
    exp = exp_with(steps=300, points=300, probes=["loss", "neuron_norm", "a", "output"], runs=8)
    out = tmp_path / "run"
    run_experiment(exp, out, show_progress=False)
    written = sum(f.stat().st_size for f in out.iterdir())
    est = estimate([(exp, exp.runs)]).disk
    assert written <= est <= 4 * written, (written, est)


def test_absurd_sizes_are_estimated_without_building_anything():
    exp = exp_with(steps=10**9, every=1, runs=10**6)
    est = estimate([(exp, exp.runs)])
    assert est.memory > 1e15 and est.disk > 1e15
    assert est.flops == pytest.approx(4.0 * 30 * 7 * 11 * 10**9 * 10**6)
    assert human(2**40) == "1 TiB" and human(1536) == "1.5 KiB"


def test_line_progress_counts_elapsed_and_eta():
    lines: list[str] = []
    bar = LineProgress(interval=0.0, write=lines.append)
    with bar:
        outer = bar.add_task("sweep: runs", total=10, completed=0)
        bar.advance(outer, 1)  # the first step (it compiled): no ETA from it alone
        bar.advance(outer, 2)
        inner = bar.add_task("batch 1", total=None)
        bar.update(inner, completed=40, total=100)
        bar.remove_task(inner)
    assert "sweep: runs: 0/10 (0%)" in lines[0]
    assert any("1/10 (10%)" in line and "ETA" not in line for line in lines)
    assert any("3/10 (30%)" in line and "ETA" in line for line in lines)
    assert any("batch 1: 40/100 (40%)" in line for line in lines)
    assert "\n" not in "".join(lines)


def test_line_progress_is_quiet_between_intervals():
    lines: list[str] = []
    with LineProgress(interval=3600.0, write=lines.append) as bar:
        task = bar.add_task("runs", total=100)
        for _ in range(100):
            bar.advance(task)
    assert len(lines) == 2  # the start and the end
    assert "100/100 (100%)" in lines[-1]


def test_rich_bar_eta_leaves_out_the_compile_time_too():
    """The terminal bar (rich) measures its speed the same way: the first sample's advance is
    not counted, so 100 s of compiling then 1 step/s leaves 8 s for 8 steps."""
    from rich.progress import Progress

    clock = [0.0]
    bar = Progress(get_time=lambda: clock[0], disable=True)
    task = bar.add_task("steps", total=10)
    clock[0] = 100.0
    bar.update(task, completed=1)
    clock[0] = 101.0
    bar.update(task, completed=2)
    assert bar.tasks[0].time_remaining == pytest.approx(8.0)
