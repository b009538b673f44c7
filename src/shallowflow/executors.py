"""Where batches run: the executor seam of the training entry point (docs/architecture.md,
"Training").

An executor takes a task ``task(batch, progress) -> result`` and a list of batches and yields
``(batch, result)`` as batches finish. ``progress`` is a step callback ``(done, total)`` for
in-process executors and ``None`` where the work runs elsewhere. The task must be picklable for
executors that ship it to other processes (a module-level function or a ``functools.partial`` of
one).

- ``local``: in this process, one batch after another, each with its own step progress bar;
- ``dask``: on a dask.distributed cluster (``address``) or on a local one-worker cluster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from shallowflow.errors import UserError
from shallowflow.progress import Bar

B = TypeVar("B")
R = TypeVar("R")
StepCallback = Callable[[int, int], None]


class Executor(Protocol):
    """Runs ``task`` on every batch and yields ``(batch, result)`` in completion order."""

    name: str

    def check(self) -> None:
        """Raise a :class:`~shallowflow.errors.UserError` if the executor cannot work (e.g. its
        cluster is unreachable); called before any output is written."""
        ...

    def run(self, task: Callable[[B, StepCallback | None], R], batches: Sequence[B],
            bar: Bar, describe: Callable[[B], str]) -> Iterator[tuple[B, R]]: ...


class LocalExecutor:
    """Batches run here, in order; each gets a step progress task on ``bar``."""

    name = "local"

    def check(self) -> None:
        """Always usable."""

    def run(self, task: Callable[[B, StepCallback | None], R], batches: Sequence[B],
            bar: Bar, describe: Callable[[B], str]) -> Iterator[tuple[B, R]]:
        for batch in batches:
            inner = bar.add_task(describe(batch), total=None)
            result = task(batch, lambda d, t, inner=inner: bar.update(inner, completed=d, total=t))
            bar.remove_task(inner)
            yield batch, result


class DaskExecutor:
    """Batches run on a dask.distributed cluster at ``address`` (or a local one-worker
    cluster when ``address`` is None); results come back as batches finish."""

    name = "dask"

    connect_timeout = 10.0  # seconds a scheduler has to answer :meth:`check`

    def __init__(self, address: str | None = None) -> None:
        self.address = address

    def check(self) -> None:
        """dask.distributed is installed and, with an address, a Dask scheduler answers there
        within ``connect_timeout`` seconds (whatever fails, e.g. a port that speaks another protocol,
        becomes one error line naming the address)."""
        try:
            from dask.distributed import Client
        except ImportError:  # pragma: no cover
            raise UserError("--executor: 'dask' needs `pip install shallowflow[dask]`") from None
        if self.address is None:
            return
        try:
            client = Client(self.address, timeout=self.connect_timeout, set_as_default=False)
        except Exception as err:  # any failure to connect is the address's
            detail = " ".join(f"{type(err).__name__}: {err}".split())[:200]
            raise UserError(f"--address: no Dask scheduler answered at {self.address!r} within "
                            f"{self.connect_timeout:g} s ({detail}); allowed: the address of a running "
                            "scheduler, e.g. tcp://127.0.0.1:8786") from None
        client.close()

    def run(self, task: Callable[[B, StepCallback | None], R], batches: Sequence[B],
            bar: Bar, describe: Callable[[B], str]) -> Iterator[tuple[B, R]]:
        try:
            from dask.distributed import Client, LocalCluster, as_completed
        except ImportError as err:  # pragma: no cover
            raise ValueError("executor: 'dask' needs `pip install shallowflow[dask]`") from err
        cluster = None
        if self.address is None:
            cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                   dashboard_address=None)
            client = Client(cluster)
        else:
            client = Client(self.address)
        try:
            futures = {client.submit(task, b, None, pure=False): b for b in batches}
            for fut in as_completed(futures):
                yield futures[fut], fut.result()
        finally:
            client.close()
            if cluster is not None:
                cluster.close()


EXECUTORS: dict[str, Callable[..., Any]] = {"local": LocalExecutor, "dask": DaskExecutor}


def make_executor(name: str = "local", address: str | None = None) -> Executor:
    """The executor called ``name`` (see :data:`EXECUTORS`); ``address`` is for cluster ones."""
    if name not in EXECUTORS:
        raise UserError(f"--executor: must be one of {', '.join(EXECUTORS)}, got {name!r}")
    if name == "local":
        if address is not None:
            raise UserError(f"--address: only for a cluster executor (e.g. dask), not for "
                            f"--executor local (got {address!r})")
        return LocalExecutor()
    return EXECUTORS[name](address)
