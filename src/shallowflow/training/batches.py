"""From validated specs to prepared batches, and from an engine result to a Dataset (training a
prepared batch is :mod:`shallowflow.training.batch_run`; the training entry point that groups
runs into batches is :mod:`shallowflow.training.entry`).

A *run* is identified by (experiment, run index r). Its randomness comes only from keys derived
from (seed, r), one stream per use: with run key k_r = fold_in(K(seed), r), the data key is
fold_in(k'_r, 0) with k'_r = fold_in(K(data seed), r) for per-run data (r = 0 for shared data),
the init key fold_in(k_r, 1) and the SGD key fold_in(k_r, 2). (In JAX, split(k)[i] equals
fold_in(k, i), so a generator splitting the data key never reproduces the init key.) A run
therefore gives the same numbers alone or inside any batch.

Runs whose specs differ only in *batchable* fields (:data:`BATCHABLE`: seed, run index, init
scale, stop_loss, data seed, explicit record points, name) share array shapes and compiled code,
and are trained together in one vmapped loop.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from shallowflow.config import BATCHABLE, DIGEST, Experiment
from shallowflow.data.validate import validate_dataset
from shallowflow.dynamics import (
    EngineConfig,
    EngineResult,
    record_schedule,
)
from shallowflow.dynamics.probes import DIM_LABELS, PROBES
from shallowflow.model.activations import Activation
from shallowflow.model.inputs import PopulationInputs
from shallowflow.model.losses import Loss
from shallowflow.model.network import Network, add_bias_column
from shallowflow.model.run_attrs import RunAttrs
from shallowflow.precision import enable_full_precision, float64

DATA_STREAM, INIT_STREAM, SGD_STREAM = 0, 1, 2  # key streams of a run (module docstring)
DATA_VARIABLES = ("X", "y", "teacher_b", "teacher_V", "covariance_chol")
"""The variables :func:`batch_data` may write: samples, or the population's teacher and factor."""


@dataclass(frozen=True)
class RunRef:
    """One run: an experiment and the index r of the run within it."""

    experiment: Experiment
    index: int


def static_signature(exp: Experiment) -> str:
    """JSON of the spec without its batchable fields: equal signatures can share one batch
    (:attr:`Experiment.signature`, computed once per experiment)."""
    return exp.signature


def engine_config(exp: Experiment, lr: float | None = None) -> EngineConfig:
    """The compile-time engine settings of an experiment (optionally at another step)."""
    probes = exp.probes
    choices = exp.choices
    return EngineConfig(
        activation=Activation(exp.model.leak),
        loss=Loss(exp.train.loss, exp.train.reduction),
        kappa=exp.kappa,
        lr=exp.train.lr if lr is None else lr,
        time_scale=exp.time_scale,
        train_second_layer=exp.train.second_layer_rate > 0,
        # r (docs/math.md §4.5): da/dt = -T r grad_a L; 0 freezes the second layer
        second_layer_rate=exp.train.second_layer_rate,
        batch_size=exp.train.batch_size,
        probes=tuple(dict.fromkeys(probes)),
        parametrisation=choices.parametrisation,
        tied_balance=exp.train.balance == "tied",
        activity_mask=choices.activity_mask,
        onedim=choices.onedim,  # train.onedim (docs/math.md §10)
    )


def schedule_of(exp: Experiment) -> np.ndarray:
    """The record steps of ``exp``: its linear and geometric schedule, its explicit steps and its
    explicit flow times rounded to steps, within [0, n_steps]."""
    total = exp.train.n_steps
    base = record_schedule(total, exp.record.every, exp.record.points)
    extra = np.concatenate([np.asarray(exp.record.at_steps, np.int64),
                            np.round(np.asarray(exp.record.at_times, float)
                                     / exp.train.lr).astype(np.int64)])
    marks = np.unique(np.concatenate([base, extra]))
    return marks[(marks >= 0) & (marks <= total)]


def batch_schedule(refs: Sequence[RunRef]) -> np.ndarray:
    """The record steps of a batch: the union of its runs' schedules (docs/architecture.md)."""
    exps = {id(r.experiment): r.experiment for r in refs}
    return np.unique(np.concatenate([schedule_of(e) for e in exps.values()]))


# ------------------------------------------------------------------------------------------ data
@jax.jit
def _stream_keys(seeds: jax.Array, indices: jax.Array, stream: jax.Array) -> jax.Array:
    """fold_in(fold_in(K(seed), index), stream) for each (seed, index) (module docstring): the
    keys of a batch in one compiled call (eagerly, each key is several one-operation programs,
    each traced, lowered and compiled or looked up)."""
    def one(seed: jax.Array, index: jax.Array) -> jax.Array:
        return jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(seed), index), stream)

    return jax.vmap(one)(seeds, indices)


def _keys(seeds: Sequence[int], indices: Sequence[int], stream: int) -> jax.Array:
    """:func:`_stream_keys` of int64 seeds (the config's range, docs/architecture.md) and indices
    (in float64 mode: :func:`prepare_batch`, :func:`dataset_of`)."""
    return _stream_keys(np.asarray(seeds, np.int64), np.asarray(indices, np.int64),
                        np.int64(stream))


def _data_keys(refs: Sequence[RunRef]) -> jax.Array:
    """The data keys (R, 2) of ``refs``: from the data seed (default: the experiment's) and the
    run index for per-run data (0 for shared data)."""
    seeds, indices = zip(*[(r.experiment.seed if r.experiment.data.seed is None
                            else r.experiment.data.seed,
                            r.index if r.experiment.data.per_run else 0) for r in refs],
                          strict=True)
    return _keys(seeds, indices, DATA_STREAM)


def dataset_of(ref: RunRef) -> tuple[np.ndarray, np.ndarray]:
    """The (X, y) of one run as the network sees it (bias column appended if configured), drawn
    in float64 (:func:`shallowflow.precision.float64`)."""
    with float64():
        X, y = _datasets([ref])
    return X[0], y[0]


_COMPILED: collections.OrderedDict[str, Callable] = collections.OrderedDict()


def _quick_jit(key: str, make: Callable[[], Callable]) -> Callable:
    """The jitted set-up function ``make()`` (data generation, initialisation), built once per
    ``key`` (the specs it depends on; jit then keeps one executable per shape), so repeated
    batches and single-run look-ups do not recompile. On CPU it is compiled without XLA's backend
    optimisations, which take ~0.5 s per random draw to compile and save microseconds here."""
    if key not in _COMPILED:
        options = ({"xla_backend_optimization_level": 0} if jax.default_backend() == "cpu"
                   else None)
        _COMPILED[key] = jax.jit(make(), compiler_options=options)
        if len(_COMPILED) > 64:
            _COMPILED.popitem(last=False)
    _COMPILED.move_to_end(key)
    return _COMPILED[key]


def _datasets(refs: Sequence[RunRef], keys: jax.Array | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The data sets of ``refs`` (same data spec up to its seed) stacked, X (R, n, d) and y
    (R, n) with the bias column if configured, generated in one compiled, vmapped call (eager
    generation would compile every random op anew for each shape); ``keys``: their data keys,
    if known (:func:`_data_keys`)."""
    exp = refs[0].experiment
    spec, bias = exp.data, exp.model.bias

    def one(k: jax.Array) -> tuple[jax.Array, jax.Array]:
        X, y = spec.generate(k)
        return (add_bias_column(X) if bias else X), y

    keys = _data_keys(refs) if keys is None else keys
    if spec.given:  # not generated: the same set for every run
        X, y = (np.asarray(v) for v in one(keys[0]))
        return (np.broadcast_to(X, (len(refs), *X.shape)),
                np.broadcast_to(y, (len(refs), *y.shape)))
    X, y = _quick_jit(f"data {spec.model_dump_json(context=DIGEST)} bias={bias}", lambda: jax.vmap(one))(keys)
    return np.asarray(X), np.asarray(y)


# ------------------------------------------------------------------------------------------ init
def _initial_networks(exp: Experiment, init_keys: jax.Array, X: np.ndarray, y: np.ndarray,
                      shared: bool) -> Network:
    """The initial networks of a batch, a (R, p) and W (R, p, d): ``exp.init.draw`` per run key
    in one compiled, vmapped call; a given network is the same for every run (not drawn). A
    scheme that reads no sample (``reads_samples``) gets data with none, so its compiled draw
    serves every sample count."""
    spec, p, R = exp.init, exp.model.width, init_keys.shape[0]
    if not spec.reads_samples:
        X, y = X[..., :0, :], y[..., :0]
    Xj, yj = jax.device_put(X), jax.device_put(y)  # jnp.asarray would compile a program each
    if spec.given:
        a, W = spec.draw(init_keys[0], p, Xj, yj)
        return Network(jnp.broadcast_to(a, (R, *a.shape)), jnp.broadcast_to(W, (R, *W.shape)))
    axis = None if shared else 0
    init_key = f"init {spec.model_dump_json(context=DIGEST)} {exp.model.model_dump_json()} shared={shared}"
    return _quick_jit(init_key, lambda: jax.vmap(lambda k, Xr, yr: spec.draw(k, p, Xr, yr),
                                                 in_axes=(0, axis, axis)))(init_keys, Xj, yj)


# ----------------------------------------------------------------------------------------- batch
@dataclass
class BatchInputs:
    """Everything the engine needs for one batch of shape-compatible runs."""

    refs: list[RunRef]
    config: EngineConfig
    net0: Network
    X: np.ndarray  # (n, d) shared or (R, n, d)
    y: np.ndarray
    stop_loss: np.ndarray
    stop_grad: np.ndarray
    keys: jax.Array
    schedule: np.ndarray
    dtype: str
    log_lambda: np.ndarray | None  # (R,) Experiment.log_lambda per run, None: scale-free schemes
    span: bool
    notes: tuple[str, ...]
    drawn: Drawn | None = None  # a float32 batch's first train.precision_certificate runs as drawn
    population: PopulationInputs | None = None  # the population (docs/math.md §11): X, y empty

    @property
    def inputs(self) -> np.ndarray | PopulationInputs:
        """What the engine trains on: the population, else the data X."""
        return self.X if self.population is None else self.population


class Drawn(NamedTuple):
    """Data and initial networks of some runs as :func:`prepare_batch` draws them, in float64
    before any cast: X (n, d) shared or (k, n, d), y, net0 (a (k, p), W (k, p, d)); on the
    population (docs/math.md §11) X (0, d), y (0,) and its teacher and covariance factor."""

    X: np.ndarray
    y: np.ndarray
    net0: Network
    population: PopulationInputs | None = None


def prepare_batch(refs: Sequence[RunRef], drawn: Drawn | None = None) -> BatchInputs:
    """Validate that ``refs`` can share a batch, then build data, initial networks and keys.
    ``drawn``: the runs' data and initial networks, already drawn (the precision certificate
    reruns a float32 batch's first runs in float64 on the very arrays that batch drew, instead
    of drawing them again: a compilation of the data and init programs per batch saved).

    Every training task starts here, in the executor's thread or worker process: the training
    entry point that switches float64 on (:func:`shallowflow.enable_full_precision`; seeds are
    int64)."""
    refs = list(refs)
    if not refs:
        raise ValueError("refs: need at least one run")
    first = refs[0].experiment
    sig = static_signature(first)
    for r in refs[1:]:
        if static_signature(r.experiment) != sig:
            raise ValueError("refs: runs in one batch must differ only in batchable fields "
                             f"{BATCHABLE}")
    enable_full_precision()
    seeds, indices = [r.experiment.seed for r in refs], [r.index for r in refs]
    drawn = _draw(refs, _keys(seeds, indices, INIT_STREAM)) if drawn is None else drawn
    X, y = drawn.X, drawn.y
    log_lambda = (None if first.log_lambda is None
                  else np.array([r.experiment.log_lambda for r in refs]))
    choices = first.choices
    dtype = first.train.dtype
    net0 = Network(np.asarray(drawn.net0.a, dtype), np.asarray(drawn.net0.W, dtype))
    stop = np.array([np.inf * -1 if r.experiment.train.stop_loss is None
                     else r.experiment.train.stop_loss for r in refs])
    stop_grad = np.array([-np.inf if r.experiment.train.stop_grad is None
                          else r.experiment.train.stop_grad for r in refs])
    k = min(first.train.precision_certificate, len(refs)) if dtype != "float64" else 0
    kept = None if not k else Drawn(X if X.ndim == 2 else X[:k].copy(),
                                    y if y.ndim == 1 else y[:k].copy(),
                                    Network(*(np.asarray(v)[:k].copy() for v in drawn.net0)),
                                    drawn.population)
    population = None if drawn.population is None else PopulationInputs(
        *(None if v is None else np.asarray(v, dtype) for v in drawn.population))
    return BatchInputs(refs, engine_config(first), net0, X.astype(dtype), y.astype(dtype), stop,
                       stop_grad, _keys(seeds, indices, SGD_STREAM), batch_schedule(refs), dtype,
                       log_lambda, choices.span, choices.notes, kept, population)


def _draw(refs: list[RunRef], init_keys: jax.Array) -> Drawn:
    """The data (validated) and initial networks of ``refs``; data shared by all runs as one
    (n, d) set."""
    first = refs[0].experiment
    data_keys = _data_keys(refs)
    if first.data.population:
        return _draw_population(refs, data_keys, init_keys)
    data_ids = {(r.experiment.data.model_dump_json(context=DIGEST), k.tobytes())
                for r, k in zip(refs, np.asarray(data_keys), strict=True)}
    shared = len(data_ids) == 1
    Xs, ys = _datasets(refs[:1], data_keys[:1]) if shared else _datasets(refs, data_keys)
    for i in range(len(Xs)):
        validate_dataset(Xs[i], ys[i], source=f"data (run {refs[i].index})")
        first.init.check_labels(ys[i], first.model.width, refs[i].index)
    X, y = (Xs[0], ys[0]) if shared else (Xs, ys)
    return Drawn(X, y, _initial_networks(first, init_keys, X, y, shared))


def _draw_population(refs: list[RunRef], data_keys: jax.Array, init_keys: jax.Array) -> Drawn:
    """The population of ``refs`` (one teacher and covariance for the batch, docs/math.md §11),
    no samples, and the initial networks. Runs whose data seeds draw different teachers (the
    'gaussian' scheme) cannot share a batch: ValueError naming the seeds."""
    first = refs[0].experiment
    d = first.input_dim
    by_key = {}
    for r, k in zip(refs, np.asarray(data_keys), strict=True):
        by_key.setdefault(k.tobytes(), (r, first.data.population_inputs(k)))
    (r0, (b, V, chol)), *others = by_key.values()
    for r, (b1, V1, _) in others:
        if not (np.array_equal(b, b1) and np.array_equal(V, V1)):
            raise ValueError(f"data.seed: runs trained in one batch share one teacher, but the "
                             f"{first.data.teacher!r} teachers of data seeds {r0.experiment.seed} "
                             f"and {r.experiment.seed} differ; give data.seed")
    X, y = np.zeros((0, d)), np.zeros(0)
    return Drawn(X, y, _initial_networks(first, init_keys, X, y, True), PopulationInputs(b, V, chol))


def to_dataset(batch: BatchInputs, result: EngineResult) -> xr.Dataset:
    """Assemble the engine result as an xarray Dataset with dims (run, time, neuron, ...)."""
    exp = batch.refs[0].experiment
    R = len(batch.refs)
    steps = result.steps
    coords: dict[str, Any] = {
        "run": np.arange(R),
        "time": steps * exp.train.lr,
        "step": ("time", steps),
        "neuron": np.arange(exp.model.width),
        "dim": np.arange(batch.X.shape[-1]),
        "seed": ("run", np.array([r.experiment.seed for r in batch.refs])),
        "run_index": ("run", np.array([r.index for r in batch.refs])),
        "log_lambda": ("run", np.full(R, np.nan) if batch.log_lambda is None else batch.log_lambda),
        "stop_loss": ("run", batch.stop_loss.astype(float)),
        "stop_grad": ("run", batch.stop_grad.astype(float)),
    }
    variables: dict[str, Any] = {}
    for name, values in result.records.items():
        variables[name] = (("run", "time", *PROBES[name].dims), values)
        coords.update({dim: list(DIM_LABELS[dim]) for dim in PROBES[name].dims if dim in DIM_LABELS})
    for name, values in result.status.items():
        variables[name] = ("run", values)
    variables["a_init"] = (("run", "neuron"), result.initial.a)
    variables["W_init"] = (("run", "neuron", "dim"), result.initial.W)
    variables["a_final"] = (("run", "neuron"), result.final.a)
    variables["W_final"] = (("run", "neuron", "dim"), result.final.W)
    if result.log_final is not None:
        variables["log_norm_final"] = (("run", "neuron"), result.log_final["log_norm"])
        variables["log_abs_a_final"] = (("run", "neuron"), result.log_final["log_abs_a"])
    attrs = RunAttrs(
        experiment=exp.name, lr=exp.train.lr, kappa=exp.kappa, time_scale=exp.time_scale,
        loss_name=exp.train.loss, activation=exp.model.activation, leak=exp.model.leak,
        reduction=exp.train.reduction, dtype=batch.dtype,
        parametrisation=batch.config.parametrisation,
        balance="tied" if batch.config.tied_balance else "free",
        second_layer_rate=batch.config.layer_rate, activity_mask=int(batch.config.activity_mask),
        span=int(batch.span),
        # per run, at the narrowest: dead neurons left the step loop (train.skip_dead)
        neurons_stepped=int(min(result.widths or [result.final.a.shape[1]])),
        notes="\n".join(batch.notes))
    ds = xr.Dataset(variables, coords=coords, attrs=attrs.to_attrs())
    if batch.log_lambda is not None and np.all(batch.log_lambda < 0):
        # TBLEL's accelerated time t / log(1/lambda) (docs/math.md §3.2)
        ds = ds.assign_coords(time_accelerated=(("run", "time"),
                                                ds.time.values[None] / -batch.log_lambda[:, None]))
        ds = ds.assign_coords(init_scale=("run", np.exp(batch.log_lambda)))
    for name in result.records:
        ds[name].attrs["description"] = PROBES[name].description
    return ds


def batch_data(batch: BatchInputs) -> xr.Dataset:
    """The training data of a prepared batch as a Dataset (shared data: no run dimension); the
    population's teacher (``teacher_b``, ``teacher_V``) and covariance factor
    (``covariance_chol``, absent for the identity) instead of samples."""
    if batch.population is not None:
        b, V, chol = batch.population
        ds = xr.Dataset({"teacher_b": (("teacher",), b), "teacher_V": (("teacher", "dim"), V)})
        return ds if chol is None else ds.assign(covariance_chol=(("dim", "dim_in"), chol))
    if batch.X.ndim == 2:
        return xr.Dataset({"X": (("sample", "dim"), batch.X), "y": (("sample",), batch.y)})
    return xr.Dataset({"X": (("run", "sample", "dim"), batch.X),
                       "y": (("run", "sample"), batch.y)})
