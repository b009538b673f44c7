"""The dask executor runs batches in worker processes and gives the local executor's results."""

from __future__ import annotations

import contextlib
import shutil

import pandas as pd
import pytest

from shallowflow.runtime.executors import DaskExecutor
from shallowflow.sweep import load_batches, run_sweep, sweep_from_mapping

pytestmark = pytest.mark.heavy  # make test-all and CI (pyproject.toml markers)

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
    with contextlib.closing(DaskExecutor()) as dask:
        remote = run_sweep(sw, tmp_path / "dask", executor=dask, show_progress=False)
    pd.testing.assert_frame_equal(local, remote)
    for a, b in zip(load_batches(tmp_path / "local"), load_batches(tmp_path / "dask"), strict=True):
        assert a.drop_attrs().equals(b.drop_attrs())


def test_local_cluster_of_pinned_workers_matches_local(tmp_path):
    """Two worker processes, each pinned to its own core group (the scheduler on loopback): the
    same batch files as in-process, bit for bit."""
    import os

    from shallowflow.runtime.executors import core_groups

    sw = sweep_from_mapping(SWEEP)
    local = run_sweep(sw, tmp_path / "local", show_progress=False)
    with contextlib.closing(DaskExecutor(workers=2)) as dask:
        remote = run_sweep(sw, tmp_path / "dask", executor=dask, show_progress=False)
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
    from shallowflow.runtime.executors import core_groups

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
        with contextlib.closing(DaskExecutor(cluster.scheduler_address)) as dask:
            remote = run_sweep(sw, tmp_path / "remote", executor=dask, show_progress=False)
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

    with contextlib.closing(DaskExecutor(workers=2)) as dask:
        remote = run_sweep(sw, tmp_path / "dask", executor=dask, show_progress=False,
                           after_batch=kill_one_worker)
    assert killed
    pd.testing.assert_frame_equal(local, remote)
    ids = sorted(p.name for p in (tmp_path / "dask" / "batches").iterdir())
    assert ids == sorted(p.name for p in (tmp_path / "local" / "batches").iterdir())
    for a, b in zip(load_batches(tmp_path / "local"), load_batches(tmp_path / "dask"), strict=True):
        assert a.drop_attrs().equals(b.drop_attrs())


@pytest.fixture(params=["in-process", "dask-2-workers"])
def where(request):
    """How a sweep's batches run: in-process, or on a local Dask cluster of 2 workers."""
    if request.param == "in-process":
        yield {}
        return
    with contextlib.closing(DaskExecutor(workers=2)) as dask:
        yield {"executor": dask}


def test_a_failing_batch_is_named_by_key_and_the_others_finish(tmp_path, where):
    """One batch cannot write its result (a folder stands at its file's path, as a full or
    read-only disk would make it fail where it ran): that batch is reported with its key and
    grid point, the others are written and summarised, and once the cause is gone a resume runs
    only the failed batch, ending with the uninterrupted sweep's results."""
    from shallowflow.errors import BatchesFailed
    from shallowflow.sweep import plan

    class Stop(Exception):
        pass

    def stop(batch_id):
        raise Stop

    sw = sweep_from_mapping({**SWEEP, "grid": {"model.width": [2, 3, 4]}, "max_batch": 2})
    batches = plan(sw)
    assert [set(b.tags) for b in batches] == [{0}, {1}, {2}]
    reference = run_sweep(sw, tmp_path / "whole", show_progress=False)
    out = tmp_path / "out"
    with pytest.raises(Stop):  # a sweep folder with its plan and the first batch written
        run_sweep(sw, out, show_progress=False, after_batch=stop)
    blocker = out / "batches" / f"{batches[2].id}.nc"
    # the batch that finished first, and the other one in flight if it finished beside it
    kept = {p.stem for p in (out / "batches").glob("*.nc")}
    assert kept and kept <= {b.id for b in batches[:2]}
    (blocker / "in-the-way").mkdir(parents=True)
    with pytest.raises(BatchesFailed) as caught:
        run_sweep(sw, out, resume=True, show_progress=False, **where)
    (name, failure), = caught.value.failures
    assert batches[2].id in name and "grid point(s) 2 {'model.width': 4}" in name
    assert isinstance(failure.error, OSError)
    assert caught.value.finished == len({b.id for b in batches[:2]} - kept)
    written = sorted(p.stem for p in (out / "batches").glob("*.nc") if p.is_file())
    assert written == sorted(b.id for b in batches[:2])
    summary = pd.read_parquet(out / "summary.parquet")
    pd.testing.assert_frame_equal(summary, reference[reference["point"] < 2])
    stamps = {p.name: p.stat().st_mtime_ns for p in (out / "batches").glob("*.nc") if p.is_file()}
    shutil.rmtree(blocker)
    resumed = run_sweep(sw, out, resume=True, show_progress=False, **where)
    pd.testing.assert_frame_equal(resumed, reference)
    assert all((out / "batches" / n).stat().st_mtime_ns == t for n, t in stamps.items())
    assert not list((out / "batches").glob(".*"))  # no temporary file left behind


def test_failed_batches_are_error_lines_with_how_to_go_on(capsys):
    """The command line turns failed batches into one error line each (no traceback for a user's
    error, a traceback for anything else) and a line on how to go on; exit code 1."""
    import typer

    from shallowflow.cli.process import guard as _guard
    from shallowflow.data.validate import DataError
    from shallowflow.errors import EXIT_FAILED, BatchesFailed, Failure

    def failing(error: Exception) -> Failure:
        try:
            raise error
        except Exception as err:
            return Failure.of(err)

    failures = [("batch g000-0002-x (2 runs)", failing(DataError("data.path: c.npz is corrupt"))),
                ("batch g001-0000-y (2 runs)", failing(ZeroDivisionError("boom")))]
    with pytest.raises(typer.Exit) as code, _guard(lambda: "2 of 4 batches are kept"):
        raise BatchesFailed(failures, 2)
    assert code.value.exit_code == EXIT_FAILED == 1
    err = capsys.readouterr()
    text = err.out + err.err
    assert "error: batch g000-0002-x (2 runs): DataError: data.path: c.npz is corrupt" in text
    assert "error: batch g001-0000-y (2 runs): ZeroDivisionError: boom" in text
    assert text.count("Traceback") == 1 and "2 of 4 batches are kept" in text


def test_workers_run_without_the_nannys_malloc_trim(monkeypatch):
    """A local cluster spawns its workers without MALLOC_TRIM_THRESHOLD_ (which makes XLA:CPU
    about 3x slower there), or with glibc's thresholds set back where they inherit it, and with
    the variables that give each its GPU (here two workers share one: no pre-allocation)."""
    import os
    import sys

    from shallowflow.runtime.dask_worker import TRIM_VARIABLE, WorkerSetup, restore_malloc
    from shallowflow.runtime.executors import DaskExecutor

    def state(dask_worker):
        trim = os.environ.get(TRIM_VARIABLE)
        restored = dask_worker.plugins[WorkerSetup.name].malloc_restored
        return [trim is None or restored, os.environ.get("CUDA_VISIBLE_DEVICES"),
                os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE")]

    ex = DaskExecutor(workers=2, gpus=["7"])  # two workers sharing one (named) GPU
    try:
        seen = ex.client().run(state)
        # without the variable, unless this process had it (a nanny started here before sets
        # it in its own environment): then the plugin set glibc's thresholds back
        assert list(seen.values()) == [[True, "7", "false"]] * 2
    finally:
        ex.close()
    monkeypatch.delenv(TRIM_VARIABLE, raising=False)
    assert restore_malloc() is False
    monkeypatch.setenv(TRIM_VARIABLE, "65536")
    assert restore_malloc() is sys.platform.startswith("linux")


def test_gpus_are_found_without_jax_and_shared_fairly(monkeypatch, tmp_path):
    """GPUs come from CUDA_VISIBLE_DEVICES, else from `nvidia-smi -L` (a stand-in script here),
    else none; each worker gets one, round-robin, and shared devices are not pre-allocated."""
    from shallowflow.machine import visible_gpus
    from shallowflow.runtime.executors import worker_environments

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2, 5")
    assert visible_gpus() == ["2", "5"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert visible_gpus() == []
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: H100 (UUID: a)'\necho 'GPU 1: H100 (UUID: b)'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert visible_gpus() == ["0", "1"]
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    assert visible_gpus() == []
    assert worker_environments(2, []) == [{}, {}]
    assert worker_environments(2, ["0", "1"]) == [{"CUDA_VISIBLE_DEVICES": "0"},
                                                  {"CUDA_VISIBLE_DEVICES": "1"}]
    three = worker_environments(3, ["0", "1"])
    assert [e["CUDA_VISIBLE_DEVICES"] for e in three] == ["0", "1", "0"]
    assert all(e["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false" for e in three)


def test_netcdf_writes_do_not_need_the_scheduler(tmp_path, monkeypatch):
    """Where a dask client is active (a Dask sweep's driver, every worker), a result file is
    written under a local lock: a cluster-wide ``distributed.Lock`` would ask the scheduler twice
    per file and print a traceback when an interrupt takes the scheduler down mid-write."""
    import numpy as np
    import xarray as xr

    distributed = pytest.importorskip("distributed")
    from shallowflow.store import read_netcdf, write_netcdf

    def no_scheduler(self, *args, **kwargs):
        raise RuntimeError("ConnectionPool is closed")

    monkeypatch.setattr(distributed.Lock, "acquire", no_scheduler)
    ds = xr.Dataset({"loss": ("run", np.arange(3.0))})
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1,
                            dashboard_address=None):
        write_netcdf(ds, tmp_path / "r.nc")
    assert read_netcdf(tmp_path / "r.nc").equals(ds)


def test_threshold_searches_on_dask_match_local():
    """The dana-fig4 chains (two threshold searches, each step sent to the cluster as soon as
    it is known: the executor's batch list grows while it runs) on 2 worker processes gives
    the in-process grids bit for bit."""
    import xarray as xr

    from shallowflow.reproductions.dana.threshold import find_thresholds
    from shallowflow.runtime.executors import DaskExecutor
    from shallowflow.training.entry import trainer

    points = [(3, 8, 0), (5, 8, 10_000)]
    local = find_thresholds(points, 3, 2, 1.0, 2.0, trainer(False))
    ex = DaskExecutor(workers=2)
    try:
        remote = find_thresholds(points, 3, 2, 1.0, 2.0, trainer(False, ex))
    finally:
        ex.close()
    for a, b in zip(local, remote, strict=True):
        xr.testing.assert_identical(a, b)
