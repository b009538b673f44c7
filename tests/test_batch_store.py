"""The batch store shared by sweeps and reproductions: atomic files, done and pending batches,
damaged files named, temporaries of dead processes removed."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from shallowflow.config import ConfigError
from shallowflow.output import HOST
from shallowflow.training.batch_store import BatchStore
from shallowflow.training.entry import Batch


def _batch(ident: str, tags: tuple[int, ...]) -> tuple[Batch, xr.Dataset]:
    ds = xr.Dataset({"loss": (("run", "time"), np.arange(2.0 * len(tags)).reshape(-1, 2))})
    return Batch(ident, (), tags), ds


def test_tagged_and_plain_stores_differ_only_in_the_attached_tags(tmp_path):
    batch, ds = _batch("g000-0000-abc", (3, 3, 5))
    tagged, plain = BatchStore(tmp_path / "t", tag="point"), BatchStore(tmp_path / "p")
    for store in (tagged, plain):
        store.prepare()
        assert store.write(batch, ds) == store.path(batch.id)
        assert not list(store.folder.glob(".*"))  # no temporary file left
    back = tagged.read(batch.id)
    assert back["point"].values.tolist() == [3, 3, 5] and back["point"].dtype == np.int64
    assert back.attrs["batch"] == batch.id
    assert plain.read(batch.id).identical(ds)
    assert back.drop_vars("point").drop_attrs().identical(ds)


def test_done_and_pending_batches_in_plan_order(tmp_path):
    store = BatchStore(tmp_path / "s")
    store.prepare()
    batches = [_batch(i, (0,))[0] for i in ("b", "a", "c")]
    for batch in batches[:2]:
        store.write(batch, _batch(batch.id, (0,))[1])
    assert store.pending(batches) == batches[2:]
    assert store.files(["c", "b", "a"]) == [store.path("b"), store.path("a")]
    assert store.files() == [store.path("a"), store.path("b")]
    assert store.holds("a") and not store.holds("c")


def test_a_damaged_batch_file_is_named(tmp_path):
    store = BatchStore(tmp_path / "s")
    store.prepare()
    batch, ds = _batch("ok", (0,))
    store.write(batch, ds)
    store.path("cut").write_bytes(store.path("ok").read_bytes()[:200])
    store.check(["ok", "missing"])
    with pytest.raises(ConfigError, match=r"cut\.nc'?: batch file is damaged \(\w+\); delete it"):
        store.check(["ok", "cut"])


def test_clean_removes_only_what_dead_processes_left(tmp_path):
    store = BatchStore(tmp_path / "s")
    store.prepare()
    dead = store.folder / f".x.nc.tmp-{HOST}-99999999-deadbeef"
    dead.write_text("left by a killed writer")
    alive = store.folder / ".y.nc.tmp-otherhost-1-deadbeef"  # another host's: cannot be told
    alive.write_text("maybe in flight")
    assert store.clean() == [dead]
    assert not dead.exists() and alive.exists()
    store.discard()
    assert not store.folder.exists()
