"""The commands that work on a finished run folder, ``certify``, ``plot`` and ``animate``
(issue 32, defect 8, and progress where users waited in silence).

One rule for their output files (``output.claim_files``): probed before any work (not a folder
or a link, not existing without ``--overwrite``, listed in the folder's marker for
``--overwrite``, a writable folder with room), held by a lock for the whole command, written all
or none (certify's ``end_state.nc`` + ``end_state.csv`` as a pair). One rule for their input
(``store.check_run_folder``, ``store.load_run``): a missing, damaged or foreign file, or a folder
of another kind, is named as ``RUN_DIR`` with its path and what is expected. Every refusal:
exit 2, exactly one ``error:`` line naming the file or field, no traceback, nothing on stdout,
nothing written and nothing changed (hidden files included: no lock or temporary file is left).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from PIL import Image
from typer.testing import CliRunner

from conftest import TINY_EXPERIMENT
from shallowflow.cli.commands import app
from shallowflow.output import MARKER, lock_name, write_marker
from shallowflow.store import read_netcdf

EXP = 'name = "exp"\nruns = 2\n' + TINY_EXPERIMENT + \
    '[record]\nprobes = ["loss", "a", "W"]\nsnapshots = true\n'
CLI = [sys.executable, "-c", "from shallowflow.cli import main; main()"]
NOT_SAID = (".tmp-", "Errno", "signature", "Unable to", "HDF5", "No such file")
"""What an error line must not show: temporary names, raw OS or HDF5 text."""


def invoke(args: list[str | Path]):
    return CliRunner().invoke(app, [str(a) for a in args])


def listing(d: Path) -> dict[str, bytes | str]:
    """Every path under ``d`` (hidden ones too) with its bytes, or what it is."""
    def content(p: Path) -> bytes | str:
        if p.is_symlink():
            return f"-> {os.readlink(p)}"
        return p.read_bytes() if p.is_file() else "<dir>"
    return {str(p.relative_to(d)): content(p) for p in sorted(d.rglob("*"))}


def refused(result, fragments: list[str]) -> str:
    """The one error line of a refused command, checked."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output and "internal error" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    for raw in NOT_SAID:
        assert raw not in lines[0], (raw, lines[0])
    assert result.stdout == ""
    return lines[0]


def truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:300])


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Path:
    """One real tiny run (2 runs, snapshots), trained once, certified, plotted and animated,
    and the folders and files the cases point at, made from it."""
    d = tmp_path_factory.mktemp("after_run")
    (d / "exp.toml").write_text(EXP)
    run = d / "run"
    for args in (["run", d / "exp.toml", "--out", run, "--quiet"], ["certify", run, "--quiet"],
                 ["plot", run, "--probes", "loss"], ["animate", run, "--quiet"]):
        assert invoke(args).exit_code == 0, args
    (run / "user.png").write_bytes(b"the user's own picture")
    made = ("end_state.nc", "end_state.csv", "probes.png", "animation.gif")

    def copy(name: str, *keep: str) -> Path:
        """A copy of the run folder holding of what the commands made only ``keep``; its marker
        lists what it holds."""
        folder = d / name
        shutil.copytree(run, folder, symlinks=True)
        for entry in [*made, "user.png"]:
            if entry not in keep:
                (folder / entry).unlink()
        write_marker(folder, "run")
        return folder

    copy("fresh")
    truncated(copy("damaged") / "results.nc")
    (copy("foreign_nc") / "results.nc").write_text("hello")
    xr.Dataset({"x": ("k", np.ones(3))}).to_netcdf(copy("no_axes") / "results.nc")
    truncated(copy("damaged_params") / "params.nc")
    truncated(copy("damaged_data") / "data.nc")
    (copy("no_data") / "data.nc").unlink()
    (copy("no_config") / "config.toml").unlink()
    (copy("config_folder") / "config.toml").unlink()
    (d / "config_folder" / "config.toml").mkdir()
    (copy("config_binary") / "config.toml").write_bytes(bytes(range(256)))
    results = read_netcdf(run / "results.nc")
    (copy("no_snapshots") / "results.nc").unlink()
    results.drop_vars("a").to_netcdf(d / "no_snapshots" / "results.nc")
    copy("csv_only", "end_state.csv")
    (copy("user_csv", "end_state.nc") / "end_state.csv").write_text("the user's table\n")
    (copy("csv_folder", "end_state.nc") / "end_state.csv").mkdir()
    (copy("nc_folder", "end_state.csv") / "end_state.nc").mkdir()
    (d / "elsewhere.csv").write_text("a file outside\n")
    (copy("csv_link", "end_state.nc") / "end_state.csv").symlink_to(d / "elsewhere.csv")
    for name, sign, kind in (("repro_old", "params.json", None),
                             ("repro", "params.json", "reproduction"),
                             ("sweep", "plan.json", "sweep"), ("demo", "summary.txt", "demo")):
        (d / name).mkdir()
        (d / name / sign).write_text(json.dumps({"reproduction": "town-fig5"}))
        shutil.copy(run / "results.nc", d / name / "results.nc")
        if kind:
            write_marker(d / name, kind)
    (d / "afile").write_text("not a folder")
    (d / "folder.png").mkdir()
    (d / "folder.gif").mkdir()
    (d / "other").mkdir()
    (d / "other" / "fig.png").write_bytes(b"a figure in a folder shallowflow did not make")
    (d / "link.png").symlink_to(run / "probes.png")
    return d


R = "RUN_DIR"
OW = "--overwrite"
CASES: list[tuple[str, list[str], list[str]]] = [
    # ---- input: not a run folder
    ("certify-missing", ["certify", "{d}/nope"], [R, "nope", "no such folder", "run --out"]),
    ("certify-a-file", ["certify", "{d}/afile"], [R, "afile", "is a file"]),
    ("certify-reproduction", ["certify", "{d}/repro"],
     [R, "repro'", "reproduction folder, not a run folder (shallowflow run --out)", "--from"]),
    ("certify-reproduction-unmarked", ["certify", "{d}/repro_old"],
     [R, "repro_old", "reproduction folder"]),
    ("certify-sweep", ["certify", "{d}/sweep"], [R, "sweep folder", "summary.parquet"]),
    ("plot-reproduction", ["plot", "{d}/repro"], [R, "reproduction folder"]),
    ("plot-demo", ["plot", "{d}/demo"], [R, "demo folder"]),
    ("animate-reproduction", ["animate", "{d}/repro"], [R, "reproduction folder", "run --out"]),
    ("animate-sweep", ["animate", "{d}/sweep"], [R, "sweep folder"]),
    # ---- input: a missing, damaged or foreign file in a run folder
    ("certify-damaged-results", ["certify", "{d}/damaged"],
     [R, "damaged/results.nc", "damaged or not a netCDF file"]),
    ("plot-damaged-results", ["plot", "{d}/damaged"], [R, "damaged/results.nc", "damaged"]),
    ("animate-damaged-results", ["animate", "{d}/damaged", "--out", "{d}/damaged.gif"],
     [R, "damaged/results.nc", "damaged"]),
    ("certify-text-results", ["certify", "{d}/foreign_nc"],
     [R, "foreign_nc/results.nc", "not a netCDF file"]),
    ("certify-foreign-results", ["certify", "{d}/no_axes"],
     [R, "no_axes/results.nc", "no run and time axes"]),
    ("certify-damaged-params", ["certify", "{d}/damaged_params"],
     [R, "damaged_params/params.nc", "damaged"]),
    ("animate-damaged-params", ["animate", "{d}/damaged_params"],
     [R, "damaged_params/params.nc", "damaged"]),
    ("certify-damaged-data", ["certify", "{d}/damaged_data"],
     [R, "damaged_data/data.nc", "damaged"]),
    ("certify-no-data", ["certify", "{d}/no_data"], [R, "no_data", "data.nc", "loss"]),
    ("certify-no-config", ["certify", "{d}/no_config"], [R, "no_config", "config.toml"]),
    ("plot-no-config", ["plot", "{d}/no_config"], [R, "no_config", "config.toml"]),
    ("certify-config-folder", ["certify", "{d}/config_folder"],
     [R, "config_folder/config.toml", "is a folder"]),
    ("animate-config-binary", ["animate", "{d}/config_binary"],
     [R, "config_binary/config.toml", "cannot be read as text"]),
    ("animate-no-snapshots", ["animate", "{d}/no_snapshots"],
     [R, "snapshots", "record.snapshots = true"]),
    # ---- options
    ("plot-probe-not-recorded", ["plot", "{d}/fresh", "--probes", "nope"],
     ["--probes", "nope", "recorded: ", "loss"]),
    ("plot-suffix", ["plot", "{d}/fresh", "--out", "{d}/fresh/fig.jpg"], ["--out", "fig.jpg",
                                                                          ".png"]),
    ("animate-max-frames-zero", ["animate", "{d}/fresh", "--max-frames", "0"],
     ["--max-frames", "got 0"]),
    ("certify-at-out-of-range", ["certify", "{d}/fresh", "--at", "99"], ["--at", "99"]),
    # ---- output: existing files without --overwrite
    ("certify-existing-pair", ["certify", "{d}/run"], [R, "end_state.nc", "already exists", OW]),
    ("certify-existing-csv", ["certify", "{d}/csv_only"], [R, "csv_only/end_state.csv", OW]),
    ("plot-existing", ["plot", "{d}/run"], ["--out", "probes.png", "already exists", OW]),
    ("animate-existing", ["animate", "{d}/run"], ["--out", "animation.gif", "already exists",
                                                  OW]),
    # ---- output: --overwrite only where shallowflow wrote the file
    ("certify-user-csv", ["certify", "{d}/user_csv", OW],
     [R, "user_csv/end_state.csv", "not known to be shallowflow's", "does not list it"]),
    ("plot-user-file", ["plot", "{d}/run", "--out", "{d}/run/user.png", OW],
     ["--out", "user.png", "not known to be shallowflow's"]),
    ("plot-unmarked-folder", ["plot", "{d}/run", "--out", "{d}/other/fig.png", OW],
     ["--out", "other/fig.png", f"no {MARKER} marker"]),
    # ---- output: a folder, a link or a file where a file is expected
    ("certify-csv-is-a-folder", ["certify", "{d}/csv_folder", OW],
     [R, "csv_folder/end_state.csv", "is a folder, not a file"]),
    ("certify-nc-is-a-folder", ["certify", "{d}/nc_folder", OW],
     [R, "nc_folder/end_state.nc", "is a folder, not a file"]),
    ("certify-csv-is-a-link", ["certify", "{d}/csv_link", OW],
     [R, "csv_link/end_state.csv", "symbolic link"]),
    ("plot-out-is-a-folder", ["plot", "{d}/run", "--out", "{d}/folder.png", OW],
     ["--out", "folder.png", "is a folder"]),
    ("animate-out-is-a-folder", ["animate", "{d}/run", "--out", "{d}/folder.gif", OW],
     ["--out", "folder.gif", "is a folder"]),
    ("plot-out-is-a-link", ["plot", "{d}/run", "--out", "{d}/link.png", OW],
     ["--out", "link.png", "symbolic link"]),
    ("plot-below-a-file", ["plot", "{d}/run", "--out", "{d}/afile/fig.png"],
     ["--out", "afile/fig.png", "is a file, not a folder"]),
    ("animate-below-a-file", ["animate", "{d}/run", "--out", "{d}/afile/sub/run.gif"],
     ["--out", "afile", "is a file, not a folder"]),
]


def test_the_cases_are_many_and_named_once():
    assert len(CASES) >= 25 and len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize(("args", "fragments"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused_before_work(world, args, fragments):
    """Each case: exit 2, one error line naming the file or field and what is expected,
    nothing on stdout, nothing written, nothing changed (no lock or temporary file left)."""
    before = listing(world)
    result = invoke([a.replace("{d}", str(world)) for a in args])
    refused(result, [f.replace("{d}", str(world)) for f in fragments])
    assert listing(world) == before


# --------------------------------------------------------------------------- what still works
@pytest.fixture
def run_copy(world, tmp_path) -> Path:
    """A copy of the module's run folder, without what certify, plot and animate wrote."""
    folder = tmp_path / "r"
    shutil.copytree(world / "fresh", folder)
    return folder


def marker_entries(folder: Path) -> set[str]:
    return set(json.loads((folder / MARKER).read_text())["entries"])


def test_certify_writes_the_pair_says_what_it_does_and_is_quiet_on_request(run_copy):
    result = invoke(["certify", run_copy])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(run_copy / "end_state.csv")
    end = read_netcdf(run_copy / "end_state.nc")
    assert list(table["run"]) == [0, 1] and list(end["run"].values) == [0, 1]
    assert list(table["label"]) == list(end["end_label"].values)
    assert {"end_state.nc", "end_state.csv"} <= marker_entries(run_copy)
    err = result.stderr
    assert "certify: 2 run(s) read from" in err and "certify: 2 run(s) certified (" in err
    assert "end_state.nc and" in err and "written (" in err
    assert "end states:" in result.stdout and "certify:" not in result.stdout
    quiet = invoke(["certify", run_copy, "--overwrite", "--quiet"])
    assert quiet.exit_code == 0 and quiet.stderr == "" and "end states:" in quiet.stdout


def test_overwrite_replaces_only_the_commands_own_files(run_copy):
    """--overwrite replaces end_state.*, probes.png and animation.gif (files shallowflow wrote,
    listed in the marker), each by a new file, and leaves the user's file beside them alone."""
    for args in (["certify", run_copy, "--quiet"], ["plot", run_copy],
                 ["animate", run_copy, "--quiet", "--max-frames", "2"]):
        assert invoke(args).exit_code == 0, args
    (run_copy / "notes.txt").write_text("mine")
    names = ("end_state.nc", "end_state.csv", "probes.png", "animation.gif")
    inodes = {n: (run_copy / n).stat().st_ino for n in names}
    for args in (["certify", run_copy, "--quiet", OW], ["plot", run_copy, OW],
                 ["animate", run_copy, "--quiet", OW]):
        assert invoke(args).exit_code == 0, args
    assert all((run_copy / n).stat().st_ino != inodes[n] for n in names)
    assert (run_copy / "notes.txt").read_text() == "mine"
    with Image.open(run_copy / "animation.gif") as im:
        assert im.n_frames == 6  # every record of 5 steps now, not the 2 frames of the first
    assert set(names) <= marker_entries(run_copy)
    assert not [p.name for p in run_copy.iterdir() if ".tmp-" in p.name or
                p.name.endswith(".lock")]


def test_plot_and_animate_to_a_new_folder(run_copy, tmp_path):
    """Files outside the run folder: missing parent folders are made; the figure is a PNG."""
    png, gif = tmp_path / "figs" / "a" / "loss.png", tmp_path / "movies" / "run1.gif"
    assert invoke(["plot", run_copy, "--probes", "loss", "--out", png]).exit_code == 0
    animated = invoke(["animate", run_copy, "--run", "1", "--out", gif])
    assert animated.exit_code == 0 and "animate: 6 snapshots read" in animated.stderr
    assert "animate: 6 frame(s) drawn (" in animated.stderr
    with Image.open(png) as im:
        assert im.format == "PNG" and im.size[0] > 300
    with Image.open(gif) as im:
        assert im.n_frames == 6


def test_plot_of_a_zero_step_run_draws_its_one_record(tmp_path):
    """A valid run of 0 steps records only t = 0: its probes are drawn as points at t = 0 on a
    linear axis (the reported defect: matplotlib's log-scale error)."""
    (tmp_path / "exp.toml").write_text(EXP.replace("steps = 5", "steps = 0"))
    assert invoke(["run", tmp_path / "exp.toml", "--out", tmp_path / "z", "--quiet"]) \
        .exit_code == 0
    result = invoke(["plot", tmp_path / "z"])
    assert result.exit_code == 0, result.output
    with Image.open(tmp_path / "z" / "probes.png") as im:
        pixels = np.asarray(im.convert("L"))
    assert (pixels < 128).mean() > 0.005  # axes, labels and the points: not a blank image


def test_certify_writes_neither_file_when_writing_fails(run_copy, monkeypatch):
    """The pair is written both or neither: a failure while the table is written (here the disk
    filling up) leaves no end_state.nc, no temporary file and an unchanged marker; with
    --overwrite, the old pair stays as it was."""
    def full(self, *args, **kwargs):
        raise OSError(28, "No space left on device", str(args[0]))

    before = listing(run_copy)
    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    result = invoke(["certify", run_copy, "--quiet"])
    assert result.exit_code == 2 and "the disk is full" in result.stderr, result.output
    assert listing(run_copy) == before  # no end_state.nc, no temporary file, the same marker
    monkeypatch.undo()
    assert invoke(["certify", run_copy, "--quiet"]).exit_code == 0
    before = listing(run_copy)
    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    assert invoke(["certify", run_copy, "--quiet", OW]).exit_code == 2
    assert listing(run_copy) == before


def test_too_little_disk_is_refused_before_work(run_copy, monkeypatch):
    """No room for the results: refused before any work, naming the place and the sizes."""
    import shutil as sh
    from collections import namedtuple

    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(sh, "disk_usage", lambda path: Usage(10**6, 10**6 - 100, 100))
    before = listing(run_copy)
    for args in (["certify", run_copy], ["plot", run_copy], ["animate", run_copy]):
        line = refused(invoke(args), ["need about", "free", "--force"])
        assert str(run_copy) in line
    assert listing(run_copy) == before


def test_force_tries_despite_the_disk_estimate(run_copy, monkeypatch):
    """The estimate is an upper bound (an animation's frames are counted at half a byte per
    pixel, a tenth of a GIF's): with --force, each command writes what the real disk holds."""
    import shutil as sh
    from collections import namedtuple

    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(sh, "disk_usage", lambda path: Usage(10**6, 10**6 - 100, 100))
    for args, made in ((["certify", run_copy, "--quiet"], "end_state.csv"),
                       (["plot", run_copy], "probes.png"),
                       (["animate", run_copy, "--max-frames", "2", "--quiet"], "animation.gif")):
        done = invoke([*args, "--force"])
        assert done.exit_code == 0, done.output
        assert (Path(run_copy) / made).is_file()


def test_a_read_only_place_is_refused_before_work(run_copy, tmpfs):
    """A run folder on a read-only file system: certify is refused before any work (it
    cannot write its pair there), and plot says so for its --out too; nothing changes."""
    mnt = tmpfs("1m")
    shutil.copytree(run_copy, mnt / "r")
    subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
    before = listing(mnt)
    refused(invoke(["certify", mnt / "r"]), [R, "cannot write in", str(mnt / "r")])
    refused(invoke(["plot", mnt / "r"]), ["--out", "cannot write in"])
    assert listing(mnt) == before


def test_eta_is_not_taken_from_the_first_step(monkeypatch):
    """The first step compiles (here 20 s), the next take 0.1 s: no ETA is shown after the
    first, and the next ones estimate from the fast steps (about 0.1 s each), not 20 s each."""
    from shallowflow.runtime import progress

    now = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    lines: list[str] = []
    with progress.LineProgress(interval=0.0, write=lines.append) as bar:
        task = bar.add_task("certify: runs", total=102)
        now[0] = 20.0
        bar.advance(task)
        assert "1/102" in lines[-1] and "ETA" not in lines[-1]
        for _ in range(100):
            now[0] += 0.1
            bar.advance(task)
    assert "101/102" in lines[-2] and "ETA 0:00:00" in lines[-2], lines[-2]
    assert "2/102" in lines[2] and "ETA 0:00:10" in lines[2], lines[2]


# ---------------------------------------------------------------- two certify processes at once
SLOW = EXP.replace("runs = 2", "runs = 60").replace("n = 6", "n = 24").replace(
    "width = 4", "width = 24").replace("steps = 5", "steps = 20").split("[record]")[0]


def test_two_certify_processes_at_once(tmp_path):
    """Two real processes certify one run folder: the second is refused at once (while the first
    still works), naming the first's process, and changes nothing; the first finishes with its
    complete pair; no lock or temporary file is left."""
    (tmp_path / "slow.toml").write_text(SLOW)
    folder = tmp_path / "r"
    assert invoke(["run", tmp_path / "slow.toml", "--out", folder, "--quiet"]).exit_code == 0
    first = subprocess.Popen([*CLI, "certify", str(folder), "--quiet"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    lock = folder / lock_name("end_state")
    deadline = time.time() + 120
    while not lock.exists() and time.time() < deadline and first.poll() is None:
        time.sleep(0.02)
    # the first holds its claim, paused (on a loaded machine it could otherwise finish while the
    # second is still importing), and resumes once the second has been refused
    first.send_signal(signal.SIGSTOP)
    try:
        second = subprocess.run([*CLI, "certify", str(folder), "--overwrite"],
                                capture_output=True, text=True, timeout=120)
        still_working = first.poll() is None
    finally:
        first.send_signal(signal.SIGCONT)
    out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    assert still_working, "the first certify ended before the second was refused"
    assert second.returncode == 2 and second.stdout == "", second.stderr
    lines = [line for line in second.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and "Traceback" not in second.stderr, second.stderr
    assert "being written by another shallowflow command" in lines[0]
    assert f"process {first.pid}" in lines[0] and "end_state" in lines[0]
    table = pd.read_csv(folder / "end_state.csv")
    assert list(table["run"]) == list(range(60)) and "end states:" in out
    assert list(read_netcdf(folder / "end_state.nc")["end_label"].values) == list(table["label"])
    assert {"end_state.nc", "end_state.csv"} <= marker_entries(folder)
    assert not [p.name for p in folder.iterdir() if ".tmp-" in p.name or
                p.name.endswith(".lock")]
