"""The one training entry point: ``train(experiments) -> one Dataset per experiment``.

Every path that trains networks (``shallowflow run``, the demo, sweeps, reproductions) goes
through :func:`plan` and :func:`execute` (docs/architecture.md, "Training"):

1. :func:`plan` groups the runs of all experiments by their batch signature (specs equal up to
   the batchable fields: seed, run index, init scale, stop loss, data seed, explicit record
   points) and cuts each group into batches of at most ``max_batch`` runs, with a deterministic
   id;
2. :func:`execute` runs a task on every batch through an executor (in-process by default, see
   :mod:`shallowflow.runtime.executors`) behind one progress display (runs done, and steps of each
   batch in flight);
3. :func:`train` does both and hands back, per experiment, the Dataset of its runs (dims
   ``run, time, neuron, ...``; ``run`` counts that experiment's runs from 0), with the training
   data attached on request;
4. :func:`train_chains` drives several :data:`Chain` s, chains of training steps where
   each step depends on the results of the one before (a threshold search), side by side: a
   step's batches go to the executor as soon as the step is known, so no chain waits for
   another. :func:`train` is the one-step case.

A batch's record schedule is the union of its runs' schedules (given as steps, flow times,
linear or geometric spacing in each experiment's ``record`` table); nothing is changed after a
batch is prepared.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import xarray as xr

from shallowflow.config import DIGEST, Experiment
from shallowflow.errors import BatchesFailed, DiskFull, Failure
from shallowflow.output import check_disk
from shallowflow.runtime.cancel import CancelToken
from shallowflow.runtime.executors import Executor, LocalExecutor, StepCallback, Task
from shallowflow.runtime.progress import make_progress
from shallowflow.training.batch_run import run_batch
from shallowflow.training.batch_store import BatchStore
from shallowflow.training.batches import (
    DATA_VARIABLES,
    RunRef,
    batch_data,
    prepare_batch,
    static_signature,
)
from shallowflow.training.certificates import DEFAULT_PRECISION, Precision
from shallowflow.training.preflight import check_memory, estimate, file_size

R = TypeVar("R")


@dataclass(frozen=True)
class Batch:
    """Runs sharing one compiled loop, with a deterministic id (the hash of its members)."""

    id: str
    refs: tuple[RunRef, ...]
    tags: tuple[object, ...] = ()  # one per run: the planner's tags (sweep point, experiment)

    @property
    def size(self) -> int:
        return len(self.refs)


def plan(refs: Sequence[RunRef], max_batch: int = 4096,
         tags: Sequence[object] | None = None) -> list[Batch]:
    """Group ``refs`` by batch signature, in first-appearance order, and cut each group into
    batches of at most ``max_batch`` runs. ``tags`` (one per ref, e.g. a sweep's grid point)
    enter the batch id, so equal runs of different sweep points get different ids."""
    if max_batch < 1:
        raise ValueError(f"max_batch: must be >= 1, got {max_batch}")
    tags = list(tags) if tags is not None else [None] * len(refs)
    # each distinct experiment's signature and spec once: its runs share them (a sweep of 10^5
    # runs has a few specs)
    distinct = {id(ref.experiment): ref.experiment for ref in refs}
    signature = {k: static_signature(e) for k, e in distinct.items()}
    spec = {k: e.model_dump(mode="json", context=DIGEST) for k, e in distinct.items()}
    groups: dict[str, list[int]] = {}
    for i, ref in enumerate(refs):
        groups.setdefault(signature[id(ref.experiment)], []).append(i)

    batches = []
    for g, members in enumerate(groups.values()):
        for start in range(0, len(members), max_batch):
            chunk = members[start : start + max_batch]
            ident = json.dumps([(tags[i], spec[id(refs[i].experiment)], refs[i].index)
                                for i in chunk], sort_keys=True, default=str)
            digest = hashlib.sha1(ident.encode()).hexdigest()[:10]
            batches.append(Batch(f"g{g:03d}-{start // max_batch:04d}-{digest}",
                                 tuple(refs[i] for i in chunk), tuple(tags[i] for i in chunk)))
    return batches


def train_batch(batch: Batch, progress: StepCallback | None = None,
                cancel: CancelToken | None = None, keep_data: bool = False) -> xr.Dataset:
    """Prepare (data, initial networks, keys, record schedule) and train one batch (an executor's
    task: :data:`~shallowflow.runtime.executors.Task`)."""
    prepared = prepare_batch(batch.refs)
    ds = run_batch(prepared, progress, cancel)
    if keep_data:
        ds = ds.merge(batch_data(prepared))
    return ds


def train_batch_file(batch: Batch, progress: StepCallback | None = None,
                     cancel: CancelToken | None = None, *,
                     store: BatchStore, keep_data: bool = False) -> Path:
    """:func:`train_batch`, its Dataset written atomically into ``store``
    (:meth:`BatchStore.write <shallowflow.training.batch_store.BatchStore.write>`); returns the path
    (what comes back from a worker process is a path, not the arrays)."""
    return store.write(batch, train_batch(batch, progress, cancel, keep_data))


def describe(batch: Batch) -> str:
    """A batch named by its key: ``batch <id> (<n> runs)``."""
    return f"batch {batch.id} ({batch.size} runs)"


def execute(task: Task[Batch, R], batches: Sequence[Batch],
            label: str = "", show_progress: bool = True, executor: Executor | None = None,
            done_runs: int = 0, name: Callable[[Batch], str] = describe,
            ) -> Iterator[tuple[Batch, R]]:
    """Run ``task`` on every batch through ``executor`` (in-process by default) behind one
    progress display; yields ``(batch, result)`` as batches finish. ``done_runs``: runs finished
    before (a resumed sweep), counted in the display. ``batches`` may be a list that the caller
    extends while it consumes the results: what it appends before asking for the next result is
    run too (:func:`train_chains`), and counted in the display.

    A batch whose task raises does not stop the others: once every batch has been tried,
    :class:`~shallowflow.errors.BatchesFailed` names each failed batch (``name(batch)``) with
    its error. A full disk (:class:`~shallowflow.errors.DiskFull`) stops every batch at once:
    no other batch could be written either, and the batches finished so far are kept."""
    executor = executor or LocalExecutor()
    failed: list[tuple[str, Failure]] = []
    counted, total = 0, done_runs
    with make_progress(show_progress) as bar:
        outer = bar.add_task(f"{label}: runs" if label else "runs", total=total,
                             completed=done_runs)

        def count_new() -> None:
            nonlocal counted, total
            if len(batches) > counted:
                total += sum(b.size for b in batches[counted:])
                counted = len(batches)
                bar.update(outer, total=total)

        count_new()
        for batch, result in executor.run(task, batches, bar, lambda b: f"  {name(b)}"):
            if isinstance(result, Failure) and isinstance(result.error, DiskFull):
                raise result.error from None
            if isinstance(result, Failure):
                failed.append((name(batch), result))
            else:
                bar.advance(outer, batch.size)
                yield batch, result
            count_new()
    if failed:
        raise BatchesFailed(failed, counted - len(failed)) from failed[0][1].error


Chain = Generator[Sequence[Experiment], list[xr.Dataset], Any]
"""A chain of training steps: it yields the experiments it needs trained next, receives their
Datasets (one per experiment, as :func:`train` returns them) and finally returns its result."""


def train(experiments: Experiment | Sequence[Experiment], *, label: str = "",
          show_progress: bool = True, executor: Executor | None = None,
          max_batch: int = 4096, keep_data: bool = False,
          runs: Sequence[int] | None = None, force: bool = False,
          store: Path | None = None, precision: Precision = DEFAULT_PRECISION,
          on_batch: Callable[[xr.Dataset], None] | None = None,
          reserve: float = 0.0) -> list[xr.Dataset]:
    """Train every run of ``experiments`` in as few compiled batches as their signatures allow.

    Returns one Dataset per experiment, in order, holding its runs in run-index order (the
    ``run`` coordinate counts from 0; ``run_index`` and ``seed`` say which run each is). With
    ``keep_data`` each Dataset also holds the training data ``X``, ``y`` (dims ``sample, dim``
    when the runs share one data set, ``run, sample, dim`` otherwise), so no caller re-generates
    it. ``runs``: train only these run indices of every experiment (default: all).

    Before any work the memory the job needs is estimated and compared with what the machine
    has (:func:`shallowflow.training.preflight.check_memory`), and with a ``store`` the free
    space of its folder with the files of the batches it will write
    (:func:`~shallowflow.training.preflight.file_size`,
    :func:`shallowflow.output.check_disk`) and ``reserve`` bytes more (what the caller writes
    after training: a reproduction's figures and report); ``force`` trains anyway.

    ``store``: a folder that keeps each finished batch as ``<batch id>.nc`` (a
    :class:`~shallowflow.training.batch_store.BatchStore`, written atomically where the batch ran); a
    batch whose file is already there is read, not trained again (the id hashes the batch's
    runs and their specs), so an interrupted caller resumes.

    ``precision``: every experiment trained in this precision (default: as given; float32 with
    a float64 rerun of a sample: :class:`~shallowflow.training.certificates.Precision`). ``on_batch``:
    called with each finished batch's Dataset (e.g. to collect its certificates).
    """
    exps = [experiments] if isinstance(experiments, Experiment) else list(experiments)
    return train_chains([_once(exps)], label=label, show_progress=show_progress,
                           executor=executor, max_batch=max_batch, keep_data=keep_data,
                           runs=runs, force=force, store=store, precision=precision,
                           on_batch=on_batch, reserve=reserve)[0]


def _once(experiments: list[Experiment]) -> Chain:
    """The chain of one step: train ``experiments``, return their Datasets."""
    return (yield experiments)


@dataclass
class _Step:
    """A step of chain ``chain`` in training: per experiment, its finished parts
    ``(first run index, Dataset)``, and the number of its batches still out."""

    chain: int
    parts: list[list[tuple[int, xr.Dataset]]]
    waiting: int = 0


def train_chains(chains: Sequence[Chain], *, label: str = "",
                    show_progress: bool = True, executor: Executor | None = None,
                    max_batch: int = 4096, keep_data: bool = False,
                    runs: Sequence[int] | None = None, force: bool = False,
                    store: Path | None = None, precision: Precision = DEFAULT_PRECISION,
                    on_batch: Callable[[xr.Dataset], None] | None = None,
                    reserve: float = 0.0) -> list[Any]:
    """Drive every chain to its end and return their results, in order.

    Each step is trained as :func:`train` would train it alone (the same batches, ids and
    Datasets; ``runs``, ``keep_data``, ``store``, ``reserve``, ``force``, ``precision``, ``on_batch``: as
    there, for every step; the memory and disk checks are made per step), but the batches of all
    chains share one executor run: a step's batches are handed to the executor as soon as
    the step is known, while the other chains' batches run. So independent chains (a
    threshold search per d) never wait for each other, and a step that a chain's results
    decide needs no barrier across chains. A chain's result depends on its own steps
    only, so it is the same whichever executor runs them, and in whatever order batches
    finish."""
    chains = list(chains)
    results: list[Any] = [None] * len(chains)
    pending: list[Batch] = []  # grows while the executor runs: it runs what is appended
    step_of: dict[int, _Step] = {}  # id(batch) -> its step
    stored: list[tuple[Batch, xr.Dataset]] = []  # batches found in the store (a resume)
    saved = None if store is None else BatchStore(store)
    if saved is not None:
        saved.prepare()

    def advance(k: int, datasets: list[xr.Dataset] | None) -> None:
        """Send chain ``k`` its step's Datasets; plan the batches of the step it asks for."""
        try:
            exps = [precision.apply(e) for e in chains[k].send(datasets)]
        except StopIteration as end:
            results[k] = end.value
            return
        chosen = [range(e.runs) if runs is None else [int(r) for r in runs] for e in exps]
        check_memory(estimate([(e, len(rs)) for e, rs in zip(exps, chosen, strict=True)],
                              max_batch, hold=True), force)
        refs = [RunRef(e, r) for e, rs in zip(exps, chosen, strict=True) for r in rs]
        owner = [j for j, rs in enumerate(chosen) for _ in rs]  # tags: the experiment of each run
        step = _Step(k, [[] for _ in exps])
        fresh = []
        for batch in plan(refs, max_batch, owner):
            step_of[id(batch)] = step
            step.waiting += 1
            if saved is not None and saved.holds(batch.id):
                stored.append((batch, saved.read(batch.id)))
            else:
                fresh.append(batch)
        if saved is not None:  # room for the files of the batches still to train
            check_disk(saved.folder, reserve + sum(file_size([r.experiment for r in b.refs])
                                                    for b in fresh), force)
        pending.extend(fresh)
        if not step.waiting:  # nothing to train (no runs): the step is done
            advance(k, [_assemble(p) for p in step.parts])

    def finish(batch: Batch, ds: xr.Dataset) -> None:
        """File a finished batch's runs under its step's experiments; a complete step goes
        back to its chain."""
        step = step_of.pop(id(batch))
        if on_batch is not None:
            on_batch(ds)
        positions: dict[int, list[int]] = {}
        for pos, j in enumerate(batch.tags):
            positions.setdefault(j, []).append(pos)
        for j, pos in positions.items():
            part = ds if len(pos) == ds.sizes["run"] else ds.isel(run=pos)
            step.parts[j].append((batch.refs[pos[0]].index, part))
        step.waiting -= 1
        if not step.waiting:
            advance(step.chain, [_assemble(p) for p in step.parts])

    def drain() -> None:
        while stored:
            finish(*stored.pop())

    for k in range(len(chains)):
        advance(k, None)
    done_runs = sum(b.size for b, _ in stored)  # read back, shown as done (a resume)
    drain()
    if saved is None:
        task = functools.partial(train_batch, keep_data=keep_data)
    else:
        task = functools.partial(train_batch_file, keep_data=keep_data, store=saved)
    for batch, result in execute(task, pending, label, show_progress, executor, done_runs):
        finish(batch, result if saved is None else saved.read(batch.id))
        drain()
    return results


def _assemble(parts: list[tuple[int, xr.Dataset]]) -> xr.Dataset:
    """One experiment's runs from its batches (``(first run index, run-index-ordered block)``,
    in any order), run counted from 0. Data shared by every run is kept once (dims ``sample,
    dim``)."""
    dss = [ds for _, ds in sorted(parts, key=lambda item: item[0])]
    if not dss:
        return xr.Dataset()
    if len(dss) == 1:
        out = dss[0]
    else:
        shared = [v for v in DATA_VARIABLES if v in dss[0] and "run" not in dss[0][v].dims]
        out = xr.concat([d.drop_vars(shared) for d in dss], dim="run",
                        data_vars="minimal", coords="minimal", compat="override",
                        combine_attrs="override")
        if shared:
            out = out.merge(dss[0][shared])
    return out.assign_coords(run=np.arange(out.sizes["run"]))


@dataclass(frozen=True)
class Trainer:
    """What a reproduction's ``simulate`` gets: :func:`train` (calling it) and
    :func:`train_chains` (:meth:`chains`) bound to the caller's progress display,
    executor, ``force``, ``store`` (with the disk ``reserve`` its caller writes after training)
    and ``precision``; their other keyword arguments are passed through. It keeps the precision
    certificates of every batch it trained (``distances``) and the wall seconds of each of its
    calls (``seconds``: what a reproduction's report counts as training, compilation, a resume's
    reading of kept batches and a chain's own work between its steps included)."""

    show_progress: bool = True
    executor: Executor | None = None
    force: bool = False
    store: Path | None = None
    precision: Precision = DEFAULT_PRECISION
    reserve: float = 0.0
    distances: list[np.ndarray] = field(default_factory=list, compare=False)
    """The precision certificates (``precision_rel`` of every finished batch) so far."""
    seconds: list[float] = field(default_factory=list, compare=False)
    """The wall seconds of each call (:meth:`__call__`, :meth:`chains`) so far."""

    def _bound(self) -> dict[str, Any]:
        return {"show_progress": self.show_progress, "executor": self.executor,
                "force": self.force, "store": self.store, "precision": self.precision,
                "on_batch": self._collect, "reserve": self.reserve}

    def _collect(self, ds: xr.Dataset) -> None:
        if "precision_rel" in ds:
            self.distances.append(ds["precision_rel"].values)

    @contextlib.contextmanager
    def _timed(self) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds.append(time.perf_counter() - start)

    def __call__(self, experiments: Experiment | Sequence[Experiment],
                 **options: Any) -> list[xr.Dataset]:
        with self._timed():
            return train(experiments, **self._bound(), **options)

    def chains(self, chains: Sequence[Chain], **options: Any) -> list[Any]:
        with self._timed():
            return train_chains(chains, **self._bound(), **options)


def trainer(show_progress: bool = True, executor: Executor | None = None,
            force: bool = False, store: Path | None = None,
            precision: Precision = DEFAULT_PRECISION, reserve: float = 0.0) -> Trainer:
    """A :class:`Trainer` bound to ``show_progress``, ``executor``, ``force``, ``store``,
    ``precision`` and ``reserve``."""
    return Trainer(show_progress, executor, force, store, precision, reserve)


def simulate(exp: Experiment, runs: Sequence[int] | None = None,
             show_progress: bool = False) -> xr.Dataset:
    """The Dataset of the runs of ``exp`` (all, or the given run indices): :func:`train` for
    one experiment, the library's shortest path from a spec to results."""
    return train(exp, runs=runs, show_progress=show_progress)[0]
