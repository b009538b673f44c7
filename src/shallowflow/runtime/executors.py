"""Where batches run: the executor seam of the training entry point (docs/architecture.md,
"Training").

An executor takes a task ``task(batch, progress, cancel) -> result`` and a list of batches
(which the caller may extend while it consumes the results) and yields ``(batch, result)`` as
batches finish; a batch whose task raised yields a :class:`Failure` as its result (the others go
on). ``progress`` is a step callback ``(done, total)`` for in-process executors and ``None``
where the work runs elsewhere; ``cancel`` is a :class:`~shallowflow.runtime.cancel.CancelToken`
the executor cancels when the caller stops or is interrupted (``None`` where the work runs
elsewhere: a cluster cancels its futures itself). The task must be picklable for executors that
ship it to other processes (a module-level function or a ``functools.partial`` of one).

- ``local``: in this process, two batches at a time (:class:`LocalExecutor`), each with its own
  step progress bar;
- ``dask``: on a dask.distributed cluster (``address``) or on a local cluster of worker
  processes, one per core group (``workers``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Protocol, TypeVar

from shallowflow.errors import Failure, UserError, shown
from shallowflow.machine import available_cores, jax_has_cuda, visible_gpus
from shallowflow.runtime.cancel import CancelToken
from shallowflow.runtime.progress import Bar

B = TypeVar("B")
R = TypeVar("R")
StepCallback = Callable[[int, int], None]
Task = Callable[[B, StepCallback | None, CancelToken | None], R]
"""What an executor runs on each batch: ``task(batch, progress, cancel) -> result``."""


class Executor(Protocol):
    """Runs ``task`` on every batch and yields ``(batch, result)`` in completion order; a task
    that raises an ``Exception`` gives a :class:`Failure` for its batch, and the other batches
    go on (an interruption, ``KeyboardInterrupt``, stops all of them). ``batches`` may grow
    while the results are consumed: batches appended to it before the next result is asked for
    are run too (work that depends on earlier results, :func:`shallowflow.training.entry.train_chains`)."""

    name: str

    def check(self) -> None:
        """Raise a :class:`~shallowflow.errors.UserError` if the executor cannot work (e.g. its
        cluster is unreachable); called before any output is written."""
        ...

    def run(self, task: Task[B, R], batches: Sequence[B],
            bar: Bar, describe: Callable[[B], str]) -> Iterator[tuple[B, R | Failure]]: ...

    def close(self) -> None:
        """Release what the executor started (a local cluster); it may be used again after."""
        ...


IN_FLIGHT = 2
"""Batches the local executor trains at once (:class:`LocalExecutor`)."""


class LocalExecutor:
    """Batches run here, ``in_flight`` at a time (in threads, started in order; results in the
    order they finish), each with its own step progress bar. Their compiled segments take
    turns on the cores (:func:`~shallowflow.dynamics.compilation.core_slots`), so one batch's
    start (data, initial networks, compilation) and end (records, certificates), and the
    imbalance of its last shard, overlap the next batch's training. Runs are independent and
    shards fixed by the shapes, so results do not depend on ``in_flight``. On an interrupt, or
    when the caller stops, the batches in flight stop at their next segment. Batches train in
    the executor's threads: a caller's thread-local JAX settings (``with
    jax.default_device(...)`` and the like) do not reach them; ``jax.config.update`` does."""

    name = "local"

    def __init__(self, in_flight: int = IN_FLIGHT) -> None:
        self.in_flight = max(1, in_flight)

    def check(self) -> None:
        """Always usable."""

    def close(self) -> None:
        """Nothing to release."""

    def run(self, task: Task[B, R], batches: Sequence[B],
            bar: Bar, describe: Callable[[B], str]) -> Iterator[tuple[B, R | Failure]]:
        stop = CancelToken()
        running: dict[Future[R], tuple[int, B, Any]] = {}
        started = 0

        def attempt(batch: B, inner: Any) -> R:
            def progress(done: int, total: int) -> None:
                bar.update(inner, completed=done, total=total)
            return task(batch, progress, stop)

        with ThreadPoolExecutor(self.in_flight, thread_name_prefix="shallowflow-batch") as pool:
            try:
                while True:
                    while len(running) < self.in_flight and started < len(batches):
                        batch = batches[started]
                        inner = bar.add_task(describe(batch), total=None)
                        running[pool.submit(attempt, batch, inner)] = (started, batch, inner)
                        started += 1
                    if not running:
                        return
                    finished, _ = wait(running, return_when=FIRST_COMPLETED)
                    for future in sorted(finished, key=lambda f: running[f][0]):
                        _, batch, inner = running.pop(future)
                        bar.remove_task(inner)
                        error = future.exception()
                        if error is not None and not isinstance(error, Exception):
                            raise error  # an interrupt inside the task
                        yield batch, (Failure.of(error) if error is not None else future.result())
            except BaseException:  # an interrupt, or the caller stopped: the others stop too
                stop.cancel()
                raise


def core_groups(workers: int, cores: Sequence[int] | None = None) -> list[list[int]]:
    """``cores`` (default :func:`available_cores`) split into ``workers`` groups of consecutive
    cores, sizes differing by at most one (a worker per group, so processes x threads = cores).
    More workers than cores share cores round-robin."""
    cores = available_cores() if cores is None else list(cores)
    if workers >= len(cores):
        return [[cores[k % len(cores)]] for k in range(workers)]
    size, extra = divmod(len(cores), workers)
    groups, start = [], 0
    for k in range(workers):
        end = start + size + (k < extra)
        groups.append(cores[start:end])
        start = end
    return groups


def worker_environments(workers: int, gpus: Sequence[str]) -> list[dict[str, str]]:
    """The variables each local worker sets before JAX starts in it: with GPUs, worker k sees one
    device, ``gpus[k % len(gpus)]``, and where workers share a device none pre-allocates most of
    its memory (``XLA_PYTHON_CLIENT_PREALLOCATE=false``); without GPUs, nothing."""
    if not gpus:
        return [{} for _ in range(workers)]
    shared = workers > len(gpus)
    return [{"CUDA_VISIBLE_DEVICES": gpus[k % len(gpus)],
             **({"XLA_PYTHON_CLIENT_PREALLOCATE": "false"} if shared else {})}
            for k in range(workers)]


class DaskExecutor:
    """Batches run on a dask.distributed cluster at ``address``, or on a local cluster of
    ``workers`` processes bound to loopback, each pinned to its own core group and, on a machine
    with GPUs (``gpus``, default :func:`visible_gpus`), given its own device
    (:func:`worker_environments`, :class:`shallowflow.runtime.dask_worker.WorkerSetup`; found when JAX's
    CUDA plugin is installed); by default one worker per GPU, else one per core. Results come
    back as batches finish.
    The cluster is started on first use and kept until :meth:`close` (a reproduction trains
    several times)."""

    name = "dask"

    connect_timeout = 10.0  # seconds a scheduler has to answer :meth:`check`
    worker_timeout = 120.0  # seconds :meth:`check` waits for a scheduler's first worker

    def __init__(self, address: str | None = None, workers: int | None = None,
                 gpus: Sequence[str] | None = None) -> None:
        self.address = address
        self.workers = workers
        self.gpus = gpus
        self._client: Any = None
        self._cluster: Any = None

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
            raise UserError(f"--address: no Dask scheduler answered at {shown(self.address)} within "
                            f"{self.connect_timeout:g} s ({detail}); allowed: the address of a running "
                            "scheduler, e.g. tcp://127.0.0.1:8786") from None
        try:
            if not client.scheduler_info().get("workers"):
                from shallowflow.runtime.progress import console

                console.print(f"[cyan]note:[/] no worker has joined the scheduler at "
                              f"{self.address} yet; waiting up to {self.worker_timeout:g} s for "
                              "one", highlight=False)
                client.wait_for_workers(1, timeout=self.worker_timeout)
        except TimeoutError:
            raise UserError(f"--address: no Dask worker joined the scheduler at "
                            f"{shown(self.address)} within {self.worker_timeout:g} s; start workers "
                            f"first (e.g. dask worker {self.address}), then run the command "
                            "again") from None
        finally:
            client.close()

    def client(self) -> Any:
        """The Dask client, starting the local cluster (or connecting) on first use."""
        if self._client is not None:
            return self._client
        try:
            from dask.distributed import Client, LocalCluster

            from shallowflow.runtime.dask_worker import WorkerSetup
        except ImportError as err:  # pragma: no cover
            raise ValueError("executor: 'dask' needs `pip install shallowflow[dask]`") from err
        if self.address is None:
            import dask

            from shallowflow.runtime.dask_worker import TRIM_VARIABLE

            if self.gpus is not None:
                gpus = list(self.gpus)
            else:
                gpus = visible_gpus() if jax_has_cuda() else []
            workers = self.workers or len(gpus) or len(available_cores())
            # workers spawned without the nanny's malloc trim setting (3x slower XLA with it:
            # shallowflow.runtime.dask_worker.restore_malloc); kept by the nanny for restarts
            with dask.config.set({f"distributed.nanny.pre-spawn-environ.{TRIM_VARIABLE}": None}):
                self._cluster = LocalCluster(n_workers=workers, threads_per_worker=1,
                                             processes=True, host="127.0.0.1",  # loopback only,
                                             dashboard_address="127.0.0.1:0")  # also its HTTP
            self._client = Client(self._cluster)
            self._client.register_plugin(WorkerSetup(core_groups(workers),
                                                     worker_environments(workers, gpus)))
        else:
            self._client = Client(self.address)
            self._client.register_plugin(WorkerSetup(None))
        return self._client

    def run(self, task: Task[B, R], batches: Sequence[B],
            bar: Bar, describe: Callable[[B], str]) -> Iterator[tuple[B, R | Failure]]:
        from dask.distributed import as_completed

        if not batches:  # e.g. a resumed sweep with everything done: no cluster to start
            return
        client = self.client()
        futures: dict[Any, B] = {}
        running = as_completed()

        def submit_new() -> None:  # batches the caller appended since (Executor.run)
            for b in batches[len(futures):]:
                fut = client.submit(task, b, None, None, pure=False)
                futures[fut] = b
                running.add(fut)

        submit_new()
        try:
            for fut in running:
                try:
                    result: R | Failure = fut.result()
                except Exception as err:  # raised on the worker, or the worker died too often
                    result = Failure.of(err)
                yield futures[fut], result
                submit_new()
        finally:
            client.cancel(list(futures))

    def close(self) -> None:
        """Stop the local cluster (or disconnect); the executor may be used again after."""
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()
        self._client = self._cluster = None


EXECUTORS: dict[str, Callable[..., Any]] = {"local": LocalExecutor, "dask": DaskExecutor}


def make_executor(name: str = "local", address: str | None = None,
                  workers: int | None = None) -> Executor:
    """The executor called ``name`` (see :data:`EXECUTORS`); ``address`` (a running scheduler)
    or ``workers`` (processes of a local cluster) are for cluster ones."""
    if name not in EXECUTORS:
        raise UserError(f"--executor: must be one of {', '.join(EXECUTORS)}, got {shown(name)}")
    if workers is not None and workers < 1:
        raise UserError(f"--workers: must be >= 1, got {workers}")
    if name == "local":
        for option, value in (("--address", address), ("--workers", workers)):
            if value is not None:
                raise UserError(f"{option}: only for a cluster executor (e.g. dask), not for "
                                f"--executor local (got {shown(value)})")
        return LocalExecutor()
    if address is not None and workers is not None:
        raise UserError(f"--workers: starts a local cluster; with --address the scheduler's "
                        f"cluster runs the batches (got --workers {workers})")
    return EXECUTORS[name](address, workers)
