"""Dead neurons leave the step loop (docs/math.md §0.3, "Dead neurons leave the step loop").

A ReLU neuron inactive on every sample, <w_j, x_i> <= 0 for all i, has a zero gradient
(sigma(z) = sigma'(z) = 0 there, sigma'(0) = 0 included), so GD leaves it exactly where it is:
w_j - eta * 0 = w_j. It is dead for good, and it adds exact zeros to the outputs. Between two
record points the compiled segment therefore steps only the neurons ``idx`` (R, w) of each run
that were live at the segment's start, padded with dead ones to a width w from a short ladder
(:func:`widths`), and writes them back before the probes read the full network. Only the order
in which the outputs' sums over neurons add their terms changes, so results agree to rounding,
not bit for bit; the choice depends only on the data and the configuration (never on timings),
so a given batch always gives the same numbers.

The driver looks for dead neurons before each compiled segment, and segments end at record
points and at the steps of a schedule of their own (:func:`check_steps`: the powers of two by
default, or every ``every`` steps), so a run recorded only at its start and end narrows too. A
check step that is no record point only ends a segment: nothing is measured there, and the
trajectory is the one without it.

A parametrisation offers this when its step keeps a zero-gradient neuron's coordinates exactly
(``Parametrisation.dead_stay_put``); with a leaky ReLU no neuron is dead.
"""

from __future__ import annotations

import math
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

SkipDead = Literal["auto", "on", "off"]
MIN_PAIR_STEPS = 5e9  # "auto": narrow the step only when it saves this many (sample, neuron)
# steps, about 5 s of dense stepping on one core (bench/RESULTS.md), more than a recompilation


def widths(p: int) -> list[int]:
    """The widths the step may narrow to, decreasing from p to 1: ceil(f p) for f = 1, 3/4,
    1/2, 3/8, 1/4, ... (steps of 4/3 and 3/2: few distinct shapes, so few compilations)."""
    out, j = [p], 0
    while out[-1] > 1:
        for c in (1.0, 0.75):
            w = max(1, math.ceil(c * p / 2**j))
            if w < out[-1]:
                out.append(w)
        j += 1
    return out


def choose(live: np.ndarray, width: int, steps_left: int, n: int,
           setting: SkipDead) -> np.ndarray | None:
    """Neurons to step from now on, ``idx`` (R, w), or None to keep the current ``width``.

    ``live`` (R, p): the neurons active on some sample. The new width w is the smallest of
    :func:`widths` holding every run's live neurons; it is taken when it is narrower than
    ``width`` and ("auto") saves at least MIN_PAIR_STEPS sample-neuron steps over the
    ``steps_left`` steps of the R runs on ``n`` samples ("on": whenever narrower). Each run's
    row holds its live neurons and, as padding, its first dead ones, in increasing index
    order."""
    R, p = live.shape
    need = int(live.sum(axis=1).max())
    w = min(v for v in widths(p) if v >= need) if need > 0 else widths(p)[-1]
    if w >= width or not worth(setting, R, n, steps_left, width, w):
        return None
    order = np.argsort(~live, axis=1, kind="stable")[:, :w]  # live first, each group in order
    return np.sort(order, axis=1).astype(np.int32)


def check_steps(total: int, every: int | None = None) -> np.ndarray:
    """The steps in (0, ``total``) after which the driver looks for dead neurons again, besides
    the record points that end its segments: every ``every``-th step, or (None) the powers of
    two 1, 2, 4, ..., log2(total) checks in all, each costing about one step (a gradient to list
    the live neurons) and one more segment. A neuron that dies at step s then leaves the step
    loop by step 2s at the latest."""
    if every is None:
        marks = 2 ** np.arange(max(int(total), 1).bit_length(), dtype=np.int64)
    else:
        marks = np.arange(every, max(int(total), 0), every, dtype=np.int64)
    return marks[(marks > 0) & (marks < total)]


def worth(setting: SkipDead, R: int, n: int, steps_left: int, width: int, w: int) -> bool:
    """Whether narrowing the step of R runs on n samples from ``width`` to ``w`` neurons for
    ``steps_left`` steps is done: "on" always, "auto" when it saves MIN_PAIR_STEPS."""
    if setting == "off":
        return False
    return setting == "on" or float(steps_left) * R * n * (width - w) >= MIN_PAIR_STEPS


def gather(tree, idx: Array):
    """The neurons ``idx`` (R, w) of engine leaves (R, p) and (k, R, p) (neuron axis last)."""

    def take(x: Array) -> Array:
        return jnp.take_along_axis(x, idx if x.ndim == 2 else idx[None], axis=-1)

    return jax.tree_util.tree_map(take, tree)


def scatter(full, part, idx: Array):
    """``full`` with the neurons ``idx`` (R, w) replaced by ``part`` (the inverse of
    :func:`gather` on those neurons)."""
    rows = jnp.arange(idx.shape[0])[:, None]

    def put(f: Array, v: Array) -> Array:
        return f.at[rows, idx].set(v) if f.ndim == 2 else f.at[:, rows, idx].set(v)

    return jax.tree_util.tree_map(put, full, part)
