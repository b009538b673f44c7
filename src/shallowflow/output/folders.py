"""Output folders: the ownership marker, the checks before any work, the exclusive claim and
the atomic replacement (docs/architecture.md, "Output places", rules 1-3)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import socket
import tempfile
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from shallowflow.errors import DiskFull, OutputError, ResourceError, human, shown
from shallowflow.machine import free_disk
from shallowflow.output.writes import HOST, tmp_name, write_text

MARKER = ".shallowflow"
"""The marker file of a folder shallowflow made: JSON ``{"made_by": "shallowflow", "kind":
..., "entries": [...]}``."""
KINDS = ("run", "sweep", "reproduction", "demo")
FOREIGN_SHOWN = 3
"""How many foreign entries a refusal of ``--overwrite`` names (the rest are counted)."""


class OutputExistsError(OutputError, FileExistsError):
    """The output folder already exists and would be overwritten."""


def lock_name(name: str) -> str:
    """The lock file of the output ``name``, beside it."""
    return f".{name}.lock"


def _ours_in_passing(name: str) -> bool:
    """Whether ``name`` is one of shallowflow's transient entries (a temporary file or a lock)."""
    return name.startswith(".") and (".tmp-" in name or name.endswith(".lock"))


def plain_output(out: str | Path, field_name: str = "out") -> Path:
    """``out`` as given, refused where it names no new place of its own: ``.``, ``..``, the
    root, or the current folder or a folder above it (replacing it would pull the ground from
    under the command)."""
    path = Path(out)
    absolute = Path(os.path.abspath(path))
    if path.name in ("", ".", "..") or absolute == absolute.parent:
        raise OutputError(f"{field_name}: {shown(out)} names no folder of its own; give the "
                          "name of a new folder, e.g. runs/NAME")
    if absolute == Path.cwd() or absolute in Path.cwd().parents:
        raise OutputError(f"{field_name}: {shown(out)} is the current folder or one above it; "
                          "give the name of a new folder")
    return path


def read_marker(folder: Path) -> dict[str, Any] | None:
    """The marker of ``folder``, or None where there is none or it is not shallowflow's."""
    try:
        marker = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("made_by") != "shallowflow" \
            or not isinstance(marker.get("entries"), list):
        return None
    return marker


def write_marker(folder: Path, kind: str, entries: Iterable[str] | None = None) -> None:
    """Mark ``folder`` as made by shallowflow (``kind``: one of :data:`KINDS`), listing
    ``entries`` (default: everything in it now, transient entries left out)."""
    from shallowflow import __version__

    names = sorted(entries if entries is not None else
                   (p.name for p in folder.iterdir() if not _ours_in_passing(p.name)))
    record = {"made_by": "shallowflow", "kind": kind, "version": __version__,
              "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "entries": sorted(set(names) - {MARKER})}
    write_text(folder / MARKER, json.dumps(record, indent=1) + "\n")


def record_entries(folder: Path, names: Iterable[str]) -> None:
    """Add ``names`` to the marker of ``folder`` (a file a later command wrote into a folder
    shallowflow made); nothing where the folder holds no marker."""
    marker = read_marker(folder)
    if marker is not None:
        marker["entries"] = sorted(set(marker["entries"]) | set(names))
        write_text(folder / MARKER, json.dumps(marker, indent=1) + "\n")


def foreign_entries(folder: Path) -> list[str] | None:
    """The entries of ``folder`` that shallowflow did not write (sorted), or None where the
    folder holds no marker (then none of it is known to be shallowflow's)."""
    marker = read_marker(folder)
    if marker is None:
        return None
    known = set(marker["entries"]) | {MARKER}
    return sorted(p.name for p in folder.iterdir()
                  if p.name not in known and not _ours_in_passing(p.name))


def check_replaceable(out: Path, field_name: str = "out") -> None:
    """Refuse replacing the existing ``out`` unless it is a folder shallowflow made holding
    nothing else (see the module's rule 1) that this user can empty (every folder in it
    writable: replacing it half would leave the old folder beside the new one)."""
    if out.is_symlink():
        raise OutputExistsError(f"{field_name}: {shown(out)} is a symbolic link; --overwrite "
                                "replaces only a folder shallowflow made: give the folder "
                                "itself, or a new name")
    if not out.is_dir():
        raise OutputExistsError(f"{field_name}: {shown(out)} exists and is not a folder")
    foreign = foreign_entries(out)
    if foreign is None:
        raise OutputExistsError(
            f"{field_name}: {shown(out)} was not made by shallowflow (it holds no {MARKER} "
            "marker); --overwrite replaces only folders shallowflow made: remove it yourself or "
            "choose a new folder")
    if foreign:
        more = f" and {len(foreign) - FOREIGN_SHOWN} more" if len(foreign) > FOREIGN_SHOWN else ""
        raise OutputExistsError(
            f"{field_name}: {shown(out)} holds "
            f"{', '.join(shown(name, bare=True) for name in foreign[:FOREIGN_SHOWN])}{more}, which "
            "shallowflow did not write; --overwrite never deletes them: move them away or "
            "choose a new folder")
    locked = next((Path(top) for top, _, _ in os.walk(out)
                   if not os.access(top, os.W_OK | os.X_OK)), None)
    if locked is not None:
        raise OutputExistsError(
            f"{field_name}: {shown(out)} cannot be replaced: this user cannot remove what "
            f"{shown(locked)} holds (no write permission); check its permissions or choose a new "
            "folder")


def check_output_dir(out: str | Path, overwrite: bool = False, need: float = 0.0,
                     force: bool = False, resume: bool = False) -> Path:
    """Before any work: refuse an output place that names no folder of its own, an existing
    output (unless ``overwrite`` and it is shallowflow's alone: :func:`check_replaceable`; or
    ``resume``, where the caller checks that it is its own to continue), a place below a file, a
    place this process cannot write in (probed by creating and removing a folder there) and,
    unless ``force``, a file system with less free space than ``need`` bytes."""
    out = plain_output(out)
    if resume and out.exists():
        if out.is_symlink() or not out.is_dir():
            raise OutputExistsError(f"out: {shown(out)} is not a folder to resume")
    elif out.exists() or out.is_symlink():
        if not overwrite:
            raise OutputExistsError(
                f"out: {shown(out)} already exists; choose a new folder or pass --overwrite")
        check_replaceable(out)
    check_place(out, "out", need, force)
    return out


def check_place(out: Path, field_name: str = "out", need: float = 0.0, force: bool = False,
                remedy: str = "record less, or pass --force to try anyway") -> None:
    """Refuse an output ``out`` (a folder or a file, to be made) below a file, in a place this
    process cannot write in (probed by creating and removing a folder there) or, unless
    ``force``, on a file system with less free space than ``need`` bytes (``remedy``: what else
    the user can do about it)."""
    base = out.parent
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise OutputError(f"{field_name}: {shown(out)} cannot be created: {shown(base)} is a "
                          "file, not a folder")
    try:
        Path(tempfile.mkdtemp(prefix=f".{out.name}.probe-", dir=base)).rmdir()
    except OSError as err:
        raise OutputError(f"{field_name}: cannot write in {shown(base)} ({err.strerror}); "
                          "choose a writable place") from None
    check_disk(base, need, force, field_name, remedy)


def check_disk(folder: Path, need: float, force: bool = False, field_name: str = "out",
               remedy: str = "record less, or pass --force to try anyway") -> None:
    """Refuse writing about ``need`` bytes under ``folder`` (an existing folder) when its file
    system has less free space, unless ``force``."""
    free = free_disk(folder)
    if need > free and not force:
        raise ResourceError(
            f"{field_name}: the results need about {human(need)}, {shown(folder)} has "
            f"{human(free)} free; free some space, choose another place, {remedy}")


def owner_alive(name: str) -> bool:
    """Whether the process that made temporary ``name`` (``...tmp-HOST-PID-XXXX``) still runs;
    True when it cannot be told (another host, an old name)."""
    parts = name.rsplit("-", 3)
    if len(parts) != 4 or parts[1] != HOST or not parts[2].isdigit():
        return True
    try:
        os.kill(int(parts[2]), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def clean_stale(folder: Path, name: str = "*") -> list[Path]:
    """Remove the temporary files and folders (``.NAME.tmp-*``) that killed processes of this
    host left in ``folder``; returns what was removed."""
    removed = []
    for tmp in folder.glob(f".{name}.tmp-*") if folder.is_dir() else []:
        if not owner_alive(tmp.name):
            if tmp.is_dir():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


@contextlib.contextmanager
def made_parents(folder: Path) -> Iterator[None]:
    """Create the missing folders of ``folder`` for the block; those still empty after it are
    removed again (a refused or failed command leaves no empty folders behind)."""
    made = []
    for parent in [folder, *folder.parents]:
        if parent.exists() or parent.is_symlink():
            break
        made.append(parent)
    try:
        for parent in reversed(made):
            parent.mkdir(exist_ok=True)  # another command may make it at the same moment
    except OSError as err:
        for parent in made:
            with contextlib.suppress(OSError):
                parent.rmdir()
        raise OutputError(f"out: cannot create {shown(folder)} ({err.strerror}); choose a "
                          "writable place") from None
    try:
        yield
    finally:
        for parent in made:
            with contextlib.suppress(OSError):
                parent.rmdir()  # only empty ones


@contextlib.contextmanager
def exclusive(target: Path, field_name: str = "out") -> Iterator[None]:
    """Hold the lock of ``target`` (``.NAME.lock`` beside it) for the block, or refuse at once
    where another process holds it. The lock file is removed when the block ends; a lock file
    left by a killed process is taken over (the kernel released its lock)."""
    path = target.parent / lock_name(target.name)
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise OutputError(f"{field_name}: cannot write in {shown(target.parent)} "
                              f"({err.strerror}); choose a writable place") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            holder = _read_holder(fd)
            os.close(fd)
            if err.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise OutputError(f"{field_name}: cannot lock {shown(path)} ({err.strerror})") \
                    from None
            raise OutputError(
                f"{field_name}: {shown(target)} is being written by another shallowflow command"
                f"{holder}; wait for it to finish, or choose another place") from None
        try:  # the file may have been removed by its last holder between open and lock
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)


def _read_holder(fd: int) -> str:
    try:
        pid, _, host = os.pread(fd, 200, 0).decode().strip().partition(" ")
    except (OSError, UnicodeDecodeError):
        return ""
    return f" (process {pid} on {host})" if pid.isdigit() else ""


@dataclass
class OutputFolder:
    """An output folder claimed for a command (:func:`claim`): ``path``, and whether a folder
    that shallowflow may replace stood there when it was claimed (``existed``)."""

    path: Path
    existed: bool
    kind: str = "run"

    @contextlib.contextmanager
    def writing(self) -> Iterator[Path]:
        """Yield a temporary folder beside ``path`` that replaces it, marked, only if the block
        succeeds (see the module's rule 3). Temporary folders of ``path`` left by killed
        processes are removed first."""
        out = self.path
        clean_stale(out.parent, out.name)
        tmp = out.parent / tmp_name(out.name)
        tmp.mkdir()
        try:
            yield tmp
            write_marker(tmp, self.kind)
        except BaseException as err:
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(err, DiskFull):  # named where it was going, not in the hidden folder
                raise err.moved(tmp, out) from None
            raise
        self._replace(tmp)

    def _replace(self, tmp: Path) -> None:
        out = self.path
        if not (out.exists() or out.is_symlink()):
            tmp.rename(out)
            return
        try:
            if not self.existed:
                raise OutputExistsError(f"out: {shown(out)} appeared while this command ran")
            check_replaceable(out)
        except OutputExistsError as err:
            kept = out.with_name(f"{out.name}.new-{uuid.uuid4().hex[:6]}")
            tmp.rename(kept)
            raise OutputExistsError(f"{err}; it was left as it is, and this command's finished "
                                    f"results are in {shown(kept)}") from None
        trash = out.parent / tmp_name(out.name)
        out.rename(trash)
        tmp.rename(out)
        shutil.rmtree(trash, ignore_errors=True)


@contextlib.contextmanager
def claim(out: str | Path, kind: str, overwrite: bool = False, need: float = 0.0,
          force: bool = False, resume: bool = False) -> Iterator[OutputFolder]:
    """Check the output folder ``out`` and hold it for the block (before any work; see the
    module's rules): missing parent folders are made (and removed again if still empty), the
    lock beside ``out`` is taken, then :func:`check_output_dir` runs under it."""
    if kind not in KINDS:
        raise ValueError(f"kind: {kind!r} not in {KINDS}")
    out = check_output_dir(out, overwrite, need, force, resume)  # before making anything
    with made_parents(out.parent), exclusive(out):
        check_output_dir(out, overwrite, need, force, resume)  # again, now that it is ours
        yield OutputFolder(out, out.exists() or out.is_symlink(), kind)


