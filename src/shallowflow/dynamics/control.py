"""What a caller sees and says while an engine call runs
(:func:`~shallowflow.dynamics.driver.solve`): a :class:`Progress` meter the engine advances
after each compiled segment, and a :class:`~shallowflow.runtime.cancel.CancelToken` it checks
there, raising :class:`~shallowflow.errors.Cancelled` once the token is cancelled."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shallowflow.runtime.cancel import CancelToken

__all__ = ["CancelToken", "Progress"]


@dataclass
class Progress:
    """Steps done of ``total``: the engine calls :meth:`start` once, then :meth:`advance` after
    each compiled segment (the batch's slowest shard, from the shards' threads, one at a time).
    ``report(done, total)``, if given, is called after each advance; an exception it raises
    ends the call."""

    report: Callable[[int, int], None] | None = None
    total: int = 0
    done: int = 0

    def start(self, total: int) -> None:
        """Begin a call of ``total`` steps, none done."""
        self.total, self.done = total, 0

    def advance(self, steps: int) -> None:
        """``steps`` more steps are done (0: a report at the same position)."""
        self.done += steps
        if self.report is not None:
            self.report(self.done, self.total)
