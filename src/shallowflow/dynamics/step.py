"""The compiled step and segment: batched gradient descent with probes recorded inside the loop
(docs/math.md §0.3).

One step of run r is

    theta <- theta - eta * T * grad L(theta)          (one step = eta units of flow time)

(the second layer at r times that rate with ``EngineConfig.second_layer_rate`` = r, docs/math.md §4.5)

with full-batch gradients (GD) or an unbiased minibatch estimate (SGD: B samples drawn without
replacement per run and step, sample weights n/B), taken in the coordinates of the configured
:class:`~shallowflow.dynamics.parametrisation.Parametrisation`. The R runs are advanced together
in the layout of :mod:`shallowflow.model.network` (a (R, p), Wt (d, R, p)), so with shared data each
step is two GEMMs over all R p neurons (:mod:`shallowflow.model.inputs`).

A segment is a loop over its record points (as many iterations as it has points, whatever its
compiled length), each advancing a ``lax.while_loop`` of steps to the next record step, then
evaluating the probes; early stop and divergence follow
:mod:`~shallowflow.dynamics.state`. ``activity_mask`` keeps a persistent mask
alive &= (<w_j, x_i> > 0), so a pair that became inactive never revives by rounding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array, lax

from shallowflow.dynamics import live
from shallowflow.dynamics.engine_config import EngineConfig
from shallowflow.dynamics.gradient import batch_loss_and_gradient
from shallowflow.dynamics.parametrisation import Coordinates
from shallowflow.dynamics.probes import PROBES, TEACHER, ProbeContext
from shallowflow.dynamics.state import (
    DIVERGED,
    GRADIENT,
    RUNNING,
    EngineState,
    Reference,
    Stop,
    freeze,
    run_axis,
    select,
)
from shallowflow.model import onedim
from shallowflow.model.inputs import (
    DiagonalInputs,
    Inputs,
    OneDimInputs,
    PerRunInputs,
    PopulationInputs,
    SharedInputs,
)
from shallowflow.model.network import BatchGradient


def _gradient(cfg: EngineConfig, st: EngineState, inputs: Inputs, y: Array, **kw):
    a, Wt = cfg.coordinates.weights(st.params)
    return batch_loss_and_gradient(a, Wt, inputs, y, cfg.kappa, cfg.activation, cfg.loss,
                                   mask=st.mask, **kw)


def _minibatch(cfg: EngineConfig, inputs: Inputs, y: Array, keys: Array, step: Array):
    """Per-run minibatches (without replacement) as PerRunInputs, labels and weight n/B."""
    if isinstance(inputs, DiagonalInputs):
        raise ValueError("batch_size: SGD is not available with diagonal (span basis) inputs")
    if isinstance(inputs, OneDimInputs):
        raise ValueError("batch_size: SGD is not available on the one-dimensional path (onedim)")
    if isinstance(inputs, PopulationInputs):
        raise ValueError("batch_size: SGD has no minibatch on the population (no samples)")
    n, B = inputs.n, cfg.batch_size
    idx = jax.vmap(lambda k: jax.random.choice(jax.random.fold_in(k, step), n, (B,),
                                               replace=False))(keys)  # (R, B)
    if isinstance(inputs, SharedInputs):
        Xb, yb = inputs.X[idx], y[idx]
    else:
        Xb = jnp.take_along_axis(inputs.X, idx[:, :, None], axis=1)
        yb = jnp.take_along_axis(y, idx, axis=1)
    return PerRunInputs(Xb), yb, n / B


def _hint(cfg: EngineConfig, params: Coordinates, inputs: Inputs) -> Array | None:
    """The one-dimensional path's search start for these parameters (:func:`shallowflow.model.onedim.
    cells`), None on the other paths. Computed in the pass that updates the parameters and carried
    to the next step, it keeps a division out of that step's gathers (docs/math.md §10)."""
    if not isinstance(inputs, OneDimInputs):
        return None
    return onedim.cells(inputs, cfg.coordinates.weights(params)[1])


def _step(cfg: EngineConfig, st: EngineState, step: Array, inputs: Inputs, y: Array,
          stop: Stop, keys: Array, hint: Array | None) -> tuple[EngineState, Array | None]:
    """One GD/SGD step of all runs, with early stop and divergence handling; ``hint`` and the
    returned one are :func:`_hint` of the parameters before and after the step."""
    if cfg.batch_size is None:
        bg = _gradient(cfg, st, inputs, y, hint=hint)
        below = bg.loss < stop.loss
    else:
        Xb, yb, weight = _minibatch(cfg, inputs, y, keys, step)
        bg = _gradient(cfg, st, Xb, yb, weights=weight)
        below = jnp.zeros_like(bg.loss, dtype=bool)
    rate = cfg.lr * cfg.time_scale
    new = cfg.coordinates.update(st.params, bg, rate, cfg.kappa, cfg.layer_rate,
                                 cfg.tied_balance)
    # L catches a blow-up long before the parameters overflow (a per-run scalar: free); the rare
    # non-finite parameter that does not reach L is caught at the next record point (_guard)
    code, event = freeze(st, below, ~jnp.isfinite(bg.loss), step)
    move = code == RUNNING
    mask = None if st.mask is None else jnp.where(move[None, :, None], bg.active, st.mask)
    params = select(move, new, st.params)
    st = st._replace(params=params, code=code, event_step=event, mask=mask)
    return st, _hint(cfg, params, inputs)


def probe_context(cfg: EngineConfig, params: Coordinates, bg: BatchGradient | None,
                  ref: Reference) -> ProbeContext:
    """Probe context in plain units: ||w_j||^2 = ||Wt_j||^2 + ||w_perp||^2 (the constant
    out-of-span part included). The initial balance a_j^2 - ||w_j||^2 and log ratio
    log |a_j| - log ||w_j|| are evaluated by the same code, so that drifts are exactly 0 at t = 0."""
    v = cfg.coordinates.view(params, bg, ref.perp_sq, ref.log_perp_sq, cfg.kappa, cfg.layer_rate)
    norm_sq = jnp.sum(v.Wt**2, axis=0) + ref.perp_sq
    ctx = ProbeContext(v.a, v.Wt, norm_sq, v.log_norm, v.log_abs_a, v.grad_norm_sq, bg, None, None,
                       cfg.time_scale, cfg.kappa, ref.perp_sq, ref.class_dirs, ref.label_sign,
                       ref.perp_gram)
    if params is ref.params0:
        return ctx._replace(balance0=v.a**2 - norm_sq, log_ratio0=v.log_abs_a - v.log_norm)
    c0 = probe_context(cfg, ref.params0, None, ref)
    return ctx._replace(balance0=c0.a**2 - c0.norm_sq, log_ratio0=c0.log_abs_a - c0.log_norm)


def _record(cfg: EngineConfig, st: EngineState, step: Array, inputs: Inputs, y: Array,
            stop: Stop, ref: Reference) -> tuple[EngineState, dict, Array]:
    """Full-batch probes of all runs, the gradient-norm stop test and, for SGD, the early-stop
    test on the full loss (docs/math.md §0.3)."""
    bg = _gradient(cfg, st, inputs, y)
    never = jnp.zeros_like(bg.loss, dtype=bool)
    if cfg.batch_size is not None:
        code, event = freeze(st, bg.loss < stop.loss, never, step)
        st = st._replace(code=code, event_step=event)
    ctx = probe_context(cfg, st.params, bg, ref)
    if TEACHER in cfg.needs:  # the population's teacher: the inputs themselves (one for all runs)
        if not isinstance(inputs, PopulationInputs):
            raise ValueError("probes: the teacher probes need the population's teacher "
                             "(data.kind 'gaussian_teacher')")
        ctx = ctx._replace(teacher=inputs)
    flat = (st.code == RUNNING) & (ctx.grad_norm_sq < stop.grad_sq) & (step > 0)
    st = st._replace(code=jnp.where(flat, GRADIENT, st.code),
                     event_step=jnp.where(flat, step, st.event_step))
    return st, {name: PROBES[name].fn(ctx) for name in cfg.probes}, bg.loss


def live_neurons(cfg: EngineConfig, st: EngineState, inputs: Inputs, y: Array) -> Array:
    """(R, p): the neurons active on some sample (and inside the persistent mask); the others
    are dead for good (:mod:`~shallowflow.dynamics.live`)."""
    return jnp.any(_gradient(cfg, st, inputs, y).active, axis=0)


def _guard(st: EngineState, step: Array) -> EngineState:
    """At a record point: flag running runs whose parameters are non-finite, and put every
    diverged run back to ``st.backup``, its parameters at the last record point where they and
    their loss were finite. Runs that diverged earlier already hold them."""

    def finite(x: Array) -> Array:
        ax = run_axis(x)
        return jnp.all(jnp.isfinite(x), axis=tuple(i for i in range(x.ndim) if i != ax))

    ok = jax.tree_util.tree_reduce(jnp.logical_and, jax.tree_util.tree_map(finite, st.params))
    code, event = freeze(st, jnp.zeros_like(ok), ~ok, step)
    params = select(code == DIVERGED, st.backup, st.params)
    return st._replace(params=params, code=code, event_step=event)


def segment_body(cfg: EngineConfig, step0: Array, state: EngineState, targets: Array,
                 count: Array, measured: Array, inputs: Inputs, y: Array, stop: Stop,
                 keys: Array, ref: Reference, neurons: Array | None = None, unroll: int = 1):
    """Advance all runs through the steps ``targets[:count]``, measuring at each record point,
    where ``measured`` (bool, one per target) is true (the rest of ``targets`` is padding to the
    compiled length: no steps and no probes there; their records are zeros, which the caller
    drops). A target not measured is a step where the driver looks for dead neurons
    (:mod:`~shallowflow.dynamics.live`): the runs step up to it and nothing else happens there
    (no probes, stop tests or divergence guard; its record slot stays zero), so the trajectory is
    the one without it, bit for bit. ``neurons`` (R, w): step only these neurons of
    each run, the others being dead (:mod:`~shallowflow.dynamics.live`); the probes read the
    whole network. ``unroll`` steps per loop iteration (then single steps to the target): on
    small problems each loop iteration's fixed cost (it copies the loop state) is comparable to
    a step."""

    def measure(st: EngineState, step: Array):
        return _record(cfg, st, step, inputs, y, stop, ref)

    def moving(st: EngineState) -> Array:
        """Whether a run still steps: a batch (or block) whose runs have all stopped or diverged
        skips its remaining steps (they would leave every parameter as it is)."""
        return jnp.any(st.code == RUNNING)

    def measured_point(st: EngineState, step: Array):
        st, rec, loss = measure(_guard(st, step), step)
        # the next backup: these parameters if their loss is finite; else keep the older ones
        return st._replace(backup=select(jnp.isfinite(loss), st.params, st.backup)), rec

    def advance(carry, target, record):
        def body(c):
            step, st, hint = c
            return step + 1, *_step(cfg, st, step, inputs, y, stop, keys, hint)

        def body_unrolled(c):
            for _ in range(unroll):
                c = body(c)
            return c

        step, full = carry
        st = full._replace(backup=None)  # not carried through the step loops
        if neurons is not None:
            st = st._replace(params=live.gather(st.params, neurons),
                             mask=live.gather(st.mask, neurons))
        c = (step, st, _hint(cfg, st.params, inputs))
        if unroll > 1:
            c = lax.while_loop(lambda c: (c[0] + unroll <= target) & moving(c[1]), body_unrolled, c)
        _, st, _ = lax.while_loop(lambda c: (c[0] < target) & moving(c[1]), body, c)
        step = jnp.maximum(step, target)  # once no run moves, the steps left change nothing
        if neurons is not None:
            st = st._replace(params=live.scatter(full.params, st.params, neurons),
                             mask=live.scatter(full.mask, st.mask, neurons))
        st, rec = lax.cond(record, measured_point, passed, st._replace(backup=full.backup), step)
        return (step, st), rec

    # the records of the first `count` targets, in a loop of that many iterations: the padding
    # slots (targets[count:]) cost nothing, and their records stay zero (the caller drops them)
    shapes = jax.eval_shape(measure, state, step0)[1]
    slots = jax.tree_util.tree_map(lambda s: jnp.zeros((targets.shape[0], *s.shape), s.dtype),
                                   shapes)

    def passed(st: EngineState, step: Array):  # a dead-neuron check point: no record
        return st, jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)

    def record_point(index, carry):
        step, st, out = carry
        (step, st), rec = advance((step, st), targets[index], measured[index])
        return step, st, jax.tree_util.tree_map(lambda o, r: o.at[index].set(r), out, rec)

    step, state, records = lax.fori_loop(0, count, record_point, (step0, state, slots))
    return step, state, records
