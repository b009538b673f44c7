"""Boursier-Flammarion's data sets with the bias column appended, as numpy arrays (docs/math.md §2.4,
§2.5): X~ = [x, 1] (n, 2), y (n,), the coordinates BF's theory (G, extremal vectors, OLS) uses.

The numbers are those of the ``three_point`` and ``stewart`` generators of
``shallowflow.data.generators`` (the data kinds of ``config/data_kinds.py``, which add the bias through
``model.bias``): the same key gives the same points. ``assumption3`` draws points satisfying
Assumption 3 (docs/math.md §2.4), uniformly in its boxes. Each draws in float64 inside
:func:`shallowflow.precision.float64` (JAX's process-wide settings are left as they are).
"""

from __future__ import annotations

import jax
import numpy as np

from shallowflow.data import generators
from shallowflow.model.network import add_bias_column
from shallowflow.precision import float64

__all__ = ["assumption3", "stewart", "three_point", "with_bias"]


def with_bias(x: object) -> np.ndarray:
    """x (n,) or (n, d) -> X~ = [x, 1] (n, d + 1), float64 numpy (docs/math.md §0.2)."""
    x = np.asarray(x, dtype=np.float64)
    with float64():
        return np.asarray(add_bias_column(x[:, None] if x.ndim == 1 else x))


def _key(key: jax.Array | int) -> jax.Array:
    return jax.random.PRNGKey(key) if isinstance(key, int) else key


def three_point() -> tuple[np.ndarray, np.ndarray]:
    """BF's experiment data (authors' code, docs/math.md §2.4): X~ = [(-0.75, -0.5, 0.125), 1]
    (3, 2), y = (1.1, 0.1, 0.8)."""
    with float64():
        x, y = generators.three_point()
        return with_bias(x), np.asarray(y, dtype=np.float64)


def stewart(key: jax.Array | int, n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """BF App. B.2 (docs/math.md §2.5): x_k ~ U[-1, 1], y_k the piecewise-linear teacher through
    ``generators.STEWART_KNOTS``; X~ (n, 2), y (n,). ``key``: a JAX PRNG key or an int seed
    (``PRNGKey(seed)``)."""
    with float64():
        x, y = generators.stewart(_key(key), n)
        return with_bias(x), np.asarray(y, dtype=np.float64)


def assumption3(key: jax.Array | int, eta: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Three points drawn uniformly in Assumption 3's boxes (docs/math.md §2.4), X~ (3, 2), y (3,):

        x_1 in [-1, -1+eta] x [1, 1+eta],   y_1 in [1, 1+eta],
        x_2 in [-eta, eta] x [1-eta, 1+eta], y_2 in [0, eta],
        x_3 in [1-eta, 1] x [1, 1+eta],      y_3 in [1, 1+eta]

    (the paper's half-open ends are measure zero). The second coordinate is the bias-like one."""
    if not 0 < eta < 1:
        raise ValueError(f"eta: must lie in (0, 1), got {eta!r}")
    lo = np.array([[-1, 1, 1], [-eta, 1 - eta, 0], [1 - eta, 1, 1]], dtype=np.float64)
    hi = np.array([[-1 + eta, 1 + eta, 1 + eta], [eta, 1 + eta, eta], [1, 1 + eta, 1 + eta]])
    with float64():
        u = np.asarray(jax.random.uniform(_key(key), (3, 3), dtype=jax.numpy.float64))
    v = lo + u * (hi - lo)
    return v[:, :2], v[:, 2]
