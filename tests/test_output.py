"""Output places (shallowflow.output): ``--overwrite`` replaces only what shallowflow made, and
one command at a time writes an output place; a second is refused at once, and a folder that
appears during a command is never deleted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import TINY_EXPERIMENT
from shallowflow.cli.commands import app
from shallowflow.errors import OutputError
from shallowflow.output import (
    MARKER,
    OutputExistsError,
    claim,
    exclusive,
    lock_name,
    read_marker,
)

EXE = str(Path(sys.executable).parent / "shallowflow")
EXP = 'name = "exp"\n' + TINY_EXPERIMENT
SWEEP = 'name = "sw"\nbase = "exp.toml"\n[grid]\n"model.width" = [2, 3]\n'


def invoke(args: list[str], cwd: Path | None = None):
    old = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        return CliRunner().invoke(app, [str(a) for a in args])
    finally:
        os.chdir(old)


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` (hidden ones too) with its bytes (None for a folder)."""
    return {str(p.relative_to(folder)): (None if p.is_dir() else p.read_bytes())
            for p in sorted(folder.rglob("*"))}


def refused(result, *fragments: str) -> str:
    assert result.exit_code == 2, (result.exit_code, result.output)
    err = result.stderr
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture
def d(tmp_path):
    (tmp_path / "exp.toml").write_text(EXP)
    (tmp_path / "sweep.toml").write_text(SWEEP)
    return tmp_path


# ------------------------------------------------------------------------ defect 1: ownership
COMMANDS = {
    "run": ["run", "{d}/exp.toml", "--out", "{out}", "--overwrite"],
    "demo": ["demo", "--out", "{out}", "--overwrite"],
    "reproduce": ["reproduce", "town-fig5", "--out", "{out}", "--overwrite"],
}


def fill(args: list[str], d: Path, out: str) -> list[str]:
    return [a.format(d=d, out=out) for a in args]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_overwrite_refuses_a_folder_shallowflow_did_not_make(d, command):
    """The reported defect: ``--overwrite`` on a user's folder deleted mine.txt. Now it is
    refused before any work, naming the missing marker, and the folder is untouched."""
    mine = d / "mydir"
    mine.mkdir()
    (mine / "mine.txt").write_text("precious")
    before = snapshot(d)
    refused(invoke(fill(COMMANDS[command], d, str(mine))), "mydir", MARKER, "remove it")
    assert snapshot(d) == before


def test_overwrite_replaces_a_run_folder_and_nothing_foreign(d):
    """A run folder holds its marker listing every entry; ``--overwrite`` replaces it, but not
    once a file shallowflow did not write is put into it (named in the refusal)."""
    out = d / "r"
    assert invoke(["run", d / "exp.toml", "--out", out, "--quiet"]).exit_code == 0
    marker = json.loads((out / MARKER).read_text())
    assert marker["made_by"] == "shallowflow" and marker["kind"] == "run"
    assert set(marker["entries"]) == {p.name for p in out.iterdir()} - {MARKER}
    first = out.stat().st_ino
    again = invoke(["run", d / "exp.toml", "--out", out, "--overwrite", "--quiet"])
    assert again.exit_code == 0, again.output
    assert out.stat().st_ino != first  # a new folder renamed into place
    (out / "notes.txt").write_text("mine")
    before = snapshot(d)
    refused(invoke(["run", d / "exp.toml", "--out", out, "--overwrite"]), "notes.txt",
            "did not write")
    assert snapshot(d) == before


def test_files_added_by_later_commands_are_shallowflow_s(d):
    """``certify`` and ``plot`` write into a run folder and add what they wrote to its marker,
    so the folder can still be replaced."""
    out = d / "r"
    assert invoke(["run", d / "exp.toml", "--out", out, "--quiet"]).exit_code == 0
    assert invoke(["certify", out]).exit_code == 0
    assert invoke(["plot", out, "--probes", "loss"]).exit_code == 0
    entries = set(json.loads((out / MARKER).read_text())["entries"])
    assert {"end_state.nc", "end_state.csv", "probes.png"} <= entries
    assert invoke(["run", d / "exp.toml", "--out", out, "--overwrite", "--quiet"]).exit_code == 0
    assert not (out / "probes.png").exists()


@pytest.mark.parametrize("where", [".", "..", "here/..", "link"])
def test_places_that_are_not_a_folder_of_their_own_are_refused(d, where):
    """``--out .``, ``..`` and a symbolic link with ``--overwrite`` trained and then failed,
    leaving hidden debris; now they are refused before any work and nothing changes."""
    work = d / "work"
    (work / "here").mkdir(parents=True)
    target = d / "target"
    target.mkdir()
    (target / "keep.txt").write_text("precious")
    (work / "link").symlink_to(target)
    before = snapshot(d)
    result = invoke(["run", d / "exp.toml", "--out", where, "--overwrite"], cwd=work)
    refused(result, "out", repr(where))
    assert snapshot(d) == before


def test_the_current_folder_is_refused_by_any_name(d):
    before = snapshot(d)
    refused(invoke(["run", d / "exp.toml", "--out", d, "--overwrite"], cwd=d), "current folder")
    assert snapshot(d) == before


def test_a_refused_place_leaves_no_parent_folders(d):
    """Missing parents are made for the claim and removed again when the command is refused."""
    (d / "a").mkdir()
    before = snapshot(d)
    refused(invoke(["run", d / "exp.toml", "--out", d / "a" / "b" / "c",
                    "--set", "model.width=0"]), "model.width")
    assert snapshot(d) == before


# -------------------------------------------------------------- defect 2: one writer at a time
HOLD = ("import sys; from pathlib import Path; from shallowflow.output import exclusive\n"
        "with exclusive(Path(sys.argv[1])):\n    print('held', flush=True); sys.stdin.read()\n")


@pytest.fixture
def holder():
    """Another process holding the claim of a path until the test ends."""
    procs = []

    def hold(path: Path) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "held"
        procs.append(proc)
        return proc

    yield hold
    for proc in procs:
        proc.communicate("", timeout=30)


CLAIMED = {
    "run": (["run", "{d}/exp.toml", "--out", "{d}/o"], "o"),
    "sweep": (["sweep", "{d}/sweep.toml", "--out", "{d}/o"], "o"),
    "reproduce": (["reproduce", "town-fig5", "--out", "{d}/o"], "o"),
    "demo": (["demo", "--out", "{d}/o"], "o"),
    "certify": (["certify", "{d}/r"], "r/end_state"),
    "plot": (["plot", "{d}/r", "--probes", "loss"], "r/probes.png"),
}


@pytest.mark.parametrize("command", sorted(CLAIMED))
def test_a_second_writer_is_refused_at_once(d, holder, command):
    """While another process holds an output place, every command writing it is refused before
    any work (exit 2, one line naming the place and the holder) and changes nothing."""
    args, held = CLAIMED[command]
    if command in ("certify", "plot"):
        assert invoke(["run", d / "exp.toml", "--out", d / "r", "--quiet"]).exit_code == 0
    proc = holder(d / held)
    before = snapshot(d)
    start = time.perf_counter()
    line = refused(invoke([a.format(d=d) for a in args]), "another shallowflow command",
                   f"process {proc.pid}")
    assert time.perf_counter() - start < 30, line
    assert snapshot(d) == before


SLOW = EXP.replace("steps = 5", "steps = 1500000").replace("lr = 0.1", "lr = 0.002") \
    .replace("n = 6", "n = 64").replace("width = 4", "width = 64")  # about 10 s of training
AT_ONCE = {  # the first command (a real process, slow), the second (another, same --out)
    "run": (["run", "slow.toml"], ["run", "exp.toml", "--overwrite"],
            ("config.toml", "steps = 1500000")),
    "sweep": (["sweep", "slow_sweep.toml"], ["sweep", "sweep.toml"],
              ("plan.json", "1500000")),
    "reproduce": (["reproduce", "town-fig5"], ["reproduce", "town-fig5", "--overwrite"],
                  ("report.md", "town-fig5")),
}


@pytest.mark.parametrize("command", sorted(AT_ONCE))
def test_two_commands_at_once(d, command):
    """Two processes, the same ``--out``: the second is refused while the first works, and the
    first finishes with its own complete result (the reported defect: both exited 0 and one
    result silently replaced the other). A lock of a killed process is taken over."""
    first_args, second_args, (made, first_mark) = AT_ONCE[command]
    (d / "slow.toml").write_text(SLOW)
    (d / "slow_sweep.toml").write_text(SWEEP.replace("exp.toml", "slow.toml"))
    first = subprocess.Popen([EXE, *first_args, "--out", "o", "--quiet"], cwd=d,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not (d / lock_name("o")).exists() and time.time() < deadline:
        time.sleep(0.05)
    second = invoke([*second_args, "--out", "o", "--quiet"], cwd=d)  # this test's process
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    refused(second, "being written by another shallowflow command", f"process {first.pid}")
    assert first_mark in (d / "o" / made).read_text()  # the first one's complete result
    assert read_marker(d / "o")["kind"] == command.replace("reproduce", "reproduction")
    assert not (d / lock_name("o")).exists() and not list(d.glob(".o.*"))
    if command == "run":  # the lock file of a killed command is taken over
        (d / lock_name("o")).write_text("12345 elsewhere\n")
        assert invoke([*second_args, "--out", "o", "--quiet"], cwd=d).exit_code == 0
        assert not (d / lock_name("o")).exists()


def test_a_folder_that_appears_during_a_command_is_kept(d):
    """A folder made at the output place while a command ran (by anything but shallowflow) is
    never deleted: the finished result goes to a visible sibling, and the error says where."""
    out = d / "o"
    with claim(out, "run") as place:
        out.mkdir()
        (out / "mine.txt").write_text("precious")
        with pytest.raises(OutputExistsError, match="appeared while this command ran") as err, \
                place.writing() as folder:
            (folder / "result.txt").write_text("done")
    assert (out / "mine.txt").read_text() == "precious"
    kept = [p for p in d.iterdir() if p.name.startswith("o.new-")]
    assert len(kept) == 1 and str(kept[0]) in str(err.value)
    assert (kept[0] / "result.txt").read_text() == "done"


def test_exclusive_in_one_process_and_after_release(tmp_path):
    """The lock is an open-file lock: a second claim is refused even within one process, and the
    place is free again (its lock file gone) once the first block ends."""
    target = tmp_path / "x"
    with exclusive(target):
        with pytest.raises(OutputError, match="another shallowflow command"), exclusive(target):
            pass
    assert not (tmp_path / lock_name("x")).exists()
    with exclusive(target):
        pass
