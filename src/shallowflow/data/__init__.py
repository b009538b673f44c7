"""Datasets: generators (``key -> (X, y)``), file loaders and validation (docs/math.md §1.3, §2.4-2.5,
§3.7, §4.3). Inputs are rows of X (n, d); labels y have shape (n,). Each data kind's spec class in
:data:`shallowflow.config.DATA_KINDS` calls its generator here and knows its shape (n, d)."""

from shallowflow.data.files import load_file
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
from shallowflow.data.validate import DataError, validate_dataset

__all__ = [
    "DataError",
    "load_file",
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
