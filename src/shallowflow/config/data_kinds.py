"""The data kinds (``data.kind``): each spec class knows its sample count, input dimension and
generator; :data:`DATA_KINDS` is their registry (read by ``shallowflow list``). Adding a data kind
is a spec class here (with its ``shape`` and ``generate``) plus its generator in
:mod:`shallowflow.data`."""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from pydantic import Field, PrivateAttr, model_validator

from shallowflow import data as datagen
from shallowflow.config.spec_types import (
    MAX_SEED,
    FloatArray,
    Range,
    StrictModel,
    _check_range,
    _Loaded,
    _registry,
)
from shallowflow.data import gaussian_teacher as pop
from shallowflow.data.mnist import load_mnist_pair
from shallowflow.errors import shown


class _DataBase(StrictModel):
    """A data kind: its fields, its shape (n, d) without generating it, and its generator
    ``key -> (X (n, d), y (n,))`` (bias column not included)."""

    given: ClassVar[bool] = False
    """True: a fixed data set, the same for every run (not generated from the run's key)."""
    orthogonal_rows: ClassVar[bool] = False
    """True: the inputs are orthogonal by construction (activity mask, span, group init)."""
    sign_labels: ClassVar[bool] = False
    """True: every label is +1 or -1 by construction (classification losses need it)."""
    population: ClassVar[bool] = False
    """True: infinite data, the population of a teacher (docs/math.md §11): no (X, y), n = 0;
    the engine gets :meth:`GaussianTeacherData.population_inputs` instead."""

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

    def step_flops(self, d: int, p: int) -> float:
        """The arithmetic of one gradient step of one network of p neurons on d inputs: the two
        products of docs/math.md §0.3, 4 n d p."""
        return 4.0 * self.n_samples * d * p


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
            raise ValueError(f"digits: need two different digits, got {shown(list(self.digits))}")
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


MAX_POPULATION_DIM = 65_536
"""The largest input dimension d and teacher width k of the population kind."""


class GaussianTeacherData(_DataBase):
    """Infinite data (docs/math.md §11): x ~ N(0, Sigma), labelled by the ReLU teacher h*(x) =
    sum_k b_k relu(<v_k, x>); the square loss is the population loss 1/2 E[(h - h*)^2] in closed
    form, with no sample. Teacher: 'orthonormal' (v_k = e_k, b_k = 1), 'gaussian' (v_k ~ N(0,
    I/d), b_k = 1, drawn with the data seed), 'given' (arrays b, V) or 'file' (.npz with b, V);
    covariance: 'identity', 'diagonal' (``variances``) or 'full' (``sigma``)."""

    population: ClassVar[bool] = True
    kind: Literal["gaussian_teacher"]
    d: int = Field(gt=0, le=MAX_POPULATION_DIM, description="input dimension")
    k: int | None = Field(None, gt=0, le=MAX_POPULATION_DIM,
                          description="teacher width (default: d, or the given arrays' k)")
    teacher: Literal["orthonormal", "gaussian", "given", "file"] = "orthonormal"
    b: FloatArray | None = None
    V: FloatArray | None = None
    path: str | None = None
    covariance: Literal["identity", "diagonal", "full"] = "identity"
    variances: FloatArray | None = None
    sigma: FloatArray | None = None
    _loaded: _Loaded = PrivateAttr()

    @model_validator(mode="after")
    def _valid(self) -> GaussianTeacherData:
        if self.per_run and self.population:
            raise ValueError("per_run: the population is one teacher for every run; per_run must "
                             "be false")
        arrays = {"b": self.b, "V": self.V, "path": self.path}
        needs = {"given": ("b", "V"), "file": ("path",)}.get(self.teacher, ())
        for name, value in arrays.items():
            if (value is None) == (name in needs):
                raise ValueError(f"{name}: teacher {shown(self.teacher)} "
                                 + ("needs" if name in needs else "takes no") + f" data.{name}")
        if self.teacher in ("given", "file"):
            b, V = (self.b, self.V) if self.teacher == "given" else pop.load_teacher(self.path)
            pop.check_teacher(b, V, self.d)
            if self.k is not None and self.k != len(b):
                raise ValueError(f"k: the given teacher has k = {len(b)} neurons, got k={self.k}")
        else:
            b = V = np.zeros(0)
            pop.teacher_arrays(self.teacher, self.teacher_width, self.d,
                               np.zeros((self.teacher_width, self.d)))  # the scheme's checks
        chol = pop.covariance_factor(self.covariance, self.d, self.variances, self.sigma)
        self._loaded = _Loaded(np.asarray(b, np.float64), np.asarray(V, np.float64),
                               np.zeros(0) if chol is None else chol)
        return self

    @property
    def teacher_width(self) -> int:
        """k: the given arrays' width, else ``k`` (default d)."""
        if self.teacher == "given":
            return len(self.b)
        if self.teacher == "file":
            return len(self._loaded.arrays[0])
        return self.d if self.k is None else self.k

    @property
    def shape(self) -> tuple[int, int]:
        return 0, self.d

    def population_inputs(self, key: Array) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(b (k,), V (k, d), the covariance's Cholesky factor (d, d) or None for the identity),
        float64; the 'gaussian' teacher drawn with ``key``."""
        b, V, chol = self._loaded.arrays
        if self.teacher in ("orthonormal", "gaussian"):
            k = self.teacher_width
            normal = (np.asarray(jax.random.normal(key, (k, self.d), jnp.float64))
                      if self.teacher == "gaussian" else None)
            b, V = pop.teacher_arrays(self.teacher, k, self.d, normal)
        return b, V, (chol if chol.size else None)

    def generate(self, key: Array) -> tuple[Array, Array]:
        raise ValueError("data.kind 'gaussian_teacher' has no samples: use population_inputs")

    def step_flops(self, d: int, p: int) -> float:
        """The Gram matrix of the p + k directions and one product with them (docs/math.md §11.2),
        about 4 (p + k)^2 d."""
        return 4.0 * (p + self.teacher_width) ** 2 * d


MAX_TEACHER_SAMPLES = 100_000_000
"""The most samples of ``gaussian_teacher_samples``."""


class GaussianTeacherSamplesData(GaussianTeacherData):
    """``n`` samples of the population of ``gaussian_teacher`` (docs/math.md §11.9): x_i ~ N(0,
    Sigma) labelled y_i = h*(x_i) by the same teacher (the same fields; a 'gaussian' teacher drawn
    from the same data key, so a run here and a run on the population with one seed have one
    teacher and one start). Any loss; the finite-sample counterpart of the closed form."""

    population: ClassVar[bool] = False
    kind: Literal["gaussian_teacher_samples"]  # type: ignore[assignment]
    n: int = Field(gt=0, le=MAX_TEACHER_SAMPLES, description="number of samples")

    @model_validator(mode="after")
    def _one_teacher(self) -> GaussianTeacherSamplesData:
        if self.per_run and self.teacher == "gaussian":
            raise ValueError("per_run: with teacher 'gaussian' every run would draw its own "
                             "teacher; per_run needs teacher 'orthonormal', 'given' or 'file'")
        return self

    @property
    def shape(self) -> tuple[int, int]:
        return self.n, self.d

    def population_inputs(self, key: Array) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        raise ValueError("data.kind 'gaussian_teacher_samples' is finite data: use generate")

    def generate(self, key: Array) -> tuple[Array, Array]:
        b, V, chol = self._loaded.arrays
        if self.teacher in ("orthonormal", "gaussian"):
            k = self.teacher_width
            normal = (jax.random.normal(key, (k, self.d), jnp.float64)
                      if self.teacher == "gaussian" else None)
            b, V = pop.teacher_arrays(self.teacher, k, self.d, normal)
        return pop.teacher_samples(jax.random.fold_in(key, 1), self.n, b, V,
                                   chol if chol.size else None)

    def step_flops(self, d: int, p: int) -> float:
        return _DataBase.step_flops(self, d, p)


DataSpec = Annotated[
    SphereData | OrthogonalData | OrthonormalData | ThreePointData | StewartData | TwoPointData
    | TeacherData | FileData | ArrayData | MnistData | GaussianTeacherData
    | GaussianTeacherSamplesData,
    Field(discriminator="kind"),
]

DATA_KINDS: dict[str, type[_DataBase]] = _registry(DataSpec, "kind")
"""The data kinds: ``data.kind`` -> its spec class (shape, generator, one-line doc)."""
