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
- divergence: once L(theta_k) is non-finite (tested every step), or the parameters are
  non-finite at a record point (tested there), the run is flagged ``diverged`` with
  ``diverge_step`` = that step, and it is frozen at its parameters of the last record point where
  they and their loss were finite; its batch goes on.
Frozen runs keep their parameters, so their records after freezing are exact copies.

Options (MATH.md §0.3): ``parametrisation="lognorm"`` stores neurons in log-norm coordinates
(:mod:`~shallowflow.dynamics.logscale`) for tiny initialisations; ``activity_mask`` keeps a
persistent mask alive &= (<w_j, x_i> > 0), so a pair that became inactive never revives by
rounding; ``reduce`` simulates in an orthonormal basis of the data span
(:mod:`~shallowflow.dynamics.reduce`), with the diagonal fast path for orthogonal data.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array, lax

from shallowflow.activations import RELU, Activation
from shallowflow.dynamics import logscale, plain
from shallowflow.dynamics.reduce import project, reduce_data, restore
from shallowflow.inputs import SMALL, DiagonalInputs, Inputs, PerRunInputs, SharedInputs
from shallowflow.losses import Loss
from shallowflow.network import BatchGradient, Network, batch_loss_and_gradient, to_engine_layout
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
    parametrisation: str = "plain"  # or "lognorm"
    tied_balance: bool = False  # lognorm only: a_j = s_j ||w_j|| exactly
    activity_mask: bool = False

    def __post_init__(self) -> None:
        if self.parametrisation not in ("plain", "lognorm"):
            raise ValueError(f"parametrisation: must be 'plain' or 'lognorm', got "
                             f"{self.parametrisation!r}")
        if self.tied_balance and self.parametrisation != "lognorm":
            raise ValueError("tied_balance: only with parametrisation 'lognorm'")
        if self.activity_mask and (self.activation.leak != 0 or self.batch_size is not None):
            raise ValueError("activity_mask: needs ReLU (leak 0) and full-batch GD")
        unknown = [p for p in self.probes if p not in PROBES]
        if unknown:
            raise ValueError(f"probes: unknown {unknown}; allowed: {', '.join(PROBES)}")
        if not self.lr > 0:
            raise ValueError(f"lr: must be > 0, got {self.lr}")


RUNNING, STOPPED, DIVERGED = 0, 1, 2


class EngineState(NamedTuple):
    params: plain.PlainParams | logscale.LogParams
    code: Array  # (R,) RUNNING, STOPPED or DIVERGED
    event_step: Array  # (R,) step at which the run froze, -1 while running
    mask: Array | None  # persistent activity mask (n, R, p), or None


class Reference(NamedTuple):
    """Constants of the batch the probes compare against."""

    perp_sq: Array  # ||w_j||^2 outside the data span (constant), (R, p)
    log_perp_sq: Array  # its log, exact also when perp_sq underflows (tiny lambda)
    params0: plain.PlainParams | logscale.LogParams  # the initial parameters


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
    log_final: dict[str, np.ndarray] | None = None  # lognorm: rho, alpha (R, p) at the end


def _weights(cfg: EngineConfig, params) -> tuple[Array, Array]:
    return (logscale if cfg.parametrisation == "lognorm" else plain).weights(params)


def _gradient(cfg: EngineConfig, st: EngineState, inputs: Inputs, y: Array, **kw):
    a, Wt = _weights(cfg, st.params)
    return batch_loss_and_gradient(a, Wt, inputs, y, cfg.kappa, cfg.activation, cfg.loss,
                                   mask=st.mask, **kw)


def _select(move: Array, new, old):
    """Per-run choice between two parameter pytrees (leaves (R, p) or (d, R, p)). Written with
    explicit broadcast shapes: a reshape of ``move`` made the tiny run ~10 % slower."""

    def pick(n: Array, o: Array) -> Array:
        m = move[:, None] if n.ndim == 2 else move[None, :, None]
        return jnp.where(m, n, o)

    return jax.tree_util.tree_map(pick, new, old)


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
    if cfg.parametrisation == "lognorm":
        new = logscale.update(st.params, bg, rate, cfg.kappa, cfg.train_second_layer,
                              cfg.tied_balance)
    else:
        new = plain.update(st.params, bg, rate, cfg.train_second_layer)
    # L catches a blow-up long before the parameters overflow (a per-run scalar: free); the rare
    # non-finite parameter that does not reach L is caught at the next record point (_guard)
    code, event = _freeze(st, below, ~jnp.isfinite(bg.loss), step)
    move = code == RUNNING
    mask = None if st.mask is None else jnp.where(move[None, :, None], bg.active, st.mask)
    return EngineState(_select(move, new, st.params), code, event, mask)


def _context(cfg: EngineConfig, params, bg: BatchGradient | None,
             ref: Reference) -> ProbeContext:
    """Probe context in plain units (norms include the constant out-of-span part). The initial
    balance is evaluated by the same code, so that drifts are exactly 0 at t = 0."""
    train_a = cfg.train_second_layer
    grad_norm_sq = None
    if cfg.parametrisation == "lognorm":
        p = params
        a, Wt = p.s * jnp.exp(p.alpha), jnp.exp(p.rho)[None] * p.U
        log_w = 0.5 * jnp.logaddexp(2 * p.rho, ref.log_perp_sq)
        log_a = p.alpha
        if bg is not None:
            g2 = jnp.exp(2 * p.alpha) * cfg.kappa**2 * jnp.sum(bg.M**2, axis=0)
            if train_a:
                g2 = g2 + jnp.exp(2 * p.rho) * bg.grad_a**2
            grad_norm_sq = jnp.sum(g2, axis=1)
    else:
        a, Wt = params
        log_w = 0.5 * jnp.log(jnp.sum(Wt**2, axis=0) + ref.perp_sq)
        log_a = jnp.log(jnp.abs(a))
        if bg is not None:
            grad_norm_sq = jnp.sum(bg.grad_Wt**2, axis=(0, 2))
            if train_a:
                grad_norm_sq = grad_norm_sq + jnp.sum(bg.grad_a**2, axis=1)
    norm_sq = jnp.sum(Wt**2, axis=0) + ref.perp_sq
    ctx = ProbeContext(a, Wt, norm_sq, log_w, log_a, grad_norm_sq, bg, None, None,
                       cfg.time_scale)
    if params is ref.params0:
        return ctx._replace(balance0=a**2 - norm_sq, log_ratio0=log_a - log_w)
    c0 = _context(cfg, ref.params0, None, ref)
    return ctx._replace(balance0=c0.a**2 - c0.norm_sq, log_ratio0=c0.log_abs_a - c0.log_norm)


def _record(cfg: EngineConfig, st: EngineState, step: Array, inputs: Inputs, y: Array,
            stop_loss: Array, ref: Reference) -> tuple[EngineState, dict]:
    """Full-batch probes of all runs (and, for SGD, the early-stop test on the full loss)."""
    bg = _gradient(cfg, st, inputs, y)
    if cfg.batch_size is not None:
        code, event = _freeze(st, bg.loss < stop_loss, jnp.zeros_like(bg.loss, dtype=bool), step)
        st = st._replace(code=code, event_step=event)
    ctx = _context(cfg, st.params, bg, ref)
    return st, {name: PROBES[name].fn(ctx) for name in cfg.probes}, bg.loss


def _segment_body(cfg: EngineConfig, step0: Array, state: EngineState, targets: Array,
                  count: Array, inputs: Inputs, y: Array, stop_loss: Array, keys: Array,
                  ref: Reference, unroll: int = 1):
    """Advance all runs through the record steps ``targets[:count]``, measuring at each (the
    rest of ``targets`` is padding to the compiled length: no steps and no probes there; their
    records are zeros, which the caller drops). ``unroll`` steps per loop iteration (then single
    steps to the target): on small problems each loop iteration's fixed cost (it copies the loop
    state) is comparable to a step."""

    def measure(st: EngineState, step: Array):
        return _record(cfg, st, step, inputs, y, stop_loss, ref)

    def advance(carry, target_and_index):
        target, index = target_and_index

        def body(c):
            step, st = c
            return step + 1, _step(cfg, st, step, inputs, y, stop_loss, keys)

        def body_unrolled(c):
            for _ in range(unroll):
                c = body(c)
            return c

        step, st, backup = carry
        if unroll > 1:
            step, st = lax.while_loop(lambda c: c[0] + unroll <= target, body_unrolled, (step, st))
        step, st = lax.while_loop(lambda c: c[0] < target, body, (step, st))
        st = _guard(st, backup, step)
        shapes = jax.eval_shape(measure, st, step)

        def skip(st: EngineState, step: Array):  # a padding slot: a zero record, dropped later
            return st, *jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes[1:])

        st, rec, loss = lax.cond(index < count, measure, skip, st, step)
        # the next backup: these parameters if their loss is finite (else keep the older ones)
        backup = _select(jnp.isfinite(loss), st.params, backup)
        return (step, st, backup), rec

    (step, state, _), records = lax.scan(advance, (step0, state, state.params),
                                         (targets, jnp.arange(targets.shape[0])))
    return step, state, records


def _guard(st: EngineState, backup, step: Array) -> EngineState:
    """At a record point: flag running runs whose parameters are non-finite, and put every
    diverged run back to ``backup``, its parameters at the last record point where they and their
    loss were finite. Runs that diverged earlier already hold ``backup``."""

    def finite(x: Array) -> Array:
        ax = _run_axis(x)
        return jnp.all(jnp.isfinite(x), axis=tuple(i for i in range(x.ndim) if i != ax))

    ok = jax.tree_util.tree_reduce(jnp.logical_and, jax.tree_util.tree_map(finite, st.params))
    code, event = _freeze(st, jnp.zeros_like(ok), ~ok, step)
    params = _select(code == DIVERGED, backup, st.params)
    return st._replace(params=params, code=code, event_step=event)


def _run_axis(leaf: Array) -> int:
    """Position of the run axis in engine arrays: 1 for (d|n, R, p), else 0."""
    return 1 if leaf.ndim == 3 else 0


def _blocks(tree, nb: int, block: int):
    """Split every leaf's run axis R into (nb, block), blocks first."""

    def split(x: Array) -> Array:
        ax = _run_axis(x)
        x = x.reshape((*x.shape[:ax], nb, block, *x.shape[ax + 1:]))
        return jnp.moveaxis(x, ax, 0)

    return jax.tree_util.tree_map(split, tree)


def _unblocks(tree, axis_of: Callable[[Array], int]):
    """Inverse of :func:`_blocks`: merge the leading block axis into the run axis."""

    def merge(x: Array) -> Array:
        ax = axis_of(x)
        x = jnp.moveaxis(x, 0, ax)
        return x.reshape((*x.shape[:ax], x.shape[ax] * x.shape[ax + 1], *x.shape[ax + 2:]))

    return jax.tree_util.tree_map(merge, tree)


def _segment_blocked(cfg: EngineConfig, block: int, step0: Array, state: EngineState,
                     targets: Array, count: Array, inputs: DiagonalInputs, y: Array, stop_loss: Array,
                     keys: Array, ref: Reference):
    """The segment for blocks of ``block`` runs at a time, each block running the whole time
    loop while its state stays in cache (runs are independent, so results are identical). For
    the memory-bound diagonal path this saves most of the per-step memory traffic."""
    R = stop_loss.shape[0]
    nb = R // block
    per_run_data = inputs.per_run
    blocked = _blocks((state, stop_loss, keys, ref), nb, block)
    if per_run_data:
        s_b = jnp.moveaxis(inputs.s.reshape(inputs.n, nb, block), 1, 0)
        y_b = y.reshape(nb, block, -1)
    else:
        s_b = y_b = None

    def one(args):
        (st, stop, kk, rf), sb, yb = args
        inp = DiagonalInputs(sb) if per_run_data else inputs
        yy = yb if per_run_data else y
        _, st, rec = _segment_body(cfg, step0, st, targets, count, inp, yy, stop, kk, rf,
                                   SMALL_UNROLL)
        return st, rec

    st_b, rec_b = lax.map(one, (blocked, s_b, y_b))
    state = _unblocks(st_b, lambda x: _run_axis(x[0]))
    # records: (nb, S, block, ...) -> (S, R, ...)
    records = jax.tree_util.tree_map(
        lambda x: jnp.moveaxis(x, 0, 1).reshape((x.shape[1], R, *x.shape[3:])), rec_b)
    return jnp.maximum(step0, targets[-1]), state, records


# XLA:CPU hands elementwise work and reductions to the YNNPACK library by default; for the
# unrolled small contractions (d or n <= 4) and diagonal inputs that is 3-7x slower than XLA's own
# loops (bench/RESULTS.md), while for GEMM-bound shapes the default is as fast or faster.
_NO_YNN = {"xla_cpu_experimental_ynn_fusion_type": ""}
SMALL_UNROLL = 4  # steps per loop iteration on the elementwise paths (bench/NOTES.md)
_segment_gemm = jax.jit(_segment_body, static_argnums=0)
_segment_elementwise = jax.jit(functools.partial(_segment_body, unroll=SMALL_UNROLL),
                               static_argnums=0, compiler_options=_NO_YNN)
_no_ynn_supported = [jax.default_backend() == "cpu"]


DIAGONAL_BLOCK = 4  # runs per block on the diagonal path (measured best, bench/NOTES.md)
_segment_blocked_jit = jax.jit(_segment_blocked, static_argnums=(0, 1), compiler_options=_NO_YNN)
_segment_blocked_default = jax.jit(_segment_blocked, static_argnums=(0, 1))


def _block_size(inputs: Inputs, R: int) -> int:
    """Runs per block for blocked execution (0: not blocked): the diagonal path only."""
    if not isinstance(inputs, DiagonalInputs) or R <= DIAGONAL_BLOCK:
        return 0
    return max(b for b in range(1, DIAGONAL_BLOCK + 1) if R % b == 0)


def _is_elementwise(inputs: Inputs) -> bool:
    if isinstance(inputs, DiagonalInputs):
        return True
    n, d = inputs.X.shape[-2:]
    return min(n, d) <= SMALL


def _segment(cfg: EngineConfig, step0: Array, state: EngineState, targets: Array, count: Array,
             inputs: Inputs, y: Array, stop_loss: Array, keys: Array, ref: Reference):
    """Run a compiled segment, choosing XLA's CPU options (and run blocking) for the layout."""
    args = (step0, state, targets, count, inputs, y, stop_loss, keys, ref)
    block = _block_size(inputs, stop_loss.shape[0])
    if block > 1:
        fn = _segment_blocked_jit if _no_ynn_supported[0] else _segment_blocked_default
        return fn(cfg, block, *args)
    if _no_ynn_supported[0] and _is_elementwise(inputs):
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


def _initial_state(cfg: EngineConfig, a0: Array, Wt0: Array, log_scale: Array | None,
                   log_perp_sq: Array, n: int):
    """Engine state and reference constants from a unit-scale (or actual) network."""
    R, p = a0.shape
    zero = jnp.zeros((R,), a0.dtype)
    shift = zero if log_scale is None else log_scale
    if cfg.parametrisation == "lognorm":
        params = logscale.from_unit_network(a0, Wt0, shift)
        if cfg.tied_balance:
            params = params._replace(alpha=params.rho)
    else:
        if log_scale is not None:
            a0, Wt0 = jnp.exp(shift)[:, None] * a0, jnp.exp(shift)[None, :, None] * Wt0
        params = plain.PlainParams(a0, Wt0)
    mask = jnp.ones((n, R, p), bool) if cfg.activity_mask else None
    state = EngineState(params, jnp.full((R,), RUNNING, jnp.int32), -jnp.ones((R,), jnp.int64),
                        mask)
    log_perp = log_perp_sq + 2 * shift[:, None]
    return state, Reference(jnp.exp(log_perp), log_perp, params)


REBATCH_MULTIPLE = 4  # compacted batches are padded with frozen runs to a multiple of this


def _take_runs(tree, idx: np.ndarray):
    """Select runs ``idx`` from engine arrays (run axis 1 for (d|n, R, p) leaves, else 0)."""
    return jax.tree_util.tree_map(lambda x: jnp.take(x, idx, axis=_run_axis(x)), tree)


def _put_runs(full, part, idx: np.ndarray):
    """Write the runs of ``part`` back into ``full`` at positions ``idx``."""

    def put(f: Array, p: Array) -> Array:
        ax = _run_axis(f)
        return f.at[(slice(None),) * ax + (idx,)].set(p)

    return jax.tree_util.tree_map(put, full, part)


def _widen(part: dict[str, np.ndarray], last: dict[str, np.ndarray],
           current: np.ndarray) -> dict[str, np.ndarray]:
    """Records (S, R_current, ...) of the runs ``current`` as full-batch records (S, R, ...):
    runs left out of the batch are frozen, so they repeat their ``last`` record."""
    out = {}
    for name, values in part.items():
        full = np.repeat(last[name][None], values.shape[0], axis=0)
        full[:, current] = values
        out[name] = full
    return out


REBATCH_MIN_SAVING_S = 2.0  # compact only if the estimated saving exceeds a recompilation


def _compaction(code: np.ndarray, current: np.ndarray, multiple: int,
                saving_per_run: float = np.inf) -> np.ndarray | None:
    """Runs to keep when at most half of the batch still runs and leaving the frozen ones out
    saves more than REBATCH_MIN_SAVING_S (``saving_per_run``: estimated seconds the rest of the
    schedule costs per run): the running ones, padded with frozen ones to a multiple of
    ``multiple`` (stable shapes for the blocked paths); else None."""
    running = np.flatnonzero(code == RUNNING)
    if len(running) == 0 or 2 * len(running) > len(current):
        return None
    if (len(current) - len(running)) * saving_per_run < REBATCH_MIN_SAVING_S:
        return None
    size = min(len(current), -(-len(running) // multiple) * multiple)
    frozen = np.flatnonzero(code != RUNNING)[: size - len(running)]
    return np.sort(np.concatenate([running, frozen]))


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
    log_scale: Array | np.ndarray | None = None,
    reduce: bool = False,
    rebatch: bool = True,
) -> EngineResult:
    """Train the batch of networks ``net0`` (a (R, p), W (R, p, d)) and record probes at
    ``schedule``.

    X, y: shared (n, d), (n,); per run (R, n, d), (R, n); or an :mod:`~shallowflow.inputs`
    object. ``schedule``: strictly increasing record steps starting at 0 (see
    :func:`~shallowflow.dynamics.schedule.record_schedule`). ``stop_loss`` (R,): per-run early-stop
    threshold (None: never). ``keys`` (R,): per-run keys for SGD sampling. ``log_scale`` (R,): the
    trained network is exp(log_scale) * net0 (so lambda = exp(-1000) is expressible; required
    scale information for the lognorm parametrisation, else lambda = 1). ``reduce``: train in the
    data span (:mod:`~shallowflow.dynamics.reduce`; X must be an array). ``rebatch``: once at
    most half of the batch still runs, continue with the running runs only (frozen runs' records
    are exact copies of their last one, so results are identical; a new shape compiles once).
    ``progress(done_steps, total_steps)`` is called after each compiled segment.
    """
    schedule = np.asarray(schedule, dtype=np.int64)
    if schedule.ndim != 1 or len(schedule) == 0 or schedule[0] != 0 or np.any(np.diff(schedule) <= 0):
        raise ValueError("schedule: must be a strictly increasing 1-D array of steps starting at 0")
    R = net0.a.shape[0]
    dtype = net0.W.dtype
    stop = jnp.full((R,), -jnp.inf, dtype) if stop_loss is None else jnp.asarray(stop_loss, dtype)
    keys = jax.random.split(jax.random.PRNGKey(0), R) if keys is None else keys
    W0 = np.asarray(net0.W)
    reduction = reduce_data(np.asarray(X)) if reduce else None
    if reduction is not None:
        Wr, W_perp = project(W0.astype(np.float64), reduction.basis)
        inputs_raw: Inputs | Array | np.ndarray = reduction.inputs
        W_engine = Wr.astype(dtype)
    else:
        inputs_raw, W_engine, W_perp = X, W0, np.zeros_like(W0)
    inputs = jax.tree_util.tree_map(lambda v: jnp.asarray(v, dtype), as_inputs(inputs_raw))
    y = jnp.asarray(y, dtype)
    a0, Wt0 = to_engine_layout(Network(jnp.asarray(net0.a, dtype), jnp.asarray(W_engine, dtype)))
    with np.errstate(divide="ignore"):
        log_perp_sq = jnp.asarray(np.log(np.sum(W_perp.astype(np.float64) ** 2, axis=2)), dtype)
    ls = None if log_scale is None else jnp.asarray(log_scale, dtype)
    if log_scale is not None:  # the out-of-span part in actual units (0 once it underflows)
        W_perp = W_perp * np.exp(np.asarray(log_scale, np.float64))[:, None, None]
    state, ref = _initial_state(cfg, a0, Wt0, ls, log_perp_sq, inputs.n)
    start = _context(cfg, state.params, None, ref)
    total = int(schedule[-1])
    per_call = max(1, min(records_per_call, len(schedule)))
    step = jnp.zeros((), jnp.int64)
    pieces: list[dict[str, np.ndarray]] = []
    done = 0
    # the batch being trained: runs `current` of the full batch (all of them until a compaction)
    current = np.arange(R)
    full_state, full_ref = state, ref
    cur_inputs, cur_y, cur_stop, cur_keys = inputs, y, stop, keys
    last: dict[str, np.ndarray] = {}  # full-batch last record, for runs left out of the batch
    per_run_step = np.inf  # measured seconds per run and step (after the compiling segment)
    for segment, chunk in enumerate(_chunks(schedule, per_call, max(1, total // 50))):
        padded = np.concatenate([chunk, np.full(per_call - len(chunk), chunk[-1], np.int64)])
        t0, first_step = time.perf_counter(), int(step)
        step, state, rec = _segment(cfg, step, state, jnp.asarray(padded), jnp.asarray(len(chunk)),
                                    cur_inputs, cur_y, cur_stop, cur_keys, ref)
        part = {k: np.asarray(v)[: len(chunk)] for k, v in rec.items()}
        if segment > 0 and int(chunk[-1]) > first_step:
            per_run_step = (time.perf_counter() - t0) / ((int(chunk[-1]) - first_step) * len(current))
        if len(current) < R:
            part = _widen(part, last, current)
        pieces.append(part)
        last = {k: v[-1] for k, v in part.items()}
        done += len(chunk)
        if progress is not None:
            progress(int(chunk[-1]), total)
        code = np.asarray(state.code)
        if np.all(code != RUNNING) and done < len(schedule):
            # every run is frozen: the remaining records are exact copies of the last one
            rest = len(schedule) - done
            pieces.append({k: np.repeat(v[None], rest, axis=0) for k, v in last.items()})
            if progress is not None:
                progress(total, total)
            break
        saving = per_run_step * (total - int(chunk[-1]))
        keep = _compaction(code, current, REBATCH_MULTIPLE, saving) if rebatch else None
        if keep is not None and done < len(schedule):
            full_state = _put_runs(full_state, state, current)
            current = current[keep]
            state, ref = _take_runs(state, keep), _take_runs(full_ref, current)
            cur_inputs, cur_y = inputs.take_runs(current), y[current] if y.ndim == 2 else y
            cur_stop, cur_keys = stop[current], keys[current]
    if len(current) < R:
        state, ref = _put_runs(full_state, state, current), full_ref
    records = {k: np.moveaxis(np.concatenate([p[k] for p in pieces]), 0, 1) for k in pieces[0]}
    end = _context(cfg, state.params, None, ref)

    def full_W(Wt: Array) -> np.ndarray:
        W = np.asarray(jnp.transpose(Wt, (1, 2, 0)))
        if reduction is None:
            return W
        return restore(W.astype(np.float64), reduction.basis, W_perp).astype(W.dtype)

    if reduction is not None and "W" in records:
        records["W"] = restore(records["W"].astype(np.float64), reduction.basis, W_perp)
    log_final = None
    if cfg.parametrisation == "lognorm":
        log_final = {"log_norm": np.asarray(end.log_norm), "log_abs_a": np.asarray(end.log_abs_a)}
    status = status_arrays(np.asarray(state.code), np.asarray(state.event_step))
    return EngineResult(
        Network(np.asarray(start.a), full_W(start.Wt)), Network(np.asarray(end.a), full_W(end.Wt)),
        status, records, schedule, log_final)
