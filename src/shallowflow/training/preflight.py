"""Before any work: what a job will need (memory, disk, arithmetic) and whether the machine has it.

The estimate is arithmetic on the specs alone (no run, record schedule or array is built, so an
absurd size is refused in microseconds). For runs trained together in batches of at most
``max_batch`` runs, with n samples, d inputs (bias included), p neurons, T record points (an
upper bound: linear + geometric + explicit points), S steps and b bytes per number:

    working set of a batch  ~ b R (3 n d [per-run data] + 8 p d + 4 n p) + b T R s
                              + R x results per run [its file's image, built in memory]
    results per run         ~ b (T s + 4 p d + 2 p) (+ b n (d + 1) per-run data)
    a results file          ~ its runs' results + 8 n (d + 1) [shared data] + 64 KiB [headers]
    arithmetic              ~ 4 n d p S flops per run (x 7 with the step-size certificate); on
                            the population 4 (p + k)^2 d S (``step_flops`` of the data kind)

where s is the number of values a record holds per run (the recorded probes' sizes). The memory
needed is the sum of the largest working sets of the batches trained at once
(:data:`~shallowflow.runtime.executors.IN_FLIGHT`) plus twice the results held in memory (``hold``:
training that returns its results; a sweep writes each batch and holds none) plus the Python objects
that plan the runs (:data:`PLAN_BYTES_PER_RUN` each) and a fixed allowance for the runtime; the disk
needed is the results, one file per batch (:data:`FILE_BYTES` of headers each).
docs/architecture.md, "Before any work".
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shallowflow.dynamics.probes import DIM_LABELS, PROBES
from shallowflow.errors import ResourceError, human
from shallowflow.machine import available_memory
from shallowflow.runtime.executors import IN_FLIGHT

if TYPE_CHECKING:
    from shallowflow.config import Experiment

RUNTIME_BYTES = 400 * 2**20  # JAX, XLA and the Python runtime
PLAN_BYTES_PER_RUN = 512  # the Python objects that plan one run (its reference, batch, ids)
FILE_BYTES = 64 * 2**10
"""The headers of one results file (netCDF-4 on HDF5): about 1 KiB per variable, and a batch
file with end-state certificates holds about 70 variables (66 KiB for 6 KiB of numbers)."""
REFERENCE_FLOPS = 1e10  # flop/s used to turn arithmetic into a rough time (a 2-core laptop)


@dataclass(frozen=True)
class Estimate:
    """Upper estimates of what a job needs."""

    memory: float  # bytes of RAM
    disk: float  # bytes written
    flops: float  # arithmetic

    @property
    def seconds(self) -> float:
        """A rough wall time at :data:`REFERENCE_FLOPS` (for a note, never a refusal)."""
        return self.flops / REFERENCE_FLOPS


def record_points(exp: Experiment) -> int:
    """An upper bound on the record points of ``exp`` (docs/architecture.md, "Record
    schedule"), without building the schedule."""
    steps, rec = exp.train.n_steps, exp.record
    linear = steps // rec.every + 1 if rec.every else 0
    return 2 + linear + rec.points + len(rec.at_steps) + len(rec.at_times)


def record_size(exp: Experiment) -> int:
    """Numbers one record holds for one run: the recorded probes' sizes."""
    size = {"neuron": exp.model.width, "dim": exp.input_dim, "sample": exp.data.n_samples,
            "partner": exp.model.width, "teacher": getattr(exp.data, "teacher_width", 0),
            **{dim: len(labels) for dim, labels in DIM_LABELS.items()}}
    probes = exp.probes
    return sum(math.prod(size[d] for d in PROBES[p].dims) for p in probes if p in PROBES)


def result_bytes(exp: Experiment) -> tuple[float, float]:
    """Bytes of one run's results in a file, b (T s + 4 p d + 2 p) (+ b n (d + 1) per-run data),
    and of the data its runs share, 8 n (d + 1) (once per file)."""
    b = 4 if exp.train.dtype == "float32" else 8
    n, d, p = exp.data.n_samples, exp.input_dim, exp.model.width
    data_run = n * (d + 1) if exp.data.per_run else 0
    return b * (record_points(exp) * record_size(exp) + 4 * p * d + 2 * p + data_run), \
        8.0 * n * (d + 1)


def file_size(experiments: Sequence[Experiment]) -> float:
    """The bytes of one batch-store file holding a run of each of ``experiments`` (an experiment
    may repeat): the runs' results, the data of each distinct experiment once and the file's
    headers, :data:`FILE_BYTES` (:func:`result_bytes`, as :func:`estimate` counts them)."""
    runs = Counter(id(exp) for exp in experiments)
    distinct = {id(exp): exp for exp in experiments}
    sizes = {key: result_bytes(exp) for key, exp in distinct.items()}
    return FILE_BYTES + sum(runs[key] * per_run + shared for key, (per_run, shared) in sizes.items())


def estimate(jobs: Sequence[tuple[Experiment, int]], max_batch: int = 4096,
             hold: bool = True) -> Estimate:
    """What training ``runs`` runs of each experiment of ``jobs`` (experiment, runs) needs."""
    held = disk = flops = planned = 0.0
    workings: list[float] = []  # one per batch, IN_FLIGHT per job at most
    for exp, runs in jobs:
        b = 4 if exp.train.dtype == "float32" else 8
        n, d, p = exp.data.n_samples, exp.input_dim, exp.model.width
        T, s, steps = record_points(exp), record_size(exp), exp.train.n_steps
        R = min(runs, max_batch)
        data_run = n * (d + 1) if exp.data.per_run else 0
        per_run, shared = result_bytes(exp)
        # per-run data three times: the batch's copy, its shards' (dynamics.compilation.shards)
        # and their X^T (dynamics.compilation.prepared); the image of its file while it is
        # written (store.write_netcdf)
        working = (b * R * (3 * data_run + 8 * p * d + 4 * n * p + T * s) + b * n * (d + 1)
                   + R * per_run)
        workings += [working] * min(IN_FLIGHT, -(-runs // R))
        held += runs * per_run
        planned += runs * PLAN_BYTES_PER_RUN
        disk += runs * per_run + shared + FILE_BYTES * -(-runs // R)  # a file per batch
        reruns = 2 ** (exp.train.step_certificate + 1) - 1  # the run, then at lr/2 (2x), lr/4 (4x)
        flops += exp.data.step_flops(d, p) * steps * runs * reruns
        sampled = min(exp.train.precision_certificate, R) * -(-runs // R)  # float64 reruns
        flops += exp.data.step_flops(d, p) * steps * sampled
    in_flight = sum(heapq.nlargest(IN_FLIGHT, workings))  # the batches trained at once
    return Estimate(RUNTIME_BYTES + planned + in_flight + (2 * held if hold else 0), disk, flops)


def check_memory(est: Estimate, force: bool = False, forceable: bool = True) -> None:
    """Refuse (:class:`ResourceError`) work whose memory estimate exceeds what is available,
    unless ``force`` (``forceable=False``: work that ``--force`` does not reach, whose refusal
    does not offer it)."""
    free = available_memory()
    if est.memory > free and not force:
        raise ResourceError(
            f"memory: this job needs about {human(est.memory)} of memory, the machine has "
            f"{human(free)} available; make it smaller (fewer runs, record points or probes, a "
            "smaller width or max_batch)" + (", or pass --force to try anyway" if forceable
                                               else ""))
