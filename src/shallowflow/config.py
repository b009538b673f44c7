"""Validated experiment specifications (pydantic v2), loaded from TOML or YAML.

An :class:`Experiment` is everything needed to reproduce a batch of runs: data, model,
initialisation, training and recording. Unknown keys, wrong types, non-finite numbers and
out-of-range values are refused before any work with :class:`ConfigError`, whose message names
each field, the value given and what is allowed.

Two registries, read by ``shallowflow list``: :data:`DATA_KINDS` (``data.kind`` -> spec class;
each knows its sample count, input dimension and generator) and :data:`INIT_SCHEMES`
(``init.scheme`` -> spec class; each draws its initial network). Adding a data kind is a spec
class here (with its ``shape`` and ``generate``) plus its generator in :mod:`shallowflow.data`;
adding a scheme is a spec class with its ``draw`` plus the pure function in :mod:`shallowflow.init`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, get_args

import jax.numpy as jnp
import numpy as np
import yaml
from jax import Array
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PrivateAttr,
    SerializationInfo,
    ValidationError,
    model_validator,
)

from shallowflow import data as datagen
from shallowflow import init as inits
from shallowflow import onedim as onedim_path
from shallowflow.data.mnist import load_mnist_pair
from shallowflow.errors import UserError
from shallowflow.network import Network
from shallowflow.probes import DEFAULT_PROBES, PROBES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _float_array(value: Any) -> Any:
    """An array given in memory (numpy array or nested lists from a file), as float64."""
    arr = np.array(value, dtype=float)
    arr.setflags(write=False)
    return arr


DIGEST = {"digest": True}
"""Serialisation context for identities (batch signatures, batch ids, compile-cache keys): arrays
are written as a hash of their bytes instead of their values (`model_dump(context=DIGEST)`)."""


def _as_list(value: Any, info: SerializationInfo) -> Any:
    if info.context and info.context.get("digest"):
        digest = hashlib.sha1(repr(value.shape).encode() + value.tobytes()).hexdigest()
        return f"array{list(value.shape)} sha1:{digest}"
    return value.tolist()


FloatArray = Annotated[Any, BeforeValidator(_float_array), PlainSerializer(_as_list, when_used="json")]
"""A float64 array held in a spec (in-memory data and initial networks); a file holds it as
nested lists, an identity as a hash (:data:`DIGEST`)."""


MAX_SEED = 2**63 - 1
"""Seeds are stored as int64 and become JAX keys: 0 <= seed <= 2^63 - 1."""


class ConfigError(UserError):
    """An invalid configuration; the message lists every problem as ``field: problem (got ...)``,
    one per line."""


class _Strict(BaseModel):
    """Unknown keys and non-finite floats (inf, nan) are refused; specs are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class _Loaded:
    """Arrays derived from a spec's fields (a file read at validation), cached on the spec. They
    never make two specs differ: all instances compare equal."""

    def __init__(self, *arrays: np.ndarray) -> None:
        for arr in arrays:
            arr.setflags(write=False)
        self.arrays = arrays

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Loaded)

    def __hash__(self) -> int:
        return 0


Range = tuple[float, float]


def _check_range(name: str, r: Range) -> None:
    lo, hi = r
    if not (0 < lo <= hi):
        raise ValueError(f"{name}: must satisfy 0 < low <= high, got {list(r)}")


# ----------------------------------------------------------------------------------------- data
class _DataBase(_Strict):
    """A data kind: its fields, its shape (n, d) without generating it, and its generator
    ``key -> (X (n, d), y (n,))`` (bias column not included)."""

    given: ClassVar[bool] = False
    """True: a fixed data set, the same for every run (not generated from the run's key)."""
    orthogonal_rows: ClassVar[bool] = False
    """True: the inputs are orthogonal by construction (activity mask, span, group init)."""
    sign_labels: ClassVar[bool] = False
    """True: every label is +1 or -1 by construction (classification losses need it)."""

    per_run: bool = Field(False, description="draw a fresh dataset for every run")
    seed: int | None = Field(None, ge=0, le=MAX_SEED,
                             description="data seed (default: the experiment seed)")

    @property
    def shape(self) -> tuple[int, int]:
        """(n, d): number of samples and input dimension, bias column not included."""
        raise NotImplementedError

    @property
    def n_samples(self) -> int:
        """Number of samples n."""
        return self.shape[0]

    @property
    def input_dim(self) -> int:
        """Input dimension d (bias column not included)."""
        return self.shape[1]

    def generate(self, key: Array) -> tuple[Array, Array]:
        """(X, y) drawn with ``key`` (given kinds ignore it)."""
        raise NotImplementedError


class _SizedData(_DataBase):
    """A data kind with fields ``n`` (samples) and ``d`` (input dimension)."""

    @property
    def shape(self) -> tuple[int, int]:
        return self.n, self.d  # type: ignore[attr-defined]


class _OrthogonalRowsData(_SizedData):
    """Orthogonal inputs by construction: needs n <= d."""

    orthogonal_rows: ClassVar[bool] = True

    @model_validator(mode="after")
    def _n_le_d(self) -> _OrthogonalRowsData:
        if self.n > self.d:  # type: ignore[attr-defined]
            raise ValueError(f"n: {self.kind} data needs n <= d, got "  # type: ignore[attr-defined]
                             f"n={self.n} > d={self.d}")  # type: ignore[attr-defined]
        return self


class SphereData(_SizedData):
    """DPB Exp. 1 (docs/math.md §1.3): x = rho u, u uniform on the sphere, labels eps * U[1, 2]."""

    kind: Literal["sphere"]
    n: int = Field(gt=0)
    d: int = Field(gt=0)
    radius: Range = (1.0, 2.0)
    label_range: Range = (1.0, 2.0)

    @model_validator(mode="after")
    def _ranges(self) -> SphereData:
        _check_range("radius", self.radius)
        _check_range("label_range", self.label_range)
        return self

    def generate(self, key: Array) -> tuple[Array, Array]:
        return datagen.sphere(key, self.n, self.d, self.radius, self.label_range)


class OrthogonalData(_OrthogonalRowsData):
    """DPB Exp. 2 (docs/math.md §1.3): x_i = rho_i e_i, rho ~ U[1, 2], labels eps * U[1, 2]; n <= d."""

    kind: Literal["orthogonal"]
    n: int = Field(gt=0)
    d: int = Field(gt=0)
    basis: Literal["canonical", "random"] = "canonical"
    norm_range: Range = (1.0, 2.0)
    label_range: Range = (1.0, 2.0)

    @model_validator(mode="after")
    def _ranges(self) -> OrthogonalData:
        _check_range("norm_range", self.norm_range)
        _check_range("label_range", self.label_range)
        return self

    def generate(self, key: Array) -> tuple[Array, Array]:
        return datagen.orthogonal(key, self.n, self.d, self.basis, self.norm_range,
                                  self.label_range)


class OrthonormalData(_OrthogonalRowsData):
    """TBLEL (docs/math.md §3.7): unit orthonormal inputs, labels |N(0,1)| or N(0,1); n <= d."""

    kind: Literal["orthonormal"]
    n: int = Field(gt=0)
    d: int = Field(gt=0)
    basis: Literal["canonical", "random"] = "canonical"
    labels: Literal["abs_normal", "normal"] = "abs_normal"

    def generate(self, key: Array) -> tuple[Array, Array]:
        return datagen.orthonormal(key, self.n, self.d, self.basis, self.labels)


class ThreePointData(_DataBase):
    """BF's 3-point data (docs/math.md §2.4), 1-D inputs: use with ``model.bias = true``."""

    kind: Literal["three_point"]

    @property
    def shape(self) -> tuple[int, int]:
        return 3, 1

    def generate(self, key: Array) -> tuple[Array, Array]:
        return datagen.three_point()


class StewartData(_DataBase):
    """BF App. B.2 (docs/math.md §2.5): x ~ U[-1, 1], piecewise-linear teacher; use with a bias."""

    kind: Literal["stewart"]
    n: int = Field(40, gt=0)

    @property
    def shape(self) -> tuple[int, int]:
        return self.n, 1

    def generate(self, key: Array) -> tuple[Array, Array]:
        return datagen.stewart(key, self.n)


class TwoPointData(_DataBase):
    """MMV A.2/A.3 (docs/math.md §4.3): x1 = (1, 0), x2 = (sin angle, cos angle), labels +1;
    mu = sin angle (angle 0: the orthogonal pair of A.3)."""

    sign_labels: ClassVar[bool] = True
    kind: Literal["two_point"]
    angle: float = Field(0.1, ge=0, le=math.pi)

    @property
    def shape(self) -> tuple[int, int]:
        return 2, 2

    def generate(self, key: Array) -> tuple[Array, Array]:
        return datagen.two_point(self.angle)


class TeacherData(_SizedData):
    """A random ReLU teacher with ``width`` units on Gaussian or unit-sphere inputs."""

    kind: Literal["teacher"]
    n: int = Field(gt=0)
    d: int = Field(gt=0)
    width: int = Field(3, gt=0)
    inputs: Literal["gaussian", "sphere"] = "gaussian"
    noise: float = Field(0.0, ge=0)

    def generate(self, key: Array) -> tuple[Array, Array]:
        return datagen.teacher(key, self.n, self.d, self.width, self.inputs, self.noise)


class _GivenData(_DataBase):
    """A fixed data set (X, y), the same for every run."""

    given: ClassVar[bool] = True

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(X (n, d), y (n,)) as float64 numpy arrays."""
        raise NotImplementedError

    @property
    def sign_labels(self) -> bool:  # type: ignore[override]
        return bool(np.all(np.abs(self.arrays()[1]) == 1.0))

    @property
    def shape(self) -> tuple[int, int]:
        X = self.arrays()[0]
        return X.shape[0], X.shape[1]

    def generate(self, key: Array) -> tuple[Array, Array]:
        X, y = self.arrays()
        return jnp.asarray(X, jnp.float64), jnp.asarray(y, jnp.float64)


class FileData(_GivenData):
    """User data from a file: ``.npz`` with arrays X (n, d) and y (n,), or ``.csv``, label last.
    The file is read once, when the spec is validated."""

    kind: Literal["file"]
    path: str
    _loaded: _Loaded = PrivateAttr()

    @model_validator(mode="after")
    def _load(self) -> FileData:
        self._loaded = _Loaded(*datagen.load_file(self.path))  # validates before any work
        return self

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        X, y = self._loaded.arrays
        return X, y


class MnistData(_GivenData):
    """Two MNIST digits (docs/math.md §4.3): pixels in [0, 1], centred over the pair, digit
    ``digits[0]`` labelled +1 and ``digits[1]`` -1; from a user's IDX or .npz files (``path``)
    or, by default, the embedded 500-per-digit subset of the official training set."""

    kind: Literal["mnist"]
    digits: tuple[Annotated[int, Field(ge=0, le=9)], Annotated[int, Field(ge=0, le=9)]] = (1, 0)
    path: str | None = None
    labels_path: str | None = None
    per_digit: int | None = Field(None, ge=1)
    split: Literal["train", "test"] = "train"
    _loaded: _Loaded = PrivateAttr()

    @model_validator(mode="after")
    def _load(self) -> MnistData:
        if self.per_run:
            raise ValueError("per_run: MNIST data is one fixed data set; per_run must be false")
        if self.digits[0] == self.digits[1]:
            raise ValueError(f"digits: need two different digits, got {list(self.digits)}")
        pair = load_mnist_pair(self.digits, self.path, self.labels_path, self.per_digit,
                               self.split)
        self._loaded = _Loaded(np.asarray(pair.X, np.float64), np.asarray(pair.y, np.float64))
        return self

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        X, y = self._loaded.arrays
        return X, y


class ArrayData(_GivenData):
    """Data given in memory: X (n, d) and y (n,) arrays (from Python; nested lists in a file).
    The run folder stores it like any other data."""

    kind: Literal["arrays"]
    X: FloatArray
    y: FloatArray

    @model_validator(mode="after")
    def _valid(self) -> ArrayData:
        datagen.validate_dataset(self.X, self.y, source="data")
        return self

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return self.X, self.y


DataSpec = Annotated[
    SphereData | OrthogonalData | OrthonormalData | ThreePointData | StewartData | TwoPointData
    | TeacherData | FileData | ArrayData | MnistData,
    Field(discriminator="kind"),
]


# ---------------------------------------------------------------------------------------- model
class ModelSpec(_Strict):
    """h(x) = kappa sum_j a_j sigma(<w_j, x>) (docs/math.md §0.3)."""

    width: int = Field(gt=0, description="number of hidden neurons p")
    kappa: Literal["1", "1/p"] = Field("1", description="output scale: 1 or 1/p (DPB)")
    activation: Literal["relu", "leaky_relu"] = "relu"
    leak: float = Field(0.0, ge=0, lt=1, description="negative slope of leaky_relu")
    bias: bool = Field(False, description="hidden bias as an appended constant input 1")

    @model_validator(mode="after")
    def _leak(self) -> ModelSpec:
        if self.activation == "relu" and self.leak != 0:
            raise ValueError(f"leak: must be 0 for activation 'relu', got {self.leak}")
        if self.activation == "leaky_relu" and self.leak == 0:
            raise ValueError("leak: activation 'leaky_relu' needs leak in (0, 1), got 0")
        return self


# ----------------------------------------------------------------------------------------- init
class _InitBase(_Strict):
    """An initialisation scheme: its fields and ``draw(key, p, X, y) -> Network`` (one run)."""

    given: ClassVar[bool] = False
    """True: a fixed network, the same for every run (not drawn from the run's key)."""
    reads_samples: ClassVar[bool] = True
    """False: ``draw`` reads only the input dimension X.shape[-1], so the engine passes it data
    with no samples, X (0, d), y (0,), and one compiled draw serves every sample count."""

    def draw(self, key: Array, p: int, X: Array, y: Array) -> Network:
        """The initial network of one run on data X (n, d) (bias column included), y (n,).
        Schemes homogeneous in their scale lambda return it at lambda = 1; the engine multiplies
        by exp(log lambda) (or keeps log coordinates)."""
        raise NotImplementedError

    def check(self, model: ModelSpec, data: _DataBase, input_dim: int) -> None:
        """Raise ValueError if the scheme cannot be used with this model and data (default:
        always usable)."""

    def check_labels(self, y: np.ndarray, width: int, run: int) -> None:
        """Raise ConfigError if the scheme cannot start from run ``run``'s labels y (n,)
        (default: any labels)."""


class DpbInit(_InitBase):
    """DPB (docs/math.md §1.2): |a| - ||w|| ~ Exp(1); first layer Gaussian (paper) or uniform (code).

    ``first_layer_scale`` c multiplies W after a is drawn: (a, W) -> (a, c W) (the authors' later
    Experiment-2 protocol takes c = 0.01); c = 1 is the paper's initialisation."""

    reads_samples: ClassVar[bool] = False

    scheme: Literal["dpb"]
    first_layer: Literal["gaussian", "uniform"] = "gaussian"
    first_layer_scale: float = Field(1.0, gt=0, description="multiplies W after a is drawn")

    def draw(self, key: Array, p: int, X: Array, y: Array) -> Network:
        return inits.dpb(key, p, X.shape[-1], self.first_layer, self.first_layer_scale)


class _Scaled(_InitBase):
    """Schemes homogeneous in their scale lambda: give ``scale`` or its natural log ``log_scale``
    (for scales below the float range, e.g. log_scale = -1000 for lambda = exp(-1000))."""

    reads_samples: ClassVar[bool] = False

    scale: float | None = Field(None, gt=0)
    log_scale: float | None = Field(None, lt=700)
    width_scaling: bool = False

    @model_validator(mode="after")
    def _one_scale(self) -> _Scaled:
        if (self.scale is None) == (self.log_scale is None):
            raise ValueError("scale/log_scale: give exactly one of init.scale or init.log_scale")
        return self

    def log_lambda(self, width: int) -> float:
        """log of the effective scale: log(scale) (- log(sqrt p) with width_scaling)."""
        base = math.log(self.scale) if self.scale is not None else float(self.log_scale)
        return base - (0.5 * math.log(width) if self.width_scaling else 0.0)


class BalancedInit(_Scaled):
    """Balanced a_j = +-||w_j||: norm exactly ``scale`` (TBLEL) or Gaussian radial law (BF)."""

    scheme: Literal["balanced"]
    radial: Literal["fixed", "gaussian"] = "fixed"

    def draw(self, key: Array, p: int, X: Array, y: Array) -> Network:
        return inits.balanced(key, p, X.shape[-1], 1.0, False, self.radial)


class GaussianInit(_Scaled):
    """Unbalanced Gaussian w ~ N(0, s^2 I), a ~ N(0, s^2) (BF 'unbalanced', MMV experiments)."""

    scheme: Literal["gaussian"]

    def draw(self, key: Array, p: int, X: Array, y: Array) -> Network:
        return inits.gaussian(key, p, X.shape[-1], 1.0, False)


class DominatedInit(_Scaled):
    """BF 'dominated': w entries U([-s, s]), a = +-s sqrt(d)."""

    scheme: Literal["dominated"]

    def draw(self, key: Array, p: int, X: Array, y: Array) -> Network:
        return inits.dominated(key, p, X.shape[-1], 1.0, False)


class GivenInit(_Scaled):
    """A given network (a, W), from a file or in memory, times the scale (default 1).

    Read from ``path`` (.npz with arrays ``a`` (p,) and ``W`` (p, d); read once, when the spec
    is validated) or given in memory as arrays ``a`` and ``W``; to start from chosen directions
    and signs (e.g. the docs/math.md §3.6 hand vector)."""

    given: ClassVar[bool] = True
    scheme: Literal["given"]
    path: str | None = None
    a: FloatArray | None = None
    W: FloatArray | None = None
    _loaded: _Loaded = PrivateAttr()

    @model_validator(mode="before")
    @classmethod
    def _default_scale(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("scale") is None and data.get("log_scale") is None:
            data = {**data, "scale": 1.0}
        return data

    @model_validator(mode="after")
    def _readable(self) -> GivenInit:
        if (self.path is None) == (self.a is None and self.W is None):
            raise ValueError("path/a/W: give either init.path or the arrays init.a and init.W")
        if self.path is not None:
            self._loaded = _Loaded(*load_given(self.path))
        elif self.a is None or self.W is None:
            raise ValueError("a/W: give both init.a and init.W")
        else:
            check_given(self.a, self.W, "init.a/init.W")
        return self

    def network(self) -> tuple[np.ndarray, np.ndarray]:
        """(a, W) of the given network, validated: finite, a (p,), W (p, d)."""
        a, W = self._loaded.arrays if self.path is not None else (self.a, self.W)
        return a, W

    def draw(self, key: Array, p: int, X: Array, y: Array) -> Network:
        a, W = self.network()
        return Network(jnp.asarray(a), jnp.asarray(W))

    def check(self, model: ModelSpec, data: _DataBase, input_dim: int) -> None:
        W = self.network()[1]
        if W.shape != (model.width, input_dim):
            raise ValueError(f"init.path: W has shape {W.shape}, the model needs (width, d) = "
                             f"({model.width}, {input_dim})")


def load_given(path: str) -> tuple[np.ndarray, np.ndarray]:
    """(a, W) from a .npz file, validated: real, finite, a (p,), W (p, d)."""
    file = Path(path)
    if file.suffix.lower() != ".npz" or not file.is_file():
        raise ValueError(f"init.path: need an existing .npz file with arrays a and W, got {path!r}")
    a, W = datagen.load_npz(file, "init.path", ("a", "W"))
    return check_given(a, W, f"init.path ({file.name})")


def check_given(a: np.ndarray, W: np.ndarray, source: str) -> tuple[np.ndarray, np.ndarray]:
    """(a, W) validated: real, finite, a (p,), W (p, d); returned as float64."""
    for name, arr in (("a", a), ("W", W)):
        datagen.check_real(np.asarray(arr), source, name)
    a, W = np.asarray(a, np.float64), np.asarray(W, np.float64)
    if a.ndim != 1 or W.ndim != 2 or W.shape[0] != a.shape[0]:
        raise ValueError(f"{source}: need a (p,) and W (p, d), got {a.shape} and {W.shape}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(W))):
        raise ValueError(f"{source}: holds non-finite values")
    return a, W


class GroupInit(_InitBase):
    """DPB group initialisation (docs/math.md §1.2) on orthogonal data; ||w_j|| = scale."""

    scheme: Literal["group"]
    scale: float = Field(1.0, gt=0)
    direction: Literal["random", "aligned"] = "random"

    def draw(self, key: Array, p: int, X: Array, y: Array) -> Network:
        return inits.group(key, X, y, p, self.scale, self.direction)

    def check(self, model: ModelSpec, data: _DataBase, input_dim: int) -> None:
        """Orthogonal data, no bias, and width dividing n (groups of k = n/p points)."""
        if not data.orthogonal_rows:
            raise ValueError(f"init.scheme: 'group' needs orthogonal or orthonormal data, "
                             f"got data.kind={getattr(data, 'kind', None)!r}")
        if model.bias:
            raise ValueError("init.scheme: 'group' cannot be combined with model.bias")
        n = data.n_samples
        if n % model.width:
            raise ValueError(
                f"model.width: group init needs width dividing n = {n}, got {model.width}")

    def check_labels(self, y: np.ndarray, width: int, run: int) -> None:
        """Labels of one sign within each group of k = n/p consecutive points."""
        k = y.shape[0] // width
        signs = np.sign(y.reshape(width, k))
        mixed = np.flatnonzero(~np.all(signs == signs[:, :1], axis=1) | (signs[:, 0] == 0))
        if mixed.size:
            raise ConfigError(
                f"init.scheme: 'group' needs labels of one sign within each group of {k} "
                f"consecutive points; run {run}: group(s) {mixed[:5].tolist()} have mixed or "
                f"zero labels")


class PytorchInit(_InitBase):
    """PyTorch nn.Linear default (He-uniform) for both layers (TBLEL Fig. 6)."""

    reads_samples: ClassVar[bool] = False

    scheme: Literal["pytorch"]

    def draw(self, key: Array, p: int, X: Array, y: Array) -> Network:
        return inits.pytorch(key, p, X.shape[-1])


InitSpec = Annotated[
    DpbInit | BalancedInit | GaussianInit | DominatedInit | GroupInit | PytorchInit | GivenInit,
    Field(discriminator="scheme"),
]


def _registry(union: Any, tag: str) -> dict[str, Any]:
    """{tag value: spec class} of a discriminated union of spec classes."""
    return {get_args(m.model_fields[tag].annotation)[0]: m for m in get_args(get_args(union)[0])}


DATA_KINDS: dict[str, type[_DataBase]] = _registry(DataSpec, "kind")
"""The data kinds: ``data.kind`` -> its spec class (shape, generator, one-line doc)."""
INIT_SCHEMES: dict[str, type[_InitBase]] = _registry(InitSpec, "scheme")
"""The initialisation schemes: ``init.scheme`` -> its spec class (``draw``, one-line doc)."""


# ---------------------------------------------------------------------------------------- train
class TrainSpec(_Strict):
    """theta <- theta - lr * T * grad L; one step is ``lr`` units of flow time (docs/math.md §0.3)."""

    loss: Literal["square", "mse", "exponential", "logistic"] = "square"
    reduction: Literal["mean", "sum"] = "mean"
    lr: float = Field(gt=0, description="step size eta (flow time per step)")
    steps: int | None = Field(None, ge=0, description="number of steps")
    duration: float | None = Field(None, gt=0, description="flow time; steps = ceil(duration/lr)")
    time_scale: float | Literal["width"] = Field(1.0, description="T: a number or 'width' (T = p)")
    optimizer: Literal["gd", "sgd"] = "gd"
    batch_size: int | None = Field(None, gt=0)
    layers: Literal["both", "first"] = "both"
    second_layer_rate: float = Field(
        1.0, ge=0, description="the second layer's learning rate over the first's, r: "
        "da/dt = -T r grad_a L (1: plain GD, 0: frozen like layers = 'first'; docs/math.md §4.5)")
    stop_loss: float | None = Field(None, ge=0, description="freeze a run once L < stop_loss")
    stop_grad: float | None = Field(
        None, gt=0, description="end a run once ||grad L||_2 < stop_grad (tested at record points)")
    max_seconds: float | None = Field(
        None, gt=0, description="wall-clock budget of each batch; runs then end with their "
        "results so far (stop reason 'time')")
    dtype: Literal["float64", "float32"] = "float64"
    onedim: Literal["auto", "on", "off"] = Field(
        "auto", description="exact bucketed step for one input coordinate plus a bias "
        "(docs/math.md §10; auto: when it pays)")
    skip_dead: Literal["auto", "on", "off"] = Field(
        "auto", description="step only the neurons active on some sample; dead ReLU neurons keep "
        "their parameters exactly (docs/math.md §0.3; results equal to rounding; auto: when it "
        "pays)")
    parametrisation: Literal["auto", "plain", "lognorm"] = Field(
        "auto", description="lognorm: the log-norm parametrisation (auto: when lambda^2 underflows)")
    balance: Literal["free", "tied"] = Field(
        "free", description="lognorm: 'free' is plain GD; 'tied' keeps a_j = s_j ||w_j|| exactly")
    activity_mask: Literal["auto", "on", "off"] = Field(
        "auto", description="persistent activity mask (auto: on for orthogonal data)")
    span: Literal["auto", "on", "off"] = Field(
        "auto", description="train in the span of the data (auto: when n < d or rows are orthogonal)")
    certify: int = Field(0, ge=0, le=2, description="rerun at lr/2 (1) and lr/4 (2)")
    certify_tol: float | None = Field(None, gt=0, description="required relative certificate")
    certify_precision: int = Field(
        0, ge=0, description="float32 runs: rerun this many runs of each batch (its first ones) "
        "in float64 and record their distance (docs/math.md §8.13)")
    certify_precision_tol: float | None = Field(
        None, gt=0, description="required relative precision certificate")
    polish: Literal["none", "newton", "bfgs", "lbfgs"] = Field(
        "none", description="polish each end point to the nearest stationary point "
        "(docs/math.md §9.5); the polished network and the distance moved are recorded")
    certify_end: bool = Field(
        False, description="certify each end state (minimum, saddle, not stationary; "
        "docs/math.md §9.6), of the polished point when train.polish is set")

    @model_validator(mode="after")
    def _consistent(self) -> TrainSpec:
        if (self.steps is None) == (self.duration is None):
            raise ValueError("steps/duration: give exactly one of train.steps or train.duration")
        if isinstance(self.time_scale, float) and not self.time_scale > 0:
            raise ValueError(f"time_scale: must be > 0 or 'width', got {self.time_scale}")
        if self.optimizer == "sgd" and self.batch_size is None:
            raise ValueError("batch_size: optimizer 'sgd' needs train.batch_size")
        if self.optimizer == "gd" and self.batch_size is not None:
            raise ValueError("batch_size: only for optimizer 'sgd' (gd is full batch)")
        if self.optimizer == "sgd" and self.activity_mask == "on":
            raise ValueError("activity_mask: 'on' needs full-batch GD, not sgd")
        if self.optimizer == "sgd" and self.span == "on":
            raise ValueError("span: 'on' needs full-batch GD, not sgd")
        if self.certify_tol is not None and self.certify == 0:
            raise ValueError("certify_tol: needs train.certify >= 1")
        if self.certify_precision and self.dtype != "float32":
            raise ValueError(f"certify_precision: reruns float32 runs in float64; needs "
                             f"train.dtype = 'float32' (got {self.dtype!r})")
        if self.certify_precision_tol is not None and self.certify_precision == 0:
            raise ValueError("certify_precision_tol: needs train.certify_precision >= 1")
        if self.optimizer == "sgd" and self.onedim == "on":
            raise ValueError("onedim: 'on' needs full-batch GD, not sgd")
        if self.second_layer_rate not in (0.0, 1.0) and self.layers == "first":
            raise ValueError(f"second_layer_rate: layers = 'first' freezes the second layer; "
                             f"give 0 or layers = 'both' (got {self.second_layer_rate})")
        if self.second_layer_rate != 1.0 and self.balance == "tied":
            raise ValueError(f"second_layer_rate: balance 'tied' keeps |a_j| = ||w_j||, which "
                             f"the flow keeps only at rate 1 (got {self.second_layer_rate})")
        if self.onedim == "on" and "on" in (self.activity_mask, self.span):
            raise ValueError("onedim: 'on' excludes activity_mask 'on' and span 'on'")
        return self

    @property
    def n_steps(self) -> int:
        if self.steps is not None:
            return self.steps
        return math.ceil(self.duration / self.lr - 1e-9)  # type: ignore[operator]


CLASSIFICATION_LOSSES = ("exponential", "logistic")
"""Losses of a margin y h(x): their labels must be +1 or -1 (docs/math.md §4.1)."""

RENAMED = {"train.engine": "train.parametrisation", "train.reduce": "train.span"}
"""Old keys and their new names: an old key is refused with a message naming the new one."""


class RecordSpec(_Strict):
    """When and what to record: the union of a linear (``every``) schedule, a geometric
    (``points``) one and explicit lists of steps (``at_steps``) and flow times (``at_times``,
    rounded to the nearest step); step 0 and the last step are always recorded, entries past
    the last step are ignored. Runs trained in one batch record at the union of their
    schedules."""

    every: int | None = Field(None, gt=0, description="record every this many steps")
    points: int = Field(100, ge=0, description="geometrically spaced record points")
    at_steps: tuple[Annotated[int, Field(ge=0)], ...] = Field(
        (), description="explicit record steps (e.g. an author's checkpoint list)")
    at_times: tuple[Annotated[float, Field(ge=0)], ...] = Field(
        (), description="explicit record flow times (step * lr), rounded to steps")
    probes: tuple[str, ...] = DEFAULT_PROBES
    snapshots: bool = Field(False, description="also record all hidden weights W")

    @model_validator(mode="after")
    def _probes(self) -> RecordSpec:
        unknown = [p for p in self.probes if p not in PROBES]
        if unknown:
            raise ValueError(f"probes: unknown {unknown}; allowed: {', '.join(PROBES)}")
        return self


# ----------------------------------------------------------------------------------- experiment
class Experiment(_Strict):
    """A batch of ``runs`` independent networks; run r draws its keys from (seed, r)."""

    name: str = "experiment"
    seed: int = Field(0, ge=0, le=MAX_SEED)
    runs: int = Field(1, gt=0)
    data: DataSpec
    model: ModelSpec
    init: InitSpec
    train: TrainSpec
    record: RecordSpec = RecordSpec()

    @model_validator(mode="after")
    def _cross(self) -> Experiment:
        n = self.data.n_samples
        if self.train.batch_size is not None and self.train.batch_size > n:
            raise ValueError(
                f"train.batch_size: must be <= n = {n}, got {self.train.batch_size}")
        if self.train.activity_mask == "on" and self.model.activation != "relu":
            raise ValueError("train.activity_mask: 'on' needs activation 'relu'")
        if self.train.balance == "tied" and (self.train.parametrisation == "plain"
                                             or not isinstance(self.init, BalancedInit)):
            raise ValueError("train.balance: 'tied' needs init.scheme 'balanced' and the "
                             "log-norm parametrisation")
        if self.train.onedim == "on" and (self.data.input_dim != 1 or not self.model.bias
                                          or self.model.activation != "relu"):
            raise ValueError("train.onedim: 'on' needs one input coordinate, model.bias = true "
                             "and activation 'relu'")
        if self.train.loss in CLASSIFICATION_LOSSES and not self.data.sign_labels:
            raise ValueError(
                f"train.loss: {self.train.loss!r} needs labels +1 or -1, but data.kind "
                f"{getattr(self.data, 'kind', '?')!r} has other label values; allowed: a "
                "square loss ('square', 'mse') for real labels, or data with labels +-1")
        self.init.check(self.model, self.data, self.input_dim)
        return self

    # resolved numbers ------------------------------------------------------------------------
    @property
    def kappa(self) -> float:
        return 1.0 / self.model.width if self.model.kappa == "1/p" else 1.0

    @property
    def time_scale(self) -> float:
        ts = self.train.time_scale
        return float(self.model.width) if ts == "width" else float(ts)

    @property
    def input_dim(self) -> int:
        """d as the network sees it: the data's input dimension, + 1 with a hidden bias."""
        return self.data.input_dim + (1 if self.model.bias else 0)

    @property
    def log_lambda(self) -> float | None:
        """log of the effective initial scale, for schemes homogeneous in it (else None)."""
        return self.init.log_lambda(self.model.width) if isinstance(self.init, _Scaled) else None

    def with_train(self, **fields: Any) -> Experiment:
        """This experiment with ``fields`` of its ``train`` table replaced (validated as a
        :class:`TrainSpec`)."""
        train = TrainSpec.model_validate({**self.train.model_dump(), **fields})
        return self.model_copy(update={"train": train})

    def resolved(self) -> tuple[dict[str, Any], list[str]]:
        """The 'auto' choices of ``train`` made concrete (keys ``parametrisation``,
        ``activity_mask``, ``span``), and a note for each automatic choice (docs/math.md §0.3):
        the log-norm parametrisation when lambda^2 is below the smallest normal float or the
        balance is tied; the activity mask for orthogonal data under ReLU full-batch GD; the
        span of the data when the rows are orthogonal or n < d under full-batch GD."""
        t, notes = self.train, []
        parametrisation = t.parametrisation
        if parametrisation == "auto":
            tiny = 2.2250738585072014e-308 if t.dtype == "float64" else 1.1754944e-38
            lam = self.log_lambda
            parametrisation = "plain"
            if (lam is not None and 2 * lam < math.log(tiny)) or t.balance == "tied":
                parametrisation = "lognorm"
                if t.balance != "tied":
                    notes.append(
                        f"parametrisation: lambda^2 = exp({2 * lam:.4g}) is below the smallest "
                        f"normal {t.dtype} ({tiny:.3g}): using the log-norm parametrisation "
                        f"(docs/math.md §0.3)")
        setting = "off" if t.onedim == "auto" and "on" in (t.activity_mask, t.span) else t.onedim
        onedim, note = onedim_path.resolve(
            setting, input_dim=self.data.input_dim, bias=self.model.bias, n=self.data.n_samples,
            width=self.model.width, gd=t.optimizer == "gd", relu=self.model.activation == "relu")
        if note:
            notes.append(note)
        orthogonal = self.data.orthogonal_rows
        mask = t.activity_mask
        if mask == "auto":
            mask = "on" if (not onedim and orthogonal and self.model.activation == "relu"
                            and t.optimizer == "gd") else "off"
            if mask == "on":
                notes.append("activity_mask: on (orthogonal data: dead pairs never revive, "
                             "docs/math.md §0.3)")
        span = t.span
        if span == "auto":
            n, d = self.data.n_samples, self.input_dim
            span = "on" if not onedim and t.optimizer == "gd" and (orthogonal or n < d) else "off"
            if span == "on":
                notes.append("span: training in the span of the data (lossless)")
        return {"parametrisation": parametrisation, "activity_mask": mask == "on",
                "span": span == "on", "onedim": onedim}, notes


# ---------------------------------------------------------------------------------- load / dump
_UNION_MEMBER = re.compile(r"^(float|int|str|bool|none|[a-z-]+\[.*\])$")


def _where(loc: tuple[Any, ...]) -> tuple[str, str]:
    """(field path, context) of a pydantic error location: the tag of a data kind or init
    scheme (``init.dpb.scale``) becomes context, a union member's type name is dropped."""
    parts = [str(x) for x in loc]
    context = ""
    if len(parts) > 1 and parts[0] in ("data", "init"):
        registry = DATA_KINDS if parts[0] == "data" else INIT_SCHEMES
        if parts[1] in registry:
            context = f" for {parts[0]}.{'kind' if parts[0] == 'data' else 'scheme'} {parts[1]!r}"
            del parts[1]
    while parts and _UNION_MEMBER.match(parts[-1]):
        parts.pop()
    return ".".join(parts), context


def format_validation_error(err: ValidationError) -> str:
    """One line per field: ``field.path: message (got value)``; an old key (:data:`RENAMED`)
    is named with its new name; the messages of a union's members are joined with "or"."""
    problems: dict[str, tuple[list[str], str]] = {}
    for e in err.errors():
        loc, context = _where(e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = (f"renamed to {RENAMED[loc]}" if loc in RENAMED
                   else f"unknown field{context} (not allowed here; check the spelling)")
        got = e.get("input")
        shown = "" if isinstance(got, dict) or got is None else f" (got {got!r})"
        msgs, _ = problems.setdefault(loc, ([], shown))
        if msg not in msgs:
            msgs.append(msg)
    lines = []
    for loc, (msgs, shown) in problems.items():
        text = msgs[0] + "".join(" or " + m.removeprefix("Input should be ") for m in msgs[1:])
        head = re.match(r"^([A-Za-z_][\w./]*)(?: \(.*?\))?: ", text)
        if not loc or (head and head.group(1).startswith(loc)):
            lines.append(f"{text}{shown}")  # the message names its field
        elif head:  # a model's validator names a field of that model
            lines.append(f"{loc}.{text}{shown}")
        else:
            lines.append(f"{loc}: {text}{shown}")
    return "\n".join(lines)


def read_mapping(path: str | Path, field: str = "config") -> dict[str, Any]:
    """Read a TOML (.toml) or YAML (.yaml/.yml) file into a dict; ``field`` names the file in
    errors."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{field}: {str(path)!r} is a folder; give a .toml or .yaml file")
    if not path.is_file():
        raise ConfigError(f"{field}: no such file: {str(path)!r}")
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".yaml", ".yml"):
        raise ConfigError(f"{field}: unsupported file type {suffix!r} ({path.name}); allowed: "
                          ".toml, .yaml, .yml")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{field}: {path.name} is not a text file (not UTF-8); give a .toml "
                          "or .yaml file") from None
    except OSError as err:
        raise ConfigError(f"{field}: cannot read {str(path)!r}: {err.strerror}") from None
    try:
        data = tomllib.loads(text) if suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as err:
        detail = " ".join(str(err).split())
        raise ConfigError(f"{field}: cannot parse {path.name}: {detail}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{field}: {path.name} must hold a mapping (key = value) at top level, "
                          f"got {type(data).__name__}")
    return data


def parse_value(text: str) -> Any:
    """Parse a ``--set`` value as a TOML literal (number, bool, string, array); else a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def split_override(item: str) -> tuple[list[str], Any]:
    """``key.path=value`` as (key parts, parsed value); refuses a missing ``=`` or key."""
    if "=" not in item:
        raise ConfigError(f"--set: expected key.path=value, got {item!r}")
    key, _, raw = item.partition("=")
    parts = key.strip().split(".")
    if not all(p.strip() for p in parts):
        raise ConfigError(f"--set: {item!r} names no field; expected key.path=value "
                          "(e.g. train.lr=0.1)")
    return [p.strip() for p in parts], parse_value(raw.strip())


def apply_overrides(mapping: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``key.path=value`` overrides to a nested dict (a new dict is returned)."""
    result = json.loads(json.dumps(mapping))
    for item in overrides:
        parts, value = split_override(item)
        node = result
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"--set: {'.'.join(parts)!r}: {part!r} is not a table")
            node = child
        node[parts[-1]] = value
    return result


def experiment_from_mapping(mapping: dict[str, Any]) -> Experiment:
    """Validate a mapping into an Experiment, raising ConfigError with readable messages."""
    try:
        return Experiment.model_validate(mapping)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err)) from None
    except ValueError as err:  # data loading errors raised inside validators
        raise ConfigError(str(err)) from None


def load_experiment(path: str | Path, overrides: list[str] | None = None) -> Experiment:
    """Read, override and validate an experiment file."""
    return experiment_from_mapping(apply_overrides(read_mapping(path), overrides or []))


def dump_toml(mapping: dict[str, Any]) -> str:
    """A minimal TOML writer for resolved configs (tables, scalars, arrays; None is omitted)."""

    def scalar(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v) if not (isinstance(v, float) and math.isinf(v)) else (
                "inf" if v > 0 else "-inf")
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(scalar(x) for x in v) + "]"
        return json.dumps(str(v))

    def table(prefix: str, m: dict[str, Any]) -> list[str]:
        lines = [f"{k} = {scalar(v)}" for k, v in m.items() if v is not None and not isinstance(v, dict)]
        for k, v in m.items():
            if isinstance(v, dict):
                name = f"{prefix}.{k}" if prefix else k
                lines += ["", f"[{name}]", *table(name, v)]
        return lines

    return "\n".join(table("", mapping)).strip() + "\n"
