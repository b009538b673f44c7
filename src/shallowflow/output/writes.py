"""Files written atomically (a temporary name beside the file, renamed into place), and a full
disk met while writing as one :class:`~shallowflow.errors.DiskFull` naming the file
(docs/architecture.md, "Output places", rule 4)."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

from shallowflow.errors import DiskFull
from shallowflow.machine import free_disk

HOST = "".join(c for c in socket.gethostname() if c.isalnum())[:32] or "host"
"""This host, as written in temporary names (so a clean-up only judges its own processes)."""
FULL = (errno.ENOSPC, errno.EDQUOT)
"""The errors of a full file system or an exhausted quota (:func:`disk_errors`)."""


def tmp_name(name: str) -> str:
    """A temporary name beside ``name``: ``.NAME.tmp-HOST-PID-XXXXXXXX``."""
    return f".{name}.tmp-{HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


@contextlib.contextmanager
def disk_errors(path: str | Path, need: float | None = None) -> Iterator[None]:
    """Turn a full disk or an exhausted quota (:data:`FULL`) met in the block, which writes
    ``path`` (``need`` bytes, where known), into :class:`~shallowflow.errors.DiskFull` naming
    ``path`` and the bytes free then; other errors pass unchanged."""
    try:
        yield
    except OSError as err:
        if err.errno not in FULL:
            raise
        raise DiskFull(str(path), free_disk(Path(path).parent), need) from None


@contextlib.contextmanager
def atomic_file(path: str | Path, need: float | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; it replaces ``path`` only if the block succeeds.
    A full disk met in the block is :class:`~shallowflow.errors.DiskFull` naming ``path``
    (:func:`disk_errors`; ``need``: the bytes to be written, where known), the free space
    counted after the temporary file is removed."""
    path = Path(path)
    tmp = path.with_name(tmp_name(path.name))
    with disk_errors(path, need):
        try:
            yield tmp
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                tmp.unlink()


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    write_bytes(path, text.encode())


def write_bytes(path: str | Path, data: bytes | memoryview) -> None:
    """Write ``data`` to ``path`` atomically; on a full disk,
    :class:`~shallowflow.errors.DiskFull` with the bytes it needed."""
    with atomic_file(path, memoryview(data).nbytes) as tmp:
        tmp.write_bytes(data)
