"""Progress bars (rich) for long runs: one task per batch, advanced by the engine's callback."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

console = Console(stderr=True)


def make_progress(enabled: bool = True) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TimeRemainingColumn(), console=console,
        disable=not enabled or not sys.stderr.isatty(), transient=False,
    )


@contextlib.contextmanager
def step_progress(description: str, enabled: bool = True) -> Iterator[Callable[[int, int], None]]:
    """A callback ``(done_steps, total_steps)`` drawing a bar while the block runs."""
    with make_progress(enabled) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
