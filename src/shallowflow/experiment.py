"""From validated specs to trained batches: ``simulate(experiment) -> xarray.Dataset``.

A *run* is identified by (experiment, run index r). Its randomness comes only from keys derived
from (seed, r), one stream per use: with run key k_r = fold_in(K(seed), r), the data key is
fold_in(k'_r, 0) with k'_r = fold_in(K(data seed), r) for per-run data (r = 0 for shared data),
the init key fold_in(k_r, 1) and the SGD key fold_in(k_r, 2). (In JAX, split(k)[i] equals
fold_in(k, i), so a generator splitting the data key never reproduces the init key.) A run
therefore gives the same numbers alone or inside any batch.

Runs whose specs differ only in *batchable* fields (seed, run index, init scale, stop_loss, data
seed, name) share array shapes and compiled code, and are trained together in one vmapped loop.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from shallowflow import certificate
from shallowflow import data as datagen
from shallowflow import init as inits
from shallowflow.activations import Activation
from shallowflow.config import ConfigError, Experiment
from shallowflow.data.validate import validate_dataset
from shallowflow.dynamics import EngineConfig, EngineResult, record_schedule
from shallowflow.dynamics import simulate as engine_simulate
from shallowflow.losses import Loss
from shallowflow.network import Network, add_bias_column
from shallowflow.probes import PROBES

DATA_STREAM, INIT_STREAM, SGD_STREAM = 0, 1, 2  # key streams of a run (module docstring)
BATCHABLE = ("name", "seed", "runs", "init.scale", "init.log_scale", "train.stop_loss",
             "data.seed", "record.at_steps", "record.at_times")


@dataclass(frozen=True)
class RunRef:
    """One run: an experiment and the index r of the run within it."""

    experiment: Experiment
    index: int


def static_signature(exp: Experiment) -> str:
    """JSON of the spec without its batchable fields: equal signatures can share one batch."""
    d = exp.model_dump(mode="json")
    for path in BATCHABLE:
        node = d
        *head, last = path.split(".")
        for h in head:
            node = node[h]
        node.pop(last, None)
    d["resolved"] = exp.resolved()[0]  # automatic choices may depend on batchable fields
    return json.dumps(d, sort_keys=True)


def engine_config(exp: Experiment, lr: float | None = None) -> EngineConfig:
    """The compile-time engine settings of an experiment (optionally at another step)."""
    probes = tuple(exp.record.probes) + (("W",) if exp.record.snapshots else ())
    settings, _ = exp.resolved()
    return EngineConfig(
        activation=Activation(exp.model.leak),
        loss=Loss(exp.train.loss, exp.train.reduction),
        kappa=exp.kappa,
        lr=exp.train.lr if lr is None else lr,
        time_scale=exp.time_scale,
        train_second_layer=exp.train.layers == "both",
        batch_size=exp.train.batch_size,
        probes=tuple(dict.fromkeys(probes)),
        parametrisation=settings["engine"],
        tied_balance=exp.train.balance == "tied",
        activity_mask=settings["activity_mask"],
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
def _data_key(ref: RunRef) -> jax.Array:
    spec = ref.experiment.data
    seed = ref.experiment.seed if spec.seed is None else spec.seed
    base = jax.random.fold_in(jax.random.PRNGKey(seed), ref.index if spec.per_run else 0)
    return jax.random.fold_in(base, DATA_STREAM)


def generate(spec: Any, key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Generate (X, y) for a data spec (bias not yet appended)."""
    kind = spec.kind
    if kind == "sphere":
        return datagen.sphere(key, spec.n, spec.d, spec.radius, spec.label_range)
    if kind == "orthogonal":
        return datagen.orthogonal(key, spec.n, spec.d, spec.basis, spec.norm_range,
                                  spec.label_range)
    if kind == "orthonormal":
        return datagen.orthonormal(key, spec.n, spec.d, spec.basis, spec.labels)
    if kind == "three_point":
        return datagen.three_point()
    if kind == "stewart":
        return datagen.stewart(key, spec.n)
    if kind == "two_point":
        return datagen.two_point(spec.angle)
    if kind == "teacher":
        return datagen.teacher(key, spec.n, spec.d, spec.width, spec.inputs, spec.noise)
    if kind == "file":
        X, y = datagen.load_file(spec.path)
        return jnp.asarray(X, jnp.float64), jnp.asarray(y, jnp.float64)
    if kind == "arrays":
        return jnp.asarray(spec.X, jnp.float64), jnp.asarray(spec.y, jnp.float64)
    raise ConfigError(f"data.kind: unknown {kind!r}")


def dataset_of(ref: RunRef) -> tuple[np.ndarray, np.ndarray]:
    """The (X, y) of one run as the network sees it (bias column appended if configured)."""
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


def _datasets(refs: Sequence[RunRef]) -> tuple[np.ndarray, np.ndarray]:
    """The data sets of ``refs`` (same data spec up to its seed) stacked, X (R, n, d) and y
    (R, n) with the bias column if configured, generated in one compiled, vmapped call (eager
    generation would compile every random op anew for each shape)."""
    exp = refs[0].experiment
    spec, bias = exp.data, exp.model.bias

    def one(k: jax.Array) -> tuple[jax.Array, jax.Array]:
        X, y = generate(spec, k)
        return (add_bias_column(X) if bias else X), y

    if spec.kind in ("file", "arrays"):  # given data (not generated): the same set for every run
        X, y = (np.asarray(v) for v in one(_data_key(refs[0])))
        return (np.broadcast_to(X, (len(refs), *X.shape)),
                np.broadcast_to(y, (len(refs), *y.shape)))
    keys = jnp.stack([_data_key(r) for r in refs])
    X, y = _quick_jit(f"data {spec.model_dump_json()} bias={bias}", lambda: jax.vmap(one))(keys)
    return np.asarray(X), np.asarray(y)


# ------------------------------------------------------------------------------------------ init
def init_network(exp: Experiment, key: jax.Array, X: jax.Array, y: jax.Array) -> Network:
    """The initial network of one run. Schemes homogeneous in their scale lambda return the
    network at lambda = 1; the engine multiplies by exp(log lambda) (or keeps log coordinates)."""
    spec, p, d = exp.init, exp.model.width, X.shape[-1]
    if spec.scheme == "dpb":
        return inits.dpb(key, p, d, spec.first_layer)
    if spec.scheme == "balanced":
        return inits.balanced(key, p, d, 1.0, False, spec.radial)
    if spec.scheme == "gaussian":
        return inits.gaussian(key, p, d, 1.0, False)
    if spec.scheme == "dominated":
        return inits.dominated(key, p, d, 1.0, False)
    if spec.scheme == "group":
        return inits.group(key, X, y, p, spec.scale, spec.direction)
    if spec.scheme == "given":
        a, W = spec.network()
        return Network(jnp.asarray(a), jnp.asarray(W))
    if spec.scheme == "pytorch":
        return inits.pytorch(key, p, d)
    raise ConfigError(f"init.scheme: unknown {spec.scheme!r}")


def run_key(ref: RunRef) -> jax.Array:
    return jax.random.fold_in(jax.random.PRNGKey(ref.experiment.seed), ref.index)


def _check_group_labels(exp: Experiment, y: np.ndarray, index: int) -> None:
    k = y.shape[0] // exp.model.width
    signs = np.sign(y.reshape(exp.model.width, k))
    mixed = np.flatnonzero(~np.all(signs == signs[:, :1], axis=1) | (signs[:, 0] == 0))
    if mixed.size:
        raise ConfigError(
            f"init.scheme: 'group' needs labels of one sign within each group of {k} consecutive "
            f"points; run {index}: group(s) {mixed[:5].tolist()} have mixed or zero labels"
        )


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
    keys: jax.Array
    schedule: np.ndarray
    dtype: str
    log_scale: np.ndarray | None  # (R,) log lambda per run, or None (scale-free schemes)
    reduce: bool
    notes: list[str]


def prepare_batch(refs: Sequence[RunRef]) -> BatchInputs:
    """Validate that ``refs`` can share a batch, then build data, initial networks and keys."""
    refs = list(refs)
    if not refs:
        raise ValueError("refs: need at least one run")
    first = refs[0].experiment
    sig = static_signature(first)
    for r in refs[1:]:
        if static_signature(r.experiment) != sig:
            raise ValueError("refs: runs in one batch must differ only in batchable fields "
                             f"{BATCHABLE}")
    data_ids = {(r.experiment.data.model_dump_json(), np.asarray(_data_key(r)).tobytes())
                for r in refs}
    shared = len(data_ids) == 1
    Xs, ys = _datasets(refs[:1] if shared else refs)
    for i in range(len(Xs)):
        validate_dataset(Xs[i], ys[i], source=f"data (run {refs[i].index})")
        if first.init.scheme == "group":
            _check_group_labels(first, ys[i], refs[i].index)
    X, y = (Xs[0], ys[0]) if shared else (Xs, ys)
    keys = jnp.stack([run_key(r) for r in refs])
    init_keys = jax.vmap(lambda k: jax.random.fold_in(k, INIT_STREAM))(keys)
    sgd_keys = jax.vmap(lambda k: jax.random.fold_in(k, SGD_STREAM))(keys)
    Xj, yj = jnp.asarray(X), jnp.asarray(y)
    axis = None if shared else 0
    init_key = (f"init {first.init.model_dump_json()} {first.model.model_dump_json()} "
                f"shared={shared}")
    if first.init.scheme == "given" and first.init.path is not None:
        # read when traced: a rewritten file must be read again
        init_key += f" mtime={os.stat(first.init.path).st_mtime_ns}"
    net0 = _quick_jit(init_key, lambda: jax.vmap(lambda k, Xr, yr: init_network(first, k, Xr, yr),
                                                 in_axes=(0, axis, axis)))(init_keys, Xj, yj)
    log_scale = (None if first.log_lambda is None
                 else np.array([r.experiment.log_lambda for r in refs]))
    settings, notes = first.resolved()
    dtype = first.train.dtype
    net0 = jax.tree_util.tree_map(lambda v: v.astype(dtype), net0)
    stop = np.array([np.inf * -1 if r.experiment.train.stop_loss is None
                     else r.experiment.train.stop_loss for r in refs])
    return BatchInputs(refs, engine_config(first), net0, X.astype(dtype), y.astype(dtype), stop,
                       sgd_keys, batch_schedule(refs), dtype, log_scale, settings["reduce"], notes)


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
        "log_scale": ("run", np.full(R, np.nan) if batch.log_scale is None else batch.log_scale),
        "stop_loss": ("run", batch.stop_loss.astype(float)),
    }
    variables: dict[str, Any] = {}
    for name, values in result.records.items():
        variables[name] = (("run", "time", *PROBES[name].dims), values)
    for name, values in result.status.items():
        variables[name] = ("run", values)
    variables["a_init"] = (("run", "neuron"), result.initial.a)
    variables["W_init"] = (("run", "neuron", "dim"), result.initial.W)
    variables["a_final"] = (("run", "neuron"), result.final.a)
    variables["W_final"] = (("run", "neuron", "dim"), result.final.W)
    if result.log_final is not None:
        variables["log_norm_final"] = (("run", "neuron"), result.log_final["log_norm"])
        variables["log_abs_a_final"] = (("run", "neuron"), result.log_final["log_abs_a"])
    attrs = {
        "experiment": exp.name,
        "lr": exp.train.lr,
        "kappa": exp.kappa,
        "time_scale": exp.time_scale,
        "loss_name": exp.train.loss,
        "reduction": exp.train.reduction,
        "dtype": batch.dtype,
        "time_units": "flow time: step * lr (dtheta/dt = -T grad L)",
        "engine": batch.config.parametrisation,
        "balance": "tied" if batch.config.tied_balance else "free",
        "activity_mask": int(batch.config.activity_mask),
        "reduced": int(batch.reduce),
        "notes": "\n".join(batch.notes),
    }
    ds = xr.Dataset(variables, coords=coords, attrs=attrs)
    if batch.log_scale is not None and np.all(batch.log_scale < 0):
        # TBLEL's accelerated time t / log(1/lambda) (MATH.md §3.2)
        ds = ds.assign_coords(time_accelerated=(("run", "time"),
                                                ds.time.values[None] / -batch.log_scale[:, None]))
        ds = ds.assign_coords(init_scale=("run", np.exp(batch.log_scale)))
    for name in result.records:
        ds[name].attrs["description"] = PROBES[name].description
    return ds


def _run_engine(batch: BatchInputs, level: int = 0,
                progress: Callable[[int, int], None] | None = None) -> EngineResult:
    """Train the batch at step lr / 2^level, recording at the same flow times."""
    exp = batch.refs[0].experiment
    cfg = engine_config(exp, exp.train.lr / 2**level)
    return engine_simulate(cfg, batch.net0, batch.X, batch.y, batch.schedule * 2**level,
                           batch.stop_loss, batch.keys, progress=progress,
                           log_scale=batch.log_scale, reduce=batch.reduce)


def simulate_refs(refs: Sequence[RunRef],
                  progress: Callable[[int, int], None] | None = None) -> xr.Dataset:
    """Train one batch of shape-compatible runs and return its Dataset."""
    return run_batch(prepare_batch(refs), progress)


def run_batch(batch: BatchInputs,
              progress: Callable[[int, int], None] | None = None) -> xr.Dataset:
    """Train a prepared batch and return its Dataset (with the step-size certificate when
    ``train.certify`` asks for it)."""
    result = _run_engine(batch, 0, progress)
    ds = to_dataset(batch, result)
    levels = batch.refs[0].experiment.train.certify
    if levels:
        ds = _certify(ds, batch, result, levels)
    return ds


def _certify(ds: xr.Dataset, batch: BatchInputs, result: EngineResult, levels: int) -> xr.Dataset:
    """Rerun at lr/2 (and lr/4) and attach the certificate (shallowflow.certificate)."""
    runs = [result] + [_run_engine(batch, k) for k in range(1, levels + 1)]
    abs_d, rel_d, by_probe = [], [], []
    for coarse, fine in itertools.pairwise(runs):
        a, r, per = certificate.distances(coarse.records, fine.records)
        abs_d.append(a)
        rel_d.append(r)
        by_probe.append(per)
    names = list(by_probe[0])
    tol = batch.refs[0].experiment.train.certify_tol
    rel = np.stack(rel_d, axis=1)
    ds = ds.assign_coords(refinement=[f"lr/{2**k} vs lr/{2**(k + 1)}" for k in range(levels)],
                          certified_probe=names)
    ds["certificate_abs"] = (("run", "refinement"), np.stack(abs_d, axis=1))
    ds["certificate_rel"] = (("run", "refinement"), rel)
    ds["certificate_rel_by_probe"] = (
        ("run", "refinement", "certified_probe"),
        np.stack([np.stack([p[n] for n in names], axis=1) for p in by_probe], axis=1))
    ds.attrs["certificate"] = certificate.verdict(rel, tol)
    if tol is not None:
        ds["certified"] = ("run", rel[:, 0] <= tol)
    return ds


def simulate(exp: Experiment, runs: Sequence[int] | None = None,
             progress: Callable[[int, int], None] | None = None) -> xr.Dataset:
    """Train the runs of ``exp`` (all, or the given run indices) in one batch."""
    indices = range(exp.runs) if runs is None else runs
    return simulate_refs([RunRef(exp, int(i)) for i in indices], progress)


def batch_data(batch: BatchInputs) -> xr.Dataset:
    """The training data of a prepared batch as a Dataset (shared data: no run dimension)."""
    if batch.X.ndim == 2:
        return xr.Dataset({"X": (("sample", "dim"), batch.X), "y": (("sample",), batch.y)})
    return xr.Dataset({"X": (("run", "sample", "dim"), batch.X),
                       "y": (("run", "sample"), batch.y)})
