"""Run directories: contents, round trip, provenance; the CLI run and plot commands."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from typer.testing import CliRunner

from shallowflow.cli.commands import app
from shallowflow.config import experiment_from_mapping, tomllib
from shallowflow.runner import run_experiment
from shallowflow.store import load_run

SPEC = {
    "name": "tiny", "seed": 3, "runs": 3,
    "data": {"kind": "sphere", "n": 12, "d": 5},
    "model": {"width": 6},
    "init": {"scheme": "balanced", "scale": 0.5},
    "train": {"lr": 0.05, "steps": 40},
    "record": {"every": 10, "points": 0},
}


def test_run_directory_round_trip(tmp_path):
    exp = experiment_from_mapping(SPEC)
    ds = run_experiment(exp, tmp_path / "r", show_progress=False)
    names = sorted(p.name for p in (tmp_path / "r").iterdir())
    assert names == [".shallowflow", "config.toml", "data.nc", "params.nc", "provenance.json",
                     "results.nc"]
    loaded = load_run(tmp_path / "r")
    assert loaded["loss"].dims == ("run", "time")
    np.testing.assert_array_equal(loaded["step"].values, [0, 10, 20, 30, 40])
    np.testing.assert_allclose(loaded["time"].values, loaded["step"].values * 0.05)
    np.testing.assert_array_equal(loaded["loss"].values, ds["loss"].values)
    # the stored data and parameters reproduce the recorded final loss (independent forward)
    X, y = loaded["X"].values, loaded["y"].values
    for r in range(3):
        a, W = loaded["a_final"].values[r], loaded["W_final"].values[r]
        out = np.maximum(X @ W.T, 0) @ a
        np.testing.assert_allclose(0.5 * np.mean((out - y) ** 2), loaded["loss"].values[r, -1],
                                   rtol=1e-12)
    # the resolved config is complete and reloads to the same experiment
    resolved = tomllib.loads((tmp_path / "r" / "config.toml").read_text())
    assert experiment_from_mapping(resolved) == exp
    prov = json.loads((tmp_path / "r" / "provenance.json").read_text())
    assert prov["x64"] is True and prov["seeds"] == [3] and prov["jax"]


def test_cli_run_and_plot(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('name = "cli"\nruns = 2\n[data]\nkind = "three_point"\n[model]\nwidth = 8\n'
                   'bias = true\n[init]\nscheme = "balanced"\nscale = 0.1\n'
                   '[train]\nloss = "mse"\nlr = 0.1\nsteps = 50\n')
    runner = CliRunner()
    result = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "o"),
                                 "--set", "train.steps=30", "--quiet"])
    assert result.exit_code == 0, result.output
    ds = load_run(tmp_path / "o")
    assert int(ds["step"][-1]) == 30 and ds.sizes["dim"] == 2  # bias column appended
    result = runner.invoke(app, ["plot", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "o" / "probes.png").stat().st_size > 1000
    listing = runner.invoke(app, ["list"])
    assert listing.exit_code == 0
    for name in ("sphere", "file", "arrays", "dpb", "given"):  # the registries, with their docs
        assert f"  {name} " in listing.output
    assert "Data given in memory" in listing.output


def test_sigterm_leaves_no_half_written_folder(tmp_path):
    """A command killed by SIGTERM (kill, a batch scheduler) removes its temporary folder."""
    import shutil
    import signal
    import subprocess
    import sys
    import time

    exe = shutil.which("shallowflow") or str(Path(sys.executable).parent / "shallowflow")
    out = tmp_path / "rep"
    proc = subprocess.Popen([exe, "reproduce", "town-fig5", "--out", str(out), "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and not any(tmp_path.glob(".rep.tmp-*")):
        time.sleep(0.2)
    assert any(tmp_path.glob(".rep.tmp-*")), "the command never started writing"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 128 + signal.SIGTERM
    store = tmp_path / ".rep.batches"  # finished batches only, kept for --resume
    assert not out.exists() and not [p for p in tmp_path.glob(".rep*") if p != store]
    assert not store.exists() or all(f.suffix == ".nc" and not f.name.startswith(".")
                                     for f in store.iterdir())


def test_netcdf_files_read_back_as_xarrays_own_writer_writes_them(tmp_path):
    """``write_netcdf`` (xarray's h5netcdf store, without ``to_netcdf``'s scheduler probe) gives a
    file that reads back as the dataset, and as ``Dataset.to_netcdf`` with the same engine's file
    does: every dtype, NaN, a string coordinate, attributes, an empty dimension."""
    import xarray as xr

    from shallowflow.store import ENGINE, read_netcdf, write_netcdf

    rng = np.random.default_rng(0)
    loss = rng.normal(size=(3, 4))
    loss[1, 2] = np.nan
    ds = xr.Dataset(
        {"loss": (("run", "time"), loss, {"units": "none"}),
         "W": (("run", "neuron", "dim"), rng.normal(size=(3, 2, 5)).astype(np.float32)),
         "steps": ("run", np.array([1, 2, 3], np.int64)),
         "done": ("run", np.array([True, False, True])),
         "status": ("run", np.array(["ok", "diverged", "ok"])),
         "none": ("empty", np.zeros(0))},
        coords={"run": [0, 1, 2], "time": np.linspace(0, 1, 4), "name": ("run", ["a", "b", "c"])},
        attrs={"config": "name = 'x'", "lr": 0.5, "runs": 3})
    write_netcdf(ds, tmp_path / "ours.nc")
    ds.to_netcdf(tmp_path / "xarray.nc", engine=ENGINE)
    ours, theirs = read_netcdf(tmp_path / "ours.nc"), read_netcdf(tmp_path / "xarray.nc")
    xr.testing.assert_identical(ours, theirs)
    xr.testing.assert_identical(ours, ds)
    assert [p.name for p in tmp_path.iterdir()].count("ours.nc") == 1
    assert len(list(tmp_path.iterdir())) == 2  # no temporary file left


def test_the_command_exits_quickly_with_everything_written(tmp_path):
    """The ``shallowflow`` command leaves with ``os._exit`` after its exit handlers: its exit
    code, its piped output and its files are all there, the exit handlers ran, and dask was never
    imported in it: xarray was told the process holds no dask arrays, and the netCDF writer does
    not ask dask for its scheduler."""
    import subprocess
    import sys

    from conftest import TINY_EXPERIMENT
    from shallowflow.store import read_netcdf

    (tmp_path / "tiny.toml").write_text(TINY_EXPERIMENT)
    probe = ("import atexit, sys\n"
             "atexit.register(lambda: print('dask imported:', 'dask' in sys.modules,"
             " file=sys.stderr))\n"
             "from shallowflow.cli.commands import main\n"
             "sys.argv = ['shallowflow'] + sys.argv[1:]\n"
             "main()\n")
    ok = subprocess.run([sys.executable, "-c", probe, "run", "tiny.toml", "--out", "r"],
                        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert "Written to r" in ok.stdout
    assert "dask imported: False" in ok.stderr
    assert "loss" in read_netcdf(tmp_path / "r" / "results.nc")
    bad = subprocess.run([sys.executable, "-c", probe, "run", "missing.toml", "--out", "s"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "error:" in bad.stderr and not (tmp_path / "s").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="flock is POSIX")
def test_files_are_read_and_written_without_hdf5_file_locks(tmp_path):
    """A batch file another handle holds a lock on is still read, and a file is written beside
    it: HDF5's locks only failed reads ("unable to lock file", errno 11) of files that are
    always complete (written under a temporary name, then renamed)."""
    import fcntl

    from shallowflow.store import read_netcdf, write_netcdf

    ds = xr.Dataset({"loss": ("step", np.arange(4.0))})
    path = tmp_path / "batch.nc"
    write_netcdf(ds, path)
    with open(path, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        np.testing.assert_array_equal(read_netcdf(path).loss.values, ds.loss.values)
        write_netcdf(ds, path)  # replaced whole while the old file is locked
    np.testing.assert_array_equal(read_netcdf(path).loss.values, ds.loss.values)
