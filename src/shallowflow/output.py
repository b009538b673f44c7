"""The output place of a command: checked before any work, claimed exclusively for the whole
command, written atomically, and replaced with ``--overwrite`` only where shallowflow made it.

Three rules (docs/architecture.md, "Output places"):

1. **Ownership.** Every folder shallowflow makes (a run, sweep, reproduction or demo) holds a
   marker, :data:`MARKER`, naming its kind and every entry shallowflow wrote into it (files a
   later command adds, ``certify``'s end states or ``plot``'s figure, are added by
   :func:`record_entries`). ``--overwrite`` replaces a folder only when it holds the marker and
   nothing else than the entries the marker lists; anything else (a user's folder, a file put
   into a run folder, a folder made before markers existed, a symbolic link, the current folder
   or one above it) is refused before any work, naming what was found.
2. **Exclusive claim.** A command holds an advisory lock (``flock``) on a lock file beside its
   output, ``.NAME.lock``, from before its checks until it ends (:func:`claim`, for files
   :func:`claim_files`); a second command writing the same place is refused at once. The
   kernel drops the lock when a process dies, so a killed command never blocks the next one.
3. **Atomic replacement.** The result is written into a hidden temporary folder (or files,
   all or none: :meth:`OutputFiles.writing`) beside the output and renamed into place at the
   end. A folder that appeared at the output while the command ran, or one that changed so
   that it is no longer shallowflow's alone, is never deleted: the finished result is moved to
   a visible sibling and the command says where.

A disk that fills (ENOSPC) or a quota that runs out (EDQUOT) while a file is written is
:class:`~shallowflow.errors.DiskFull`, naming the file as it was going to be called (not its
temporary name), the bytes it needed where known and the bytes free (:func:`disk_errors`); the
temporary file is removed, so nothing half-written is left.
"""

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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from shallowflow.errors import DiskFull, OutputError, ResourceError, human, shown
from shallowflow.machine import free_disk

MARKER = ".shallowflow"
"""The marker file of a folder shallowflow made: JSON ``{"made_by": "shallowflow", "kind":
..., "entries": [...]}``."""
KINDS = ("run", "sweep", "reproduction", "demo")
HOST = "".join(c for c in socket.gethostname() if c.isalnum())[:32] or "host"
"""This host, as written in temporary names (so a clean-up only judges its own processes)."""
SHOWN = 3  # foreign entries named in a refusal
FULL = (errno.ENOSPC, errno.EDQUOT)
"""The errors of a full file system or an exhausted quota (:func:`disk_errors`)."""


class OutputExistsError(OutputError, FileExistsError):
    """The output folder already exists and would be overwritten."""


def tmp_name(name: str) -> str:
    """A temporary name beside ``name``: ``.NAME.tmp-HOST-PID-XXXXXXXX``."""
    return f".{name}.tmp-{HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


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
        more = f" and {len(foreign) - SHOWN} more" if len(foreign) > SHOWN else ""
        raise OutputExistsError(
            f"{field_name}: {shown(out)} holds "
            f"{', '.join(shown(name, bare=True) for name in foreign[:SHOWN])}{more}, which "
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
def _made_parents(folder: Path) -> Iterator[None]:
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
    with _made_parents(out.parent), exclusive(out):
        check_output_dir(out, overwrite, need, force, resume)  # again, now that it is ours
        yield OutputFolder(out, out.exists() or out.is_symlink(), kind)


FILE_REMEDY = "or write less"  # what else a user can do where an output file does not fit


def check_output_file(path: Path, overwrite: bool = False, field_name: str = "out") -> None:
    """Refuse the output file ``path`` where it is a symbolic link, a folder or not a regular
    file, where it exists (unless ``overwrite``) and, with ``overwrite``, where its folder's
    marker does not list it (shallowflow did not write it: see the module's rule 1)."""
    if path.is_symlink():
        raise OutputExistsError(f"{field_name}: {shown(path)} is a symbolic link; shallowflow "
                                "replaces only plain files it made: give another name")
    if not path.exists():
        return
    if path.is_dir():
        raise OutputExistsError(f"{field_name}: {shown(path)} is a folder, not a file; it is "
                                "never replaced by a file: move it away or give another name")
    if not path.is_file():
        raise OutputExistsError(f"{field_name}: {shown(path)} is not a regular file (a FIFO, "
                                "device or socket); give another name")
    if not overwrite:
        raise OutputExistsError(f"{field_name}: {shown(path)} already exists; pass --overwrite "
                                "to replace it")
    marker = read_marker(path.parent)
    if marker is None or path.name not in marker["entries"]:
        why = (f"its folder holds no {MARKER} marker" if marker is None
               else f"the {MARKER} marker of its folder does not list it")
        raise OutputExistsError(f"{field_name}: {shown(path)} is not known to be "
                                f"shallowflow's ({why}); --overwrite replaces only files "
                                "shallowflow wrote: move it away or give another name")


def check_output_files(paths: Sequence[Path], overwrite: bool = False, need: float = 0.0,
                       field_name: str = "out", remedy: str = FILE_REMEDY) -> None:
    """Before any work: every file of ``paths`` (in one folder) may be written
    (:func:`check_output_file`), and their folder is writable with room for ``need`` bytes
    (:func:`check_place`)."""
    if len({p.parent for p in paths}) != 1:
        raise ValueError(f"paths: the files written together must share a folder (got {paths})")
    for path in paths:
        check_output_file(path, overwrite, field_name)
    check_place(paths[0], field_name, need, remedy=remedy)


@dataclass
class OutputFiles:
    """Output files claimed for a command (:func:`claim_files`): ``paths`` in one folder, the
    field that names them in errors, and which of them existed when they were claimed."""

    paths: tuple[Path, ...]
    field_name: str = "out"
    existed: frozenset[Path] = frozenset()
    remedy: str = FILE_REMEDY

    def check_disk(self, need: float) -> None:
        """Refuse (before any work) a folder without room for ``need`` bytes (a size known once
        the input is read)."""
        check_disk(self.paths[0].parent, need, False, self.field_name, self.remedy)

    @contextlib.contextmanager
    def writing(self) -> Iterator[tuple[Path, ...]]:
        """Yield a temporary path beside each file; they replace the files together, only if
        the block succeeds (the old files are kept aside until every new one is in place), and
        the folder's marker lists them (:func:`record_entries`). A file that appeared at a path
        meanwhile, or stopped being shallowflow's, is left as it is and nothing is written."""
        tmps = tuple(p.with_name(tmp_name(p.name)) for p in self.paths)
        try:
            yield tmps
            for path in self.paths:
                if path not in self.existed and (path.exists() or path.is_symlink()):
                    raise OutputExistsError(f"{self.field_name}: {shown(path)} appeared while "
                                            "this command ran; it was left as it is and "
                                            "nothing was written")
                check_output_file(path, True, self.field_name)
            self._replace(tmps)
        finally:
            for tmp in tmps:
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
        record_entries(self.paths[0].parent, [p.name for p in self.paths])

    def _replace(self, tmps: tuple[Path, ...]) -> None:
        aside: list[tuple[Path, Path]] = []
        placed: list[Path] = []
        try:
            for path in self.paths:
                if path.exists():
                    trash = path.with_name(tmp_name(path.name))
                    path.rename(trash)
                    aside.append((path, trash))
            for tmp, path in zip(tmps, self.paths, strict=True):
                tmp.rename(path)
                placed.append(path)
        except BaseException:
            for path in placed:
                path.unlink(missing_ok=True)
            for path, trash in aside:
                trash.rename(path)
            raise
        for _, trash in aside:
            trash.unlink(missing_ok=True)


@contextlib.contextmanager
def claim_files(paths: Sequence[str | Path], overwrite: bool = False, need: float = 0.0,
                field_name: str = "out", lock: str | Path | None = None,
                remedy: str = FILE_REMEDY) -> Iterator[OutputFiles]:
    """:func:`claim` for the output files ``paths`` (one folder; the lock of ``lock``, default
    the first file): checked before any work, written with :meth:`OutputFiles.writing`."""
    files = tuple(Path(p) for p in paths)
    check_output_files(files, overwrite, need, field_name, remedy)  # before making anything
    with _made_parents(files[0].parent), exclusive(Path(lock or files[0]), field_name):
        check_output_files(files, overwrite, need, field_name, remedy)  # now that they are ours
        yield OutputFiles(files, field_name, frozenset(p for p in files if p.exists()), remedy)


@contextlib.contextmanager
def disk_errors(path: str | Path, need: float | None = None) -> Iterator[None]:
    """Turn a full disk or an exhausted quota (:data:`FULL`) met in the block, which writes
    ``path`` (``need`` bytes, where known), into :class:`~shallowflow.errors.DiskFull` naming
    ``path`` and the bytes free then; other errors pass unchanged."""
    try:
        yield
    except OSError as err:
        if err.errno not in FULL:
            raise
        raise DiskFull(str(path), free_disk(Path(path).parent), need) from None


@contextlib.contextmanager
def atomic_file(path: str | Path, need: float | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; it replaces ``path`` only if the block succeeds.
    A full disk met in the block is :class:`~shallowflow.errors.DiskFull` naming ``path``
    (:func:`disk_errors`; ``need``: the bytes to be written, where known), the free space
    counted after the temporary file is removed."""
    path = Path(path)
    tmp = path.with_name(tmp_name(path.name))
    with disk_errors(path, need):
        try:
            yield tmp
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    write_bytes(path, text.encode())


def write_bytes(path: str | Path, data: bytes | memoryview) -> None:
    """Write ``data`` to ``path`` atomically; on a full disk,
    :class:`~shallowflow.errors.DiskFull` with the bytes it needed."""
    with atomic_file(path, memoryview(data).nbytes) as tmp:
        tmp.write_bytes(data)
