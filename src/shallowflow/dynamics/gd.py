"""Batched, compiled gradient descent with probes recorded inside the loop (MATH.md §0.3).

One step of run r is

    theta <- theta - eta * T * grad L(theta)          (one step = eta units of flow time)

with full-batch gradients (GD) or an unbiased minibatch estimate (SGD, sampling without
replacement, sample weights n/B). Runs are independent and vmapped; the data is either shared
(X of shape (n, d): the step is one large matmul over all runs' neurons) or per run (R, n, d).

The time loop is compiled: a ``lax.scan`` over record points, each advancing a ``lax.while_loop``
of plain steps to the next record step, then evaluating the probes. The host only loops over
segments of record points (for the progress bar and to stop once every run is frozen).

Per-run status, updated every step:
- early stop: once L(theta_k) < stop_loss (GD; for SGD, checked with the full loss at record
  points) the run freezes and ``stop_step`` = k;
- divergence: if L(theta_k) or the updated parameters are non-finite, the run keeps its last finite
  parameters, is flagged ``diverged`` with ``diverge_step`` = k, and its batch goes on.
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
from shallowflow.losses import Loss
from shallowflow.network import Network, loss_and_gradient
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


class RunStatus(NamedTuple):
    stopped: Array
    stop_step: Array
    diverged: Array
    diverge_step: Array


class EngineState(NamedTuple):
    net: Network
    status: RunStatus


@dataclass
class EngineResult:
    """Host-side result of :func:`simulate`: final parameters, status and probe records."""

    initial: Network
    final: Network
    status: dict[str, np.ndarray]
    records: dict[str, np.ndarray]  # name -> (run, record, *dims)
    steps: np.ndarray  # (record,)


def _where(mask: Array, new: Network, old: Network) -> Network:
    return jax.tree_util.tree_map(lambda n, o: jnp.where(mask, n, o), new, old)


def _step(cfg: EngineConfig, state: EngineState, step: Array, X: Array, y: Array,
          stop_loss: Array, key: Array) -> EngineState:
    """One GD/SGD step of one run, with early stop and divergence handling."""
    net = state.net
    if cfg.batch_size is None:
        L, grad, _ = loss_and_gradient(net, X, y, cfg.kappa, cfg.activation, cfg.loss)
        below = L < stop_loss
    else:
        n = X.shape[0]
        idx = jax.random.choice(jax.random.fold_in(key, step), n, (cfg.batch_size,), replace=False)
        weights = jnp.full((cfg.batch_size,), n / cfg.batch_size, dtype=X.dtype)
        L, grad, _ = loss_and_gradient(
            net, X[idx], y[idx], cfg.kappa, cfg.activation, cfg.loss, weights
        )
        below = jnp.zeros((), bool)
    rate = cfg.lr * cfg.time_scale
    new_a = net.a - rate * grad.a if cfg.train_second_layer else net.a
    new = Network(new_a, net.W - rate * grad.W)
    finite = jnp.isfinite(L) & jnp.isfinite(jnp.sum(new.a) + jnp.sum(new.W))
    st = state.status
    frozen = st.stopped | st.diverged
    stop_now = ~frozen & below
    diverge_now = ~frozen & ~stop_now & ~finite
    move = ~(frozen | stop_now | diverge_now)
    status = RunStatus(
        st.stopped | stop_now,
        jnp.where(stop_now, step, st.stop_step),
        st.diverged | diverge_now,
        jnp.where(diverge_now, step, st.diverge_step),
    )
    return EngineState(_where(move, new, net), status)


def _measure(cfg: EngineConfig, net: Network, net0: Network, X: Array, y: Array) -> dict:
    """All configured probes of one run at its current parameters (full batch)."""
    L, grad, Z = loss_and_gradient(net, X, y, cfg.kappa, cfg.activation, cfg.loss)
    if not cfg.train_second_layer:
        grad = Network(jnp.zeros_like(grad.a), grad.W)
    output = cfg.kappa * (cfg.activation(Z) @ net.a)
    ctx = ProbeContext(net, net0, L, grad, Z, output, cfg.time_scale, cfg.train_second_layer)
    return {name: PROBES[name].fn(ctx) for name in cfg.probes}


@partial(jax.jit, static_argnums=0)
def _segment(cfg: EngineConfig, step0: Array, state: EngineState, targets: Array, X: Array,
             y: Array, stop_loss: Array, keys: Array, net0: Network):
    """Advance all runs through the record steps ``targets``, measuring at each."""
    data_axis = 0 if X.ndim == 3 else None
    vstep = jax.vmap(partial(_step, cfg), in_axes=(0, None, data_axis, data_axis, 0, 0))
    vmeasure = jax.vmap(partial(_measure, cfg), in_axes=(0, 0, data_axis, data_axis))

    def advance(carry, target):
        def body(c):
            step, st = c
            return step + 1, vstep(st, step, X, y, stop_loss, keys)

        step, st = lax.while_loop(lambda c: c[0] < target, body, carry)
        if cfg.batch_size is not None:  # SGD: early stop tested with the full loss at records
            L = jax.vmap(
                lambda n, Xr, yr: loss_and_gradient(n, Xr, yr, cfg.kappa, cfg.activation,
                                                    cfg.loss)[0],
                in_axes=(0, data_axis, data_axis),
            )(st.net, X, y)
            s = st.status
            stop_now = ~(s.stopped | s.diverged) & (L < stop_loss)
            st = EngineState(st.net, s._replace(
                stopped=s.stopped | stop_now, stop_step=jnp.where(stop_now, step, s.stop_step)))
        return (step, st), vmeasure(st.net, net0, X, y)

    (step, state), records = lax.scan(advance, (step0, state), targets)
    return step, state, records


def _chunks(schedule: np.ndarray, per_call: int, min_steps: int) -> list[np.ndarray]:
    """Split record steps into segments of at most ``per_call`` records, closing a segment early
    once it spans ``min_steps`` steps (so long runs report progress regularly)."""
    chunks, start = [], 0
    prev = 0
    for i, s in enumerate(schedule):
        if i - start + 1 >= per_call or (s - prev >= min_steps and i >= start):
            chunks.append(schedule[start : i + 1])
            start, prev = i + 1, s
    if start < len(schedule):
        chunks.append(schedule[start:])
    return chunks


def simulate(
    cfg: EngineConfig,
    net0: Network,
    X: Array,
    y: Array,
    schedule: np.ndarray,
    stop_loss: Array | np.ndarray | None = None,
    keys: Array | None = None,
    progress: Callable[[int, int], None] | None = None,
    records_per_call: int = 64,
) -> EngineResult:
    """Train the batch of networks ``net0`` (leading axis = run) and record probes at ``schedule``.

    X, y: shared (n, d), (n,) or per run (R, n, d), (R, n). ``schedule``: sorted record steps
    starting at 0 (see :func:`~shallowflow.dynamics.schedule.record_schedule`). ``stop_loss`` (R,):
    per-run early-stop threshold (None: never). ``keys`` (R,): per-run keys for SGD sampling.
    ``progress(done_steps, total_steps)`` is called after each compiled segment.
    """
    schedule = np.asarray(schedule, dtype=np.int64)
    if schedule.ndim != 1 or len(schedule) == 0 or schedule[0] != 0 or np.any(np.diff(schedule) <= 0):
        raise ValueError("schedule: must be a strictly increasing 1-D array of steps starting at 0")
    R = net0.a.shape[0]
    dtype = net0.W.dtype
    stop = jnp.full((R,), -jnp.inf, dtype) if stop_loss is None else jnp.asarray(stop_loss, dtype)
    keys = jax.random.split(jax.random.PRNGKey(0), R) if keys is None else keys
    X, y = jnp.asarray(X, dtype), jnp.asarray(y, dtype)
    minus = -jnp.ones((R,), jnp.int64)
    state = EngineState(net0, RunStatus(jnp.zeros(R, bool), minus, jnp.zeros(R, bool), minus))
    total = int(schedule[-1])
    per_call = max(1, min(records_per_call, len(schedule)))
    chunks = _chunks(schedule, per_call, max(1, total // 50))
    step = jnp.zeros((), jnp.int64)
    pieces: list[dict[str, np.ndarray]] = []
    done = 0
    for chunk in chunks:
        padded = np.concatenate([chunk, np.full(per_call - len(chunk), chunk[-1], np.int64)])
        step, state, rec = _segment(cfg, step, state, jnp.asarray(padded), X, y, stop, keys, net0)
        pieces.append({k: np.asarray(v)[: len(chunk)] for k, v in rec.items()})
        done += len(chunk)
        if progress is not None:
            progress(int(chunk[-1]), total)
        frozen = np.asarray(state.status.stopped | state.status.diverged)
        if frozen.all() and done < len(schedule):
            # every run is frozen: the remaining records are exact copies of the last one
            rest = len(schedule) - done
            pieces.append({k: np.repeat(v[-1:], rest, axis=0) for k, v in pieces[-1].items()})
            if progress is not None:
                progress(total, total)
            break
    records = {k: np.moveaxis(np.concatenate([p[k] for p in pieces]), 0, 1) for k in pieces[0]}
    status = {k: np.asarray(v) for k, v in state.status._asdict().items()}
    to_np = partial(jax.tree_util.tree_map, np.asarray)
    return EngineResult(to_np(net0), to_np(state.net), status, records, schedule)
