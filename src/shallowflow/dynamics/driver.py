"""The driver loop :func:`solve`: prepare a batch, run compiled segments, assemble the result
(docs/math.md §0.3).

The time loop is compiled (:mod:`~shallowflow.dynamics.step`); the host only loops over
segments of record points, for the progress bar, to stop once every run is frozen, and to
re-batch once most runs are frozen (:mod:`~shallowflow.dynamics.rebatch`). The call is asked
what to record (:class:`~shallowflow.dynamics.options.SaveAt`), when a run ends
(:class:`~shallowflow.dynamics.options.StopWhen`) and how to run
(:class:`~shallowflow.dynamics.options.EngineOptions`), and is given a progress meter and a
cancellation token (:mod:`~shallowflow.dynamics.control`). Compiled-in settings
(:class:`~shallowflow.dynamics.engine_config.EngineConfig`): ``parametrisation``
(:mod:`~shallowflow.dynamics.parametrisation`; "lognorm" for tiny initialisations),
``activity_mask`` (:mod:`~shallowflow.dynamics.step`) and ``onedim``: inputs (x, 1) sorted once,
for the exact bucketed step of :mod:`shallowflow.model.onedim` (docs/math.md §10); the option
``span`` simulates in an orthonormal basis of the data span (:mod:`~shallowflow.dynamics.span`),
with the diagonal fast path for orthogonal data.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, replace

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from shallowflow.dynamics import live
from shallowflow.dynamics import rebatch as rb
from shallowflow.dynamics.compilation import core_slots, prepared, segment, shards
from shallowflow.dynamics.control import CancelToken, Progress
from shallowflow.dynamics.engine_config import EngineConfig
from shallowflow.dynamics.options import EngineOptions, SaveAt, StopWhen
from shallowflow.dynamics.parametrisation import Coordinates, log_shift
from shallowflow.dynamics.probes import CLASSES, PERP_GRAM
from shallowflow.dynamics.span import project, restore, span_of
from shallowflow.dynamics.state import (
    RUNNING,
    STOPPED,
    EngineState,
    Reference,
    Stop,
    run_axis,
    status_arrays,
    time_out,
)
from shallowflow.dynamics.step import live_neurons, probe_context
from shallowflow.errors import Cancelled
from shallowflow.model.inputs import (
    DiagonalInputs,
    Inputs,
    OneDimInputs,
    PerRunInputs,
    PopulationInputs,
    SharedInputs,
)
from shallowflow.model.network import Network, to_engine_layout


@dataclass
class EngineResult:
    """Host-side result of :func:`solve`: parameters, status and probe records."""

    initial: Network  # a (R, p), W (R, p, d)
    final: Network
    status: dict[str, np.ndarray]
    records: dict[str, np.ndarray]  # name -> (run, record, *dims)
    steps: np.ndarray  # (record,)
    log_final: dict[str, np.ndarray] | None = None  # log_norm, log_abs_a (R, p) at the end
    widths: list[int] | None = None  # neurons stepped per run in each segment (dynamics.live)


_live_neurons = jax.jit(live_neurons, static_argnums=0)


def _chunks(targets: np.ndarray, ends: np.ndarray, per_call: int,
            min_steps: int) -> list[slice]:
    """Split the segment targets into segments of at most ``per_call`` targets, closing a
    segment early once it spans ``min_steps`` steps (so long runs report progress regularly)
    and after every target where ``ends`` holds (a dead-neuron check step)."""
    chunks, start, prev = [], 0, 0
    for i, s in enumerate(targets):
        if i - start + 1 >= per_call or s - prev >= min_steps or ends[i]:
            chunks.append(slice(start, i + 1))
            start, prev = i + 1, s
    if start < len(targets):
        chunks.append(slice(start, len(targets)))
    return chunks


def _targets(schedule: np.ndarray, options: EngineOptions, R: int, n: int,
             p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The steps the segments advance to: the record points and the dead-neuron check steps
    (:func:`~shallowflow.dynamics.live.check_steps`) where looking could pay (``live.worth``
    at the full width); (targets, measured: a record point, ends: a check step)."""
    total = int(schedule[-1])
    checks = live.check_steps(total, options.dead_check_every)
    checks = np.array([c for c in checks.tolist()
                       if live.worth(options.skip_dead, R, n, total - c, p, 1)], np.int64)
    targets = np.union1d(schedule, checks)
    return targets, np.isin(targets, schedule), np.isin(targets, checks)


def as_inputs(X: Array | np.ndarray | Inputs) -> Inputs:
    """Wrap data: X (n, d) shared, X (R, n, d) per run, or an Inputs object as is."""
    if isinstance(X, (SharedInputs, PerRunInputs, DiagonalInputs, OneDimInputs, PopulationInputs)):
        return X
    X = X if isinstance(X, np.ndarray) else jnp.asarray(X)
    if X.ndim == 2:
        return SharedInputs.of(X)
    if X.ndim == 3:
        return PerRunInputs(to_device(X))
    raise ValueError(f"X: must be (n, d) or (R, n, d), got shape {X.shape}")


def _class_constants(inputs: Inputs, y: Array, R: int) -> tuple[Array, Array]:
    """The class directions x_+ = sum_{y_i > 0} x_i and x_- = sum_{y_i < 0} x_i in the engine
    basis, (d, R, 2), and sign(y_i) in the canonical sample order, (n, R, 1) (docs/math.md §4.2).
    One contraction ``inputs.post`` with the class indicators (in the span basis x_+ is Q^T x_+,
    exactly the in-span coordinates: x_+ lies in the span)."""
    sign = jnp.sign(y)
    canonical = (sign[:, None] if y.ndim == 1 else sign.T)[:, :, None]  # (n, 1 or R, 1)
    if isinstance(inputs, OneDimInputs):  # its data as given: (n, 2) or (R, n, 2)
        inputs = as_inputs(inputs.X)
    width = R if y.ndim == 2 or isinstance(inputs, PerRunInputs) else 1
    indicators = jnp.broadcast_to(
        jnp.concatenate([canonical > 0, canonical < 0], axis=2).astype(y.dtype),
        (inputs.n, width, 2))
    dirs = inputs.post(inputs.native(indicators))
    return (jnp.broadcast_to(dirs, (dirs.shape[0], R, 2)),
            jnp.broadcast_to(canonical, (inputs.n, R, 1)))


def _initial_state(cfg: EngineConfig, a0: Array, Wt0: Array, log_lambda: Array | None,
                   log_perp_sq: Array, inputs: Inputs, y: Array,
                   perp_gram: Array | None) -> tuple[EngineState, Reference]:
    """Engine state and reference constants from a unit-scale (or actual) network; the
    out-of-span norms in actual units: log ||w_perp||^2 + 2 log lambda. The constants only some
    probes read (``cfg.needs``) are set when a recorded probe needs them: the class directions
    and label signs, and ``perp_gram``, the Gram matrix (p, R, p) of the out-of-span parts
    (actual units; None without the span basis)."""
    R, p = a0.shape
    params, ref = _start(cfg, a0, Wt0, log_lambda, log_perp_sq)
    mask = to_device(np.ones((inputs.n, R, p), bool)) if cfg.activity_mask else None
    state = EngineState(params, to_device(np.full((R,), RUNNING, np.int32)),
                        to_device(np.full((R,), -1, np.int64)), mask, params)
    if CLASSES in cfg.needs:
        class_dirs, label_sign = _class_constants(inputs, y, R)
        ref = ref._replace(class_dirs=class_dirs, label_sign=label_sign)
    if PERP_GRAM in cfg.needs and perp_gram is not None:
        ref = ref._replace(perp_gram=perp_gram)
    return state, ref


@functools.partial(jax.jit, static_argnums=0)
def _start(cfg: EngineConfig, a0: Array, Wt0: Array, log_lambda: Array | None,
           log_perp_sq: Array) -> tuple[Coordinates, Reference]:
    """The engine's parameters and the out-of-span reference at t = 0, in one compiled call
    (its dozens of small operations would each be a compilation of its own, run one by one);
    its shapes are the network's, so batches that differ only in n share it."""
    params = cfg.coordinates.initial(a0, Wt0, log_lambda, cfg.tied_balance)
    log_perp = log_perp_sq + 2 * log_shift(a0, log_lambda)[:, None]
    return params, Reference(jnp.exp(log_perp), log_perp, params)


_probe_context = jax.jit(probe_context, static_argnums=0)


def to_device(x: Array | np.ndarray, dtype: np.dtype | str | None = None) -> Array:
    """``x`` as a device array of ``dtype``. A host array is converted on the host and copied
    (``jax.device_put``): ``jnp.asarray`` of a host array compiles an identity program per new
    shape and dtype, 5-20 ms each, most of a short run's set-up after the imports."""
    if isinstance(x, jax.Array):
        return x if dtype is None or x.dtype == dtype else x.astype(dtype)
    return jax.device_put(np.asarray(x, dtype))


def _run_segments(cfg: EngineConfig, state: EngineState, ref: Reference, inputs: Inputs, y: Array,
                  stop: Stop, keys: Array, schedule: np.ndarray, options: EngineOptions,
                  deadline: float | None, progress: Progress, cancel: CancelToken,
                  ) -> tuple[EngineState, Reference, dict[str, np.ndarray], list[int]]:
    """The host loop over compiled segments of ``options.records_per_call`` records; returns the
    final state, records (R, S, ...) and the neurons stepped per run in each segment. Past
    ``deadline`` (``time.perf_counter()`` seconds) the running runs end at the last record step
    ("time"), and their remaining records are copies of it, as for any frozen run.
    ``options.skip_dead``: before each segment, let the dead neurons leave the step loop
    (:func:`shallowflow.dynamics.live.choose`); segments also end at the check steps
    (:func:`_targets`), where nothing is recorded, stopped or compacted. Time spent waiting for a core slot
    (:func:`~shallowflow.dynamics.compilation.core_slots`) does not count against ``deadline``.
    After each segment ``cancel`` is checked, then ``progress`` advanced (it was started)."""
    R = stop.loss.shape[0]
    p = int(np.shape(ref.perp_sq)[1])
    inputs = prepared(inputs, R, p)  # per shard: no batch-wide copy of X^T
    total = int(schedule[-1])
    per_call, skip_dead = options.records_per_call, options.skip_dead
    step = to_device(np.int64(0))
    pieces: list[dict[str, np.ndarray]] = []
    done = 0
    # the batch being trained: runs `current` of the full batch (all of them until a compaction)
    current = np.arange(R)
    full_state, full_ref = state, ref
    cur_inputs, cur_y, cur_stop, cur_keys = inputs, y, stop, keys
    last: dict[str, np.ndarray] = {}  # full-batch last record, for runs left out of the batch
    per_run_step = np.inf  # measured seconds per run and step (after the compiling segment)
    waited = 0.0  # seconds waiting for a core slot (other batches' segments): not the budget's
    neurons, width, widths = None, p, []  # the neurons stepped (dynamics.live), all at first

    def reached(steps: int) -> None:
        cancel.check()
        progress.advance(steps - progress.done)

    targets, measured, ends = _targets(schedule, options, R, inputs.n, p)
    for index, cut in enumerate(_chunks(targets, ends, per_call, max(1, total // 50))):
        chunk, flags = targets[cut], measured[cut]
        left = total - int(step)
        # count the live neurons only if even the narrowest width could pay
        if live.worth(skip_dead, len(current), cur_inputs.n, left, width, 1):
            idx = live.choose(np.asarray(_live_neurons(cfg, state, cur_inputs, cur_y)), width,
                              left, cur_inputs.n, skip_dead)
            if idx is not None:
                neurons, width = to_device(idx), idx.shape[1]
        widths.append(width)
        padded = np.concatenate([chunk, np.full(per_call - len(chunk), chunk[-1], np.int64)])
        records = np.concatenate([flags, np.zeros(per_call - len(chunk), bool)])
        first_step, asked = int(step), time.perf_counter()
        # one compiled segment per core at a time, whatever the batches; a shard's first segment,
        # which compiles its program, runs beside them (compiling takes one core)
        with contextlib.nullcontext() if index == 0 else core_slots():
            t0 = time.perf_counter()
            waited += t0 - asked
            step, state, rec = segment(cfg, step, state, to_device(padded),
                                       to_device(np.int64(len(chunk))), to_device(records),
                                       cur_inputs, cur_y, cur_stop, cur_keys, ref, neurons)
            part = {k: np.asarray(v)[: len(chunk)][flags] for k, v in rec.items()}
        if index > 0 and int(chunk[-1]) > first_step:
            per_run_step = (time.perf_counter() - t0) / ((int(chunk[-1]) - first_step) * len(current))
        if flags.any():
            if len(current) < R:
                part = rb.widen(part, last, current)
            pieces.append(part)
            last = {k: v[-1] for k, v in part.items()}
            done += int(flags.sum())
        reached(int(chunk[-1]))
        if not flags[-1]:  # a check step between records: the runs go on to the next record
            continue
        if deadline is not None and done < len(schedule) and time.perf_counter() - waited > deadline:
            state = time_out(state, int(chunk[-1]))
        code = np.asarray(state.code)
        if np.all(code != RUNNING) and done < len(schedule):
            # every run is frozen: the remaining records are exact copies of the last one
            rest = len(schedule) - done
            pieces.append({k: np.repeat(v[None], rest, axis=0) for k, v in last.items()})
            reached(total)
            break
        saving = per_run_step * (total - int(chunk[-1]))
        keep = rb.compaction(code, current, rb.REBATCH_MULTIPLE, saving) if options.rebatch else None
        if keep is not None and done < len(schedule):
            full_state = rb.put_runs(full_state, state, current)
            current = current[keep]
            state, ref = rb.take_runs(state, keep), rb.take_runs(full_ref, current)
            cur_inputs, cur_y = inputs.take_runs(current), y[current] if y.ndim == 2 else y
            cur_stop, cur_keys = rb.take_runs(stop, current), keys[current]
            neurons = None if neurons is None else neurons[keep]
    if len(current) < R:
        state, ref = rb.put_runs(full_state, state, current), full_ref
    return state, ref, {k: np.moveaxis(np.concatenate([p[k] for p in pieces]), 0, 1)
                        for k in pieces[0]}, widths


def _run_sharded(parts: list[np.ndarray], cfg: EngineConfig, state: EngineState, ref: Reference,
                 inputs: Inputs, y: Array, stop: Stop, keys: Array, schedule: np.ndarray,
                 options: EngineOptions, deadline: float | None, progress: Progress,
                 cancel: CancelToken) -> tuple[EngineState, dict[str, np.ndarray], list[int]]:
    """:func:`_run_segments` for each shard of runs (:func:`~shallowflow.dynamics.compilation.
    shards`) in a thread of its own, side by side; runs are independent, so each run's result is
    the one it gets in the whole batch. A shard's padding runs (repeated indices) start frozen
    and are dropped. ``progress`` (started) follows the slowest shard; once a shard fails, or the
    caller is interrupted or cancels, the others stop at their next segment."""
    if len(parts) == 1 and len(parts[0]) == stop.loss.shape[0]:  # the batch as it is
        state, _, records, widths = _run_segments(cfg, state, ref, inputs, y, stop, keys,
                                                  schedule, options, deadline, progress, cancel)
        return state, records, widths
    lock, shards_cancel = threading.Lock(), CancelToken(parent=cancel)
    done = [0] * len(parts)

    def meter(k: int) -> Progress:
        def step_done(steps: int, total: int) -> None:
            with lock:
                done[k] = steps
                progress.advance(min(done) - progress.done)
        return Progress(step_done, progress.total)

    # shards are cut and joined on the host: device gathers would compile a program per leaf
    host = jax.tree_util.tree_map(np.asarray, (state, ref, stop, keys, y, inputs))
    keep = [len(np.unique(idx)) for idx in parts]  # a shard's own runs; the rest is padding

    def take(tree, idx: np.ndarray):
        return jax.tree_util.tree_map(lambda x: to_device(np.take(x, idx, axis=run_axis(x))),
                                      tree)

    def run(k: int, idx: np.ndarray):
        st, rf, sp, kk, yy, inp = host
        code = np.where(np.arange(len(idx)) < keep[k], st.code[idx], STOPPED)  # padding: frozen
        st = take(st._replace(code=None), idx)._replace(code=to_device(code))
        try:
            return _run_segments(cfg, st, take(rf, idx), jax.tree_util.tree_map(
                to_device, inp.take_runs(idx)), to_device(yy[idx] if yy.ndim == 2 else yy),
                take(sp, idx), to_device(kk[idx]), schedule, options, deadline, meter(k),
                shards_cancel)
        except BaseException:
            shards_cancel.cancel()
            raise

    pool = ThreadPoolExecutor(len(parts), thread_name_prefix="shallowflow-shard")
    futures = [pool.submit(run, k, idx) for k, idx in enumerate(parts)]
    try:
        wait(futures)
    except BaseException:
        shards_cancel.cancel()  # an interrupt: the shards stop at their next segment
        raise
    finally:
        pool.shutdown(wait=True)
    errors = [e for f in futures if (e := f.exception()) and not isinstance(e, Cancelled)]
    if errors:  # the failure that stopped the other shards
        raise errors[0]
    results = [f.result() for f in futures]  # re-raises a stop that came from the caller

    def merge(*leaves: Array) -> Array:
        ax = run_axis(leaves[0])
        return to_device(np.concatenate([np.asarray(x).take(np.arange(m), axis=ax)
                                         for x, m in zip(leaves, keep, strict=True)], axis=ax))

    state = jax.tree_util.tree_map(merge, *[r[0] for r in results])
    records = {name: np.concatenate([r[2][name][:m] for r, m in zip(results, keep, strict=True)])
               for name in results[0][2]}
    widths = [max(w) for w in itertools.zip_longest(*[r[3] for r in results], fillvalue=0)]
    return state, records, widths


def solve(
    cfg: EngineConfig,
    net0: Network,
    X: Array | np.ndarray | Inputs,
    y: Array | np.ndarray,
    *,
    saveat: SaveAt,
    stop: StopWhen = StopWhen(),
    options: EngineOptions = EngineOptions(),
    keys: Array | None = None,
    log_lambda: Array | np.ndarray | None = None,
    progress: Progress | None = None,
    cancel: CancelToken | None = None,
) -> EngineResult:
    """Train the batch of networks ``net0`` (a (R, p), W (R, p, d)) and record probes at
    ``saveat.steps``, until ``saveat.budget`` steps or until ``stop`` ends a run.

    X, y: shared (n, d), (n,); per run (R, n, d), (R, n); or an :mod:`~shallowflow.model.inputs`
    object (with ``options.span``: X must be an array). ``keys`` (R,): per-run keys for SGD
    sampling. ``log_lambda`` (R,): the trained network is exp(log_lambda) * net0 (so
    lambda = exp(-1000) is expressible; required scale information for the lognorm
    parametrisation, else lambda = 1). ``progress`` is started with the step budget and advanced
    after each compiled segment (from the shards' threads: for the slowest shard); ``cancel`` is
    checked there, raising :class:`~shallowflow.errors.Cancelled` once it is cancelled.
    """
    deadline = None if stop.seconds is None else time.perf_counter() + stop.seconds
    schedule = saveat.schedule
    R = net0.a.shape[0]
    dtype = net0.W.dtype
    never = np.full((R,), -np.inf, dtype)  # set up in numpy: no compilation per shape
    grad = never if stop.grad is None else np.asarray(stop.grad, dtype)
    with np.errstate(invalid="ignore"):  # -inf (never) must stay -inf
        grad_sq = np.where(grad > 0, grad * grad, -np.inf).astype(dtype)
    thresholds = Stop(to_device(never if stop.loss is None else np.asarray(stop.loss, dtype)),
                      to_device(grad_sq))
    keys = jax.random.split(jax.random.PRNGKey(0), R) if keys is None else keys
    W0 = np.asarray(net0.W)
    if cfg.onedim and options.span:
        raise ValueError("onedim: not with span (inputs (x, 1) are already their own basis)")
    if isinstance(X, PopulationInputs) and (options.span or cfg.onedim or cfg.activity_mask):
        raise ValueError("population: not with span, onedim or activity_mask (it has no samples)")
    in_span = span_of(np.asarray(X)) if options.span else None
    if in_span is not None:
        Wr, W_perp = project(W0.astype(np.float64), in_span.basis)
        inputs_raw: Inputs | Array | np.ndarray = in_span.inputs
        W_engine = Wr.astype(dtype)
    else:
        inputs_raw, W_engine, W_perp = X, W0, np.zeros_like(W0)
    if isinstance(inputs_raw, OneDimInputs) and not cfg.onedim:
        raise ValueError("onedim: OneDimInputs need EngineConfig(onedim=True)")
    if cfg.onedim:
        raw = inputs_raw.X if isinstance(inputs_raw, (SharedInputs, PerRunInputs,
                                                      OneDimInputs)) else inputs_raw
        if isinstance(inputs_raw, DiagonalInputs):
            raise ValueError("onedim: needs inputs (x_i, 1) as an array, not diagonal inputs")
        inputs: Inputs = OneDimInputs.of(to_device(raw, dtype))
    else:
        host = np.asarray(inputs_raw, dtype) if isinstance(inputs_raw, np.ndarray) else inputs_raw
        inputs = jax.tree_util.tree_map(lambda v: to_device(v, dtype), as_inputs(host))
    y = to_device(y, dtype)
    a0, Wt0 = (to_device(v, dtype)
               for v in to_engine_layout(Network(np.asarray(net0.a), np.asarray(W_engine))))
    with np.errstate(divide="ignore"):
        log_perp_sq = to_device(np.log(np.sum(W_perp.astype(np.float64) ** 2, axis=2)), dtype)
    ls = None if log_lambda is None else to_device(log_lambda, dtype)
    if log_lambda is not None:  # the out-of-span part in actual units (0 once it underflows)
        W_perp = W_perp * np.exp(np.asarray(log_lambda, np.float64))[:, None, None]
    perp_gram = None
    if in_span is not None and PERP_GRAM in cfg.needs:
        W64 = W_perp.astype(np.float64)
        perp_gram = to_device(np.matmul(W64, W64.transpose(0, 2, 1)).transpose(1, 0, 2), dtype)
    state, ref = _initial_state(cfg, a0, Wt0, ls, log_perp_sq, inputs, y, perp_gram)
    start = _probe_context(cfg, state.params, None, ref)
    run = replace(options, records_per_call=max(1, min(options.records_per_call, len(schedule))))
    if not (cfg.coordinates.dead_stay_put and cfg.activation.leak == 0) or isinstance(
            inputs, PopulationInputs):  # on the population no non-zero neuron is dead
        run = replace(run, skip_dead="off")
    parts = shards(inputs, R, options.threads, net0.a.shape[1])
    progress = Progress() if progress is None else progress
    progress.start(saveat.budget)
    state, records, widths = _run_sharded(parts, cfg, state, ref, inputs, y, thresholds, keys,
                                          schedule, run, deadline, progress,
                                          CancelToken() if cancel is None else cancel)
    end = _probe_context(cfg, state.params, None, ref)

    def full_W(Wt: Array) -> np.ndarray:
        W = np.asarray(Wt).transpose(1, 2, 0)
        if in_span is None:
            return W
        return restore(W.astype(np.float64), in_span.basis, W_perp).astype(W.dtype)

    if in_span is not None and "W" in records:
        records["W"] = restore(records["W"].astype(np.float64), in_span.basis, W_perp)
    log_final = None
    if cfg.coordinates.log_final:
        log_final = {"log_norm": np.asarray(end.log_norm), "log_abs_a": np.asarray(end.log_abs_a)}
    status = status_arrays(np.asarray(state.code), np.asarray(state.event_step), saveat.budget)
    return EngineResult(
        Network(np.asarray(start.a), full_W(start.Wt)), Network(np.asarray(end.a), full_W(end.Wt)),
        status, records, schedule, log_final, widths)
