"""Training a prepared batch (:func:`run_batch`): the engine call, the certificates its ``train``
options ask for (step size, precision: :data:`CERTIFICATES`, docs/math.md §8.10, §8.13) and the
end states of its runs (docs/math.md §9.5-9.6). Preparing a batch is
:mod:`shallowflow.training.batches`."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np
import xarray as xr

from shallowflow.dynamics import EngineOptions, EngineResult, Progress, SaveAt, StopWhen, solve
from shallowflow.runtime.cancel import CancelToken
from shallowflow.runtime.executors import StepCallback
from shallowflow.training import certificates as certificate
from shallowflow.training.batches import (
    BatchInputs,
    RunRef,
    batch_data,
    engine_config,
    prepare_batch,
    to_dataset,
)


def _run_engine(batch: BatchInputs, level: int = 0, progress: StepCallback | None = None,
                cancel: CancelToken | None = None) -> EngineResult:
    """Train the batch at step lr / 2^level, recording at the same flow times. ``progress(done,
    total)`` is called after each compiled segment, where ``cancel`` is checked too."""
    exp = batch.refs[0].experiment
    cfg = engine_config(exp, exp.train.lr / 2**level)
    every = exp.train.dead_check_every  # at the same flow times in a rerun at lr / 2^level
    return solve(
        cfg, batch.net0, batch.inputs, batch.y, saveat=SaveAt(batch.schedule * 2**level),
        stop=StopWhen(loss=batch.stop_loss, grad=batch.stop_grad, seconds=exp.train.max_seconds),
        options=EngineOptions(span=batch.span, skip_dead=exp.train.skip_dead,
                              dead_check_every=None if every is None else every * 2**level),
        keys=batch.keys, log_lambda=batch.log_lambda, progress=Progress(report=progress),
        cancel=cancel)


def run_batch(batch: BatchInputs, progress: StepCallback | None = None,
              cancel: CancelToken | None = None) -> xr.Dataset:
    """Train a prepared batch and return its Dataset, with the certificates its ``train``
    options ask for (:data:`CERTIFICATES`) and its end states. A certificate's reference runs
    depend on the batch alone; those marked ``beside`` run in a thread while the batch trains.
    Everything stops at its next segment once ``cancel`` is cancelled (the caller stops:
    :class:`~shallowflow.runtime.executors.LocalExecutor`); the reruns also stop when the batch
    fails. They report the batch's last position to ``progress``, so the bar shows the batch."""
    reruns = CancelToken(parent=cancel)
    last = [0, 0]  # the batch's last (done, total) steps

    def batch_progress(done: int, total: int) -> None:
        last[:] = done, total
        if progress is not None:
            progress(done, total)

    def rerun_progress(done: int, total: int) -> None:
        if progress is not None:
            progress(*last)

    with ThreadPoolExecutor(1, thread_name_prefix="shallowflow-certificate") as pool:
        early = [pool.submit(c.reference, batch, rerun_progress, reruns) if c.beside else None
                 for c in CERTIFICATES]
        try:
            result = _run_engine(batch, 0, batch_progress, cancel)
        except BaseException:  # a failure or an interrupt: the reruns stop at their next segment
            reruns.cancel()
            raise
        ds = to_dataset(batch, result)
        for c, future in zip(CERTIFICATES, early, strict=True):
            reference = (c.reference(batch, rerun_progress, reruns) if future is None
                         else future.result())
            ds = c.attach(ds, batch, result, reference)
    return attach_end_states(ds, batch)


def attach_end_states(ds: xr.Dataset, batch: BatchInputs) -> xr.Dataset:
    """Polish (``train.polish``) and judge (``train.end_state``) each run's end point
    (:func:`shallowflow.stationary.end_states`, docs/math.md §9.5-9.6): adds
    ``a_polished``, ``W_polished``, ``end_polish_*`` and the verdict ``end_label``,
    ``end_reason``, ``end_*`` numbers. A no-op when neither is asked for."""
    train = batch.refs[0].experiment.train
    if train.polish == "none" and not train.end_state:
        return ds
    from shallowflow.stationary import end_states  # scipy: only when asked for

    if batch.population is not None:  # exact population derivatives (docs/math.md §11.3)
        from shallowflow.stationary.population_state import population_end_states

        end = population_end_states(ds.merge(batch_data(batch)))  # the teacher beside the runs
    else:
        end = end_states(ds, batch.X, batch.y,
                         polish_method=None if train.polish == "none" else train.polish,
                         judge=train.end_state)
    return ds.merge(end, combine_attrs="drop_conflicts")


def step_reruns(batch: BatchInputs, progress: StepCallback | None = None,
                cancel: CancelToken | None = None) -> list[EngineResult] | None:
    """With ``train.step_certificate`` = 1 or 2: the batch rerun at lr/2 (and lr/4), else None."""
    levels = batch.refs[0].experiment.train.step_certificate
    return [_run_engine(batch, k, progress, cancel) for k in range(1, levels + 1)] if levels else None


def step_certificate(ds: xr.Dataset, batch: BatchInputs, result: EngineResult,
                     reruns: list[EngineResult] | None) -> xr.Dataset:
    """Attach the step-size certificate (:mod:`shallowflow.training.certificates`, docs/math.md §8.10)
    from the batch's ``result`` and its :func:`step_reruns` (None: not asked for)."""
    if reruns is None:
        return ds
    levels = len(reruns)
    runs = [result, *reruns]
    abs_d, rel_d, by_probe = [], [], []
    for coarse, fine in itertools.pairwise(runs):
        a, r, per = certificate.distances(coarse.records, fine.records)
        abs_d.append(a)
        rel_d.append(r)
        by_probe.append(per)
    names = list(by_probe[0])
    tol = batch.refs[0].experiment.train.step_certificate_tol
    rel = np.stack(rel_d, axis=1)
    ds = ds.assign_coords(refinement=[f"lr/{2**k} vs lr/{2**(k + 1)}" for k in range(levels)],
                          certified_probe=names)
    ds["step_certificate_abs"] = (("run", "refinement"), np.stack(abs_d, axis=1))
    ds["step_certificate_rel"] = (("run", "refinement"), rel)
    ds["step_certificate_rel_by_probe"] = (
        ("run", "refinement", "certified_probe"),
        np.stack([np.stack([p[n] for n in names], axis=1) for p in by_probe], axis=1))
    ds.attrs["step_certificate"] = certificate.verdict(rel, tol)  # RunAttrs.step_certificate
    if tol is not None:
        ds["step_certified"] = ("run", rel[:, 0] <= tol)
    return ds


def precision_reruns(batch: BatchInputs, progress: StepCallback | None = None,
                     cancel: CancelToken | None = None) -> EngineResult | None:
    """With ``train.precision_certificate`` = k (a float32 batch): its first k runs trained in
    float64, from the float64 data and networks the batch was rounded from; else None."""
    k = min(batch.refs[0].experiment.train.precision_certificate, len(batch.refs))
    if not k:
        return None
    refs = [RunRef(r.experiment.with_train(dtype="float64", precision_certificate=0,
                                           precision_certificate_tol=None, step_certificate=0,
                                           step_certificate_tol=None), r.index)
            for r in batch.refs[:k]]  # each run its own experiment: seeds, scales may differ
    return _run_engine(prepare_batch(refs, batch.drawn), 0, progress, cancel)


def precision_certificate(ds: xr.Dataset, batch: BatchInputs, result: EngineResult,
                      reference: EngineResult | None) -> xr.Dataset:
    """Attach, per run, ``precision_abs``, ``precision_rel`` and ``precision_rel_by_probe``: the
    distances of the float32 records to the float64 ``reference`` (:func:`precision_reruns`;
    None: not asked for) of the first k runs, NaN for the others (the verdict over all batches
    of an experiment: :func:`shallowflow.training.certificates.precision_verdict`; docs/math.md §8.13)."""
    if reference is None:
        return ds
    k = reference.initial.a.shape[0]  # the runs rerun
    sampled = {name: values[:k] for name, values in result.records.items()}
    abs_k, rel_k, by_probe = certificate.distances(sampled, reference.records)
    R, names = len(batch.refs), list(by_probe)

    def padded(values: np.ndarray) -> np.ndarray:  # NaN for the runs not rerun
        return np.concatenate([values, np.full((R - k, *values.shape[1:]), np.nan)])

    ds = ds.assign_coords(certified_probe=names)
    ds["precision_abs"] = ("run", padded(abs_k))
    ds["precision_rel"] = ("run", padded(rel_k))
    ds["precision_rel_by_probe"] = (("run", "certified_probe"),
                                    padded(np.stack([by_probe[n] for n in names], axis=1)))
    return ds


class Certificate(NamedTuple):
    """A certificate of a trained batch: ``reference(batch, progress, cancel)``, the reruns it
    compares the batch with (a function of the batch alone; None where its ``train`` option is
    off; ``progress`` is their step callback, ``cancel`` their token), and ``attach(ds, batch,
    result, reference)``.
    ``beside``: the reference runs in a thread while the batch trains (a few runs beside a
    batch's many), else after it (a whole batch again)."""

    reference: Callable[[BatchInputs, StepCallback | None, CancelToken | None], Any]
    attach: Callable[[xr.Dataset, BatchInputs, EngineResult, Any], xr.Dataset]
    beside: bool


CERTIFICATES: tuple[Certificate, ...] = (
    Certificate(step_reruns, step_certificate, beside=False),
    Certificate(precision_reruns, precision_certificate, beside=True))
"""What :func:`run_batch` attaches to a trained batch, each a no-op unless its ``train`` options
ask for it."""
