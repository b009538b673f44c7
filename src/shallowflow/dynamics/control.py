"""What a caller sees and says while an engine call runs
(:func:`~shallowflow.dynamics.driver.solve`): a :class:`Progress` meter the engine advances
after each compiled segment, and a :class:`CancelToken` it checks there, raising
:class:`~shallowflow.errors.Cancelled` once the token is cancelled."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from shallowflow.errors import Cancelled


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


class CancelToken:
    """A request to stop, shared between threads: :meth:`cancel` sets it, :meth:`check` raises
    :class:`~shallowflow.errors.Cancelled` once it is set. A token made with a ``parent`` is
    also cancelled when its parent is (the shards of one call, cancelled together)."""

    def __init__(self, parent: CancelToken | None = None) -> None:
        self._event = threading.Event()
        self._parent = parent

    def cancel(self) -> None:
        """Ask the work to stop at its next check."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether this token, or its parent, was cancelled."""
        return self._event.is_set() or (self._parent is not None and self._parent.cancelled)

    def check(self) -> None:
        """Raise :class:`~shallowflow.errors.Cancelled` if :attr:`cancelled`."""
        if self.cancelled:
            raise Cancelled
