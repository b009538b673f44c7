"""The development suite: ``shallowflow bench``'s benchmarks and the development ones of this
folder (bench/bench_NAME.py), in the order ``make bench`` runs them and RESULTS.md lists them.

:data:`BENCHMARKS` is the registry, :func:`bench` is ``shallowflow bench`` over it (the package's
:func:`shallowflow.benchmarks.command.bench`). Import it with bench/ on ``sys.path`` (a script of
this folder has it there).
"""

from __future__ import annotations

import functools
from types import ModuleType

import bench_dana_fig3
import bench_executors
import bench_gpu
import bench_limit_process
import bench_onedim
import bench_population
import bench_presets
import bench_reduced
import bench_startup
import bench_stationary
import bench_town_fig1
from shallowflow.benchmarks import command, suite
from shallowflow.benchmarks.suite import Benchmark


def _here(module: ModuleType, title: str) -> Benchmark:
    """The registry entry of a benchmark module of this folder."""
    return Benchmark(title, module.bench, module.table, module.QUICK)


BENCHMARKS: dict[str, Benchmark] = {
    **suite.BENCHMARKS,
    "reduced": _here(bench_reduced, "Reduced vs dense engine on orthogonal data"),
    "town_fig1": _here(bench_town_fig1, "Town et al. Figure 1"),
    "limit_process": _here(bench_limit_process, "Algorithm 1 (limit process)"),
    "dana_fig3": _here(bench_dana_fig3, "DPB Figure 3 protocol and re-batching"),
    "presets": _here(bench_presets, "Reproduction presets"),
    "onedim": _here(bench_onedim, "One-dimensional inputs with a bias: bucketed vs dense step"),
    "stationary": _here(bench_stationary, "End-state verdict (stationary points)"),
    "startup": _here(bench_startup, "Start-up and the compilation cache"),
    "executors": _here(bench_executors, "Many small networks: in-process and Dask workers"),
    "gpu": _here(bench_gpu, "The engine on a GPU"),
    "population": _here(bench_population, "The population step: batched closed form, numpy loop, "
                        "finite data"),
}
"""Every benchmark, in the order the suite runs."""

bench = functools.partial(command.bench, benchmarks=BENCHMARKS)
"""``shallowflow bench`` over every benchmark (same arguments)."""
