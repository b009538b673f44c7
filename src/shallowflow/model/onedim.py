"""The exact gradient step for one-dimensional inputs with a bias, in O((n + p) log n) per run
(docs/math.md §10).

With inputs (x_k, 1), neuron j = (w_j, b_j) is active on point k iff z_jk = w_j x_k + b_j > 0
(strict: sigma'(0) = 0, a pair exactly on the kink is inactive). For fixed (w_j, b_j) the computed
z_jk (one rounding of x_k w_j + b_j, as the dense path computes it) is monotone in x_k, so on the
sorted data {k : z_jk > 0} is a suffix (w_j >= 0: "up") or a prefix (w_j < 0: "down"), cut at an
index t_j in 0..n that a search on the sign test itself finds (the rounded kink -b_j/w_j only
picks the window searched, which the sign test verifies, :func:`buckets`), so ties,
repeated x values, w_j = 0 and a kink exactly on a data point give exactly the dense activity.
Then, exactly,

    h(x_k) = kappa (x_k A_k + B_k),   (A_k, B_k) = sum over neurons active at k of a_j (w_j, b_j)
           = prefix sums over t of the up neurons' bucket sums + suffix sums of the down ones',

    S1_j = sum_{k active} g_k x_k,  S0_j = sum_{k active} g_k     (a suffix / prefix sum at t_j)
    dL/da_j = kappa (w_j S1_j + b_j S0_j),  dL/dw_j = kappa a_j S1_j,  dL/db_j = kappa a_j S0_j,

with g_k = dL/dh(x_k). Bucket sums are one scatter-add of p rows per run, the prefix sums are
over n + 1 buckets and the reads are one gather per neuron: O(p log n + n) per run and step
instead of the dense path's O(n p), with no approximation (the same numbers up to the order of
summation). M_j = (S1_j, S0_j) is the dense path's back-projection, so both parametrisations
work unchanged.

The sample-space fields of the returned :class:`~shallowflow.model.network.BatchGradient` (the
pre-activations, the activity and the outputs, (n, R, p) and (n, R) in the original sample
order) are written out for the probes; inside the step nobody reads them and the compiler
removes them, so they cost O(n p) only at record points.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import Array, lax

from shallowflow.model.activations import Activation
from shallowflow.model.inputs import OneDimInputs
from shallowflow.model.losses import Loss
from shallowflow.model.network import BatchGradient

MIN_SAMPLES = 32
"""Automatic choice (:func:`pays`): at least this many points ... (the dense step's cost grows
with n, the bucketed one's hardly: on 2 CPU cores the crossover lies between n = 3, where the
bucketed step is 1-2.5x slower, and n = 40, where it is 4-13x faster;
bench/bench_onedim.py)"""
MIN_PAIRS = 50_000
"""... and at least this many (point, neuron) pairs per run (below, both steps take microseconds)."""

NOTE = ("onedim: inputs (x, 1): using the exact bucketed step for one-dimensional data with a "
        "bias, O((n + p) log n) per step instead of O(n p) (docs/math.md §10)")
"""The note an automatic choice of the path prints."""


def pays(n: int, width: int) -> bool:
    """Whether the bucketed step is faster than the dense one for n points and p = ``width``
    neurons (on the CPU; measured by bench/bench_onedim.py)."""
    return n >= MIN_SAMPLES and n * width >= MIN_PAIRS


def resolve(setting: str, *, input_dim: int, bias: bool, n: int, width: int, gd: bool,
            relu: bool) -> tuple[bool, str | None]:
    """The config key ``train.onedim`` ("auto", "on", "off") made concrete, and the note of an
    automatic choice: "auto" takes the path for data with one input coordinate plus a bias under
    full-batch GD with ReLU, when it :func:`pays`."""
    if setting != "auto":
        return setting == "on", None
    if input_dim == 1 and bias and gd and relu and pays(n, width):
        return True, NOTE
    return False, None


def _take(table: Array, idx: Array) -> Array:
    """table[r, idx[r, j]] for a table (Rt, L) shared (Rt = 1) or per run, idx (R, p) in 0..L-1
    (every index is in range by construction: no wrapping of negative ones)."""
    Rt, L = table.shape
    if Rt > 1:  # run r reads row r: an index into the flattened table
        idx = idx + jnp.arange(Rt, dtype=idx.dtype)[:, None] * L
    dims = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                      start_index_map=(0,))
    return lax.gather(table.reshape(Rt * L), idx[..., None], dims, slice_sizes=(1,),
                      mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def _predicate(x: Array, w: Array, b: Array, down: Array) -> Array:
    """"The cut is at or before this point": x w + b > 0 for w >= 0, its negation for w < 0."""
    return (x * w + b > 0) != down


def full_search(xs: Array, w: Array, b: Array) -> Array:
    """The cut t (R, p) by a branch-free binary search over all of the sorted data xs (Rd, n):
    ceil(log2(n + 1)) gathers. t counts the leading sorted points where the predicate is false."""
    Rd, n = xs.shape
    size = 1 << max(1, math.ceil(math.log2(n + 1)))
    pad = jnp.concatenate([xs, jnp.full((Rd, size - n), jnp.inf, xs.dtype)], axis=1)
    down = w < 0
    t = jnp.zeros(w.shape, jnp.int32)
    step = size // 2
    while step >= 1:
        t = jnp.where(_predicate(_take(pad, t + (step - 1)), w, b, down), t, t + step)
        step //= 2
    return jnp.where(w == 0, jnp.where(b > 0, 0, n), jnp.minimum(t, n))


COUNT_MAX = 4
"""Search windows of at most this many points are searched by counting (independent gathers, one
fused loop), larger ones by a binary search (dependent gathers)."""


def _column(inputs: OneDimInputs, i: int, cell: Array) -> Array:
    """Column i of the window table at each neuron's cell (R, p)."""
    return _take(inputs.window[:, :, i], cell)


def cells(inputs: OneDimInputs, Wt: Array) -> Array:
    """Each neuron's search cell (R, p) for Wt = (w, b) (2, R, p): the row of ``inputs.window``
    for its kink c = -b / w, (c - x0) / h + 1 clamped to the table (a NaN from w = b = 0 goes to
    row 0; w = 0 is decided by :func:`buckets`). Only a guess, which :func:`buckets` verifies.

    Elementwise, so the engine computes it in the pass that updates the parameters and hands it
    to the next step as its ``hint``: the division then never sits inside the search's gathers,
    which XLA:CPU would otherwise fuse into one scalar loop (a 1.5x faster step at m = 200 000,
    n = 40; bench/bench_onedim.py)."""
    w, b = Wt[0], Wt[1]
    last = inputs.window.shape[1] - 1.0
    q = (b / w) * -inputs.inv_h + (1.0 - inputs.x0 * inputs.inv_h)
    q = jnp.where(q > 0.0, q, 0.0)
    return jnp.where(q < last, q, last).astype(jnp.int32)


def failed(n: int) -> int:
    """The bucket of a neuron whose window missed its cut, 2n + 2: one past the 2(n + 1) buckets
    (:func:`window_buckets`; its row of :func:`_bucket_sums` counts the failures)."""
    return 2 * (n + 1)


def window_buckets(inputs: OneDimInputs, Wt: Array, hint: Array | None = None) -> Array:
    """Each neuron's bucket (R, p) in 0..2n+1 for Wt = (w, b) (2, R, p): its cut t_j
    (:func:`boundaries`) for w_j >= 0, t_j + n + 1 for w_j < 0, in one pass over the neurons;
    :func:`failed` (2n + 2) where the window misses the cut.

    The activity is decided by the sign test x_k w_j + b_j > 0 itself, computed as the dense path
    computes it (never by the rounded kink -b_j/w_j), so it is exactly the dense activity: t_j
    counts the leading sorted points on which the predicate "the cut is at or before k" is false,
    a predicate monotone in k because the computed x_k w_j + b_j is. The kink only picks a window
    of 2^K points (the grid of :class:`~shallowflow.model.inputs.OneDimInputs`, gathers from its table
    at the cell of :func:`cells`, or at ``hint``, cells computed earlier: any cell gives the exact
    buckets, a wrong one only costs the fallback). The predicate at the two points just outside
    the window proves that the cut lies inside; then the number of points inside where it is
    false (2^K <= ``COUNT_MAX``: independent reads of the cell's table row), or a binary search
    of K + 1 gathers, gives t_j. A window fails that proof only through rounding of the kink
    beyond the grid's margin, or a wrong ``hint``; then every cut of the step is found by
    :func:`full_search` instead (:func:`batch_loss_and_gradient`)."""
    n = inputs.n
    w, b = Wt[0], Wt[1]
    down = w < 0
    zero = w == 0
    cell = cells(inputs, Wt) if hint is None else hint
    first = _column(inputs, 0, cell).astype(jnp.int32)
    size = 1 << inputs.levels
    if size <= COUNT_MAX:
        t = first
        for i in range(size):
            t = jnp.where(_predicate(_column(inputs, 3 + i, cell), w, b, down), t, t + 1)
    else:
        t = first  # K halving steps give min(f, 2^K - 1) for f false points in the window,
        step = size // 2  # a last test of the point at t the count f itself (0..2^K)
        while step >= 1:
            t = jnp.where(_predicate(_take(inputs.pad, t + (step - 1)), w, b, down), t, t + step)
            step //= 2
        t = jnp.where(_predicate(_take(inputs.pad, t), w, b, down), t, t + 1)
    ok = zero | (~_predicate(_column(inputs, 1, cell), w, b, down)
                 & _predicate(_column(inputs, 2, cell), w, b, down))
    t = jnp.where(zero, jnp.where(b > 0, 0, n), jnp.minimum(t, n))
    return jnp.where(ok, jnp.where(down, t + (n + 1), t), failed(n))


def _searched(inputs: OneDimInputs, Wt: Array) -> Array:
    """Every neuron's bucket by :func:`full_search` (the fallback of :func:`buckets`)."""
    t = full_search(inputs.xs, Wt[0], Wt[1])  # reads Wt whole: slices of it would be copied
    return jnp.where(Wt[0] < 0, t + (inputs.n + 1), t)  # for the branch


def buckets(inputs: OneDimInputs, Wt: Array, hint: Array | None = None) -> Array:
    """Each neuron's bucket (R, p) in 0..2n+1 (:func:`window_buckets`, with its fallback)."""
    bucket = window_buckets(inputs, Wt, hint)
    return lax.cond(jnp.max(bucket) < failed(inputs.n), lambda: bucket,
                    lambda: _searched(inputs, Wt))


def boundaries(inputs: OneDimInputs, w: Array, b: Array) -> tuple[Array, Array]:
    """The cut t (R, p) in 0..n of each neuron's active set on the sorted data, and ``down`` =
    w < 0: neuron j is active on the sorted points k >= t_j (w_j >= 0) or k < t_j (w_j < 0);
    w_j = 0: on all points if b_j > 0, else on none (exactly the dense activity, :func:`buckets`)."""
    n = inputs.n
    bucket = buckets(inputs, jnp.stack([w, b]))
    down = bucket > n
    return jnp.where(down, bucket - (n + 1), bucket), down


def _bucket_sums(a: Array, Wt: Array, bucket: Array, n: int) -> Array:
    """sum of a_j (w_j, b_j) over the neurons of each bucket, (R, 2n + 3, 2) for buckets (R, p) in
    0..2n+1 or 2n + 2 (a failed window, :func:`window_buckets`), whose row instead counts the
    failed windows: one scatter-add of p rows per run."""
    R, p = a.shape
    B = failed(n)
    miss = bucket == B
    v = jnp.stack([jnp.where(miss, 1, a * Wt[0]), jnp.where(miss, 1, a * Wt[1])], axis=-1)
    seg = bucket if R == 1 else jnp.arange(R, dtype=jnp.int32)[:, None] * (B + 1) + bucket
    sums = jax.ops.segment_sum(v.reshape(R * p, 2), seg.reshape(R * p), num_segments=R * (B + 1))
    return sums.reshape(R, B + 1, 2)


def _fallback(a: Array, inputs: OneDimInputs, Wt: Array) -> tuple[Array, Array]:
    """The buckets of :func:`full_search` and their sums (no failed window: a zero last row)."""
    bucket = _searched(inputs, Wt)
    return bucket, _bucket_sums(a, Wt, bucket, inputs.n)


def batch_loss_and_gradient(
    a: Array,
    Wt: Array,
    inputs: OneDimInputs,
    y: Array,
    kappa: float,
    activation: Activation,
    loss: Loss,
    weights: Array | float = 1.0,
    mask: Array | None = None,
    hint: Array | None = None,
) -> BatchGradient:
    """:func:`shallowflow.model.network.batch_loss_and_gradient` for :class:`OneDimInputs`: a (R, p),
    Wt (2, R, p) = (w, b), labels (n,) or (R, n) in the original order; ``weights`` a scalar or
    (n, 1)/(n, R) in the original order; ``hint`` the neurons' search cells (:func:`cells`), if
    already computed. ReLU only, no persistent mask (ValueError otherwise)."""
    if activation.leak != 0.0:
        raise ValueError("onedim: needs ReLU (leak 0); the leaky ReLU uses the dense path")
    if mask is not None:
        raise ValueError("onedim: not with the persistent activity mask (activity_mask)")
    R = a.shape[0]
    n = inputs.n
    w, b = Wt[0], Wt[1]
    xs = inputs.xs  # (Rd, n)
    # outputs: bucket sums of a_j (w_j, b_j), prefix sums (up) and suffix sums (down)
    bucket = window_buckets(inputs, Wt, hint)  # up neurons in 0..n, down ones in n+1..2n+1
    sums = _bucket_sums(a, Wt, bucket, n)  # (R, 2n + 3, 2): the last row counts failures
    bucket, sums = lax.cond(jnp.any(sums[:, -1, 0] > 0), lambda: _fallback(a, inputs, Wt),
                            lambda: (bucket, sums))
    sums = sums[:, :-1].reshape(R, 2, n + 1, 2)
    up_sum = jnp.cumsum(sums[:, 0], axis=1)[:, :n]  # up neurons with t_j <= k
    down_sum = jnp.cumsum(sums[:, 1, ::-1], axis=1)[:, ::-1][:, 1:]  # down neurons with t_j > k
    AB = up_sum + down_sum  # (R, n, 2)
    out = kappa * (xs * AB[..., 0] + AB[..., 1])  # (R, n), sorted order

    yl = inputs.labels(y)
    weights = jnp.asarray(weights, out.dtype)
    if weights.ndim == 2:  # (n, 1) or (n, R) in the original order -> sorted, run-major
        weights = inputs.labels(weights.T) if weights.shape[1] > 1 else inputs.labels(weights[:, 0])
    wts = jnp.broadcast_to(weights, out.shape)
    c = loss.normaliser(wts, axis=1)  # per run
    value = c * jnp.sum(wts * loss.pointwise(out, yl), axis=1)
    g = c[:, None] * wts * loss.pointwise_derivative(out, yl)  # (R, n), sorted order

    # gradients: suffix sums (up neurons) and prefix sums (down ones) of g x and g, read at t_j
    G = jnp.stack([g * xs, g], axis=1)  # (R, 2, n)
    zero = jnp.zeros((R, 2, 1), G.dtype)
    suffix = jnp.concatenate([jnp.cumsum(G[:, :, ::-1], axis=2)[:, :, ::-1], zero], axis=2)
    prefix = jnp.concatenate([zero, jnp.cumsum(G, axis=2)], axis=2)
    table = jnp.concatenate([suffix, prefix], axis=2)  # (R, 2, 2 (n + 1)), indexed by bucket
    M = jnp.stack([_take(table[:, 0], bucket), _take(table[:, 1], bucket)])  # (2, R, p)
    grads = jnp.stack([kappa * (w * M[0] + b * M[1]), kappa * a * M[0], kappa * a * M[1]])
    grads = lax.optimization_barrier(grads)  # one pass writes all three (measured faster than
    # the gathers read again by each consumer)
    grad_a, grad_Wt = grads[0], grads[1:]
    t = jnp.where(bucket > n, bucket - (n + 1), bucket)
    down = w < 0

    # the dense view for the probes (removed by the compiler where unused): original order
    X = inputs.X
    if X.ndim == 2:
        Z = X[:, 0, None, None] * w[None] + X[:, 1, None, None] * b[None]  # (n, R, p)
        pos = inputs.rank[0][:, None, None]  # sorted position of sample i
    else:
        Z = X[:, :, 0].T[:, :, None] * w[None] + X[:, :, 1].T[:, :, None] * b[None]
        pos = inputs.rank.T[:, :, None]
    active = (pos >= t[None]) != down[None]
    output = _take(out, inputs.rank) if inputs.rank.shape[0] > 1 else out[:, inputs.rank[0]]
    return BatchGradient(value, grad_a, grad_Wt, Z, active, output.T, M)
