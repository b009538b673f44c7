"""Validation of a dataset before any work starts."""

from __future__ import annotations

import numpy as np

from shallowflow.errors import UserError


class DataError(UserError):
    """A dataset that cannot be trained on; the message names what is wrong."""


def check_real(arr: np.ndarray, source: str, name: str) -> None:
    """Raise DataError unless ``arr`` holds real numbers (not complex, boolean, text, objects):
    nothing is cast silently."""
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise DataError(f"{source}: {name} holds complex numbers (dtype {arr.dtype}); values "
                        "must be real")
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        raise DataError(f"{source}: {name} must be real numbers, got dtype {arr.dtype}")


def validate_dataset(X: np.ndarray, y: np.ndarray, source: str = "data") -> None:
    """Raise DataError unless X is a finite (n, d) array and y a finite (n,) array, n, d >= 1."""
    X, y = np.asarray(X), np.asarray(y)
    if X.ndim != 2:
        raise DataError(f"{source}: X must be 2-D (n, d), got shape {X.shape}")
    if y.ndim != 1:
        raise DataError(f"{source}: y must be 1-D (n,), got shape {y.shape}")
    if X.shape[0] != y.shape[0]:
        raise DataError(
            f"{source}: X has {X.shape[0]} rows but y has {y.shape[0]} entries; they must match"
        )
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise DataError(f"{source}: need at least one sample and one feature, got X {X.shape}")
    for name, arr in (("X", X), ("y", y)):
        check_real(arr, source, name)
        bad = ~np.isfinite(arr)
        if bad.any():
            where = np.argwhere(bad)[0].tolist()
            raise DataError(
                f"{source}: {name} has {int(bad.sum())} non-finite value(s) (NaN or inf), "
                f"first at index {where}; all values must be finite"
            )
