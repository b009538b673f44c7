"""Progress for long runs, on stderr: a live bar on a terminal, plain lines elsewhere.

Results go to standard output (:data:`out`), diagnostics, notes, errors and progress to standard
error (:data:`console`); neither wraps long lines (paths stay whole in logs). When stderr is not a
terminal (a log file, a batch scheduler) progress is a line every :data:`LINE_INTERVAL` seconds
with the counts, the elapsed time and an ETA, plus one at the start and one at the end.

An ETA is the rate since the first step finished, never the first step's: that one includes
JAX's compilation (seconds, where a later step takes milliseconds), so there is no ETA until a
second step is done (rich's bar, :func:`make_progress`, estimates the same way). What a command
does between its bars is said by :class:`Phases`, one line per finished part.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

console = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)
LINE_INTERVAL = 5.0


def _clock(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


@dataclass
class _Task:
    description: str
    total: float | None
    completed: float
    start: float
    first: tuple[float, float] | None = None  # (time, completed) when the first step ended

    def eta(self, now: float) -> float | None:
        """Seconds left at the rate since the first step ended (None before a second one)."""
        if self.first is None or not self.total or self.completed <= self.first[1]:
            return None
        rate = (self.completed - self.first[1]) / max(now - self.first[0], 1e-9)
        return max(self.total - self.completed, 0.0) / rate


class LineProgress:
    """The subset of :class:`rich.progress.Progress` the package uses (``add_task``, ``update``,
    ``advance``, ``remove_task``), written as plain lines to stderr: one when the first task
    starts, then at most one every ``interval`` seconds, and one at the end. Thread-safe (batches
    trained side by side update their tasks from their own threads), as rich's is."""

    def __init__(self, enabled: bool = True, interval: float = LINE_INTERVAL,
                 write: Callable[[str], None] | None = None) -> None:
        self.enabled, self.interval = enabled, interval
        self.tasks: dict[int, _Task] = {}
        self._lock = threading.RLock()
        self._next_id, self._last = 0, -float("inf")
        self._write = write or (lambda line: print(line, file=sys.stderr, flush=True))

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.tasks:
            self._emit(force=True)

    def add_task(self, description: str, total: float | None = None, completed: float = 0,
                 **_: Any) -> int:
        with self._lock:
            tid, self._next_id = self._next_id, self._next_id + 1
            self.tasks[tid] = _Task(description, total, completed, time.monotonic())
            self._emit(force=len(self.tasks) == 1)
            return tid

    def update(self, task_id: int, completed: float | None = None, total: float | None = None,
               **_: Any) -> None:
        with self._lock:
            task = self.tasks[task_id]
            if total is not None and total != task.total:
                task.total, task.first = total, None  # a new count: its rate starts afresh
            if completed is not None and completed > task.completed and task.first is None:
                task.first = (time.monotonic(), completed)
            if completed is not None:
                task.completed = completed
            self._emit()

    def advance(self, task_id: int, advance: float = 1) -> None:
        with self._lock:
            self.update(task_id, completed=self.tasks[task_id].completed + advance)

    def remove_task(self, task_id: int) -> None:
        with self._lock:
            self.tasks.pop(task_id, None)

    def line(self) -> str:
        """The current state: every task with its counts, elapsed time and ETA."""
        now, parts = time.monotonic(), []
        with self._lock:
            tasks = list(self.tasks.values())
        for task in tasks:
            text = f"{task.description.strip()}: {task.completed:g}"
            if task.total:
                frac = task.completed / task.total
                text += f"/{task.total:g} ({100 * frac:.0f}%)"
                text += f", elapsed {_clock(now - task.start)}"
                eta = task.eta(now) if frac < 1 else None
                if eta is not None:
                    text += f", ETA {_clock(eta)}"
            parts.append(text)
        return time.strftime("%H:%M:%S") + " " + " | ".join(parts)

    def _emit(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.enabled and (force or now - self._last >= self.interval):
            self._last = now
            self._write(self.line())


Bar = Progress | LineProgress
"""What executors draw on: a rich bar or plain lines."""


def make_progress(enabled: bool = True) -> Bar:
    """A live bar on a terminal, :class:`LineProgress` otherwise (``enabled=False``: silent)."""
    if not sys.stderr.isatty():
        return LineProgress(enabled)
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TimeRemainingColumn(), console=console,
        disable=not enabled, transient=False,
    )


class Phases:
    """Lines on stderr saying what a command has finished and how long it took:
    :meth:`done` prints ``PREFIX: WHAT (S s)``, the seconds since the previous line (or since
    this object was made); silent where not ``enabled`` (``--quiet``)."""

    def __init__(self, prefix: str, enabled: bool = True) -> None:
        self.prefix, self.enabled = prefix, enabled
        self.clock = time.perf_counter()

    def say(self, what: str) -> None:
        """A line ``PREFIX: WHAT`` (what is about to start, when it may take a while)."""
        if self.enabled:
            console.print(f"{self.prefix}: {what}", highlight=False, markup=False)

    def done(self, what: str) -> float:
        """A line ``PREFIX: WHAT (S s)``; the clock starts again. Returns S, the seconds since
        the previous line (or since this object was made)."""
        now = time.perf_counter()
        seconds = now - self.clock
        self.say(f"{what} ({seconds:.1f} s)")
        self.clock = now
        return seconds

    @contextlib.contextmanager
    def counting(self, what: str, total: int) -> Iterator[Callable[[], None]]:
        """A bar (or lines) of ``total`` items while the block runs; the block calls the yielded
        function after each item (its ETA comes from the items after the first, which
        compiles). Then a line ``PREFIX: N WHAT (S s)``."""
        with make_progress(self.enabled) as bar:
            task = bar.add_task(f"{self.prefix}: {what}", total=total)
            yield lambda: bar.advance(task)
        self.done(f"{total} {what}")
