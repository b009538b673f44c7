"""The dask executor runs batches in worker processes and gives the local executor's results."""

from __future__ import annotations

import pandas as pd
import pytest

from shallowflow.sweep import load_batches, run_sweep, sweep_from_mapping

pytest.importorskip("dask.distributed")

SWEEP = {
    "name": "dask", "max_batch": 2,
    "base": {
        "runs": 2,
        "data": {"kind": "orthonormal", "n": 4, "d": 4},
        "model": {"width": 2},
        "init": {"scheme": "balanced", "scale": 0.1},
        "train": {"lr": 0.1, "steps": 20},
        "record": {"every": 10, "points": 0},
    },
    "grid": {"model.width": [2, 3]},
}


def test_dask_executor_matches_local(tmp_path):
    sw = sweep_from_mapping(SWEEP)
    local = run_sweep(sw, tmp_path / "local", show_progress=False)
    remote = run_sweep(sw, tmp_path / "dask", executor="dask", show_progress=False)
    pd.testing.assert_frame_equal(local, remote)
    for a, b in zip(load_batches(tmp_path / "local"), load_batches(tmp_path / "dask"), strict=True):
        assert a.drop_attrs().equals(b.drop_attrs())


def test_local_cluster_of_pinned_workers_matches_local(tmp_path):
    """Two worker processes, each pinned to its own core group (the scheduler on loopback): the
    same batch files as in-process, bit for bit."""
    import os

    from shallowflow.executors import DaskExecutor, core_groups

    sw = sweep_from_mapping(SWEEP)
    local = run_sweep(sw, tmp_path / "local", show_progress=False)
    remote = run_sweep(sw, tmp_path / "dask", executor="dask", workers=2, show_progress=False)
    pd.testing.assert_frame_equal(local, remote)
    for a, b in zip(load_batches(tmp_path / "local"), load_batches(tmp_path / "dask"), strict=True):
        assert a.drop_attrs().equals(b.drop_attrs())
    if not hasattr(os, "sched_getaffinity"):
        return
    ex = DaskExecutor(workers=2)
    try:
        client = ex.client()
        assert client.scheduler.address.startswith("tcp://127.0.0.1:")
        pinned = client.run(lambda: sorted(os.sched_getaffinity(0)))
        assert sorted(pinned.values()) == sorted(core_groups(2))
    finally:
        ex.close()


def test_core_groups_split_the_cores():
    from shallowflow.executors import core_groups

    for cores in (list(range(1)), list(range(2)), list(range(7)), [0, 2, 4, 6]):
        for workers in range(1, 10):
            groups = core_groups(workers, cores)
            assert len(groups) == workers and all(groups)
            if workers <= len(cores):  # a partition into consecutive runs of near-equal size
                assert [c for g in groups for c in g] == cores
                sizes = [len(g) for g in groups]
                assert max(sizes) - min(sizes) <= 1
            else:  # each worker one core, the cores shared round-robin
                assert [g[0] for g in groups] == [cores[k % len(cores)] for k in range(workers)]


def test_reproduction_batches_on_dask_match_local(tmp_path):
    """A slice of a reproduction (bf-init quick, fewer steps: several batches in one training
    call) on a local cluster of 2 workers gives the in-process results bit for bit."""
    import xarray as xr

    from shallowflow.executors import DaskExecutor
    from shallowflow.reproductions import run_reproduction

    over = ["steps=3000", "runs=2", "widths=[20, 40]", "points=20"]
    run_reproduction("bf-init", tmp_path / "local", "quick", over, show_progress=False)
    ex = DaskExecutor(workers=2)
    try:
        run_reproduction("bf-init", tmp_path / "dask", "quick", over, show_progress=False,
                         executor=ex)
    finally:
        ex.close()
    with xr.open_dataset(tmp_path / "local" / "results.nc") as a, \
            xr.open_dataset(tmp_path / "dask" / "results.nc") as b:
        assert a.drop_attrs().equals(b.drop_attrs())


def test_sweep_on_a_running_scheduler_by_address(tmp_path):
    """A scheduler started elsewhere (here a local cluster of 2 processes, as dask-jobqueue or
    `dask scheduler` would provide) is used through its address, with the same results."""
    from dask.distributed import LocalCluster

    sw = sweep_from_mapping(SWEEP)
    local = run_sweep(sw, tmp_path / "local", show_progress=False)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0") as cluster:
        remote = run_sweep(sw, tmp_path / "remote", executor="dask",
                           address=cluster.scheduler_address, show_progress=False)
    pd.testing.assert_frame_equal(local, remote)


def test_a_killed_worker_loses_only_its_batch(tmp_path):
    """One of 2 worker processes killed (SIGKILL, by its pid) while batches run: its batch is
    run again elsewhere, the sweep finishes, and every batch file equals the in-process one
    (nothing lost, nothing duplicated)."""
    import os
    import signal

    import psutil

    spec = {**SWEEP, "max_batch": 1, "grid": {"model.width": [2, 3, 4, 5]}}
    spec["base"] = {**SWEEP["base"], "train": {"lr": 0.1, "steps": 4000}}
    sw = sweep_from_mapping(spec)
    local = run_sweep(sw, tmp_path / "local", show_progress=False)
    killed: list[int] = []

    def kill_one_worker(batch_id: str) -> None:
        if killed:
            return
        # the local cluster's worker processes: spawned children of this process
        workers = [c for c in psutil.Process().children(recursive=True)
                   if "spawn_main" in " ".join(c.cmdline())
                   and "resource_tracker" not in " ".join(c.cmdline())]
        assert workers, "no worker process found"
        killed.append(workers[0].pid)
        os.kill(workers[0].pid, signal.SIGKILL)

    remote = run_sweep(sw, tmp_path / "dask", executor="dask", workers=2, show_progress=False,
                       after_batch=kill_one_worker)
    assert killed
    pd.testing.assert_frame_equal(local, remote)
    ids = sorted(p.name for p in (tmp_path / "dask" / "batches").iterdir())
    assert ids == sorted(p.name for p in (tmp_path / "local" / "batches").iterdir())
    for a, b in zip(load_batches(tmp_path / "local"), load_batches(tmp_path / "dask"), strict=True):
        assert a.drop_attrs().equals(b.drop_attrs())
