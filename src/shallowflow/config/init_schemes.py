"""The initialisation schemes (``init.scheme``): each spec class draws its initial network;
:data:`INIT_SCHEMES` is their registry (read by ``shallowflow list``). Adding a scheme is a spec
class here with its ``draw`` plus the pure function in :mod:`shallowflow.model.initialisation`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import jax.numpy as jnp
import numpy as np
from jax import Array
from pydantic import Field, PrivateAttr, model_validator

from shallowflow import data as datagen
from shallowflow.config.data_kinds import _DataBase
from shallowflow.config.model_spec import ModelSpec
from shallowflow.config.spec_types import ConfigError, FloatArray, StrictModel, _Loaded, _registry
from shallowflow.errors import file_refusal, shown
from shallowflow.model import initialisation as inits
from shallowflow.model.network import Network


class _InitBase(StrictModel):
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
    allowed = "an .npz file with arrays a and W that this user may read"
    refusal = file_refusal(file, "init.path", allowed)
    if refusal is not None:
        raise ValueError(refusal)
    if file.suffix.lower() != ".npz":
        raise ValueError(f"init.path: {shown(file)} is not an .npz file; allowed: {allowed}")
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
                             f"got data.kind={shown(getattr(data, 'kind', None))}")
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


class XavierInit(_InitBase):
    """Xavier normal: w_ij ~ N(0, 1/d); output weights 1 ('ones', Safran-Shamir) or N(0, 1/p)."""

    reads_samples: ClassVar[bool] = False

    scheme: Literal["xavier"]
    output: Literal["ones", "gaussian"] = "ones"

    def draw(self, key: Array, p: int, X: Array, y: Array) -> Network:
        return inits.xavier(key, p, X.shape[-1], self.output)


InitSpec = Annotated[
    DpbInit | BalancedInit | GaussianInit | DominatedInit | GroupInit | PytorchInit | GivenInit
    | XavierInit,
    Field(discriminator="scheme"),
]


INIT_SCHEMES: dict[str, type[_InitBase]] = _registry(InitSpec, "scheme")
"""The initialisation schemes: ``init.scheme`` -> its spec class (``draw``, one-line doc)."""
