"""What went wrong, said to a user: one error format for every entry point.

A problem a user can cause (a value, a file, the output location, the machine's resources) is a
:class:`UserError`; the command line writes each line of its message as

    error: <field or file>: <problem> (got <value>); <what is allowed>

and exits with code 2, before any work starts and with nothing written. Anything else is an
internal error: the command line says so, prints the traceback and asks for a report.

A value a user gave is echoed through :func:`shown` (escaped, at most :data:`SHOWN` characters of
it), and every line printed is one printable line of bounded length (:func:`error_lines`), so a
1 MB string, a huge list or a file name holding a newline never floods the terminal or forges a
second line.
"""

from __future__ import annotations

import errno
import os
import stat
import traceback
from collections.abc import Sized
from dataclasses import dataclass
from pathlib import Path, PurePath


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


SHOWN = 80
"""How many characters of a value an error message echoes (:func:`shown`)."""

SHOWN_PATH = 120
"""How many characters of a path an error message echoes: a user reads a path to act on it."""

LINE = 1000
"""The longest line an error prints (:func:`error_lines`); longer ones are cut in the middle. A
line holds a few bounded values (:data:`SHOWN`, :data:`SHOWN_PATH`) and their text: a full disk
names the file, the folder of kept batches and the command that goes on (about 500 characters
with long paths), which must stay whole."""


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on (newline, carriage return, escape,
    the Unicode line separators and direction overrides) written as its escape, so it stays one
    visible line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def _cut(text: str, limit: int) -> str:
    """``text`` cut in the middle to about ``limit`` characters (head and tail kept: a path's
    end names the file)."""
    if len(text) <= limit:
        return text
    tail = limit // 3
    return f"{text[:limit - tail - 1]}…{text[-tail:]}"


def shown(value: object, bare: bool = False, limit: int = SHOWN) -> str:
    """A value a user gave, as an error message echoes it: its ``repr`` (a path as its quoted
    text, up to :data:`SHOWN_PATH` characters; ``bare``: without quotes, for field paths and file
    names), every control character escaped, cut in the middle to ``limit`` characters with the
    full size stated (``'xxxx…xx' (1000000 characters)``, ``[1, 1, …, 1] (100000 items)``)."""
    if isinstance(value, PurePath):
        value, limit = str(value), max(limit, SHOWN_PATH)
    if isinstance(value, str):
        text = printable(value) if bare else repr(value)
        size = f"{len(value)} characters"
    else:
        try:
            text = " ".join(repr(value).split())  # an array's repr spans lines
        except ValueError:  # an integer beyond Python's digit limit for str()
            return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"  # type: ignore[attr-defined]
        text = printable(text)
        size = (f"{len(value)} bytes" if isinstance(value, bytes) else
                f"{len(value)} items" if isinstance(value, Sized) else f"{len(text)} characters")
    return text if len(text) <= limit else f"{_cut(text, limit)} ({size})"


def shown_name(path: str | PurePath) -> str:
    """A file's name (its last part), as an error message names it: :func:`shown` bare."""
    return shown(PurePath(path).name, bare=True)


def file_problem(path: str | PurePath) -> str | None:
    """Why ``path`` is not a regular file this process can read, in words (None: it is one).
    Asking never raises: a folder above it that may not be searched, a name too long or a loop
    of links is an answer too."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "is a broken symbolic link" if os.path.islink(path) else "no such file"
    except PermissionError:
        return "cannot be read (permission denied on a folder above it)"
    except OSError as err:
        return {errno.ELOOP: "is a broken symbolic link (or a loop of links)",
                errno.ENAMETOOLONG: "has too long a name",
                errno.ENOTDIR: "no such file (a part of its path is a file, not a folder)"}.get(
            err.errno or 0, f"cannot be read ({err.strerror})")
    if stat.S_ISDIR(st.st_mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a FIFO, device or socket)"
    if not os.access(path, os.R_OK):
        return "cannot be read (permission denied)"
    return None


def file_refusal(path: str | PurePath, field: str, allowed: str) -> str | None:
    """The error message for an input file that is not a regular file this process can read
    (:func:`file_problem`): ``field``, the path (:func:`shown`), the problem and what is
    ``allowed``; None where the file can be read."""
    problem = file_problem(path)
    if problem is None:
        return None
    if problem == "no such file":
        return f"{field}: no such file ({shown(PurePath(path))}); allowed: {allowed}"
    return f"{field}: {shown(PurePath(path))} {problem}; allowed: {allowed}"


def error_lines(err: BaseException) -> list[str]:
    """The lines of a user error's message, each to be printed after ``error: ``: printable
    (:func:`printable`) and at most :data:`LINE` characters (cut in the middle, so the start
    naming the field and the end saying what is allowed remain), whatever a message echoed."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return [_cut(printable(line), LINE) for line in lines] or [type(err).__name__]
