"""Where finished batches are kept until the work they belong to is complete, so that an
interrupted sweep or reproduction resumes (docs/architecture.md, "Batch store").

A :class:`BatchStore` is a folder holding one netCDF file per finished batch, ``<batch id>.nc``,
each written atomically (:func:`shallowflow.store.write_netcdf`): a file that is there is whole,
and a batch whose file is there is not trained again (its id hashes its runs and their specs).
What a killed writer left are temporary files (:func:`shallowflow.output.tmp_name`), removed by
:meth:`BatchStore.clean`. Sweeps keep ``batches/`` in their folder, each batch with its runs'
grid points (``tag="point"``); reproductions and :func:`shallowflow.training.entry.train` keep the
Datasets as trained (``tag=None``).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np
import xarray as xr

from shallowflow.config import ConfigError
from shallowflow.errors import shown
from shallowflow.output import clean_stale
from shallowflow.store import H5_OPTIONS, read_netcdf, write_netcdf


class StoredBatch(Protocol):
    """What the store reads of a batch (:class:`shallowflow.training.entry.Batch`): its id and its
    runs' tags."""

    @property
    def id(self) -> str: ...

    @property
    def tags(self) -> tuple[object, ...]: ...


B = TypeVar("B", bound=StoredBatch)


@dataclass(frozen=True)
class BatchStore:
    """The finished batches in ``folder``, one ``<batch id>.nc`` each. ``tag``: the coordinate
    (over ``run``) under which each batch file holds its runs' tags (the planner's, e.g. a
    sweep's grid point), with the batch id as its attribute ``batch``; None: the Dataset is kept
    as trained."""

    folder: Path
    tag: str | None = None

    def path(self, batch_id: str) -> Path:
        """The file of batch ``batch_id`` (whether it is written or not)."""
        return self.folder / f"{batch_id}.nc"

    def prepare(self) -> None:
        """Make the folder (and its parents) where missing, and :meth:`clean` it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.clean()

    def clean(self) -> list[Path]:
        """Remove the temporary files that killed processes of this host left here (their
        batches are not done: they run again); returns what was removed."""
        return clean_stale(self.folder)

    def discard(self) -> None:
        """Remove the folder and every batch in it."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def write(self, batch: StoredBatch, ds: xr.Dataset) -> Path:
        """Write the Dataset of ``batch`` atomically (with its tags, see :attr:`tag`); returns
        its path."""
        if self.tag is not None:
            ds = ds.assign_coords({self.tag: ("run", np.array(batch.tags, dtype=np.int64))})
            ds.attrs["batch"] = batch.id
        path = self.path(batch.id)
        write_netcdf(ds, path)
        return path

    def holds(self, batch_id: str) -> bool:
        """Whether batch ``batch_id`` is finished here."""
        return self.path(batch_id).is_file()

    def read(self, batch_id: str) -> xr.Dataset:
        """The Dataset of finished batch ``batch_id``, in memory."""
        return read_netcdf(self.path(batch_id))

    def files(self, ids: Iterable[str] | None = None) -> list[Path]:
        """The files of the finished batches among ``ids``, in their order (default: of every
        finished batch here, sorted by id)."""
        if ids is None:
            return sorted(self.folder.glob("*.nc"))
        return [self.path(i) for i in ids if self.holds(i)]

    def pending(self, batches: Sequence[B]) -> list[B]:
        """The batches of ``batches`` with no file here yet, in their order."""
        return [b for b in batches if not self.holds(b.id)]

    def check(self, ids: Iterable[str]) -> None:
        """Refuse (:class:`~shallowflow.config.ConfigError`) a finished batch file among ``ids``
        that HDF5 cannot open, naming it, to be deleted and run again."""
        import h5py

        for path in self.files(ids):
            try:  # HDF5 checks its superblock and end of file: truncation is caught, in 0.3 ms
                h5py.File(path, "r", **H5_OPTIONS).close()
            except Exception as err:  # any unreadable file is damaged
                raise ConfigError(
                    f"{shown(path)}: batch file is damaged ({type(err).__name__}); delete it and run "
                    "with --resume again to recompute that batch") from None


def beside(out: str | Path) -> Path:
    """Where a run or reproduction into ``out`` keeps its finished batches until its folder is
    complete: the hidden sibling folder ``.<out name>.batches``."""
    out = Path(out)
    return out.parent / f".{out.name}.batches"


@contextlib.contextmanager
def kept_beside(out: str | Path, resume: bool) -> Iterator[BatchStore]:
    """The batch store :func:`beside` ``out`` for the block that trains and writes ``out``:
    emptied first unless ``resume`` (then the batches an interrupted command finished are read,
    not trained again), removed when the block succeeds, and kept when it fails only if it
    holds finished batches (what the command's error says, with how to resume)."""
    store = BatchStore(beside(out))
    if not resume:
        store.discard()
    try:
        yield store
    except BaseException:
        if not store.files():  # nothing to resume from: leave nothing behind
            store.discard()
        raise
    store.discard()
