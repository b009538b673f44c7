"""Many small networks through the executors, and a reproduction spread over Dask workers.

1. A sweep of ``networks`` networks (n = 64, d = 16, p = 14..17, GD, ``steps`` steps, several
   widths so that there are many batches) run in-process, on a local Dask cluster of 1 worker
   pinned to one core (``dask_1``) and of 2 workers each pinned to its own core (``dask_2``);
   ``only`` picks some of them (the 10^5-network run uses ``--only dask_2``). Reported per
   executor: wall time of ``run_sweep`` (a fresh output folder; cluster start and compilation
   included), networks per second, the driver's peak resident memory growth, the output size,
   and the time of a ``--resume`` that finds every batch done. Results are checked equal across
   executors.
2. ``fig4 = 1``: the training of dana-fig4 (``fig4_preset``, ``fig4_d_values``; its
   ``simulate``: a threshold search per d, each step sent to the workers as soon as it is known)
   on a started cluster of 1 worker pinned to one core and of 2 workers, on fresh and on warm
   workers: the speed-up is the scaling on this machine (goal >= 1.8x on 2 cores for work that
   is not multi-threaded).
3. The executor overhead per batch: ``overhead_batches`` one-step batches of one tiny network
   through a started 1-worker cluster against in-process, (Dask - in-process) / batches.

    .venv/bin/python bench/bench_executors.py [--networks 100000]

Raw numbers go to bench/out/executors.json.
"""

from __future__ import annotations

import contextlib
import os
import resource
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from shallowflow.benchmarks.common import (
    ForeignLoad,
    machine_info,
    run_with_options,
    with_foreign_load,
)

NETWORKS, STEPS, WIDTHS, MAX_BATCH = 100_000, 2_000, (14, 15, 16, 17), 2_500
QUICK = {"networks": 400, "steps": 200, "max_batch": 50, "fig4": 0, "overhead_batches": 11}
"""Keyword arguments of :func:`bench` for a quick run (seconds; not comparable numbers)."""
GOAL_SCALING = 1.8


def sweep_spec(networks: int, steps: int, max_batch: int) -> dict[str, Any]:
    """The sweep: ``networks`` runs spread over the widths ``WIDTHS`` (n = 64, d = 16 sphere
    data, DPB init, GD lr 1, records at the start and the end)."""
    runs = max(1, networks // len(WIDTHS))
    return {
        "name": "many", "max_batch": max_batch,
        "base": {"runs": runs, "data": {"kind": "sphere", "n": 64, "d": 16},
                 "model": {"width": 16, "kappa": "1/p"}, "init": {"scheme": "dpb"},
                 "train": {"lr": 1.0, "steps": steps, "time_scale": "width"},
                 "record": {"points": 2, "probes": ["loss"]}},
        "grid": {"model.width": list(WIDTHS)},
    }


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


@contextlib.contextmanager
def _one_core() -> Iterator[None]:
    """This process (and the workers it spawns meanwhile) on its first core only."""
    from shallowflow.machine import available_cores

    cores = available_cores()
    setter = getattr(os, "sched_setaffinity", None)
    if setter is None:  # pragma: no cover (macOS): workers share every core
        yield
        return
    setter(0, cores[:1])
    try:
        yield
    finally:
        setter(0, cores)


def _one(spec: dict[str, Any], folder: Path, executor: str, workers: int | None) -> dict[str, Any]:
    from shallowflow.runtime.executors import make_executor
    from shallowflow.sweep import run_sweep, sweep_from_mapping

    sw = sweep_from_mapping(spec)
    before = _rss_mb()
    t0 = time.perf_counter()
    with contextlib.closing(make_executor(executor, None, workers)) as runner:
        table = run_sweep(sw, folder, executor=runner, show_progress=False)
    seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    with contextlib.closing(make_executor(executor, None, workers)) as runner:
        run_sweep(sw, folder, resume=True, executor=runner, show_progress=False)
    resume = time.perf_counter() - t1
    return {"seconds": seconds, "networks": len(table), "networks_per_s": len(table) / seconds,
            "resume_s": resume, "driver_peak_rss_growth_mb": _rss_mb() - before,
            "output_mb": _size(folder) / 2**20, "final_loss": table["loss_final"].to_numpy()
            if "loss_final" in table else None}


EXECUTORS = {"local": ("local", None), "dask_1": ("dask", 1), "dask_2": ("dask", 2)}
LABELS = {"local": "in-process", "dask_1": "Dask, 1 worker (1 core)",
          "dask_2": "Dask, 2 workers (1 core each)"}


def _sweeps(spec: dict[str, Any], tmp: Path, keys: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in keys:
        executor, workers = EXECUTORS[key]
        with _one_core() if key == "dask_1" else contextlib.nullcontext():
            out[key] = _one(spec, tmp / key, executor, workers)
    losses = [out[k].pop("final_loss") for k in keys]
    out["equal_results"] = all(np.array_equal(losses[0], x) for x in losses[1:])
    return out


def _started(workers: int) -> tuple[Any, float]:
    """A local Dask cluster of ``workers`` processes, started and answering; and its start
    time in seconds."""
    from shallowflow.runtime.executors import DaskExecutor

    t0 = time.perf_counter()
    ex = DaskExecutor(workers=workers)
    ex.client().run(lambda: None)
    return ex, time.perf_counter() - t0


def fig4_scaling(d_values: str = "", preset: str = "quick") -> dict[str, Any]:
    """The training of dana-fig4's ``preset`` (``simulate``, with ``d_values``, e.g.
    "20,25,30,35", when given) on a started cluster of 1 worker (one core) and of 2 workers,
    after an untimed pass that leaves every program in the compilation cache (so neither pays
    compilation), twice on each cluster: on fresh workers (each traces the programs it runs and
    reads them from the cache: per-process work that varies with which worker gets which
    shape) and again on the same, warm workers (the work itself, as on a long-lived cluster)."""
    from shallowflow.reproductions import catalogue
    from shallowflow.reproductions.base import resolve_params
    from shallowflow.training.entry import trainer

    rep = catalogue()["dana-fig4"]
    params = resolve_params(rep, preset, [f"d_values=[{d_values}]"] if d_values else [])
    out: dict[str, Any] = {"preset": preset, "d_values": d_values or f"{preset} preset's"}

    def timed(workers: int) -> xr.Dataset:
        with _one_core() if workers == 1 else contextlib.nullcontext():
            ex, start = _started(workers)
        try:
            t0 = time.perf_counter()
            ds = rep.simulate(params, trainer(False, ex))
            t1 = time.perf_counter()
            again = rep.simulate(params, trainer(False, ex))
            out[f"workers_{workers}"] = {"seconds": t1 - t0,
                                         "warm_seconds": time.perf_counter() - t1,
                                         "cluster_start_s": start}
            assert again.identical(ds)
            return ds
        finally:
            ex.close()

    timed(2)  # an untimed pass that fills the compilation cache (its entry is overwritten)
    results = {workers: timed(workers) for workers in (1, 2)}
    out["scaling"] = out["workers_1"]["seconds"] / out["workers_2"]["seconds"]
    out["warm_scaling"] = out["workers_1"]["warm_seconds"] / out["workers_2"]["warm_seconds"]
    out["equal_results"] = results[1].identical(results[2])
    return out


def batch_overhead(batches: int) -> dict[str, Any]:
    """Seconds per batch that a started 1-worker Dask cluster adds to in-process execution:
    ``batches`` batches of one tiny network (n = 8, d = 4, p = 4, one GD step) each written to a
    file, as a sweep does."""
    import functools

    from shallowflow.runtime.executors import LocalExecutor
    from shallowflow.sweep import plan, sweep_from_mapping, sweep_store
    from shallowflow.training import entry as training

    spec = {"name": "tiny", "max_batch": 1,
            "base": {"runs": batches, "data": {"kind": "sphere", "n": 8, "d": 4},
                     "model": {"width": 4}, "init": {"scheme": "dpb"},
                     "train": {"lr": 0.1, "steps": 1}, "record": {"points": 2,
                                                                  "probes": ["loss"]}}}
    work = plan(sweep_from_mapping(spec))
    seconds = {}
    with tempfile.TemporaryDirectory(prefix="shallowflow-overhead-") as tmp:
        for key in ("local", "dask"):
            store = sweep_store(Path(tmp) / key)
            store.prepare()
            ex, _ = _started(1) if key == "dask" else (LocalExecutor(), 0.0)
            task = functools.partial(training.train_batch_file, store=store)
            list(training.execute(task, work[:1], show_progress=False, executor=ex))  # compile
            t0 = time.perf_counter()
            list(training.execute(task, work[1:], show_progress=False, executor=ex))
            seconds[key] = time.perf_counter() - t0
            ex.close()
    per = (seconds["dask"] - seconds["local"]) / (batches - 1)
    return {"batches": batches - 1, "local_s": seconds["local"], "dask_s": seconds["dask"],
            "overhead_per_batch_s": per}


def bench(networks: int = NETWORKS, steps: int = STEPS, max_batch: int = MAX_BATCH,
          only: str = ",".join(EXECUTORS), fig4: int = 1, fig4_d_values: str = "",
          fig4_preset: str = "quick", overhead_batches: int = 41) -> dict[str, Any]:
    """The sweep on the executors ``only`` (comma-separated keys of :data:`EXECUTORS`, none for
    ""), the dana-fig4 scaling (``fig4`` = 1, of ``fig4_preset`` with ``fig4_d_values`` in place
    of the preset's) and the per-batch overhead (module docstring)."""
    keys = [k.strip() for k in only.split(",") if k.strip()]
    unknown = sorted(set(keys) - set(EXECUTORS))
    if unknown:
        raise ValueError(f"--only: executors among {', '.join(EXECUTORS)}, got {only!r}")
    if fig4:
        from shallowflow.reproductions import catalogue

        presets = catalogue()["dana-fig4"].presets
        if fig4_preset not in presets:
            raise ValueError(f"--fig4-preset: a dana-fig4 preset among {', '.join(presets)}, "
                             f"got {fig4_preset!r}")
    spec = sweep_spec(networks, steps, max_batch)
    out: dict[str, Any] = {"name": "executors",
                           "config": {"networks": networks, "steps": steps, "max_batch": max_batch,
                                      "widths": list(WIDTHS), "n": 64, "d": 16,
                                      "dtype": "float64", "executors": keys}}
    with tempfile.TemporaryDirectory(prefix="shallowflow-executors-") as tmp, \
            ForeignLoad() as load:
        if keys:
            out["sweep"] = _sweeps(spec, Path(tmp), keys)
        if fig4:
            out["fig4"] = fig4_scaling(fig4_d_values, fig4_preset)
        if overhead_batches > 1:
            out["overhead"] = batch_overhead(overhead_batches)
    if {"dask_1", "dask_2"} <= set(keys):
        out["sweep"]["scaling"] = (out["sweep"]["dask_1"]["seconds"]
                                   / out["sweep"]["dask_2"]["seconds"])
    out.update(goal_scaling=GOAL_SCALING, foreign_load=load.value, machine=machine_info())
    return out


def table(r: dict[str, Any]) -> str:
    """The markdown tables of :func:`bench`'s result."""
    c, lines = r["config"], []
    if "sweep" in r:
        sw = r["sweep"]
        lines += [
            f"{c['networks']} networks (n = {c['n']}, d = {c['d']}, widths {c['widths']}), "
            f"{c['steps']} GD steps, batches of at most {c['max_batch']}, {c['dtype']}.",
            "",
            "| executor | wall (s) | networks/s | resume, all done (s) | driver RSS growth (MB) "
            "| output (MB) |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for key in c["executors"]:
            e = sw[key]
            lines.append(f"| {LABELS[key]} | {e['seconds']:.1f} | {e['networks_per_s']:.0f} | "
                         f"{e['resume_s']:.2f} | {e['driver_peak_rss_growth_mb']:.0f} | "
                         f"{e['output_mb']:.1f} |")
        lines += ["", f"Final losses equal across executors: {sw['equal_results']}."]
        if "scaling" in sw:
            lines.append(f"Sweep scaling, 2 workers over 1: {sw['scaling']:.2f}x.")
    if "fig4" in r:
        f = r["fig4"]
        met = "yes" if f["scaling"] >= r["goal_scaling"] else "no"
        warm = f.get("warm_scaling")
        lines += ["", f"dana-fig4 {f.get('preset', 'quick')}, d values: {f['d_values']}: its "
                  "training (`simulate`) "
                  "on a started cluster, on fresh workers and again on the same warm workers:",
                  "", "| workers | fresh workers (s) | warm workers (s) | cluster start (s) |",
                  "|---|---:|---:|---:|"]
        lines += [f"| {w} | {f[f'workers_{w}']['seconds']:.1f} | "
                  f"{f[f'workers_{w}'].get('warm_seconds', float('nan')):.1f} | "
                  f"{f[f'workers_{w}']['cluster_start_s']:.1f} |" for w in (1, 2)]
        lines += ["", f"Scaling, 2 workers over 1: **{f['scaling']:.2f}x** on fresh workers "
                  f"(goal >= {r['goal_scaling']:g}x: {met})"
                  + (f", **{warm:.2f}x** on warm workers" if warm is not None else "")
                  + f"; results identical: {f['equal_results']}."]
    if "overhead" in r:
        o = r["overhead"]
        lines += ["", f"Executor overhead: {o['overhead_per_batch_s'] * 1e3:.0f} ms per batch "
                  f"({o['batches']} one-step batches: Dask {o['dask_s']:.2f} s, in-process "
                  f"{o['local_s']:.2f} s)."]
    return with_foreign_load(lines, r["foreign_load"])


def main(argv: list[str] | None = None, out: Path | None = None) -> dict[str, Any]:
    """Run alone: print the table, write the raw numbers to ``--out``/executors.json."""
    options = {"networks": NETWORKS, "steps": STEPS, "max_batch": MAX_BATCH,
               "only": ",".join(EXECUTORS), "fig4": 1, "fig4_d_values": "",
               "fig4_preset": "quick",
               "overhead_batches": 41}
    return run_with_options("executors", __doc__, bench, table, options, argv, out)


if __name__ == "__main__":
    main(out=Path(__file__).resolve().parent / "out")
