"""A request to stop work that runs in other threads: the executors hand one to every batch
(:mod:`shallowflow.runtime.executors`), the training pipeline passes it down, and the engine checks
it after each compiled segment (:func:`shallowflow.dynamics.solve`)."""

from __future__ import annotations

import threading

from shallowflow.errors import Cancelled


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
