"""The MNIST digit-pair loader (docs/math.md §4.3): IDX and .npz parsing against tiny files written
here, scaling, centring, the label convention, the embedded subset, and errors that name the file."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest

from shallowflow.data.mnist import (
    EMBEDDED_NAME,
    EMBEDDED_SOURCE,
    load_mnist,
    load_mnist_pair,
    read_idx,
)
from shallowflow.data.validate import DataError

ROOT = Path(__file__).resolve().parent.parent
LABELS = np.array([3, 8, 3, 1, 8, 3, 0, 8], dtype=np.uint8)


def tiny_images(n=len(LABELS), rows=3, cols=4, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, rows, cols), dtype=np.uint8)


def idx_bytes(arr: np.ndarray, code: int = 0x08) -> bytes:
    head = struct.pack(">HBB", 0, code, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    return head + arr.astype(">u1" if code == 0x08 else arr.dtype.newbyteorder(">")).tobytes()


def write_pair(folder: Path, images, labels, gz=False, prefix="train"):
    suffix = ".gz" if gz else ""
    paths = []
    for kind, idx, arr in (("images", "idx3", images), ("labels", "idx1", labels)):
        path = folder / f"{prefix}-{kind}-{idx}-ubyte{suffix}"
        data = idx_bytes(arr)
        path.write_bytes(gzip.compress(data) if gz else data)
        paths.append(path)
    return paths


# ------------------------------------------------------------------------------- IDX parsing
@pytest.mark.parametrize("gz", [False, True])
def test_read_idx_round_trip(tmp_path, gz):
    images = tiny_images()
    img_path, lab_path = write_pair(tmp_path, images, LABELS, gz=gz)
    np.testing.assert_array_equal(read_idx(img_path), images)
    np.testing.assert_array_equal(read_idx(lab_path), LABELS)
    ints = np.arange(6, dtype=np.int32).reshape(2, 3) - 2
    (tmp_path / "ints").write_bytes(idx_bytes(ints, 0x0C))
    got = read_idx(tmp_path / "ints")
    np.testing.assert_array_equal(got, ints)
    assert got.dtype == np.int32


@pytest.mark.parametrize("gz", [False, True])
def test_load_mnist_from_idx_file_folder_and_explicit_labels(tmp_path, gz):
    images = tiny_images()
    img_path, lab_path = write_pair(tmp_path, images, LABELS, gz=gz)
    for raw in (load_mnist(img_path), load_mnist(tmp_path), load_mnist(img_path, lab_path)):
        np.testing.assert_array_equal(raw.images, images)
        np.testing.assert_array_equal(raw.labels, LABELS)
        assert img_path.name in raw.source and lab_path.name in raw.source


def test_pair_scaling_centring_labels_and_counts(tmp_path):
    images = tiny_images()
    img_path, _ = write_pair(tmp_path, images, LABELS)
    pair = load_mnist_pair((8, 3), img_path)
    keep = np.isin(LABELS, (3, 8))  # file order kept
    pixels = images[keep].reshape(-1, 12) / 255.0
    np.testing.assert_allclose(pair.mean_image, pixels.mean(axis=0))
    np.testing.assert_allclose(pair.X, pixels - pixels.mean(axis=0), atol=1e-15)
    np.testing.assert_allclose(pair.X.mean(axis=0), 0.0, atol=1e-15)  # centred over both classes
    np.testing.assert_array_equal(pair.y, np.where(LABELS[keep] == 8, 1.0, -1.0))  # first digit: +1
    assert pair.digits == (8, 3) and pair.counts == {8: 3, 3: 3} and pair.available == {8: 3, 3: 3}
    assert pair.image_shape == (3, 4) and pair.n == 6
    assert "8 (+1) vs 3 (-1)" in pair.describe() and img_path.name in pair.describe()
    # per_digit keeps the first images of each digit in file order
    few = load_mnist_pair((3, 8), img_path, per_digit=2)
    idx = [0, 1, 2, 4]  # first two 3s (0, 2) and first two 8s (1, 4)
    sub = images[idx].reshape(-1, 12) / 255.0
    np.testing.assert_allclose(few.X, sub - sub.mean(axis=0), atol=1e-15)
    np.testing.assert_array_equal(few.y, [1, -1, 1, -1])
    assert few.counts == {3: 2, 8: 2}


def test_npz_files(tmp_path):
    images = tiny_images(rows=28, cols=28)
    np.savez(tmp_path / "a.npz", images=images.reshape(len(LABELS), 784), labels=LABELS)
    np.savez(tmp_path / "keras.npz", x_train=images, y_train=LABELS, x_test=images[:2], y_test=LABELS[:2])
    a = load_mnist(tmp_path / "a.npz")
    np.testing.assert_array_equal(a.images, images)
    k = load_mnist(tmp_path / "keras.npz")
    np.testing.assert_array_equal(k.labels, LABELS)
    assert len(load_mnist(tmp_path / "keras.npz", split="test").labels) == 2
    pair = load_mnist_pair((1, 0), tmp_path / "a.npz")
    assert pair.counts == {1: 1, 0: 1} and pair.X.shape == (2, 784) and "a.npz" in pair.source


# ------------------------------------------------------------------------------- errors
def _err(match, *args, **kwargs):
    with pytest.raises(DataError, match=match) as info:
        load_mnist_pair(*args, **kwargs)
    assert isinstance(info.value, ValueError)
    return str(info.value)


def test_missing_and_malformed_files_name_the_file(tmp_path):
    images = tiny_images()
    good = idx_bytes(images)
    labels = idx_bytes(LABELS)
    _err(r"data.path: no such file or folder .*nothere-images", (3, 8), tmp_path / "nothere-images")
    cases = {
        "badmagic-images-idx3-ubyte": (b"\x12\x34" + good[2:],
                                       "badmagic-images-idx3-ubyte is not an IDX file .*0x1234"),
        "short-images-idx3-ubyte": (good[:-5], "short-images-idx3-ubyte is truncated"),
        "head-images-idx3-ubyte": (good[:9], "head-images-idx3-ubyte is truncated in its header"),
        "tiny-images-idx3-ubyte": (b"\x00\x00", "tiny-images-idx3-ubyte is truncated"),
        "long-images-idx3-ubyte": (good + b"\x00", "long-images-idx3-ubyte is longer than its header"),
        "gzbad-images-idx3-ubyte.gz": (gzip.compress(good)[:-10], "gzbad-images-idx3-ubyte.gz is not a "
                                                                   "readable"),
        "flat-images-idx3-ubyte": (idx_bytes(images.reshape(len(LABELS), -1)), "flat-images-idx3-ubyte "
                                                                                "holds a 2-D array"),
    }
    for name, (data, match) in cases.items():
        (tmp_path / name).write_bytes(data)
        (tmp_path / name.replace("images", "labels").replace("idx3", "idx1")).write_bytes(labels)
        _err("data.path: " + match, (3, 8), tmp_path / name)
    # the labels file: missing, wrong count, out of range
    (tmp_path / "solo-images-idx3-ubyte").write_bytes(good)
    _err("data.labels_path: no such file .*solo-labels-idx1-ubyte", (3, 8),
         tmp_path / "solo-images-idx3-ubyte")
    (tmp_path / "few-images-idx3-ubyte").write_bytes(good)
    (tmp_path / "few-labels-idx1-ubyte").write_bytes(idx_bytes(LABELS[:-1]))
    _err("few-labels-idx1-ubyte has 7 labels but few-images-idx3-ubyte has 8", (3, 8),
         tmp_path / "few-images-idx3-ubyte")
    (tmp_path / "big-images-idx3-ubyte").write_bytes(good)
    (tmp_path / "big-labels-idx1-ubyte").write_bytes(idx_bytes(LABELS + 10))
    _err(r"data.labels_path: labels in big-images.* must be digits 0..9", (3, 8),
         tmp_path / "big-images-idx3-ubyte")
    (tmp_path / "odd.bin").write_bytes(good)
    _err("data.labels_path: cannot guess the labels file for odd.bin", (3, 8), tmp_path / "odd.bin")
    # .npz problems
    np.savez(tmp_path / "nokeys.npz", a=np.zeros(3))
    _err("data.path: nokeys.npz lacks the arrays 'images' and 'labels'", (3, 8), tmp_path / "nokeys.npz")
    (tmp_path / "broken.npz").write_bytes(b"not a zip file")
    _err("data.path: broken.npz is not a readable .npz", (3, 8), tmp_path / "broken.npz")
    np.savez(tmp_path / "cut.npz", images=images, labels=LABELS)
    (tmp_path / "cut.npz").write_bytes((tmp_path / "cut.npz").read_bytes()[:-40])
    _err("data.path: cut.npz is not a readable .npz", (3, 8), tmp_path / "cut.npz")
    np.savez(tmp_path / "floats.npz", images=images / 255.0, labels=LABELS)
    _err("data.path: pixels in floats.npz must be integers in 0..255", (3, 8), tmp_path / "floats.npz")
    # a folder without the standard files
    (tmp_path / "empty").mkdir()
    _err("data.path: folder .*empty.* has no images file", (3, 8), tmp_path / "empty")


def test_bad_digits_and_counts(tmp_path):
    img_path, _ = write_pair(tmp_path, tiny_images(), LABELS)
    _err(r"data.digits: need two different digits in 0..9 \(got \(3, 3\)\)", (3, 3), img_path)
    _err("data.digits: need two different", (3, 10), img_path)
    _err("data.digits: need two different", (3, 2.5), img_path)
    _err("data.digits: digit 5 has no images", (3, 5), img_path)
    _err(r"data.per_digit: digit 3 has only 3 images \(got 4\)", (3, 8), img_path, per_digit=4)
    _err("data.per_digit: must be a positive integer", (3, 8), img_path, per_digit=0)
    _err("data.split: unknown split", (3, 8), img_path, split="validation")


# ------------------------------------------------------------------------------- embedded subset
def test_embedded_subset_is_500_per_digit_in_unit_range():
    raw = load_mnist()
    assert raw.images.shape == (5000, 28, 28) and raw.images.dtype == np.uint8
    assert np.bincount(raw.labels, minlength=10).tolist() == [500] * 10
    assert raw.source == EMBEDDED_SOURCE
    scaled = raw.images / 255.0
    assert scaled.min() == 0.0 and scaled.max() == 1.0
    # the first 5 is the first image of the official training set (pixel sum 27525)
    assert int(raw.images[raw.labels == 5][0].astype(int).sum()) == 27525
    pair = load_mnist_pair((1, 0))
    assert pair.counts == {1: 500, 0: 500} and pair.X.shape == (1000, 784)
    pixels = pair.X + pair.mean_image
    assert pixels.min() >= -1e-12 and pixels.max() <= 1 + 1e-12
    np.testing.assert_allclose(pair.X.mean(axis=0), 0.0, atol=1e-12)
    assert np.sum(pair.y == 1) == 500 and "embedded" in pair.describe()
    assert load_mnist_pair((3, 8), per_digit=100).counts == {3: 100, 8: 100}


def test_embedded_file_is_package_data_and_small():
    path = ROOT / "src/shallowflow/data" / EMBEDDED_NAME
    assert path.stat().st_size < 3 * 2 ** 20
    assert f"data/{EMBEDDED_NAME}" in (ROOT / "pyproject.toml").read_text()
    assert (ROOT / "src/shallowflow/data/MNIST_5K_NOTICE.md").is_file()
