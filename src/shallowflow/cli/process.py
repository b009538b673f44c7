"""The command line's process plumbing: signals, the error guard, exit codes and the quick exit.

The commands (:mod:`shallowflow.cli.commands`) form one :class:`Commands` group (a value the
parser refuses is an error line too) and run inside :func:`guard`, which turns what can go
wrong into what a user reads and the exit code (:mod:`shallowflow.errors`): error lines (exit
2), failed batches (exit 1), an interruption (Ctrl-C: 130, SIGTERM: 143) or an internal error (exit
1, with a request for a report). :func:`handle_signals` makes SIGTERM unwind like Ctrl-C, and
raises an interruption again where Python had to drop it. :func:`run` is the ``shallowflow``
command's own process: the app, then a quick exit. A command called in-process (tests,
notebooks) leaves signal handlers, hooks and modules as they were.
"""

from __future__ import annotations

import ast
import contextlib
import errno
import os
import re
import signal
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.markup import escape
from typer.core import TyperGroup

from shallowflow.errors import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_USER,
    REPORT,
    error_lines,
    file_problem,
    shown,
)
from shallowflow.runtime.progress import console

_OWN_PROCESS = False
"""Whether the ``shallowflow`` command (:func:`run`) owns this process, rather than a test or
notebook calling the app."""

_PENDING: list[type[BaseException]] = []
RETRY_S = 0.2
"""Seconds between the raises of an interruption that Python dropped (:func:`_interrupt`)."""


class Terminated(BaseException):
    """SIGTERM (kill, a batch scheduler): unwinds like Ctrl-C, so temporary output is removed."""


def owns_process() -> bool:
    """Whether this process is the ``shallowflow`` command (:func:`run`), not a test or notebook
    calling the app: process-wide shortcuts are for the command only."""
    return _OWN_PROCESS


# ----------------------------------------------------------------------------------- signals
def handle_signals() -> Callable[[], None]:
    """Install the command's handlers: SIGTERM raises :class:`Terminated`, SIGINT
    ``KeyboardInterrupt`` (both raised again by SIGALRM until :func:`guard` caught them), and
    dropped interruptions are not printed. Returns the function that restores what was there
    (a command called in-process leaves no trace)."""
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM)}
    hook = sys.unraisablehook
    signal.signal(signal.SIGTERM, _interrupt(Terminated))
    signal.signal(signal.SIGINT, _interrupt(KeyboardInterrupt))
    signal.signal(signal.SIGALRM, _again)
    sys.unraisablehook = _quiet_interrupts

    def restore() -> None:
        _stop_retries()
        for signum, handler in saved.items():
            signal.signal(signum, handler)
        sys.unraisablehook = hook

    return restore


def _interrupt(exc: type[BaseException]) -> Callable[[int, object], None]:
    """A signal handler raising ``exc``. Python drops an exception raised where it cannot
    propagate (e.g. inside a garbage-collector callback of XLA), so the handler also arms a
    timer that raises it again every RETRY_S seconds until :func:`guard` has caught it."""
    def handler(signum: int, frame: object) -> None:
        _PENDING[:] = [exc]
        signal.setitimer(signal.ITIMER_REAL, RETRY_S)
        raise exc
    return handler


def _quiet_interrupts(unraisable: sys.UnraisableHookArgs) -> None:
    """An interruption that Python had to drop (see :func:`_interrupt`) is not an error to
    print: it is raised again by the timer."""
    if not isinstance(unraisable.exc_value, (KeyboardInterrupt, Terminated)):
        sys.__unraisablehook__(unraisable)


def _again(signum: int, frame: object) -> None:
    """SIGALRM: raise the pending interruption again (:func:`_interrupt`)."""
    if _PENDING:
        signal.setitimer(signal.ITIMER_REAL, RETRY_S)
        raise _PENDING[0]


def _stop_retries() -> None:
    """Disarm the re-raise timer and forget the pending interruption."""
    signal.setitimer(signal.ITIMER_REAL, 0)
    _PENDING.clear()


# ----------------------------------------------------------------------------------- commands
_UNREADABLE = re.compile(r"('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\") is not readable\.$")


UsageError: type[Exception] = next(c for c in typer.BadParameter.__mro__
                                   if c.__name__ == "UsageError")
"""What typer's argument parser raises for a refused command line (the base of
``typer.BadParameter``; click's own class, or the copy of click that typer carries)."""


class Commands(TyperGroup):
    """The app's commands. What the argument parser refuses is one ``error:`` line, exit code
    2, like every other refused input, not the parser's usage box: a value (a number that is
    not one, a file it may not read) names the option and the value; a missing argument, an
    unknown option or command says so and points at the command's ``--help``. An unreadable
    file is said as the commands say it (:func:`shallowflow.errors.file_problem`)."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None,
                     **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except UsageError as err:  # an option of the app itself
            fail(ValueError(_usage_line(err, err.ctx)))  # type: ignore[attr-defined]

    def invoke(self, ctx: typer.Context) -> Any:
        try:
            return super().invoke(ctx)
        except UsageError as err:
            fail(ValueError(_usage_line(err, ctx)))


def _usage_line(err: Any, ctx: typer.Context | None) -> str:
    """What the parser refused, as one line (``ctx``: the app's, for the command's name where
    the error has none)."""
    if type(err) is typer.BadParameter:
        return _bad_value(err)
    if ctx is None:
        where = "shallowflow"
    elif err.ctx is not None and err.ctx is not ctx:
        where = err.ctx.command_path
    else:
        where = " ".join(filter(None, (ctx.command_path, ctx.invoked_subcommand)))
    message = " ".join(err.format_message().split()).rstrip(".")
    return f"{shown(message, bare=True, limit=200)}; see '{where} --help'"


def _bad_value(err: typer.BadParameter) -> str:
    """A value the parser refused, as one line: the option (or argument), then the problem with
    the value shown bounded (:func:`shallowflow.errors.shown`)."""
    param = err.param
    name = (param.opts[0] if param is not None and param.param_type_name == "option" and
            param.opts else getattr(param, "name", None) or "argument")
    unreadable = _UNREADABLE.search(err.message)
    if unreadable:
        path = Path(ast.literal_eval(unreadable.group(1)))
        problem = file_problem(path) or "cannot be read"
        return f"{name}: {shown(path)} {problem}; give a file this user may read"
    return f"{name}: {shown(err.message, bare=True, limit=200)}"


# ------------------------------------------------------------------------------------- errors
def fail(err: BaseException) -> NoReturn:
    """Print ``err`` as ``error: ...`` lines (:func:`shallowflow.errors.error_lines`) and exit
    with :data:`~shallowflow.errors.EXIT_USER`."""
    for line in error_lines(err):
        console.print(f"[bold red]error:[/] {escape(line)}", highlight=False)
    raise typer.Exit(EXIT_USER)


def _os_error(err: OSError) -> str:
    """An OS error as one line: the file, the problem and, for a full, forbidden or read-only
    place, what to do."""
    where = shown(err.filename) if err.filename is not None else "output"
    hint = {errno.ENOSPC: "the disk is full; free some space and run again",
            errno.EACCES: "this user cannot read or write it; check its permissions or choose "
                          "another place",
            errno.EROFS: "the file system is read-only; choose another place"}.get(
        err.errno or 0, "")
    return f"{where}: {err.strerror or err}" + (f"; {hint}" if hint else "")


@contextlib.contextmanager
def guard(interrupted: Callable[[], str]) -> Iterator[None]:
    """Turn what a user can cause into error lines (exit 2; a full disk into one line naming
    the file and, from ``interrupted()``, what is kept and how to go on), an interruption into a
    line saying what is done and how to go on (``interrupted()``; exit 130, or 143 for SIGTERM), failed
    batches into one error line each and the same line on how to go on (exit 1; tracebacks only
    for errors a user cannot cause), and anything else into an internal-error report (exit 1)."""
    from shallowflow.errors import BatchesFailed, DiskFull, UserError

    try:
        yield
    except typer.Exit:
        raise
    except BatchesFailed as err:
        for where, failure in err.failures:
            if not isinstance(failure.error, (ValueError, OSError)):  # UserError is one
                console.print(failure.trace, highlight=False, markup=False)
            console.print(f"[bold red]error:[/] {escape(where)}: {escape(failure.line)}",
                          highlight=False)
        console.print(f"[bold yellow]failed:[/] {len(err.failures)} batch(es) failed, "
                      f"{err.finished} finished; {escape(interrupted())}", highlight=False)
        raise typer.Exit(EXIT_FAILED) from None
    except (KeyboardInterrupt, Terminated) as err:
        _stop_retries()
        code = 128 + signal.SIGTERM if isinstance(err, Terminated) else EXIT_INTERRUPTED
        console.print(f"[bold yellow]interrupted:[/] {escape(interrupted())}", highlight=False)
        sys.stdout.flush()
        sys.stderr.flush()
        # the output is already cleaned (context managers unwound); leave at once: a normal
        # interpreter exit can crash while XLA still runs a dispatched computation
        os._exit(code)
    except DiskFull as err:  # one line: the file, the space, what is kept and how to go on
        fail(UserError(f"{err}; free some space, then: {interrupted()}"))
    except (UserError, ValueError, FileNotFoundError) as err:
        fail(err)
    except OSError as err:
        fail(ValueError(_os_error(err)))
    except Exception:  # an internal error: say so, show where, ask for a report
        console.print(traceback.format_exc(), highlight=False, markup=False)
        console.print(f"[bold red]internal error:[/] {REPORT}", highlight=False)
        raise typer.Exit(EXIT_INTERNAL) from None


# ------------------------------------------------------------------------------- own process
def without_dask_arrays() -> None:
    """Tell xarray that this process has no dask arrays.

    xarray checks every variable it makes against dask's array type and collection protocol,
    importing ``dask.array`` and ``dask.base`` to do so: 0.5-0.7 s of every command's start-up
    where dask is installed (for the Dask executor). A command never makes dask arrays (files are
    read whole, :func:`shallowflow.store.read_netcdf`), so the type check is answered in advance,
    and the collection check says no while dask is not imported (nothing is a dask collection
    then), in the command's own process only (``import shallowflow`` and the app called
    in-process leave xarray as it is). An xarray that keeps these elsewhere is left as it is."""
    from xarray.namedarray import pycompat, utils

    cache = getattr(pycompat, "_cached_duck_array_modules", None)
    if isinstance(cache, dict) and "dask.array" not in sys.modules:
        cache.setdefault("dask", pycompat.DuckArrayModule("shallowflow-has-no-dask-arrays"))
    is_collection = getattr(utils, "is_dask_collection", None)
    if callable(is_collection):
        utils.is_dask_collection = lambda x: "dask" in sys.modules and is_collection(x)


def run(app: typer.Typer) -> NoReturn:
    """Run ``app`` as this process (the ``shallowflow`` command), then a quick exit.

    A process that imported JAX, xarray and dask spends about half a second tearing its modules
    down at exit (bench/RESULTS.md, start-up). By the time a command returns every result is
    written, closed and renamed into place, so the command flushes its streams, runs the exit
    handlers (``atexit``: loggers, worker processes) and leaves with ``os._exit``. The app
    called in-process (tests, notebooks) keeps the normal exit."""
    import atexit

    global _OWN_PROCESS
    _OWN_PROCESS = True
    try:
        app()
        code = 0
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            code = done.code or 0
        else:  # a message: printed as the interpreter would
            print(done.code, file=sys.stderr)
            code = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
