"""Progress for long runs, on stderr: a live bar on a terminal, plain lines elsewhere.

Results go to standard output (:data:`out`), diagnostics, notes, errors and progress to standard
error (:data:`console`); neither wraps long lines (paths stay whole in logs). When stderr is not a
terminal (a log file, a batch scheduler) progress is a line every :data:`LINE_INTERVAL` seconds
with the counts, the elapsed time and an ETA, plus one at the start and one at the end.

The ETA is honest while code compiles: the first update of a task pays for compiling (tens of
seconds for JAX against milliseconds per step after), so the rate is measured from the first
update on, ``(completed - c1) / (now - t1)``, and until a second update exists the line says
``ETA after the first steps`` instead of extrapolating the compile time. Rich's bar does the same
(its speed ignores the first sample's advance).
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
    first: tuple[float, float] | None = None
    """(time, completed) at the first update that advanced: where the rate is measured from."""

    def eta(self, now: float) -> str:
        """The remaining time at the rate since :attr:`first` (compile time excluded)."""
        if self.first is None or self.completed <= self.first[1]:
            return "ETA after the first steps"
        t1, c1 = self.first
        rate = (self.completed - c1) / max(now - t1, 1e-9)
        return f"ETA {_clock(((self.total or 0.0) - self.completed) / rate)}"


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
            if completed is not None:
                if task.first is None and completed > task.completed:
                    task.first = (time.monotonic(), completed)
                task.completed = completed
            if total is not None:
                task.total = total
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
                elapsed = now - task.start
                if 0 < frac < 1:
                    text += f", elapsed {_clock(elapsed)}, {task.eta(now)}"
                else:
                    text += f", elapsed {_clock(elapsed)}"
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


@contextlib.contextmanager
def step_progress(description: str, enabled: bool = True) -> Iterator[Callable[[int, int], None]]:
    """A callback ``(done_steps, total_steps)`` drawing a bar while the block runs."""
    with make_progress(enabled) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
