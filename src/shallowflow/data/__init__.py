"""Datasets: generators (``key -> (X, y)``), file loaders and validation (docs/math.md §1.3, §2.4-2.5,
§3.7, §4.3). Inputs are rows of X (n, d); labels y have shape (n,). Each data kind's spec class in
:data:`shallowflow.config.DATA_KINDS` calls its generator here and knows its shape (n, d)."""

from shallowflow.data.files import load_file, load_npz
from shallowflow.data.generators import (
    orthogonal,
    orthonormal,
    orthonormal_rows,
    signed_uniform,
    sphere,
    stewart,
    teacher,
    three_point,
    two_point,
)
from shallowflow.data.validate import DataError, check_real, validate_dataset

__all__ = [
    "DataError",
    "check_real",
    "load_file",
    "load_npz",
    "orthogonal",
    "orthonormal",
    "orthonormal_rows",
    "signed_uniform",
    "sphere",
    "stewart",
    "teacher",
    "three_point",
    "two_point",
    "validate_dataset",
]
