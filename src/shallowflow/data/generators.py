"""Synthetic data generators: pure functions ``key -> (X, y)`` (docs/math.md §1.3, §2.4, §2.5, §3.7, §4.3).

| generator   | inputs                                                   | labels                      |
|-------------|----------------------------------------------------------|-----------------------------|
| sphere      | x = rho u, u ~ U(S^{d-1}), rho ~ U[1, 2]  (DPB Exp. 1)   | eps zeta, zeta ~ U[1, 2]    |
| orthogonal  | x = rho e_i, canonical or random orthonormal basis      | eps zeta (DPB Exp. 2)       |
| orthonormal | unit orthonormal rows (TBLEL)                            | |N(0,1)| or N(0,1)          |
| three_point | x = (-0.75, -0.5, 0.125), 1-D (BF; add the bias)         | (1.1, 0.1, 0.8)             |
| stewart     | x ~ U[-1, 1], 1-D (BF App. B.2; add the bias)            | piecewise-linear teacher    |
| two_point   | x1 = (1, 0), x2 = (sin a, cos a)  (MMV A.2/A.3)          | (+1, +1)                    |
| teacher     | N(0, I/d) or unit-sphere inputs                          | a random ReLU network       |
"""

from __future__ import annotations

from typing import Literal

import jax
import jax.numpy as jnp
from jax import Array

F64 = jnp.float64


def signed_uniform(key: Array, n: int, low: float = 1.0, high: float = 2.0) -> Array:
    """y_i = eps_i zeta_i with eps_i ~ U{-1, +1} and zeta_i ~ U[low, high] (docs/math.md §1.3)."""
    ks, km = jax.random.split(key)
    return jax.random.rademacher(ks, (n,)).astype(F64) * jax.random.uniform(km, (n,), F64, low, high)


def orthonormal_rows(key: Array, n: int, d: int, basis: Literal["canonical", "random"]) -> Array:
    """n orthonormal rows in R^d: the first n canonical vectors, or Haar-random (QR with sign fix)."""
    if n > d:
        raise ValueError(f"n: orthonormal data needs n <= d, got n={n} > d={d}")
    if basis == "canonical":
        return jnp.eye(n, d, dtype=F64)
    if basis != "random":
        raise ValueError(f"basis: must be 'canonical' or 'random', got {basis!r}")
    Q, R = jnp.linalg.qr(jax.random.normal(key, (d, n), F64))
    return (Q * jnp.sign(jnp.diagonal(R))).T


def sphere(
    key: Array, n: int, d: int, radius: tuple[float, float] = (1.0, 2.0),
    label_range: tuple[float, float] = (1.0, 2.0),
) -> tuple[Array, Array]:
    """DPB Exp. 1: x_i = rho_i u_i, u_i uniform on S^{d-1}, rho_i ~ U[radius]; y = eps zeta."""
    ku, kr, ky = jax.random.split(key, 3)
    G = jax.random.normal(ku, (n, d), F64)
    U = G / jnp.linalg.norm(G, axis=1, keepdims=True)
    rho = jax.random.uniform(kr, (n, 1), F64, *radius)
    return rho * U, signed_uniform(ky, n, *label_range)


def orthogonal(
    key: Array, n: int, d: int, basis: Literal["canonical", "random"] = "canonical",
    norm_range: tuple[float, float] = (1.0, 2.0), label_range: tuple[float, float] = (1.0, 2.0),
) -> tuple[Array, Array]:
    """DPB Exp. 2: x_i = rho_i e_i with rho_i ~ U[norm_range], e_i orthonormal; y = eps zeta."""
    kb, kr, ky = jax.random.split(key, 3)
    rho = jax.random.uniform(kr, (n, 1), F64, *norm_range)
    return rho * orthonormal_rows(kb, n, d, basis), signed_uniform(ky, n, *label_range)


def orthonormal(
    key: Array, n: int, d: int, basis: Literal["canonical", "random"] = "canonical",
    labels: Literal["abs_normal", "normal"] = "abs_normal",
) -> tuple[Array, Array]:
    """TBLEL (docs/math.md §3.7): unit orthonormal inputs, labels |N(0, 1)| (Fig. 1) or N(0, 1) (Fig. 5)."""
    kb, ky = jax.random.split(key)
    y = jax.random.normal(ky, (n,), F64)
    if labels == "abs_normal":
        y = jnp.abs(y)
    elif labels != "normal":
        raise ValueError(f"labels: must be 'abs_normal' or 'normal', got {labels!r}")
    return orthonormal_rows(kb, n, d, basis), y


def three_point() -> tuple[Array, Array]:
    """BF's 3-point data as in the authors' code (docs/math.md §2.4): 1-D inputs, use with a bias."""
    return jnp.array([[-0.75], [-0.5], [0.125]], F64), jnp.array([1.1, 0.1, 0.8], F64)


STEWART_KNOTS = (-1.0, -0.7, -0.55, -0.4, 0.0, 0.5, 0.6, 0.7, 1.0)
STEWART_VALUES = (0.0, 0.7, 0.5, 1.0, 0.0, 1.0, 0.6, 0.7, 0.0)


def stewart(key: Array, n: int = 40) -> tuple[Array, Array]:
    """BF App. B.2 (docs/math.md §2.5): x ~ U[-1, 1], y = piecewise-linear teacher through the knots."""
    x = jax.random.uniform(key, (n,), F64, -1.0, 1.0)
    y = jnp.interp(x, jnp.array(STEWART_KNOTS, F64), jnp.array(STEWART_VALUES, F64))
    return x[:, None], y


def two_point(angle: float = 0.1) -> tuple[Array, Array]:
    """MMV A.2/A.3 (docs/math.md §4.3): x1 = (1, 0), x2 = (sin angle, cos angle), both labelled +1."""
    X = jnp.array([[1.0, 0.0], [jnp.sin(angle), jnp.cos(angle)]], F64)
    return X, jnp.ones(2, F64)


def teacher(
    key: Array, n: int, d: int, width: int = 3, inputs: Literal["gaussian", "sphere"] = "gaussian",
    noise: float = 0.0,
) -> tuple[Array, Array]:
    """A random ReLU teacher y = sum_k b_k sigma(<v_k, x>) + noise: v_k uniform on the sphere,
    b_k Rademacher; inputs N(0, I_d/d) or uniform on the unit sphere."""
    kx, kv, kb, kn = jax.random.split(key, 4)
    X = jax.random.normal(kx, (n, d), F64)
    if inputs == "gaussian":
        X = X / jnp.sqrt(d)
    elif inputs == "sphere":
        X = X / jnp.linalg.norm(X, axis=1, keepdims=True)
    else:
        raise ValueError(f"inputs: must be 'gaussian' or 'sphere', got {inputs!r}")
    V = jax.random.normal(kv, (width, d), F64)
    V = V / jnp.linalg.norm(V, axis=1, keepdims=True)
    b = jax.random.rademacher(kb, (width,)).astype(F64)
    y = jnp.maximum(X @ V.T, 0.0) @ b + noise * jax.random.normal(kn, (n,), F64)
    return X, y
