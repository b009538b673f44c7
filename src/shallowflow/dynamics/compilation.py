"""Compile policy of a segment: XLA options, loop unrolling and run blocking per data layout
(docs/math.md §0.3; measurements in bench/RESULTS.md and bench/NOTES.md).

Three compiled variants of :func:`~shallowflow.dynamics.step.segment_body`, each cached by jit
per (EngineConfig, shapes): the GEMM path (XLA defaults), the elementwise path (small n or d,
``SMALL_UNROLL`` steps per loop iteration, no YNNPACK) and, on CPU, the blocked path: blocks of
runs each run the whole time loop while their data and state stay in cache, and a block whose
runs have all stopped skips the rest of its steps. Blocked are diagonal inputs (``DIAGONAL_BLOCK``
runs per block), large per-run data (one run per block, in the neuron-major layout of
:class:`~shallowflow.model.inputs.RunInputs`) and large shared data (blocks of about
``SHARED_BLOCK_NEURONS`` neurons; :func:`_block_size`). Runs are independent, so the variants
give the same results; blocked runs are contracted by smaller products, which may sum in another
order (equal to rounding). Where the block size is fixed by the shapes alone, the driver
advances whole blocks in one shard per core (:func:`shards`), bit for bit as in one shard.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array, lax

from shallowflow.dynamics.engine_config import EngineConfig
from shallowflow.dynamics.state import EngineState, Reference, Stop, run_axis
from shallowflow.dynamics.step import segment_body
from shallowflow.machine import available_cores
from shallowflow.model.inputs import (
    SMALL,
    DiagonalInputs,
    Inputs,
    OneDimInputs,
    PerRunInputs,
    PopulationInputs,
    SharedInputs,
)

# XLA:CPU hands elementwise work and reductions to the YNNPACK library by default; for the
# unrolled small contractions (d or n <= 4) and diagonal inputs that is 3-7x slower than XLA's own
# loops (bench/RESULTS.md), while for GEMM-bound shapes the default is as fast or faster.
_NO_YNN = {"xla_cpu_experimental_ynn_fusion_type": ""}
SMALL_UNROLL = 4  # steps per loop iteration on the elementwise paths (bench/NOTES.md)
DIAGONAL_BLOCK = 4  # runs per block on the diagonal path (measured best, bench/NOTES.md)
PER_RUN_MIN_BYTES = 256 << 10  # a run's data, at least, for its own block to pay (bench/NOTES.md)
SHARED_BLOCK_NEURONS = 160  # neurons of a block of runs on shared data, at most (bench/NOTES.md)
SHARED_MIN_BYTES = 128 << 10  # a shared-data block's sample-space array, at least, to block


def _blocks(tree, nb: int, block: int):
    """Split every leaf's run axis R into (nb, block), blocks first."""

    def split(x: Array) -> Array:
        ax = run_axis(x)
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
                     targets: Array, count: Array, measured: Array,
                     inputs: DiagonalInputs | PerRunInputs,
                     y: Array, stop: Stop, keys: Array, ref: Reference,
                     neurons: Array | None = None):
    """The segment for blocks of ``block`` runs at a time, each block running the whole time
    loop while its data and state stay in cache (runs are independent, so results are the same).
    For the memory-bound diagonal path this saves most of the per-step memory traffic; for large
    per-run data, the second pass over each run's data per step."""
    R = stop.loss.shape[0]
    nb = R // block
    per_run_data = inputs.per_run
    blocked = _blocks((state, stop, keys, ref, neurons), nb, block)
    if per_run_data:
        in_b, y_b = inputs.blocks(nb, block), y.reshape(nb, block, -1)
    else:
        in_b = y_b = None
    unroll = SMALL_UNROLL if _is_elementwise(inputs) else 1

    def one(args):
        (st, stop, kk, rf, nn), ib, yb = args
        inp = ib if per_run_data else inputs
        yy = yb if per_run_data else y
        _, st, rec = segment_body(cfg, step0, st, targets, count, measured, inp, yy, stop, kk,
                                  rf, nn, unroll)
        return st, rec

    st_b, rec_b = lax.map(one, (blocked, in_b, y_b))
    state = _unblocks(st_b, lambda x: run_axis(x[0]))
    # records: (nb, S, block, ...) -> (S, R, ...)
    records = jax.tree_util.tree_map(
        lambda x: jnp.moveaxis(x, 0, 1).reshape((x.shape[1], R, *x.shape[3:])), rec_b)
    return jnp.maximum(step0, targets[-1]), state, records


_segment_gemm = jax.jit(segment_body, static_argnums=0)
_segment_elementwise = jax.jit(functools.partial(segment_body, unroll=SMALL_UNROLL),
                               static_argnums=0, compiler_options=_NO_YNN)
# the one-dimensional path (docs/math.md §10): not unrolled (its step is a few passes over the
# neurons, and unrolled copies of the search only cost compile time)
_segment_onedim = jax.jit(segment_body, static_argnums=0, compiler_options=_NO_YNN)
_no_ynn_supported = [jax.default_backend() == "cpu"]
_segment_blocked_jit = jax.jit(_segment_blocked, static_argnums=(0, 1), compiler_options=_NO_YNN)
_segment_blocked_default = jax.jit(_segment_blocked, static_argnums=(0, 1))


def _block_size(inputs: Inputs, R: int, p: int) -> int:
    """Runs per block for blocked execution of ``R`` runs of ``p`` neurons (0: not blocked), on
    CPU only (a GPU wants every run at once): diagonal inputs in blocks of at most
    ``DIAGONAL_BLOCK`` runs (dividing R); per-run data of at least ``PER_RUN_MIN_BYTES`` per run
    in blocks of one run, in the layout of :class:`~shallowflow.model.inputs.RunInputs` (a single run
    too); shared data in blocks of :func:`_shared_block` runs, where that divides R."""
    if jax.default_backend() != "cpu":
        return 0
    if isinstance(inputs, DiagonalInputs):
        block = max(b for b in range(1, DIAGONAL_BLOCK + 1) if R % b == 0)
        return block if 2 <= block < R else 0  # blocks of one diagonal run do not pay
    if _is_elementwise(inputs):
        return 0
    if isinstance(inputs, PerRunInputs):
        run_bytes = inputs.X[0].size * inputs.X.dtype.itemsize
        return 1 if run_bytes >= PER_RUN_MIN_BYTES else 0
    if isinstance(inputs, SharedInputs):
        block = _shared_block(inputs, p)
        return block if block and R % block == 0 else 0
    return 0


def prepared(inputs: Inputs, R: int, p: int) -> Inputs:
    """``inputs`` as the segments of a batch of ``R`` runs of ``p`` neurons read them: per-run
    data advanced in blocks of one run gets each run's X^T beside X, transposed once here (on
    the host: no program to compile) rather than in every segment, where the transposition and
    its copy cost about two steps' memory traffic (bench/NOTES.md)."""
    if (not isinstance(inputs, PerRunInputs) or inputs.Xt is not None
            or _block_size(inputs, R, p) != 1):
        return inputs
    X = np.asarray(inputs.X)
    return inputs._replace(Xt=jax.device_put(np.ascontiguousarray(X.transpose(0, 2, 1))))


def _shared_block(inputs: SharedInputs, p: int) -> int:
    """Runs per block on shared data X (n, d), whatever the batch size (0: not blocked): 4, 2 or
    1 runs, the most whose block has at most ``SHARED_BLOCK_NEURONS`` neurons, provided the
    block's sample-space arrays (n, block p) hold at least ``SHARED_MIN_BYTES``. Each block's
    arrays then stay in cache through the step's passes (64 networks of p = 40 on n = 1000,
    blocks of 4 and a shard per core: 1.35x in float64, 1.4x in float32, bench/NOTES.md). A block
    size that divides the rebatching multiple keeps compacted batches blocked."""
    block = next(b for b in (4, 2, 1) if b * p <= SHARED_BLOCK_NEURONS or b == 1)
    size = inputs.n * block * p * inputs.X.dtype.itemsize
    return block if size >= SHARED_MIN_BYTES else 0


def _unit(inputs: Inputs | None, p: int) -> int:
    """The block of runs a batch of this layout is contracted in, whatever its size (0: none, or
    one that depends on the batch size): 1 for large per-run data, :func:`_shared_block` for
    shared data."""
    if inputs is None or jax.default_backend() != "cpu" or _is_elementwise(inputs):
        return 0
    if isinstance(inputs, PerRunInputs):
        return _block_size(inputs, 1, p)
    if isinstance(inputs, SharedInputs):
        return _shared_block(inputs, p)
    return 0


def shards(inputs: Inputs | None, R: int, count: int | None = None,
           p: int = 0) -> list[np.ndarray]:
    """The runs of a batch of ``R`` runs of ``p`` neurons as ``count`` shards of equal size,
    which the driver advances side by side, each in a thread of its own. Shard k holds
    consecutive runs, the last one padded with copies of its first run (the driver freezes
    them), so every shard has one shape and one compilation.

    Where the layout contracts runs in blocks of a size fixed by its shapes (:func:`_unit`:
    large per-run data, one run a block; shared data, :func:`_shared_block`), shards are whole
    blocks, one per core this process may use by default: each run is then computed in a block
    of the same shape whatever the number of shards, and its numbers do not depend on the
    machine's cores (a batch of fewer than two blocks is one shard, as it is).
    XLA:CPU splits a step's products between cores but runs its elementwise passes on one core;
    a shard per core keeps both busy (the DPB Fig. 3 step: 1.35-1.65x in float64 on 2 cores;
    64 networks on shared data, with blocks: 1.35-1.4x, bench/NOTES.md). Other layouts are one shard
    by default; an explicit ``count`` shards them too (their batched products then change shape:
    results equal to rounding)."""
    unit = _unit(inputs, p)
    if unit > 1 and R < 2 * unit:  # fewer runs than two blocks: one shard, as it is
        unit, count = 0, 1
    if count is None:
        count = len(available_cores()) if unit else 1
    unit = max(unit, 1)
    count = max(1, min(count, -(-R // unit)))
    per_shard = -(-R // count)
    size = -(-per_shard // unit) * unit  # a whole number of blocks
    count = -(-R // size)  # e.g. R = 4, count = 3: two shards of two
    return [np.concatenate([np.arange(k * size, min(R, (k + 1) * size)),
                            np.full(max(0, (k + 1) * size - R), k * size)])
            for k in range(count)]


_SLOTS: list[threading.BoundedSemaphore] = []
_SLOTS_MADE = threading.Lock()


def core_slots() -> threading.BoundedSemaphore:
    """The compiled segments that may run at once in this process, one per core it may use
    (made at first use, after a worker has been pinned to its cores). The driver holds a slot
    from a segment's dispatch until its records are on the host (all but a shard's first
    segment, which compiles), so the shards of batches trained side by side
    (:class:`~shallowflow.runtime.executors.LocalExecutor`) and a certificate's reruns take turns on
    the cores instead of time-slicing them, and a batch's start (data, initial networks,
    compilation) and end run while another batch's segments keep the cores busy. A batch of
    one shard takes one slot: XLA still spreads its products over the cores."""
    with _SLOTS_MADE:
        if not _SLOTS:
            _SLOTS.append(threading.BoundedSemaphore(len(available_cores())))
        return _SLOTS[0]


def _is_elementwise(inputs: Inputs) -> bool:
    if isinstance(inputs, DiagonalInputs):
        return True
    if isinstance(inputs, PopulationInputs):  # Gram matrices and products: XLA's default
        return False
    n, d = inputs.X.shape[-2:]
    return min(n, d) <= SMALL


def segment(cfg: EngineConfig, step0: Array, state: EngineState, targets: Array, count: Array,
            measured: Array, inputs: Inputs, y: Array, stop: Stop, keys: Array, ref: Reference,
            neurons: Array | None = None):
    """Run a compiled segment, choosing XLA's CPU options (and run blocking) for the layout;
    ``measured``: which targets are record points (:func:`~shallowflow.dynamics.step.
    segment_body`); ``neurons`` (R, w): step only these (:mod:`~shallowflow.dynamics.live`)."""
    args = (step0, state, targets, count, measured, inputs, y, stop, keys, ref, neurons)
    block = _block_size(inputs, stop.loss.shape[0], np.shape(ref.perp_sq)[1])
    if block > 0:
        no_ynn = _no_ynn_supported[0] and _is_elementwise(inputs)
        fn = _segment_blocked_jit if no_ynn else _segment_blocked_default
        return fn(cfg, block, *args)
    if _no_ynn_supported[0] and _is_elementwise(inputs):
        try:
            if isinstance(inputs, OneDimInputs):
                return _segment_onedim(cfg, *args)
            return _segment_elementwise(cfg, *args)
        except Exception as err:  # an XLA without this option: use the default compiler
            if "ynn" not in str(err).lower():
                raise
            _no_ynn_supported[0] = False
    return _segment_gemm(cfg, *args)
