"""Permissions as an unprivileged user meets them: the real command line, run in a process of its
own as a user whom file permissions bind, refuses each case before any work with one ``error:``
line naming the file or folder (issue 32, defect 9).

Root reads and writes everything, so as root the commands run as user ``nobody`` (``setpriv
--reuid=65534 --regid=65534 --clear-groups``). Where nobody cannot run this Python (an
interpreter under ``/root``, say), they run as root without capabilities (``setpriv
--bounding-set=-all``): the permission bits then bind root like any owner. Without root the
cases run as the current user; without ``setpriv`` as root, or with neither way open, the tests
are skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import shallowflow
from conftest import TINY_EXPERIMENT
from shallowflow.runtime.compile_cache import ENV

NOBODY = 65534
SRC = str(Path(shallowflow.__file__).resolve().parent.parent)
CLI = "from shallowflow.cli import main; main()"


def environment(home: Path) -> dict[str, str]:
    """The command's environment: this checkout's package, and every cache and home in
    ``home`` (the user may write nowhere else)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV"))}
    env.update(PYTHONPATH=SRC, HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"),
               MPLCONFIGDIR=str(home / ".mpl"), JAX_PLATFORMS="cpu")
    env[ENV] = str(home / ".xla")
    return env


def _can_run(prefix: list[str], home: Path) -> str | None:
    """None where ``prefix`` runs this Python importing shallowflow and binds it by the
    permission bits (a file of mode 000 cannot be opened), else why not."""
    probe = home / "probe.txt"
    probe.write_text("secret")
    probe.chmod(0)
    try:
        done = subprocess.run([*prefix, sys.executable, "-c",
                               f"import shallowflow; open({str(probe)!r})"],
                              env=environment(home), capture_output=True, text=True, timeout=120)
    finally:
        probe.unlink()
    if done.returncode == 0:
        return "it may read a file of mode 000 (it is not bound by permissions)"
    if "PermissionError" not in done.stderr:
        lines = (done.stderr or done.stdout).strip().splitlines() or [f"exit {done.returncode}"]
        return lines[-1]
    return None


@pytest.fixture(scope="module")
def place() -> Iterator[Path]:
    """A folder every user may enter and write in (not below pytest's own, which is the
    owner's alone), emptied and removed at the end whatever its modes."""
    base = Path(tempfile.mkdtemp(prefix="shallowflow-unprivileged-"))
    base.chmod(0o777)
    (base / ".cache").mkdir(mode=0o777)
    yield base
    for top, dirs, files in os.walk(base):
        for name in dirs + files:
            path = Path(top) / name
            if not path.is_symlink():
                path.chmod(stat.S_IRWXU | path.stat().st_mode)
    shutil.rmtree(base)


@pytest.fixture(scope="module")
def as_user(place: Path) -> list[str]:
    """The command prefix that runs a command as an unprivileged user (see the module's
    docstring), or a skip with the reason."""
    if os.geteuid() != 0:
        reason = _can_run([], place)
        if reason is not None:
            pytest.skip(f"this user is not bound by file permissions here: {reason}")
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: no way to run a command unprivileged")
    nobody = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    why_not = _can_run(nobody, place)
    if why_not is None:
        return nobody
    capless = [setpriv, "--bounding-set=-all", "--inh-caps=-all"]
    why_not_root = _can_run(capless, place)
    if why_not_root is None:
        return capless
    pytest.skip(f"user nobody cannot run {sys.executable} ({why_not}), nor can root without "
                f"capabilities ({why_not_root})")


def shallowflow_cli(prefix: list[str], place: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, sys.executable, "-c", CLI, *args], cwd=place,
                          env=environment(place), capture_output=True, text=True, timeout=600)


def refused(done: subprocess.CompletedProcess, *fragments: str) -> str:
    """The one error line of a command refused with exit code 2, holding ``fragments``."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "╭" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
    assert "runs: " not in done.stderr  # refused before any training
    assert done.stdout == ""
    return errors[0]


@pytest.fixture(scope="module")
def world(place: Path, as_user: list[str]) -> Path:
    (place / "exp.toml").write_text(TINY_EXPERIMENT)
    (place / "exp.toml").chmod(0o644)
    (place / "secret.toml").write_text(TINY_EXPERIMENT)
    (place / "secret.toml").chmod(0)
    (place / "secret.csv").write_text("1,2,3\n4,5,6\n")
    (place / "secret.csv").chmod(0)
    (place / "locked").mkdir()
    (place / "locked").chmod(0o555)
    return place


def test_an_unreadable_config_is_an_error_line(world, as_user):
    done = shallowflow_cli(as_user, world, "run", "secret.toml", "--out", "o")
    refused(done, "config", "secret.toml", "cannot be read", "permission denied")
    assert not (world / "o").exists()


def test_an_output_place_in_a_folder_without_write_permission_is_refused(world, as_user):
    done = shallowflow_cli(as_user, world, "run", "exp.toml", "--out", "locked/o")
    refused(done, "out", "locked", "cannot write in")
    assert list((world / "locked").iterdir()) == []


def test_overwriting_a_run_folder_the_user_cannot_empty_is_refused(world, as_user):
    """A run folder the user may not write in is refused before work: replacing it would move
    it aside and then fail to delete it, leaving the old folder beside the new one."""
    runs = world / "runs"
    runs.mkdir(mode=0o777)
    runs.chmod(0o777)
    made = shallowflow_cli(as_user, world, "run", "exp.toml", "--out", "runs/r1", "--quiet")
    assert made.returncode == 0, made.stderr
    folder = runs / "r1"
    before = sorted(p.name for p in folder.iterdir())
    folder.chmod(0o555)
    done = shallowflow_cli(as_user, world, "run", "exp.toml", "--out", "runs/r1", "--overwrite")
    refused(done, "out", "r1", "cannot be replaced", "write permission")
    assert sorted(p.name for p in folder.iterdir()) == before
    assert sorted(p.name for p in runs.iterdir()) == ["r1"]  # no half-replaced leftovers


def test_an_unreadable_data_file_says_it_cannot_be_read(world, as_user):
    done = shallowflow_cli(as_user, world, "run", "exp.toml", "--out", "o", "--set",
                           'data={kind="file", path="secret.csv"}')
    line = refused(done, "data.path", "secret.csv", "cannot be read")
    assert "write in" not in line
    assert not (world / "o").exists()
