"""The exact gradient step for one-dimensional inputs with a bias, in O((n + p) log n) per run
(docs/math.md §10).

With inputs (x_k, 1), neuron j = (w_j, b_j) is active on point k iff z_jk = w_j x_k + b_j > 0
(strict: sigma'(0) = 0, a pair exactly on the kink is inactive). For fixed (w_j, b_j) the computed
z_jk (one rounding of x_k w_j + b_j, as the dense path computes it) is monotone in x_k, so on the
sorted data {k : z_jk > 0} is a suffix (w_j >= 0: "up") or a prefix (w_j < 0: "down"), cut at an
index t_j in 0..n that a binary search on the sign test itself finds (the rounded kink -b_j/w_j
only picks the window searched, which the sign test verifies, :func:`boundaries`), so ties,
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

The sample-space fields of the returned :class:`~shallowflow.network.BatchGradient` (the
pre-activations, the activity and the outputs, (n, R, p) and (n, R) in the original sample
order) are written out for the probes; inside the step nobody reads them and the compiler
removes them, so they cost O(n p) only at record points.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import Array, lax

from shallowflow.activations import Activation
from shallowflow.inputs import OneDimInputs
from shallowflow.losses import Loss
from shallowflow.network import BatchGradient

MIN_SAMPLES = 32
"""Automatic choice (:func:`pays`): at least this many points ... (the dense step's cost grows
with n, the bucketed one's hardly: on 2 CPU cores the crossover lies between n = 3, where the
bucketed step is 2-10x slower, and n = 40, where it is 1.2-5x faster; ``shallowflow bench onedim``)"""
MIN_PAIRS = 50_000
"""... and at least this many (point, neuron) pairs per run (below, both steps take microseconds)."""

NOTE = ("onedim: inputs (x, 1): using the exact bucketed step for one-dimensional data with a "
        "bias, O((n + p) log n) per step instead of O(n p) (docs/math.md §10)")
"""The note an automatic choice of the path prints."""


def pays(n: int, width: int) -> bool:
    """Whether the bucketed step is faster than the dense one for n points and p = ``width``
    neurons (on the CPU; measured by ``shallowflow bench onedim``)."""
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
    """table[r, idx[r, j]] for a table (Rt, L) shared (Rt = 1) or per run, idx (R, p)."""
    if table.shape[0] == 1:
        return table[0][idx]
    return jnp.take_along_axis(table, idx, axis=1)


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


def boundaries(inputs: OneDimInputs, w: Array, b: Array) -> tuple[Array, Array]:
    """The cut t (R, p) in 0..n of each neuron's active set on the sorted data, and ``down`` =
    w < 0: neuron j is active on the sorted points k >= t_j (w_j >= 0) or k < t_j (w_j < 0);
    w_j = 0: on all points if b_j > 0, else on none.

    The activity is decided by the sign test x_k w_j + b_j > 0 itself, computed as the dense path
    computes it (never by the rounded kink -b_j/w_j), so it is exactly the dense activity: t_j
    counts the leading sorted points on which the predicate "the cut is at or before k" is false,
    a predicate monotone in k because the computed x_k w_j + b_j is. The kink only picks a window
    of 2^K points (the grid of :class:`~shallowflow.inputs.OneDimInputs`, one gather); the
    predicate at the two points just outside it proves that the cut lies inside, and K gathers
    of a binary search find it. Should a window ever fail that proof (rounding of the kink far
    beyond the grid's margin), every cut of the step is found by :func:`full_search` instead."""
    n = inputs.n
    down = w < 0
    zero = w == 0
    c = -b / jnp.where(zero, 1.0, w)
    cell = jnp.clip(jnp.floor((c - inputs.x0) * inputs.inv_h), -1.0, inputs.window.shape[1] - 2.0)
    cell = jnp.where(jnp.isnan(cell), -1.0, cell).astype(jnp.int32) + 1
    if inputs.window.shape[0] == 1:
        row = inputs.window[0][cell]  # (R, p, 3)
    else:
        row = jnp.take_along_axis(inputs.window, cell[..., None], axis=1)
    first, before, after = row[..., 0].astype(jnp.int32), row[..., 1], row[..., 2]
    ok = zero | (~_predicate(before, w, b, down) & _predicate(after, w, b, down))
    t = first
    step = 1 << (inputs.levels - 1)
    while step >= 1:
        t = jnp.where(_predicate(_take(inputs.pad, t + (step - 1)), w, b, down), t, t + step)
        step //= 2
    t = jnp.where(zero, jnp.where(b > 0, 0, n), jnp.minimum(t, n))
    t = lax.cond(jnp.all(ok), lambda: t, lambda: full_search(inputs.xs, w, b))
    return t, down


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
) -> BatchGradient:
    """:func:`shallowflow.network.batch_loss_and_gradient` for :class:`OneDimInputs`: a (R, p),
    Wt (2, R, p) = (w, b), labels (n,) or (R, n) in the original order; ``weights`` a scalar or
    (n, 1)/(n, R) in the original order. ReLU only, no persistent mask (ValueError otherwise)."""
    if activation.leak != 0.0:
        raise ValueError("onedim: needs ReLU (leak 0); the leaky ReLU uses the dense path")
    if mask is not None:
        raise ValueError("onedim: not with the persistent activity mask (activity_mask)")
    R, p = a.shape
    n = inputs.n
    w, b = Wt[0], Wt[1]
    xs = inputs.xs  # (Rd, n)
    # materialised once: without the barrier the search is recomputed in each consumer fusion
    t, down = lax.optimization_barrier(boundaries(inputs, w, b))
    bucket = jnp.where(down, t + (n + 1), t)  # up neurons in 0..n, down ones in n+1..2n+1

    # outputs: bucket sums of a_j (w_j, b_j), prefix sums (up) and suffix sums (down)
    v = jnp.stack([a * w, a * b], axis=-1).reshape(R * p, 2)
    seg = (jnp.arange(R, dtype=jnp.int32)[:, None] * (2 * (n + 1)) + bucket).reshape(R * p)
    sums = jax.ops.segment_sum(v, seg, num_segments=R * 2 * (n + 1)).reshape(R, 2, n + 1, 2)
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
    G = jnp.stack([g * xs, g], axis=-1)  # (R, n, 2)
    zero = jnp.zeros((R, 1, 2), G.dtype)
    suffix = jnp.concatenate([jnp.cumsum(G[:, ::-1], axis=1)[:, ::-1], zero], axis=1)
    prefix = jnp.concatenate([zero, jnp.cumsum(G, axis=1)], axis=1)
    table = jnp.concatenate([suffix, prefix], axis=1)  # (R, 2 (n + 1), 2), indexed by bucket
    S = jnp.take_along_axis(table, bucket[..., None], axis=1)  # (R, p, 2)
    M = jnp.moveaxis(S, -1, 0)  # (2, R, p): M_j = (S1_j, S0_j)
    grad_Wt = kappa * a[None] * M
    grad_a = kappa * (w * M[0] + b * M[1])

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
