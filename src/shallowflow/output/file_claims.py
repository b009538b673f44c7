"""Output files (``certify``'s pair, ``plot``'s figure, ``animate``'s movie): checked before any
work, claimed for the whole command, written all or none (docs/architecture.md, "Output
places")."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from shallowflow.errors import shown
from shallowflow.output.folders import (
    MARKER,
    OutputExistsError,
    check_disk,
    check_place,
    exclusive,
    made_parents,
    read_marker,
    record_entries,
)
from shallowflow.output.writes import tmp_name

FILE_REMEDY = "write less, or pass --force to try anyway"  # where an output file does not fit


def check_output_file(path: Path, overwrite: bool = False, field_name: str = "out") -> None:
    """Refuse the output file ``path`` where it is a symbolic link, a folder or not a regular
    file, where it exists (unless ``overwrite``) and, with ``overwrite``, where its folder's
    marker does not list it (shallowflow did not write it: see the module's rule 1)."""
    if path.is_symlink():
        raise OutputExistsError(f"{field_name}: {shown(path)} is a symbolic link; shallowflow "
                                "replaces only plain files it made: give another name")
    if not path.exists():
        return
    if path.is_dir():
        raise OutputExistsError(f"{field_name}: {shown(path)} is a folder, not a file; it is "
                                "never replaced by a file: move it away or give another name")
    if not path.is_file():
        raise OutputExistsError(f"{field_name}: {shown(path)} is not a regular file (a FIFO, "
                                "device or socket); give another name")
    if not overwrite:
        raise OutputExistsError(f"{field_name}: {shown(path)} already exists; pass --overwrite "
                                "to replace it")
    marker = read_marker(path.parent)
    if marker is None or path.name not in marker["entries"]:
        why = (f"its folder holds no {MARKER} marker" if marker is None
               else f"the {MARKER} marker of its folder does not list it")
        raise OutputExistsError(f"{field_name}: {shown(path)} is not known to be "
                                f"shallowflow's ({why}); --overwrite replaces only files "
                                "shallowflow wrote: move it away or give another name")


def check_output_files(paths: Sequence[Path], overwrite: bool = False, need: float = 0.0,
                       field_name: str = "out", remedy: str = FILE_REMEDY,
                       force: bool = False) -> None:
    """Before any work: every file of ``paths`` (in one folder) may be written
    (:func:`check_output_file`), and their folder is writable with room for ``need`` bytes
    unless ``force`` (:func:`check_place`)."""
    if len({p.parent for p in paths}) != 1:
        raise ValueError(f"paths: the files written together must share a folder (got {paths})")
    for path in paths:
        check_output_file(path, overwrite, field_name)
    check_place(paths[0], field_name, need, force, remedy)


@dataclass
class OutputFiles:
    """Output files claimed for a command (:func:`claim_files`): ``paths`` in one folder, the
    field that names them in errors, and which of them existed when they were claimed."""

    paths: tuple[Path, ...]
    field_name: str = "out"
    existed: frozenset[Path] = frozenset()
    remedy: str = FILE_REMEDY
    force: bool = False

    def check_disk(self, need: float) -> None:
        """Refuse (before any work) a folder without room for ``need`` bytes (a size known once
        the input is read), unless ``force``."""
        check_disk(self.paths[0].parent, need, self.force, self.field_name, self.remedy)

    @contextlib.contextmanager
    def writing(self) -> Iterator[tuple[Path, ...]]:
        """Yield a temporary path beside each file; they replace the files together, only if
        the block succeeds (the old files are kept aside until every new one is in place), and
        the folder's marker lists them (:func:`record_entries`). A file that appeared at a path
        meanwhile, or stopped being shallowflow's, is left as it is and nothing is written."""
        tmps = tuple(p.with_name(tmp_name(p.name)) for p in self.paths)
        try:
            yield tmps
            for path in self.paths:
                if path not in self.existed and (path.exists() or path.is_symlink()):
                    raise OutputExistsError(f"{self.field_name}: {shown(path)} appeared while "
                                            "this command ran; it was left as it is and "
                                            "nothing was written")
                check_output_file(path, True, self.field_name)
            self._replace(tmps)
        finally:
            for tmp in tmps:
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
        record_entries(self.paths[0].parent, [p.name for p in self.paths])

    def _replace(self, tmps: tuple[Path, ...]) -> None:
        aside: list[tuple[Path, Path]] = []
        placed: list[Path] = []
        try:
            for path in self.paths:
                if path.exists():
                    trash = path.with_name(tmp_name(path.name))
                    path.rename(trash)
                    aside.append((path, trash))
            for tmp, path in zip(tmps, self.paths, strict=True):
                tmp.rename(path)
                placed.append(path)
        except BaseException:
            for path in placed:
                path.unlink(missing_ok=True)
            for path, trash in aside:
                trash.rename(path)
            raise
        for _, trash in aside:
            trash.unlink(missing_ok=True)


@contextlib.contextmanager
def claim_files(paths: Sequence[str | Path], overwrite: bool = False, need: float = 0.0,
                field_name: str = "out", lock: str | Path | None = None,
                remedy: str = FILE_REMEDY, force: bool = False) -> Iterator[OutputFiles]:
    """:func:`claim` for the output files ``paths`` (one folder; the lock of ``lock``, default
    the first file): checked before any work (the disk estimate only without ``force``),
    written with :meth:`OutputFiles.writing`."""
    files = tuple(Path(p) for p in paths)
    check = (overwrite, need, field_name, remedy, force)
    check_output_files(files, *check)  # before making anything
    with made_parents(files[0].parent), exclusive(Path(lock or files[0]), field_name):
        check_output_files(files, *check)  # now that they are ours
        yield OutputFiles(files, field_name, frozenset(p for p in files if p.exists()), remedy,
                          force)


