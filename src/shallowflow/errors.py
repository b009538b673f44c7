"""What went wrong, said to a user: one error format for every entry point.

A problem a user can cause (a value, a file, the output location, the machine's resources) is a
:class:`UserError`; the command line writes each line of its message as

    error: <field or file>: <problem> (got <value>); <what is allowed>

and exits with code 2, before any work starts and with nothing written. Anything else is an
internal error: the command line says so, prints the traceback and asks for a report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shallowflow.executors import Failure


class UserError(ValueError):
    """An input, file, output location or resource request that cannot be honoured; the message
    names the field or file, the value and what is allowed (one problem per line)."""


class ResourceError(UserError):
    """The work would need more memory or disk than the machine has (the numbers are in the
    message); ``--force`` runs it anyway."""


class OutputError(UserError):
    """The output location cannot be used (exists, is a file, is not writable, too little
    space)."""


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


def error_lines(err: BaseException) -> list[str]:
    """The lines of a user error's message, each to be printed after ``error: ``."""
    return [line.strip() for line in str(err).splitlines() if line.strip()] or [type(err).__name__]


class Cancelled(Exception):
    """The work was cancelled (:class:`shallowflow.dynamics.CancelToken`, or its caller stopped:
    :class:`shallowflow.executors.LocalExecutor`): the engine stops at its next compiled
    segment."""
