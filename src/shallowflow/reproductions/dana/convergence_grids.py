"""The DPB convergence protocol (docs/math.md §1.3, §1.4(12)-(13); paper App. B, Experiment 1).

For each n: ``runs`` networks, each with its own data set (sphere data x = rho u, rho ~ U[1, 2],
labels eps U[1, 2]) and its own initialisation, p = p(n, 0.05) neurons unless fixed, trained by GD
with lr = 1 and T = p (one step = one unit of flow time) for the budget t_inf = 1.5 (sqrt(np)/4)
log(np), stopping early once the loss falls below the code's threshold 1/(2n).

Both convergence rules are read from the same runs: the paper text's L < C_y^-/(2n) and the code's
L < 1/(2n). Since C_y^- >= 1 the text's threshold is the larger one, so a run stopped at the
code's threshold has passed the text's on the way. The text's rule (stop as soon as the loss is
below C_y^-/(2n)) is read as: the smallest recorded loss (40 geometric record points and the
end) is below C_y^-/(2n); ``text_rule_gap`` counts runs for which that differs from the final
loss being below it, and ``max_rise`` is the largest relative loss increase between records
(:func:`shallowflow.analysis.curves.max_rise`). The normalised final loss is L_end/L(0), counted as 0 for
converged runs (§1.4(13)).

A grid (dims ``n, run``) is what :func:`convergence_grid` returns; a reproduction saves several
grids (different n and run counts) as one Dataset with :func:`stack_grids` (dims ``grid, n,
run``, padded, with the mask ``in_grid`` and the run count ``grid_runs``) and gets each back,
exactly, with :func:`grid_part`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

from shallowflow.analysis.curves import max_rise
from shallowflow.config import Experiment, experiment_from_mapping
from shallowflow.theory.good_init import good_init_event, neurons_for
from shallowflow.theory.training_budget import budget, threshold
from shallowflow.training.entry import Chain, Trainer


def convergence_experiment(n: int, d: int, p: int | None, runs: int, seed: int,
                           first_layer: str = "gaussian", data: str = "sphere",
                           points: int = 40) -> Experiment:
    """The experiment of one grid point: per-run data and initialisation, stop at 1/(2n)."""
    width = neurons_for(n, 0.05) if p is None else p
    return experiment_from_mapping({
        "name": f"dpb-n{n}-d{d}-p{width}", "seed": seed, "runs": runs,
        "data": {"kind": data, "n": n, "d": d, "per_run": True, "seed": seed},
        "model": {"width": width, "kappa": "1/p"},
        "init": {"scheme": "dpb", "first_layer": first_layer},
        "train": {"lr": 1.0, "duration": float(np.floor(budget(n, width))),
                  "time_scale": "width", "stop_loss": threshold(n, "code")},
        "record": {"points": points, "probes": ["loss"]},
    })


def point_summary(exp: Experiment, ds: xr.Dataset) -> xr.Dataset:
    """Per-run summaries (dimension run) of the trained runs ``ds`` of one grid point, trained
    with their data (``keep_data``): losses, both convergence rules (C_y^- = min_i |y_i|,
    docs/math.md §1.3), stop time and the good-initialisation event I (§1.4(5))."""
    n = exp.data.n
    y = ds.y.values
    cy_minus = np.abs(y).min(axis=-1)
    loss = ds.loss.values
    final, initial = loss[:, -1], loss[:, 0]
    smallest = np.nanmin(loss, axis=1)
    text_threshold = threshold(n, "paper", cy_minus)
    converged_text = smallest < text_threshold
    stop_time = np.where(ds.stopped.values, ds.stop_step.values, int(ds.step[-1])) * exp.train.lr
    return xr.Dataset(
        {
            "initial_loss": ("run", initial),
            "final_loss": ("run", final),
            "min_recorded_loss": ("run", smallest),
            "max_rise": ("run", max_rise(loss)),
            "text_rule_gap": ("run", converged_text != (final < text_threshold)),
            "C_y_minus": ("run", cy_minus),
            "converged_text": ("run", converged_text),
            "converged_code": ("run", final < threshold(n, "code")),
            "diverged": ("run", ds.diverged.values),
            "stop_time": ("run", stop_time),
            "good_init": ("run", np.asarray(good_init_event(ds.a_init.values, ds.W_init.values,
                                                             ds.X.values, y))),
        },
        coords={"run": np.arange(exp.runs)},
        attrs={"n": n, "d": exp.data.d, "p": exp.model.width, "budget": exp.train.duration},
    )


@dataclass(frozen=True)
class GridRequest:
    """One convergence grid to run: the protocol at every n of ``ns`` (seed + 1000 k at the
    k-th n) for dimension ``d``, width ``p`` (None: the paper's default) and first layer."""

    ns: Sequence[int]
    d: int
    p: int | None
    runs: int
    seed: int
    first_layer: str = "gaussian"

    def experiments(self) -> list[Experiment]:
        return [convergence_experiment(int(n), self.d, self.p, self.runs, self.seed + 1000 * k,
                                       self.first_layer) for k, n in enumerate(self.ns)]


def convergence_grids(requests: Sequence[GridRequest], train: Trainer) -> list[xr.Dataset]:
    """Every requested grid from one training call (so an executor runs their batches side by
    side; one batch per n and grid: the experiments differ in n or d), each with dimensions
    (n, run) and the width p on n."""
    exps = [req.experiments() for req in requests]
    total = sum(len(e) for e in exps)
    dims = sorted({req.d for req in requests})
    trained = train([e for group in exps for e in group], keep_data=True,
                    label=f"d = {', '.join(map(str, dims))}: {total} grid point(s)")
    starts = np.cumsum([0] + [len(e) for e in exps])
    return [_grid(req, group, trained[a:b])
            for req, group, a, b in zip(requests, exps, starts[:-1], starts[1:], strict=True)]


def grid_steps(request: GridRequest) -> Chain:
    """One grid as a step of a :data:`~shallowflow.training.entry.Chain` (``yield from`` it in a
    chain trained with ``keep_data=True``): its experiments in one step; returns the grid."""
    exps = request.experiments()
    return _grid(request, exps, (yield exps))


def _grid(request: GridRequest, exps: Sequence[Experiment],
          trained: Sequence[xr.Dataset]) -> xr.Dataset:
    """The grid of ``request`` (dimensions n, run; the width p on n) from its experiments'
    trained Datasets (with their data)."""
    parts = [point_summary(exp, ds).expand_dims(n=[exp.data.n])
             .assign_coords(p=("n", [exp.model.width])) for exp, ds in zip(exps, trained, strict=True)]
    out = xr.concat(parts, dim="n", combine_attrs="drop")
    out.attrs.update({"d": request.d, "first_layer": request.first_layer})
    return out


def convergence_grid(ns: Sequence[int], d: int, p: int | None, runs: int, seed: int,
                     train: Trainer, first_layer: str = "gaussian") -> xr.Dataset:
    """One grid (:func:`convergence_grids`): the protocol at every n, seed + 1000 k at the k-th."""
    return convergence_grids([GridRequest(ns, d, p, runs, seed, first_layer)], train)[0]


def summarise(grid: xr.Dataset, rule: str = "text") -> xr.Dataset:
    """Per n: convergence probability and normalised final loss (0 for converged runs)."""
    conv = grid[f"converged_{rule}"]
    return xr.Dataset({"probability": conv.mean("run"), "successes": conv.sum("run"),
                       "trials": conv.count("run"),
                       "normalised_final_loss": normalised_final_loss(grid, rule).mean("run")})


def normalised_final_loss(grid: xr.Dataset, rule: str = "text") -> xr.DataArray:
    """L_end/L(0) per run, 0 for the runs converged under ``rule`` (docs/math.md §1.4(13))."""
    return xr.where(grid[f"converged_{rule}"], 0.0, grid.final_loss / grid.initial_loss)


# ------------------------------------------------------------------- several grids, one Dataset
def _fill(da: xr.DataArray) -> object:
    """Padding value of a grid variable: False, NaN or 0 by dtype."""
    if da.dtype == bool:
        return False
    return np.nan if np.issubdtype(da.dtype, np.floating) else 0


def stack_grids(grids: Sequence[xr.Dataset], labels: Sequence[Hashable]) -> xr.Dataset:
    """Grids (dims ``n, run``, p on n) with different n and run counts as one Dataset on ``grid,
    n, run`` (``grid`` = ``labels``; n the union, run up to the largest count), padded with
    False/NaN/0; ``in_grid (grid, n)`` and ``grid_runs (grid)`` say what each grid holds."""
    ns = np.unique(np.concatenate([g.n.values for g in grids]))
    runs = np.arange(max(g.sizes["run"] for g in grids))
    parts = []
    for g in grids:
        g = g.reset_coords("p").drop_attrs()
        g = g.assign(in_grid=("n", np.ones(g.sizes["n"], bool)))
        fill = {k: _fill(v) for k, v in g.data_vars.items()}
        parts.append(g.reindex(n=ns, run=runs, fill_value=fill))
    out = xr.concat(parts, dim="grid").assign_coords(grid=list(labels))
    return out.assign(grid_runs=("grid", [g.sizes["run"] for g in grids]))


def grid_part(ds: xr.Dataset, k: int) -> xr.Dataset:
    """The ``k``-th grid of :func:`stack_grids`, exactly as it was stacked (dims ``n, run``)."""
    g = ds.isel(grid=k)
    g = g.isel(n=np.flatnonzero(g.in_grid.values), run=slice(0, int(g.grid_runs)))
    per_grid = [k for k, v in ds.coords.items() if "grid" in v.dims]  # e.g. a label's init
    return g.drop_vars([*per_grid, "in_grid", "grid_runs"]).set_coords("p")
