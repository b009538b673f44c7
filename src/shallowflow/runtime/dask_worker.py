"""What each Dask worker process does when it starts (needs the ``dask`` extra; imported by
:class:`shallowflow.runtime.executors.DaskExecutor` only)."""

from __future__ import annotations

import ctypes
import os
from typing import Any

from distributed import WorkerPlugin

TRIM_VARIABLE = "MALLOC_TRIM_THRESHOLD_"
"""Set by Dask's nanny in every worker it spawns (``distributed.nanny.pre-spawn-environ``)."""
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc mallopt parameters
MMAP_THRESHOLD = 32 * 2**20  # the largest glibc accepts on 64-bit
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD


def restore_malloc() -> bool:
    """Undo, in a worker started with ``MALLOC_TRIM_THRESHOLD_`` set, what that does to XLA.

    A fixed trim threshold switches off glibc's sliding mmap threshold, which stays at 128 KiB:
    every XLA buffer above that is then a fresh ``mmap`` whose pages fault in at each use, and a
    jitted float64 1500 x 1500 matmul ran 3x slower in such a worker (bench/RESULTS.md). Set the
    mmap threshold to its maximum (32 MiB) and the trim threshold above it, as the sliding rule
    would. Returns whether it changed anything (not with another C library, or when unset)."""
    if TRIM_VARIABLE not in os.environ:
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:  # not glibc
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


class WorkerSetup(WorkerPlugin):
    """Run in each Dask worker process when it starts (and again when a killed worker is
    restarted), before any task: set its variables ``environments[name % len(environments)]``
    (its GPU: :func:`shallowflow.runtime.executors.worker_environments`), pin the process to its core
    group ``groups[name % len(groups)]``
    (local clusters, whose workers are named 0, 1, ...; XLA sizes its thread pool by the cores
    the process may use, so processes x threads = cores) and keep compiled programs in the
    persistent cache the machine's workers share; undo the nanny's malloc setting
    (:func:`restore_malloc`; local clusters spawn their workers without it). float64 is switched
    on by every training task itself."""

    name = "shallowflow-setup"

    def __init__(self, groups: list[list[int]] | None,
                 environments: list[dict[str, str]] | None = None) -> None:
        self.groups = groups
        self.environments = environments
        self.malloc_restored = False

    def setup(self, worker: Any) -> None:
        from shallowflow.runtime import compile_cache

        index = int(worker.name) if str(worker.name).isdigit() else 0
        if self.environments:  # before JAX starts its backend here (at the first task)
            os.environ.update(self.environments[index % len(self.environments)])
        if self.groups and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, self.groups[index % len(self.groups)])
        self.malloc_restored = restore_malloc()  # read by tests through the worker's plugins
        compile_cache.enable()
