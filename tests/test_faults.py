"""Faults: a command killed (SIGKILL), interrupted (SIGINT, Ctrl-C) or terminated (SIGTERM) in the
middle of its work, then run again or resumed, gives exactly the results of an uninterrupted run
and leaves no temporary file behind; an interruption says what is done and how to go on."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from shallowflow.store import read_netcdf

pytestmark = pytest.mark.heavy  # make test-all and CI (pyproject.toml markers)

EXE = shutil.which("shallowflow") or str(Path(sys.executable).parent / "shallowflow")

EXP = """name = "slow"
runs = 2
[data]
kind = "sphere"
n = 64
d = 8
[model]
width = 32
[init]
scheme = "dpb"
[train]
lr = 0.05
steps = 25000
[record]
points = 20
"""

SWEEP = """name = "sw"
base = "sweep_exp.toml"
max_batch = 2
[grid]
"model.width" = [4, 5, 6, 7, 8, 9]
"""


def start(args: list[str], cwd: Path) -> tuple[subprocess.Popen, Path]:
    err = cwd / f"stderr-{time.monotonic_ns()}.txt"
    proc = subprocess.Popen([EXE, *args], cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=err.open("w"))
    return proc, err


def wait_for(condition, timeout: float = 120.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and not condition():
        time.sleep(0.1)
    assert condition(), "the command never reached the point to interrupt"


def leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob(".*tmp-*")]


def half_written(folder: Path, name: str) -> list[Path]:
    """What an interrupted reproduction into ``folder/name`` left beside it, except its batch
    store holding finished batches only (kept on purpose, for --resume)."""
    def finished_only(store: Path) -> bool:
        return all(f.suffix == ".nc" and not f.name.startswith(".") for f in store.iterdir())

    return [p for p in folder.glob(f".{name}*")
            if not (p.name == f".{name}.batches" and finished_only(p))]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "exp.toml").write_text(EXP)
    (tmp_path / "sweep.toml").write_text(SWEEP)
    (tmp_path / "sweep_exp.toml").write_text(EXP.replace("steps = 25000", "steps = 3000"))
    return tmp_path


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted run and sweep, made once for every fault test."""
    d = tmp_path_factory.mktemp("whole")
    (d / "exp.toml").write_text(EXP)
    (d / "sweep.toml").write_text(SWEEP)
    (d / "sweep_exp.toml").write_text(EXP.replace("steps = 25000", "steps = 3000"))
    for cmd in (["run", "exp.toml", "--out", "run"], ["sweep", "sweep.toml", "--out", "sweep"]):
        done = subprocess.run([EXE, *cmd, "--quiet"], cwd=d, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    return d


def same_results(a: Path, b: Path) -> None:
    da, db = read_netcdf(a), read_netcdf(b)
    assert set(da.data_vars) == set(db.data_vars)
    for name in da.data_vars:
        np.testing.assert_array_equal(da[name].values, db[name].values, err_msg=name)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_run_interrupted_then_run_again(files, reference, sig):
    """A run is written only when complete: interrupted at any point it leaves nothing (SIGINT
    and SIGTERM say so and exit 130 / 143), and the same command then gives the results of an
    uninterrupted run."""
    cmd = ["run", "exp.toml", "--out", "cut"]
    proc, err = start(cmd, files)
    wait_for(lambda: "runs:" in err.read_text())
    time.sleep(0.5)
    proc.send_signal(sig)
    code = proc.wait(timeout=60)
    assert code == {signal.SIGKILL: -9, signal.SIGINT: 130, signal.SIGTERM: 143}[sig]
    if sig != signal.SIGKILL:
        text = err.read_text()
        assert "interrupted: nothing was written to cut" in text and "Traceback" not in text
    assert not (files / "cut").exists() and not leftovers(files)
    assert subprocess.run([EXE, *cmd, "--quiet"], cwd=files, capture_output=True).returncode == 0
    for name in ("results.nc", "params.nc"):
        same_results(files / "cut" / name, reference / "run" / name)
    assert not leftovers(files)


@pytest.mark.parametrize(("sig", "executor"), [
    (signal.SIGKILL, "local"), (signal.SIGINT, "local"), (signal.SIGTERM, "local"),
    (signal.SIGKILL, "dask"), (signal.SIGTERM, "dask"),
])  # dask with SIGINT: the same guard as SIGTERM (checked locally), left out for the suite's time
def test_sweep_interrupted_then_resumed(files, reference, sig, executor):
    """Interrupted after its first batch, a sweep resumes (with the same executor) to exactly
    the batches of an uninterrupted sweep; SIGINT/SIGTERM print the resume command; no process
    it started (dask workers) outlives it; the temporary files of a killed writer are cleaned by
    the resume."""
    if executor == "dask":
        pytest.importorskip("dask.distributed")
    cmd = ["sweep", "sweep.toml", "--out", "cut", "--executor", executor]
    proc, err = start(cmd, files)
    batches = files / "cut" / "batches"
    wait_for(lambda: batches.is_dir() and any(batches.glob("*.nc")), timeout=180)
    (batches / f".x.nc.tmp-{_host()}-99999999-deadbeef").write_text("left by a killed writer")
    children = descendants(proc.pid)  # e.g. the dask scheduler's workers
    proc.send_signal(sig)
    proc.wait(timeout=120)
    wait_for(lambda: not any(Path(f"/proc/{c}").exists() for c in children), timeout=60)
    if sig != signal.SIGKILL:
        text = err.read_text()
        assert "interrupted:" in text and "--resume" in text and "Traceback" not in text
    assert 1 <= len(list(batches.glob("*.nc"))) < 6
    resumed = subprocess.run([EXE, *cmd, "--resume", "--quiet"], cwd=files, capture_output=True,
                             text=True)
    assert resumed.returncode == 0, resumed.stderr
    whole = reference / "sweep" / "batches"
    names = sorted(p.name for p in batches.glob("*.nc"))
    assert names == sorted(p.name for p in whole.glob("*.nc"))
    for name in names:
        same_results(batches / name, whole / name)
    assert not leftovers(files / "cut")


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (Linux /proc; empty elsewhere)."""
    found, todo = [], [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def _host() -> str:
    from shallowflow.output import HOST

    return HOST


SMALL_BF_FIG2 = ["--set", "m=100", "--set", "steps=40000", "--set", "frames=4"]
"""A reproduction of about 10 s (figures and an animation included)."""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_reproduce_interrupted_then_run_again(files, sig):
    """An interrupted reproduction leaves only its temporary folder (SIGKILL) or nothing
    (SIGINT, which says so); the next run of the same command removes what is left and gives the
    results of an uninterrupted run (the saved results compared with a second complete run)."""
    cmd = ["reproduce", "bf-fig2", *SMALL_BF_FIG2, "--out", "rep", "--quiet"]
    proc, err = start(cmd, files)
    wait_for(lambda: any(files.glob(".rep.tmp-*")))
    proc.send_signal(sig)
    proc.wait(timeout=60)
    assert not (files / "rep").exists()
    if sig == signal.SIGINT:
        assert "interrupted:" in err.read_text() and not half_written(files, "rep")
    again = subprocess.run([EXE, *cmd], cwd=files, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert (files / "rep" / "claims.json").is_file() and not leftovers(files)
    if sig == signal.SIGKILL:
        whole = subprocess.run([EXE, "reproduce", "bf-fig2", *SMALL_BF_FIG2, "--out", "whole",
                                "--quiet"], cwd=files, capture_output=True, text=True)
        assert whole.returncode == 0, whole.stderr
        same_results(files / "rep" / "results.nc", files / "whole" / "results.nc")


REPRO_SET = ["--set", "steps=3000", "--set", "runs=2", "--set", "widths=[20, 40]",
             "--set", "points=20"]  # bf-init quick, cut: 6 batches of a few seconds


def test_reproduction_killed_then_resumed(tmp_path):
    """A reproduction killed (SIGKILL) after some of its batches finished keeps them in its batch
    store; --resume trains only the others and gives the uninterrupted results exactly; the store
    is removed once the folder is complete."""
    from shallowflow.training.batch_store import beside

    whole = subprocess.run([EXE, "reproduce", "bf-init", "--out", "whole", "--quiet", *REPRO_SET],
                           cwd=tmp_path, capture_output=True, text=True)
    assert whole.returncode == 0, whole.stderr
    store = beside(tmp_path / "cut")
    proc, _ = start(["reproduce", "bf-init", "--out", "cut", "--quiet", *REPRO_SET], tmp_path)
    wait_for(lambda: len(list(store.glob("*.nc"))) >= 2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "cut").exists()
    kept = {p.name: p.stat().st_mtime_ns for p in store.glob("*.nc")}
    assert 2 <= len(kept) < 6
    proc, err = start(["reproduce", "bf-init", "--out", "cut", "--quiet", "--resume",
                       *REPRO_SET], tmp_path)
    # the kept batches are read, not trained again: their files are never rewritten
    while proc.poll() is None:
        if store.exists():
            for name, mtime in kept.items():
                path = store / name
                assert not path.exists() or path.stat().st_mtime_ns == mtime, name
        time.sleep(0.05)
    assert proc.returncode == 0, err.read_text()
    assert not store.exists() and not leftovers(tmp_path)
    a, b = read_netcdf(tmp_path / "whole" / "results.nc"), read_netcdf(tmp_path / "cut" /
                                                                        "results.nc")
    assert a.drop_attrs().equals(b.drop_attrs())
