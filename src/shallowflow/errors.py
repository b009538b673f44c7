"""What went wrong, said to a user: one error format for every entry point.

A problem a user can cause (a value, a file, the output location, the machine's resources) is a
:class:`UserError`; the command line writes each line of its message as

    error: <field or file>: <problem> (got <value>); <what is allowed>

and exits with code 2, before any work starts and with nothing written. Anything else is an
internal error: the command line says so, prints the traceback and asks for a report.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass
from pathlib import Path


class UserError(ValueError):
    """An input, file, output location or resource request that cannot be honoured; the message
    names the field or file, the value and what is allowed (one problem per line)."""


class ResourceError(UserError):
    """The work would need more memory or disk than the machine has (the numbers are in the
    message); ``--force`` runs it anyway."""


class OutputError(UserError):
    """The output location cannot be used (exists, is a file, is not writable, too little
    space)."""


class DiskFull(OutputError):
    """The file system filled up (ENOSPC) or the quota ran out (EDQUOT) while ``path`` was
    written: ``free`` bytes were left, ``need`` (where known) the bytes the file needed. The
    file is not there (every file is written under a temporary name and renamed whole); the
    command says what it finished, where it is kept and how to go on. Its arguments are its
    fields, so it crosses process boundaries (a Dask worker) whole."""

    def __init__(self, path: str, free: float, need: float | None = None) -> None:
        super().__init__(str(path), float(free), need)
        self.path, self.free, self.need = str(path), float(free), need

    def __str__(self) -> str:
        needed = f"{human(self.need)} needed, " if self.need is not None else ""
        return f"no space left on device writing {self.path} ({needed}{human(self.free)} free)"

    def moved(self, old: Path, new: Path) -> DiskFull:
        """The same error with ``path`` under folder ``old`` named under ``new`` instead (a
        file of a temporary folder named where it was going)."""
        path = Path(self.path)
        if path.is_relative_to(old):
            path = new / path.relative_to(old)
        return DiskFull(str(path), self.free, self.need)


@dataclass(frozen=True)
class Failure:
    """What a batch's task raised, in place of its result (:mod:`shallowflow.runtime.executors`): the
    exception (re-raised from a worker where the batch ran elsewhere) and its traceback text."""

    error: Exception
    trace: str

    @classmethod
    def of(cls, error: Exception) -> Failure:
        return cls(error, "".join(traceback.format_exception(error)))

    @property
    def line(self) -> str:
        """``Type: message`` on one line."""
        return f"{type(self.error).__name__}: {' '.join(str(self.error).split())}"


class Cancelled(Exception):
    """Work stopped because something beside it failed or was interrupted, or its caller stopped:
    a batch in flight in the local executor, a shard of a batch when another shard fails, a
    certificate's rerun when its batch fails. Raised by a :class:`shallowflow.dynamics.CancelToken`
    or an executor's step callback, so the engine stops at its next compiled segment."""


class BatchesFailed(Exception):
    """Some batches raised while the others finished (and were kept where the caller keeps
    them). ``failures`` holds ``(description, Failure)`` pairs, the description naming the batch
    by its key; the message has one line per failed batch."""

    def __init__(self, failures: list[tuple[str, Failure]], finished: int) -> None:
        self.failures = failures
        self.finished = finished
        lines = [f"{where}: {failure.line}" for where, failure in failures]
        lines.append(f"{len(failures)} batch(es) failed; the other {finished} finished")
        super().__init__("\n".join(lines))


EXIT_USER = 2
EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130
EXIT_FAILED = 1  # some batches raised; the others finished and are kept

REPORT = ("this is a bug in shallowflow, not in your input: please report it to the "
          "maintainers (the issue tracker of the repository you installed shallowflow from) "
          "with the command and the traceback above")


def human(nbytes: float) -> str:
    """Bytes as B, KiB, MiB, GiB, TiB, PiB or EiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(nbytes) < 1024:
            return f"{nbytes:.3g} {unit}"
        nbytes /= 1024
    return f"{nbytes:.3g} EiB"


def file_problem(path: Path) -> str | None:
    """Why ``path`` is not a regular file this process can read, in words (None: it is one)."""
    if path.is_symlink() and not path.exists():
        return "is a broken symbolic link (or a loop of links)"
    if not path.exists():
        return "no such file"
    if path.is_dir():
        return "is a folder, not a file"
    if not path.is_file():
        return "is not a regular file (a FIFO, device or socket)"
    if not os.access(path, os.R_OK):
        return "cannot be read (permission denied)"
    return None


def error_lines(err: BaseException) -> list[str]:
    """The lines of a user error's message, each to be printed after ``error: ``."""
    return [line.strip() for line in str(err).splitlines() if line.strip()] or [type(err).__name__]
