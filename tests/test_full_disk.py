"""A full disk, on a real small tmpfs (issue 32, defect 3): ``run``, ``sweep`` and ``reproduce``
refuse before any work where the estimate does not fit; a disk that fills while they write gives
one ``error:`` line naming the file (never a crash: HDF5 used to segfault at exit), keeps the
finished batches, says to use ``--resume``, and the resume after freeing space gives the results
of an uninterrupted run. Skipped where no tmpfs can be mounted (it needs root)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest
import xarray as xr
from typer.testing import CliRunner

import shallowflow
from conftest import TINY_EXPERIMENT
from shallowflow.cli.commands import app
from shallowflow.store import read_netcdf
from shallowflow.training import entry

EXP = 'name = "exp"\nruns = 4\n' + TINY_EXPERIMENT

SWEEP = 'name = "sw"\nbase = "exp.toml"\nmax_batch = 2\n[grid]\n"model.width" = [2, 3]\n'

REPRO = ["bf-init", "--quiet", "--set", "widths=[20]", "--set", "runs=2", "--set", "steps=4000",
         "--set", "lr=0.005", "--set", "points=20"]
"""A reproduction of three batches (one per initialisation) that trains in seconds."""



@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The experiment and sweep files, in the current folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp.toml").write_text(EXP)
    (tmp_path / "sw.toml").write_text(SWEEP)
    return tmp_path


@pytest.fixture
def trained(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the batches trained (not read back from a store) in this test."""
    ids: list[str] = []
    real = entry.train_batch

    def counted(batch, *args, **kwargs):  # type: ignore[no-untyped-def]
        ids.append(batch.id)
        return real(batch, *args, **kwargs)

    monkeypatch.setattr(entry, "train_batch", counted)
    return ids


def fill(mnt: Path, leave: int = 4096) -> Path:
    """Fill the file system of ``mnt`` up to ``leave`` bytes free, with one file."""
    filler = mnt / "filler"
    filler.write_bytes(b"\0" * max(0, shutil.disk_usage(mnt).free - leave))
    return filler


def fill_before(monkeypatch: pytest.MonkeyPatch, target: object, name: str, mnt: Path,
                after: int = 0) -> None:
    """Make ``target.name`` (a writer ``(ds, path)``) fill the disk of ``mnt`` before its call
    number ``after`` (counted from 0), once, then write: the disk fills during the command's
    writing."""
    real, calls, one_at_a_time = getattr(target, name), [], threading.Lock()

    def filling(ds: xr.Dataset, path: Path) -> None:
        with one_at_a_time:  # batches in flight write in turn: the call numbers are exact
            calls.append(path)
            if len(calls) == after + 1:
                fill(mnt)
            real(ds, path)

    monkeypatch.setattr(target, name, filling)


def one_error(result) -> str:  # type: ignore[no-untyped-def]
    """The one ``error:`` line of a command that exited with code 2, without a traceback."""
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    return errors[0]


def left(mnt: Path) -> list[str]:
    """What is on the tmpfs, hidden entries included, but the filler."""
    return sorted(p.name for p in mnt.iterdir() if p.name != "filler")


def without_wall_time(ds: xr.Dataset) -> xr.Dataset:
    ds.attrs.pop("simulate_wall_s", None)
    return ds


# ---------------------------------------------------------------------- refused before any work
@pytest.mark.parametrize("size", ["64k", "192k"])
def test_reproduce_without_room_is_refused_before_training(files, tmpfs, trained, size):
    """64 KiB: less than the floor for the figures and report, refused at the output check;
    192 KiB: room for that, but not for the batch files of the first training call (the estimate
    runs and sweeps use), refused before that call trains anything."""
    mnt = tmpfs(size)
    line = one_error(CliRunner().invoke(app, ["reproduce", *REPRO, "--out", str(mnt / "o")]))
    assert "free" in line and "--force" in line
    assert trained == [] and left(mnt) == []


@pytest.mark.parametrize("command", [["run", "exp.toml"], ["sweep", "sw.toml"]])
def test_run_and_sweep_without_room_are_refused_before_training(files, tmpfs, trained,
                                                                command):
    mnt = tmpfs("64k")
    line = one_error(CliRunner().invoke(app, [*command, "--out", str(mnt / "o"), "--quiet"]))
    assert "free" in line and "--force" in line
    assert trained == [] and left(mnt) == []


# ------------------------------------------------------------------- a disk that fills meanwhile
def test_reproduce_disk_filling_while_writing_keeps_batches_and_resumes(files, tmpfs,
                                                                       monkeypatch, trained):
    """The disk fills after training, as results.nc is written: one line naming results.nc
    where it was going (not the hidden temporary folder), the three batches kept, nothing
    half-written; with space freed, --resume trains nothing and gives the results and claims of
    an uninterrupted reproduction."""
    from shallowflow.reproductions import reproduce

    mnt = tmpfs("2m")
    out = mnt / "o"
    fill_before(monkeypatch, reproduce, "write_netcdf", mnt)
    line = one_error(CliRunner().invoke(app, ["reproduce", *REPRO, "--out", str(out)]))
    assert line.startswith(f"error: no space left on device writing {out / 'results.nc'} (")
    assert "3 finished batch(es) are kept in" in line and "--resume" in line
    assert left(mnt) == [".o.batches"] and len(trained) == 3
    assert all(not f.name.startswith(".") for f in (mnt / ".o.batches").iterdir())

    (mnt / "filler").unlink()  # (the disk is filled once only)
    again = CliRunner().invoke(app, ["reproduce", *REPRO, "--out", str(out), "--resume"])
    assert again.exit_code == 0, again.output
    assert len(trained) == 3 and left(mnt) == ["o"]  # every batch read back; the store removed
    whole = CliRunner().invoke(app, ["reproduce", *REPRO, "--out", str(files / "whole")])
    assert whole.exit_code == 0, whole.output
    xr.testing.assert_identical(without_wall_time(read_netcdf(out / "results.nc")),
                                without_wall_time(read_netcdf(files / "whole" / "results.nc")))
    assert (out / "claims.json").read_text() == (files / "whole" / "claims.json").read_text()


def test_run_disk_filling_while_writing_keeps_the_batch_and_resumes(files, tmpfs, monkeypatch,
                                                                   trained):
    """The disk fills as the run folder is written (its batch already kept beside it): one line
    naming results.nc, the batch kept, --resume after freeing space trains nothing and writes
    the files of an uninterrupted run."""
    import shallowflow.store

    mnt = tmpfs("1m")
    out = mnt / "r"
    fill_before(monkeypatch, shallowflow.store, "write_netcdf", mnt)  # the run folder's files
    line = one_error(CliRunner().invoke(app, ["run", "exp.toml", "--out", str(out), "--quiet"]))
    assert line.startswith(f"error: no space left on device writing {out / 'results.nc'} (")
    assert f"1 finished batch(es) are kept in {mnt / '.r.batches'}" in line and "--resume" in line
    assert left(mnt) == [".r.batches"] and len(trained) == 1

    (mnt / "filler").unlink()  # (the disk is filled once only)
    again = CliRunner().invoke(app, ["run", "exp.toml", "--out", str(out), "--quiet", "--resume"])
    assert again.exit_code == 0, again.output
    assert len(trained) == 1 and left(mnt) == ["r"]  # the batch read back; the store removed
    whole = CliRunner().invoke(app, ["run", "exp.toml", "--out", "whole", "--quiet"])
    assert whole.exit_code == 0, whole.output
    for name in ("results.nc", "params.nc", "data.nc"):
        xr.testing.assert_identical(read_netcdf(out / name), read_netcdf(files / "whole" / name))
    assert (out / "config.toml").read_text() == (files / "whole" / "config.toml").read_text()


def test_sweep_disk_filling_while_writing_keeps_batches_and_resumes(files, tmpfs, monkeypatch,
                                                                   trained):
    """The disk fills before the second of four batch files: one line naming that file, the
    first batch kept, the last never started (the command stops at once: no batch could be
    written), and --resume after freeing space gives the summary of an uninterrupted sweep."""
    from shallowflow.training import batch_store

    mnt = tmpfs("2m")
    out = mnt / "s"
    fill_before(monkeypatch, batch_store, "write_netcdf", mnt, after=1)
    line = one_error(CliRunner().invoke(app, ["sweep", "sw.toml", "--out", str(out), "--quiet"]))
    assert line.startswith(f"error: no space left on device writing {out / 'batches'}/g")
    assert "1 of 4 batches are written" in line and "--resume" in line
    batches = list((out / "batches").iterdir())
    assert len(batches) == 1 and not batches[0].name.startswith(".")
    assert batches[0].name not in line  # the file named is the one that did not fit
    assert not (out / "summary.parquet").exists() and len(trained) <= 3

    (mnt / "filler").unlink()  # (the disk is filled once only)
    again = CliRunner().invoke(app, ["sweep", "sw.toml", "--out", str(out), "--quiet",
                                     "--resume"])
    assert again.exit_code == 0, again.output
    whole = CliRunner().invoke(app, ["sweep", "sw.toml", "--out", "whole", "--quiet"])
    assert whole.exit_code == 0, whole.output
    pd.testing.assert_frame_equal(pd.read_parquet(out / "summary.parquet"),
                                  pd.read_parquet(files / "whole" / "summary.parquet"))
    assert json.loads((out / "plan.json").read_text()) == \
        json.loads((files / "whole" / "plan.json").read_text())


def test_a_full_disk_while_hdf5_writes_is_one_line_not_a_crash(tmpfs, tmp_path):
    """The defect as reported: ``reproduce --force`` on a disk too small for its first batch
    file. HDF5 used to fail inside its close, and h5netcdf's ``__del__`` closed the half-closed
    file again at exit: exit 139, and HDF5's message split over two lines. Now: exit 2, one
    line naming the batch file, nothing left on the disk (no batch finished)."""
    mnt = tmpfs("64k")
    src = Path(shallowflow.__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", "from shallowflow.cli import main; main()", "reproduce", *REPRO,
         "--out", str(mnt / "o"), "--force"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
        env={**os.environ, "PYTHONPATH": str(src)})
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2, done.stderr
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert errors[0].startswith(f"error: no space left on device writing {mnt / '.o.batches'}/")
    assert "run the same command again" in errors[0]
    assert left(mnt) == []
