"""What each Dask worker process does when it starts (needs the ``dask`` extra; imported by
:class:`shallowflow.executors.DaskExecutor` only)."""

from __future__ import annotations

import os
from typing import Any

from distributed import WorkerPlugin


class WorkerSetup(WorkerPlugin):
    """Run in each Dask worker process when it starts (and again when a killed worker is
    restarted), before any task: pin the process to its core group ``groups[name % len(groups)]``
    (local clusters, whose workers are named 0, 1, ...; XLA sizes its thread pool by the cores
    the process may use, so processes x threads = cores) and keep compiled programs in the
    persistent cache the machine's workers share. float64 is switched on by every training task
    itself."""

    name = "shallowflow-setup"

    def __init__(self, groups: list[list[int]] | None) -> None:
        self.groups = groups

    def setup(self, worker: Any) -> None:
        from shallowflow import compile_cache

        if self.groups and hasattr(os, "sched_setaffinity"):
            index = int(worker.name) if str(worker.name).isdigit() else 0
            os.sched_setaffinity(0, self.groups[index % len(self.groups)])
        compile_cache.enable()
