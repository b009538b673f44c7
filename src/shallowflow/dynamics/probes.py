"""Quantities recorded along a trajectory, computed inside the compiled loop (docs/math.md §0.3, §1.4).

Each probe maps a :class:`ProbeContext` (one run at one record point) to an array whose trailing
dimensions are named by ``Probe.dims``; the engine stacks them to (run, time, *dims).

    loss            L(theta)
    pl_curvature    mu = T ||grad L||^2 / L = -(dL/dt)/L      (local PL curvature, docs/math.md §1.4(1));
                    the gradient is over the trained parameters only
    balance_drift   max_j |(a_j^2 - ||w_j||^2) - (a_j(0)^2 - ||w_j(0)||^2)|  (0 for gradient flow,
                    docs/math.md §0.3; O(step) for GD)
    neuron_norm     ||w_j||
    a               a_j (second-layer weights)
    active_count    #{i : <w_j, x_i> > 0}
    dead_neurons    #{j : active_count_j = 0}
    param_norm_sq   ||theta||^2 = sum_j a_j^2 + ||w_j||^2   (docs/math.md §3.5)
    log_norm        log ||w_j|| (exact in the log-norm engine, docs/math.md §3.2)
    balance_log_drift  max_j |log(|a_j|/||w_j||) - (value at 0)|: relative balancedness
    output          h(x_i)   (optional)
    active          pair activity (sample, neuron)   (optional)
    W               full hidden weights (optional snapshots; ``record.snapshots``)

MMV's quantities (docs/math.md §4.4, exact definitions in §4.5; optional), with the sets
V_+/- = {j : a_j > 0 / a_j < 0} at the record point and the class directions x_+/- = sum_{y_i = +-1} x_i:

    mmv_cos_plus    (min_{j in V_+} cos(w_j, x_+), cos(w_bar_+, x_+), max_{j in V_+} cos(w_j, x_+)),
                    w_bar_+ = sum_{j in V_+} w_j; trailing dimension ``band`` = (min, mean, max)
    mmv_cos_minus   the same with V_- and x_-
    mmv_cone_counts #{j in S_+ ... }: neurons per cone (other, S_+, S_-, S_dead) (dimension ``cone``)
    stable_rank     ||W||_F^2 / ||W||_2^2 of the first layer W (p x d)
    spectral_norm_sq  ||W||_2^2 (largest eigenvalue of the smaller Gram matrix)
    mmv_norm_change       sum_j |d||w_j||/dt|,  dW/dt = -T grad_W L   (App. A.5 "changes")
    mmv_direction_change  sum_j ||d(w_j/||w_j||)/dt||

Teacher-student order parameters on the population (docs/math.md §11.9; optional, data.kind
``gaussian_teacher``; :mod:`shallowflow.dynamics.teacher_probes`):

    overlap           R = W Sigma V^T (neuron, teacher)
    student_overlap   Q = W Sigma W^T (neuron, partner)
    overlap_cos       cos_Sigma(w_j, v_k) (neuron, teacher)
    teacher_distance  distance to the nearest embedded teacher, up to permutation
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import jax.numpy as jnp
from jax import Array

from shallowflow.dynamics import teacher_probes as tp
from shallowflow.dynamics.cones import CONE_NAMES
from shallowflow.model.inputs import PopulationInputs
from shallowflow.model.network import BatchGradient

CLASSES, PERP_GRAM, TEACHER = "classes", "perp_gram", "teacher"
"""Batch constants a probe may need (``Probe.needs``), computed once per batch only when a
recorded probe needs them (:class:`~shallowflow.dynamics.state.Reference`)."""

DIM_LABELS: dict[str, tuple[str, ...]] = {"band": ("min", "mean", "max"), "cone": CONE_NAMES}
"""Trailing probe dimensions of fixed size and their coordinate labels."""


class ProbeContext(NamedTuple):
    """Everything a probe may read: R runs at one record point, in plain units and the engine
    layout (a (R, p), Wt (d, R, p); see :mod:`shallowflow.model.network`). Norms include the constant
    part of w_j outside the data span when the engine works in the span (then Wt holds the
    in-span coordinates, ``perp_sq`` ||w_perp||^2 and ``perp_gram`` the out-of-span parts' Gram
    matrix). ``class_dirs``, ``label_sign`` and ``perp_gram`` are None unless a recorded probe
    needs them (``Probe.needs``; ``perp_gram`` also without an out-of-span part)."""

    a: Array
    Wt: Array
    norm_sq: Array  # ||w_j||^2, (R, p)
    log_norm: Array  # log ||w_j||, (R, p) (exact also when ||w_j|| underflows)
    log_abs_a: Array  # log |a_j|, (R, p)
    grad_norm_sq: Array  # ||grad L||^2 over the trained parameters, (R,)
    grad: BatchGradient
    balance0: Array  # a_j(0)^2 - ||w_j(0)||^2
    log_ratio0: Array  # log|a_j(0)| - log||w_j(0)||
    time_scale: float
    kappa: float = 1.0
    perp_sq: Array | None = None  # ||w_perp||^2 outside the data span (0 without it), (R, p)
    class_dirs: Array | None = None  # x_+, x_- in the engine basis, (d, R, 2)
    label_sign: Array | None = None  # sign(y_i), (n, R, 1)
    perp_gram: Array | None = None  # <w_perp_k, w_perp_j> of the out-of-span parts, (p, R, p)
    teacher: PopulationInputs | None = None  # the population's teacher and covariance factor


def _active_count(c: ProbeContext) -> Array:
    return jnp.sum(c.grad.active, axis=0)


@dataclass(frozen=True)
class Probe:
    """A named recorded quantity: its function (context -> array with leading run axis), the names
    of its trailing dimensions and its meaning."""

    name: str
    dims: tuple[str, ...]
    description: str
    fn: Callable[[ProbeContext], Array]
    needs: frozenset[str] = frozenset()  # batch constants it reads (CLASSES, PERP_GRAM, TEACHER)
    samples: bool = False  # reads the training samples (none on the population, docs/math.md §11)


# ------------------------------------------------------------------------- MMV (docs/math.md §4.5)
def _nan_where(ok: Array, x: Array) -> Array:
    return jnp.where(ok, x, jnp.nan)


def _alignment(c: ProbeContext, k: int, sign: float) -> Array:
    """(min_{j in V} cos(w_j, x), cos(w_bar, x), max_{j in V} cos(w_j, x)), (R, 3), for
    V = {j : sign a_j > 0} and x = column k of the class directions, w_bar = sum_{j in V} w_j
    (docs/math.md §4.5; :func:`shallowflow.theory.alignment_measures.alignment_cosines`). In the span
    basis <w_j, x> = <Wt_j, x> (x lies in the span), ||w_j||^2 = ``norm_sq`` and ||w_bar||^2 =
    ||sum_V Wt_j||^2 + sum_{k, j in V} <w_perp_k, w_perp_j>. NaN where V is empty or a vector is 0."""
    x = c.class_dirs[:, :, k]  # (d, R)
    x_norm = jnp.sqrt(jnp.sum(x**2, axis=0))  # (R,)
    member = sign * c.a > 0  # (R, p)
    norm = jnp.sqrt(c.norm_sq)
    cos = jnp.einsum("drp,dr->rp", c.Wt, x) / (norm * x_norm[:, None])
    valid = member & (norm > 0) & (x_norm > 0)[:, None]
    lo = jnp.min(jnp.where(valid, cos, jnp.inf), axis=1)
    hi = jnp.max(jnp.where(valid, cos, -jnp.inf), axis=1)
    m = member.astype(c.Wt.dtype)
    w_bar = jnp.einsum("drp,rp->dr", c.Wt, m)
    bar_sq = jnp.sum(w_bar**2, axis=0)
    if c.perp_gram is not None:
        bar_sq = bar_sq + jnp.einsum("krj,rk,rj->r", c.perp_gram, m, m)
    mean = jnp.sum(w_bar * x, axis=0) / jnp.sqrt(bar_sq * x_norm**2)
    ok = (bar_sq > 0) & (x_norm > 0)
    return jnp.stack([_nan_where(jnp.isfinite(lo), lo), _nan_where(ok, mean),
                      _nan_where(jnp.isfinite(hi), hi)], axis=-1)


def _cone_counts(c: ProbeContext) -> Array:
    """Neurons per cone (other, S_+, S_-, S_dead), (R, 4), from the activity A_ij = 1{<w_j, x_i> > 0}
    (the persistent mask included): S_+ iff A_ij = 1{y_i > 0} for all i, S_- iff A_ij = 1{y_i < 0}
    for all i, S_dead iff no A_ij; dead takes precedence, then S_+ (docs/math.md §4.2;
    :func:`shallowflow.theory.alignment.cone_membership`)."""
    A = c.grad.active  # (n, R, p)
    dead = ~jnp.any(A, axis=0)
    plus = jnp.all(A == (c.label_sign > 0), axis=0) & ~dead
    minus = jnp.all(A == (c.label_sign < 0), axis=0) & ~dead & ~plus
    other = ~(dead | plus | minus)
    return jnp.stack([jnp.sum(s, axis=1) for s in (other, plus, minus, dead)], axis=-1)


def _gram_top(c: ProbeContext) -> Array:
    """||W||_2^2, the largest eigenvalue of the smaller Gram matrix of W (p x d) per run: W^T W
    (d x d) when d < p and W has no out-of-span part, else W W^T (p x p) = W_r W_r^T + W_perp
    W_perp^T (the cross terms vanish: W_perp Q = 0) (docs/math.md §4.5)."""
    d, _, p = c.Wt.shape
    if c.perp_gram is None and d < p:
        G = jnp.einsum("drj,erj->rde", c.Wt, c.Wt)
    else:
        G = jnp.einsum("drj,drk->rjk", c.Wt, c.Wt)
        if c.perp_gram is not None:
            G = G + jnp.transpose(c.perp_gram, (1, 0, 2))
    return jnp.linalg.eigvalsh(G)[:, -1]


def _stable_rank(c: ProbeContext) -> Array:
    """||W||_F^2 / ||W||_2^2 with ||W||_F^2 = sum_j ||w_j||^2; NaN where W = 0 (docs/math.md §4.5)."""
    top = _gram_top(c)
    return _nan_where(top > 0, jnp.sum(c.norm_sq, axis=1) / top)


def _changes(c: ProbeContext) -> tuple[Array, Array]:
    """The A.5 "changes" of the flow at the record point, (R,) each (docs/math.md §4.5):

        sum_j |d||w_j||/dt| = sum_j |<g_j, w_j>| / ||w_j||,
        sum_j ||d(w_j/||w_j||)/dt|| = sum_j ||g_j - <g_j, u_j> u_j|| / ||w_j||,   u_j = w_j/||w_j||,

    with g_j = dw_j/dt = -T kappa a_j M_j = -T grad_{w_j} L (the first layer's rate is 1 for
    every train.second_layer_rate) in plain units, from the full-batch gradient; neurons with
    w_j = 0 left out. In the span basis u_j has the out-of-span part w_perp/||w_j|| and g_j none,
    so the tangential norm adds <g_j, u_j>^2 ||w_perp||^2/||w_j||^2."""
    g = -c.time_scale * c.kappa * c.a[None] * c.grad.M  # (d, R, p)
    ok = c.norm_sq > 0
    norm = jnp.sqrt(jnp.where(ok, c.norm_sq, 1.0))
    u = c.Wt / norm[None]
    radial = jnp.sum(g * u, axis=0)
    tangent_sq = jnp.sum((g - radial[None] * u) ** 2, axis=0) + radial**2 * c.perp_sq / norm**2
    norms = jnp.sum(jnp.where(ok, jnp.abs(radial), 0.0), axis=1)
    directions = jnp.sum(jnp.where(ok, jnp.sqrt(tangent_sq) / norm, 0.0), axis=1)
    return norms, directions


_ALL = [
    Probe("loss", (), "training loss L", lambda c: c.grad.loss),
    Probe(
        "pl_curvature", (), "local PL curvature T ||grad L||^2 / L",
        lambda c: c.time_scale * c.grad_norm_sq / c.grad.loss,
    ),
    Probe(
        "balance_drift", (), "max_j |a_j^2 - ||w_j||^2 - (same at t=0)|",
        lambda c: jnp.max(jnp.abs(c.a**2 - c.norm_sq - c.balance0), axis=1),
    ),
    Probe(
        "balance_log_drift", (), "max_j |log(|a_j| / ||w_j||) - (same at t=0)| (relative)",
        lambda c: jnp.max(jnp.abs(c.log_abs_a - c.log_norm - c.log_ratio0), axis=1),
    ),
    Probe("neuron_norm", ("neuron",), "||w_j||", lambda c: jnp.sqrt(c.norm_sq)),
    Probe("log_norm", ("neuron",), "log ||w_j||", lambda c: c.log_norm),
    Probe("a", ("neuron",), "second-layer weight a_j", lambda c: c.a),
    Probe("active_count", ("neuron",), "#samples with <w_j, x_i> > 0", _active_count,
          samples=True),
    Probe(
        "dead_neurons", (), "#neurons active on no sample",
        lambda c: jnp.sum(_active_count(c) == 0, axis=1), samples=True,
    ),
    Probe(
        "param_norm_sq", (), "||theta||^2 = sum a_j^2 + ||W||_F^2",
        lambda c: jnp.sum(c.a**2 + c.norm_sq, axis=1),
    ),
    Probe("output", ("sample",), "network output h(x_i)", lambda c: c.grad.output.T, samples=True),
    Probe("active", ("sample", "neuron"), "pair activity <w_j, x_i> > 0 (mask included)",
          lambda c: jnp.transpose(c.grad.active, (1, 0, 2)), samples=True),
    Probe("W", ("neuron", "dim"), "hidden weights (snapshot)",
          lambda c: jnp.transpose(c.Wt, (1, 2, 0))),
    Probe("mmv_cos_plus", ("band",),
          "(min over V_+ of cos(w_j, x_+), cos(w_bar_+, x_+), max over V_+), V_+ = {a_j > 0}",
          lambda c: _alignment(c, 0, 1.0), frozenset({CLASSES, PERP_GRAM}), samples=True),
    Probe("mmv_cos_minus", ("band",),
          "(min over V_- of cos(w_j, x_-), cos(w_bar_-, x_-), max over V_-), V_- = {a_j < 0}",
          lambda c: _alignment(c, 1, -1.0), frozenset({CLASSES, PERP_GRAM}), samples=True),
    Probe("mmv_cone_counts", ("cone",), "#neurons in each cone (other, S_+, S_-, S_dead)",
          _cone_counts, frozenset({CLASSES}), samples=True),
    Probe("stable_rank", (), "stable rank ||W||_F^2 / ||W||_2^2 of the first layer", _stable_rank,
          frozenset({PERP_GRAM})),
    Probe("spectral_norm_sq", (), "||W||_2^2 of the first layer", _gram_top,
          frozenset({PERP_GRAM})),
    Probe("mmv_norm_change", (), "sum_j |d||w_j||/dt| (flow, dW/dt = -T grad_W L)",
          lambda c: _changes(c)[0]),
    Probe("mmv_direction_change", (), "sum_j ||d(w_j/||w_j||)/dt|| (flow)",
          lambda c: _changes(c)[1]),
    Probe("overlap", ("neuron", "teacher"), "student-teacher overlap R = W Sigma V^T",
          lambda c: tp.overlap(c.Wt, c.teacher), frozenset({TEACHER})),
    Probe("student_overlap", ("neuron", "partner"), "student overlap Q = W Sigma W^T",
          lambda c: tp.student_overlap(c.Wt, c.teacher), frozenset({TEACHER})),
    Probe("overlap_cos", ("neuron", "teacher"), "cosine of w_j and v_k (Sigma's inner product)",
          lambda c: tp.overlap_cos(c.Wt, c.teacher), frozenset({TEACHER})),
    Probe("teacher_distance", (), "distance to the nearest embedded teacher, up to permutation",
          lambda c: tp.teacher_distance(c.a, c.Wt, c.teacher, c.kappa), frozenset({TEACHER})),
]

PROBES: dict[str, Probe] = {p.name: p for p in _ALL}
DEFAULT_PROBES: tuple[str, ...] = (
    "loss", "pl_curvature", "balance_drift", "neuron_norm", "a", "active_count", "dead_neurons",
    "param_norm_sq",
)
