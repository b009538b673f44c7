"""Batched, compiled gradient descent with probes recorded inside the loop (MATH.md §0.3).

One step of run r is

    theta <- theta - eta * T * grad L(theta)          (one step = eta units of flow time)

with full-batch gradients (GD) or an unbiased minibatch estimate (SGD: B samples drawn without
replacement per run and step, sample weights n/B). The R runs are advanced together in the
layout of :mod:`shallowflow.network` (a (R, p), Wt (d, R, p)), so with shared data each step is
two GEMMs over all R p neurons (:mod:`shallowflow.inputs`).

The time loop is compiled: a ``lax.scan`` over record points, each advancing a ``lax.while_loop``
of plain steps to the next record step, then evaluating the probes. The host only loops over
segments of record points (for the progress bar, and to stop once every run is frozen).

Per-run status, updated every step:
- early stop: once L(theta_k) < stop_loss (GD; for SGD tested with the full loss at record points)
  the run freezes and ``stop_step`` = k;
- divergence: if L(theta_k) or the updated parameters are non-finite, the run keeps its last
  finite parameters, is flagged ``diverged`` with ``diverge_step`` = k; its batch goes on.
Frozen runs keep their parameters, so their records after freezing are exact copies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array, lax

from shallowflow.activations import RELU, Activation
from shallowflow.inputs import SMALL, DiagonalInputs, Inputs, PerRunInputs, SharedInputs
from shallowflow.losses import Loss
from shallowflow.network import (
    Network,
    batch_loss_and_gradient,
    from_engine_layout,
    to_engine_layout,
)
from shallowflow.probes import DEFAULT_PROBES, PROBES, ProbeContext


@dataclass(frozen=True)
class EngineConfig:
    """Compile-time settings shared by all runs of a batch (hashable: a static jit argument)."""

    activation: Activation = RELU
    loss: Loss = field(default_factory=Loss)
    kappa: float = 1.0
    lr: float = 0.1
    time_scale: float = 1.0
    train_second_layer: bool = True
    batch_size: int | None = None
    probes: tuple[str, ...] = DEFAULT_PROBES

    def __post_init__(self) -> None:
        unknown = [p for p in self.probes if p not in PROBES]
        if unknown:
            raise ValueError(f"probes: unknown {unknown}; allowed: {', '.join(PROBES)}")
        if not self.lr > 0:
            raise ValueError(f"lr: must be > 0, got {self.lr}")


RUNNING, STOPPED, DIVERGED = 0, 1, 2


class EngineState(NamedTuple):
    a: Array  # (R, p)
    Wt: Array  # (d, R, p)
    code: Array  # (R,) RUNNING, STOPPED or DIVERGED
    event_step: Array  # (R,) step at which the run froze, -1 while running


def _freeze(st: EngineState, stop_now: Array, diverge_now: Array, step: Array):
    """Status after this step's tests: a running run stops or diverges at ``step``."""
    running = st.code == RUNNING
    code = jnp.where(running & stop_now, STOPPED,
                     jnp.where(running & diverge_now, DIVERGED, st.code))
    event = jnp.where(running & (code != RUNNING), step, st.event_step)
    return code, event


def status_arrays(code: np.ndarray, event_step: np.ndarray) -> dict[str, np.ndarray]:
    """The public per-run status: stopped, stop_step, diverged, diverge_step (-1 if none)."""
    stopped, diverged = code == STOPPED, code == DIVERGED
    return {"stopped": stopped, "stop_step": np.where(stopped, event_step, -1),
            "diverged": diverged, "diverge_step": np.where(diverged, event_step, -1)}


@dataclass
class EngineResult:
    """Host-side result of :func:`simulate`: parameters, status and probe records."""

    initial: Network  # a (R, p), W (R, p, d)
    final: Network
    status: dict[str, np.ndarray]
    records: dict[str, np.ndarray]  # name -> (run, record, *dims)
    steps: np.ndarray  # (record,)


def _gradient(cfg: EngineConfig, st: EngineState, inputs: Inputs, y: Array, **kw):
    return batch_loss_and_gradient(st.a, st.Wt, inputs, y, cfg.kappa, cfg.activation, cfg.loss,
                                   **kw)


def _minibatch(cfg: EngineConfig, inputs: Inputs, y: Array, keys: Array, step: Array):
    """Per-run minibatches (without replacement) as PerRunInputs, labels and weight n/B."""
    if isinstance(inputs, DiagonalInputs):
        raise ValueError("batch_size: SGD is not available with diagonal (reduced) inputs")
    n, B = inputs.n, cfg.batch_size
    idx = jax.vmap(lambda k: jax.random.choice(jax.random.fold_in(k, step), n, (B,),
                                               replace=False))(keys)  # (R, B)
    if isinstance(inputs, SharedInputs):
        Xb, yb = inputs.X[idx], y[idx]
    else:
        Xb = jnp.take_along_axis(inputs.X, idx[:, :, None], axis=1)
        yb = jnp.take_along_axis(y, idx, axis=1)
    return PerRunInputs(Xb), yb, n / B


def _step(cfg: EngineConfig, st: EngineState, step: Array, inputs: Inputs, y: Array,
          stop_loss: Array, keys: Array) -> EngineState:
    """One GD/SGD step of all runs, with early stop and divergence handling."""
    if cfg.batch_size is None:
        bg = _gradient(cfg, st, inputs, y)
        below = bg.loss < stop_loss
    else:
        Xb, yb, weight = _minibatch(cfg, inputs, y, keys, step)
        bg = _gradient(cfg, st, Xb, yb, weights=weight)
        below = jnp.zeros_like(bg.loss, dtype=bool)
    rate = cfg.lr * cfg.time_scale
    new_a = st.a - rate * bg.grad_a if cfg.train_second_layer else st.a
    new_Wt = st.Wt - rate * bg.grad_Wt
    # L catches a blow-up long before the parameters overflow; sum_j grad_a_j = kappa sum <w_j, M_j>
    # turns NaN if any back-projection M_j is non-finite (0 * inf = NaN), so it guards the update.
    finite = jnp.isfinite(bg.loss) & jnp.isfinite(jnp.sum(bg.grad_a, axis=1))
    code, event = _freeze(st, below, ~finite, step)
    move = code == RUNNING
    return EngineState(
        jnp.where(move[:, None], new_a, st.a),
        jnp.where(move[None, :, None], new_Wt, st.Wt),
        code, event,
    )


def _record(cfg: EngineConfig, st: EngineState, step: Array, inputs: Inputs, y: Array,
            stop_loss: Array, a0: Array, Wt0: Array) -> tuple[EngineState, dict]:
    """Full-batch probes of all runs (and, for SGD, the early-stop test on the full loss)."""
    bg = _gradient(cfg, st, inputs, y)
    if cfg.batch_size is not None:
        code, event = _freeze(st, bg.loss < stop_loss, jnp.zeros_like(bg.loss, dtype=bool), step)
        st = st._replace(code=code, event_step=event)
    if not cfg.train_second_layer:
        bg = bg._replace(grad_a=jnp.zeros_like(bg.grad_a))
    ctx = ProbeContext(st.a, st.Wt, a0, Wt0, bg, cfg.time_scale, cfg.train_second_layer)
    return st, {name: PROBES[name].fn(ctx) for name in cfg.probes}


def _segment_body(cfg: EngineConfig, step0: Array, state: EngineState, targets: Array, inputs: Inputs,
             y: Array, stop_loss: Array, keys: Array, a0: Array, Wt0: Array):
    """Advance all runs through the record steps ``targets``, measuring at each."""

    def advance(carry, target):
        def body(c):
            step, st = c
            return step + 1, _step(cfg, st, step, inputs, y, stop_loss, keys)

        step, st = lax.while_loop(lambda c: c[0] < target, body, carry)
        st, rec = _record(cfg, st, step, inputs, y, stop_loss, a0, Wt0)
        return (step, st), rec

    (step, state), records = lax.scan(advance, (step0, state), targets)
    return step, state, records


# XLA:CPU hands elementwise work and reductions to the YNNPACK library by default; for the
# unrolled small contractions (d or n <= 4) and diagonal inputs that is 3-7x slower than XLA's own
# loops (bench/RESULTS.md), while for GEMM-bound shapes the default is as fast or faster.
_NO_YNN = {"xla_cpu_experimental_ynn_fusion_type": ""}
_segment_gemm = jax.jit(_segment_body, static_argnums=0)
_segment_elementwise = jax.jit(_segment_body, static_argnums=0, compiler_options=_NO_YNN)
_no_ynn_supported = [jax.default_backend() == "cpu"]


def _is_elementwise(inputs: Inputs) -> bool:
    if isinstance(inputs, DiagonalInputs):
        return True
    n, d = inputs.X.shape[-2:]
    return min(n, d) <= SMALL


def _segment(cfg: EngineConfig, *args):
    """Run a compiled segment, choosing XLA's CPU options for the data layout."""
    if _no_ynn_supported[0] and _is_elementwise(args[3]):
        try:
            return _segment_elementwise(cfg, *args)
        except Exception as err:  # an XLA without this option: use the default compiler
            if "ynn" not in str(err).lower():
                raise
            _no_ynn_supported[0] = False
    return _segment_gemm(cfg, *args)


def _chunks(schedule: np.ndarray, per_call: int, min_steps: int) -> list[np.ndarray]:
    """Split record steps into segments of at most ``per_call`` records, closing a segment early
    once it spans ``min_steps`` steps (so long runs report progress regularly)."""
    chunks, start, prev = [], 0, 0
    for i, s in enumerate(schedule):
        if i - start + 1 >= per_call or s - prev >= min_steps:
            chunks.append(schedule[start : i + 1])
            start, prev = i + 1, s
    if start < len(schedule):
        chunks.append(schedule[start:])
    return chunks


def as_inputs(X: Array | np.ndarray | Inputs) -> Inputs:
    """Wrap data: X (n, d) shared, X (R, n, d) per run, or an Inputs object as is."""
    if isinstance(X, (SharedInputs, PerRunInputs, DiagonalInputs)):
        return X
    X = jnp.asarray(X)
    if X.ndim == 2:
        return SharedInputs.of(X)
    if X.ndim == 3:
        return PerRunInputs(X)
    raise ValueError(f"X: must be (n, d) or (R, n, d), got shape {X.shape}")


def simulate(
    cfg: EngineConfig,
    net0: Network,
    X: Array | np.ndarray | Inputs,
    y: Array | np.ndarray,
    schedule: np.ndarray,
    stop_loss: Array | np.ndarray | None = None,
    keys: Array | None = None,
    progress: Callable[[int, int], None] | None = None,
    records_per_call: int = 64,
) -> EngineResult:
    """Train the batch of networks ``net0`` (a (R, p), W (R, p, d)) and record probes at
    ``schedule``.

    X, y: shared (n, d), (n,); per run (R, n, d), (R, n); or an :mod:`~shallowflow.inputs`
    object. ``schedule``: strictly increasing record steps starting at 0 (see
    :func:`~shallowflow.dynamics.schedule.record_schedule`). ``stop_loss`` (R,): per-run early-stop
    threshold (None: never). ``keys`` (R,): per-run keys for SGD sampling.
    ``progress(done_steps, total_steps)`` is called after each compiled segment.
    """
    schedule = np.asarray(schedule, dtype=np.int64)
    if schedule.ndim != 1 or len(schedule) == 0 or schedule[0] != 0 or np.any(np.diff(schedule) <= 0):
        raise ValueError("schedule: must be a strictly increasing 1-D array of steps starting at 0")
    R = net0.a.shape[0]
    dtype = net0.W.dtype
    stop = jnp.full((R,), -jnp.inf, dtype) if stop_loss is None else jnp.asarray(stop_loss, dtype)
    keys = jax.random.split(jax.random.PRNGKey(0), R) if keys is None else keys
    inputs = jax.tree_util.tree_map(lambda v: jnp.asarray(v, dtype), as_inputs(X))
    y = jnp.asarray(y, dtype)
    a0, Wt0 = to_engine_layout(Network(jnp.asarray(net0.a, dtype), jnp.asarray(net0.W, dtype)))
    state = EngineState(a0, Wt0, jnp.full((R,), RUNNING, jnp.int32), -jnp.ones((R,), jnp.int64))
    total = int(schedule[-1])
    per_call = max(1, min(records_per_call, len(schedule)))
    step = jnp.zeros((), jnp.int64)
    pieces: list[dict[str, np.ndarray]] = []
    done = 0
    for chunk in _chunks(schedule, per_call, max(1, total // 50)):
        padded = np.concatenate([chunk, np.full(per_call - len(chunk), chunk[-1], np.int64)])
        step, state, rec = _segment(cfg, step, state, jnp.asarray(padded), inputs, y, stop, keys,
                                    a0, Wt0)
        pieces.append({k: np.asarray(v)[: len(chunk)] for k, v in rec.items()})
        done += len(chunk)
        if progress is not None:
            progress(int(chunk[-1]), total)
        if np.all(np.asarray(state.code) != RUNNING) and done < len(schedule):
            # every run is frozen: the remaining records are exact copies of the last one
            rest = len(schedule) - done
            pieces.append({k: np.repeat(v[-1:], rest, axis=0) for k, v in pieces[-1].items()})
            if progress is not None:
                progress(total, total)
            break
    records = {k: np.moveaxis(np.concatenate([p[k] for p in pieces]), 0, 1) for k in pieces[0]}
    status = status_arrays(np.asarray(state.code), np.asarray(state.event_step))
    to_np = partial(jax.tree_util.tree_map, np.asarray)
    return EngineResult(to_np(from_engine_layout(a0, Wt0)),
                        to_np(from_engine_layout(state.a, state.Wt)), status, records, schedule)
