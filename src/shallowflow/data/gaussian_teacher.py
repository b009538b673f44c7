"""The population of Gaussian inputs and its teacher (docs/math.md §11): teacher schemes, a teacher
from a file, and the covariance's Cholesky factor, each validated. Infinite data has no (X, y):
the engine takes the teacher and the factor (:class:`~shallowflow.model.inputs.PopulationInputs`).

    orthonormal   v_k = e_k, b_k = 1 (k <= d)          the landscape papers' teacher
    gaussian      v_k ~ N(0, I_d / d), b_k = 1          drawn with the data key

Its finite-sample counterpart (``gaussian_teacher_samples``, docs/math.md §11.9) draws n inputs
and labels them by the teacher: :func:`teacher_samples`.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from shallowflow.data.files import load_npz
from shallowflow.data.validate import DataError, check_real
from shallowflow.errors import file_problem, shown

TEACHER_SCHEMES = ("orthonormal", "gaussian")
SYMMETRY_TOL = 1e-12
"""A covariance is symmetric when max |Sigma - Sigma^T| <= SYMMETRY_TOL * max |Sigma|."""


def teacher_arrays(scheme: str, k: int, d: int, normal: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(b (k,), V (k, d)) of a named scheme; ``normal`` (k, d): the standard normal draws of the
    'gaussian' scheme (drawn by the caller from the run's data key)."""
    if scheme == "orthonormal":
        if k > d:
            raise DataError(f"data.k: the orthonormal teacher needs k <= d, got k={k} > d={d}")
        return np.ones(k), np.eye(d)[:k].copy()
    if scheme == "gaussian":
        if normal is None or normal.shape != (k, d):
            raise ValueError(f"normal: the gaussian teacher needs (k, d) = ({k}, {d}) draws")
        return np.ones(k), normal / np.sqrt(d)  # numpy, or traced inside a compiled draw
    raise DataError(f"data.teacher: unknown scheme {shown(scheme)}; allowed: "
                    f"{', '.join(TEACHER_SCHEMES)}, 'given', 'file'")


def teacher_samples(key: Array, n: int, b: Array | np.ndarray, V: Array | np.ndarray,
                    chol: np.ndarray | None) -> tuple[Array, Array]:
    """n samples of the population (docs/math.md §11.9): x_i = L z_i with z_i ~ N(0, I_d) (L =
    ``chol``, None for the identity) and y_i = h*(x_i) = sum_k b_k relu(<v_k, x_i>), float64."""
    Z = jax.random.normal(key, (n, jnp.shape(V)[-1]), jnp.float64)
    X = Z if chol is None else Z @ jnp.asarray(chol, jnp.float64).T
    return X, jnp.maximum(X @ jnp.asarray(V, jnp.float64).T, 0.0) @ jnp.asarray(b, jnp.float64)


def check_teacher(b: np.ndarray, V: np.ndarray, d: int, source: str = "data") -> None:
    """DataError unless b is (k,) and V (k, d), k >= 1, both real and finite."""
    b, V = np.asarray(b), np.asarray(V)
    for name, arr in (("b", b), ("V", V)):
        check_real(arr, source, name)
    if b.ndim != 1 or b.shape[0] == 0:
        raise DataError(f"{source}.b: the teacher's output weights must be a non-empty 1-D array "
                        f"(k,), got shape {b.shape}")
    if V.shape != (b.shape[0], d):
        raise DataError(f"{source}.V: the teacher's neurons must have shape (k, d) = "
                        f"({b.shape[0]}, {d}), got {V.shape}")
    for name, arr in (("b", b), ("V", V)):
        if not np.all(np.isfinite(arr)):
            raise DataError(f"{source}.{name}: all values must be finite (NaN or inf found)")


def load_teacher(path: str) -> tuple[np.ndarray, np.ndarray]:
    """(b, V) from an .npz archive holding arrays ``b`` (k,) and ``V`` (k, d) (shapes checked by
    :func:`check_teacher`)."""
    problem = file_problem(path)
    if problem is not None:
        raise DataError(f"data.path: {shown(path)} {problem}")
    b, V = load_npz(Path(path), "data.path", ("b", "V"))
    return b, V


def covariance_factor(kind: str, d: int, variances: np.ndarray | None,
                      sigma: np.ndarray | None) -> np.ndarray | None:
    """The Cholesky factor L of Sigma = L L^T (d, d), None for the identity (docs/math.md §11.6).
    DataError unless the covariance is given as its kind asks (diagonal: ``variances`` (d,) > 0;
    full: ``sigma`` (d, d)), finite, symmetric and positive definite."""
    given = {"variances": variances, "sigma": sigma}
    wanted = {"identity": None, "diagonal": "variances", "full": "sigma"}[kind]
    extra = [name for name, value in given.items() if value is not None and name != wanted]
    if extra:
        raise DataError(f"data.{extra[0]}: not with covariance {shown(kind)} (variances go with "
                        "'diagonal', sigma with 'full')")
    if wanted is None:
        return None
    arr = given[wanted]
    if arr is None:
        raise DataError(f"data.{wanted}: covariance {shown(kind)} needs data.{wanted}")
    arr = np.asarray(arr, np.float64)
    shape = (d,) if kind == "diagonal" else (d, d)
    if arr.shape != shape:
        raise DataError(f"data.{wanted}: must have shape {shape} for d = {d}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise DataError(f"data.{wanted}: all values must be finite (NaN or inf found)")
    if kind == "diagonal":
        if np.any(arr <= 0):
            raise DataError(f"data.variances: must all be > 0 (a positive definite covariance), "
                            f"got min {arr.min():.6g}")
        return np.diag(np.sqrt(arr))
    scale = np.max(np.abs(arr))
    if np.max(np.abs(arr - arr.T)) > SYMMETRY_TOL * scale:
        raise DataError(f"data.sigma: the covariance must be symmetric, got max |Sigma - Sigma^T| "
                        f"= {np.max(np.abs(arr - arr.T)):.3g}")
    lowest = float(np.linalg.eigvalsh(arr)[0]) if scale > 0 else 0.0
    if not lowest > 0:
        raise DataError(f"data.sigma: the covariance must be positive definite, its smallest "
                        f"eigenvalue is {lowest:.6g}")
    return np.linalg.cholesky((arr + arr.T) / 2)
