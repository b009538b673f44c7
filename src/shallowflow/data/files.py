"""User data from .npz (arrays ``X`` and ``y``) or .csv (features, label in the last column).

Nothing is altered silently: complex, boolean, object (pickled) and non-finite arrays are refused,
and a CSV's first line is a header only when none of its fields is a number (a first row with a
typo is an error that names the line, not a header).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from shallowflow.data.validate import DataError, validate_dataset
from shallowflow.errors import file_refusal, shown, shown_name

NPY_MAGIC = b"\x93NUMPY"


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def load_npz(path: Path, field: str, names: tuple[str, ...] = ("X", "y")) -> tuple[np.ndarray, ...]:
    """The arrays ``names`` of an .npz archive, never unpickled; a single .npy file, a corrupt
    or truncated archive, a missing name or an object array is a :class:`DataError` naming
    ``field`` and the file."""
    with path.open("rb") as fh:
        head = fh.read(6)
    if head == NPY_MAGIC:
        raise DataError(f"{field}: {shown_name(path)} is a single .npy array, not an .npz archive; "
                        "save X and y together with numpy.savez")
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as err:
        raise DataError(f"{field}: {shown_name(path)} is not a readable .npz archive "
                        f"({' '.join(str(err).split())})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise DataError(f"{field}: {shown_name(path)} is not an .npz archive")
    with archive:
        missing = set(names) - set(archive.files)
        if missing:
            raise DataError(f"{field}: {shown_name(path)} lacks array(s) {sorted(missing)}; it has "
                            f"{sorted(archive.files)}, needs {', '.join(map(repr, names))}")
        try:
            arrays = tuple(archive[name] for name in names)
        except ValueError:  # object arrays need pickle, which is never loaded
            raise DataError(f"{field}: {shown_name(path)} holds object (pickled) arrays; "
                            f"{', '.join(names)} must be numeric arrays") from None
        except (OSError, EOFError, zipfile.BadZipFile) as err:
            raise DataError(f"{field}: {shown_name(path)} is truncated or corrupt "
                            f"({' '.join(str(err).split())})") from None
    return arrays


def _load_csv(path: Path, field: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise DataError(f"{field}: {shown_name(path)} is not a text (UTF-8) CSV file") from None
    rows = [(i + 1, line) for i, line in enumerate(lines) if line.strip()]
    if not rows:
        raise DataError(f"{field}: {shown_name(path)} is empty")
    first = [v.strip() for v in rows[0][1].split(",")]
    if not any(_number(v) for v in first):
        rows = rows[1:]  # a header: no field of the first line is a number
    if not rows:
        raise DataError(f"{field}: {shown_name(path)} has a header but no data rows")
    width = None
    table = []
    for lineno, line in rows:
        fields = [v.strip() for v in line.split(",")]
        bad = [v for v in fields if not _number(v)]
        if bad:
            raise DataError(f"{field}: {shown_name(path)} line {lineno}: {shown(bad[0])} is not a number "
                            "(only the first line may be a header, with no number in it)")
        if width is None:
            width = len(fields)
        elif len(fields) != width:
            raise DataError(f"{field}: {shown_name(path)} line {lineno} has {len(fields)} fields, "
                            f"the first data line {width}; every row needs the same number")
        table.append([float(v) for v in fields])
    arr = np.array(table)
    if arr.shape[1] < 2:
        raise DataError(f"{field}: {shown_name(path)} needs >= 2 columns (features, label), got "
                        f"{arr.shape[1]}")
    return arr[:, :-1], arr[:, -1]


def load_file(path: str | Path, field: str = "data.path") -> tuple[np.ndarray, np.ndarray]:
    """Load and validate (X, y) from ``path`` (float64).

    ``.npz``: arrays named ``X`` (n, d) and ``y`` (n,). ``.csv``: one sample per row, comma
    separated, label last; a first line with no number in it is a header.
    """
    path = Path(path)
    refusal = file_refusal(path, field, "an .npz or .csv file this user may read")
    if refusal is not None:
        raise DataError(refusal)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        X, y = load_npz(path, field)
    elif suffix == ".csv":
        X, y = _load_csv(path, field)
    else:
        raise DataError(f"{field}: unsupported file type {shown(suffix)} ({shown_name(path)}); allowed: "
                        ".npz, .csv")
    validate_dataset(X, y, source=f"{field} ({shown_name(path)})")
    return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
