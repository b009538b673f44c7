"""User data from .npz (arrays ``X`` and ``y``) or .csv (features, label in the last column)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from shallowflow.data.validate import DataError, validate_dataset


def load_file(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Load and validate (X, y) from ``path``.

    ``.npz``: arrays named ``X`` (n, d) and ``y`` (n,). ``.csv``: one sample per row, comma
    separated, label last; a first line that is not numeric is taken as a header.
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"data.path: no such file: {str(path)!r}")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as archive:
            missing = {"X", "y"} - set(archive.files)
            if missing:
                raise DataError(
                    f"data.path: {path.name} lacks array(s) {sorted(missing)}; "
                    f"it has {sorted(archive.files)}, needs 'X' and 'y'"
                )
            X, y = np.asarray(archive["X"], dtype=float), np.asarray(archive["y"], dtype=float)
    elif suffix == ".csv":
        text = path.read_text().strip().splitlines()
        if not text:
            raise DataError(f"data.path: {path.name} is empty")
        first = text[0].split(",")
        try:
            [float(v) for v in first]
            skip = 0
        except ValueError:
            skip = 1
        try:
            table = np.loadtxt(path, delimiter=",", skiprows=skip, ndmin=2)
        except ValueError as err:
            raise DataError(f"data.path: {path.name} is not a numeric CSV table: {err}") from err
        if table.shape[1] < 2:
            raise DataError(f"data.path: {path.name} needs >= 2 columns (features, label)")
        X, y = table[:, :-1], table[:, -1]
    else:
        raise DataError(f"data.path: unsupported file type {suffix!r}; allowed: .npz, .csv")
    validate_dataset(X, y, source=f"data.path ({path.name})")
    return X, y
