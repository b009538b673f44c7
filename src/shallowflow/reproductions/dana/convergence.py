"""The DPB convergence protocol (MATH.md §1.3, §1.4(12)-(13); paper App. B, Experiment 1).

For each n: ``runs`` networks, each with its own data set (sphere data x = rho u, rho ~ U[1, 2],
labels eps U[1, 2]) and its own initialisation, p = p(n, 0.05) neurons unless fixed, trained by GD
with lr = 1 and T = p (one step = one unit of flow time) for the budget t_inf = 1.5 (sqrt(np)/4)
log(np), stopping early once the loss falls below the code's threshold 1/(2n).

Both convergence rules are read from the same runs: the paper text's L < C_y^-/(2n) and the code's
L < 1/(2n). Since C_y^- >= 1 the text's threshold is the larger one, so a run stopped at the
code's threshold has passed the text's on the way. The text's rule (stop as soon as the loss is
below C_y^-/(2n)) is read as: the smallest recorded loss (40 geometric record points and the
end) is below C_y^-/(2n); ``text_rule_gap`` counts runs for which that differs from the final
loss being below it, and ``max_rise`` is the largest relative loss increase between records.
The normalised final loss is L_end/L(0), counted as 0 for converged runs (§1.4(13)).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from shallowflow.config import Experiment, experiment_from_mapping
from shallowflow.experiment import BatchInputs, RunRef, prepare_batch, run_batch
from shallowflow.progress import step_progress
from shallowflow.theory.good_init import good_init_event, neurons_for
from shallowflow.theory.training_budget import budget


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
                  "time_scale": "width", "stop_loss": 1.0 / (2 * n)},
        "record": {"points": points, "probes": ["loss"]},
    })


def train_runs(exp: Experiment, runs: Sequence[int], label: str,
               show_progress: bool = True) -> tuple[BatchInputs, xr.Dataset]:
    """Prepare and train the runs ``runs`` of ``exp`` in one batch behind a progress bar labelled
    ``label``; return the batch (its data X, y) and the trained Dataset."""
    batch = prepare_batch([RunRef(exp, r) for r in runs])
    with step_progress(label, show_progress) as update:
        return batch, run_batch(batch, update)


def run_point(exp: Experiment, show_progress: bool = True) -> xr.Dataset:
    """Train the runs of one grid point; return per-run summaries (dimension run)."""
    batch, ds = train_runs(exp, range(exp.runs), f"{exp.name} ({exp.runs} runs)", show_progress)
    n = exp.data.n
    y = np.asarray(batch.y)
    cy_minus = np.abs(y).min(axis=-1)
    loss = ds.loss.values
    final, initial = loss[:, -1], loss[:, 0]
    smallest = np.nanmin(loss, axis=1)
    text_threshold = cy_minus / (2 * n)
    converged_text = smallest < text_threshold
    stop_time = np.where(ds.stopped.values, ds.stop_step.values, int(ds.step[-1])) * exp.train.lr
    return xr.Dataset(
        {
            "initial_loss": ("run", initial),
            "final_loss": ("run", final),
            "min_recorded_loss": ("run", smallest),
            "max_rise": ("run", _max_rise(loss)),
            "text_rule_gap": ("run", converged_text != (final < text_threshold)),
            "C_y_minus": ("run", cy_minus),
            "converged_text": ("run", converged_text),
            "converged_code": ("run", final < 1.0 / (2 * n)),
            "diverged": ("run", ds.diverged.values),
            "stop_time": ("run", stop_time),
            "good_init": ("run", np.asarray(good_init_event(ds.a_init.values, ds.W_init.values,
                                                             np.asarray(batch.X), y))),
        },
        coords={"run": np.arange(exp.runs)},
        attrs={"n": n, "d": exp.data.d, "p": exp.model.width, "budget": exp.train.duration},
    )


def _max_rise(loss: np.ndarray) -> np.ndarray:
    """Largest relative increase of the loss between consecutive records, per run (finite
    records only; diverged runs are flagged separately)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        rise = np.diff(loss, axis=1) / loss[:, :-1]
    rise = np.where(np.isfinite(rise), rise, -np.inf)
    return rise.max(axis=1, initial=-np.inf)


def convergence_grid(ns: Sequence[int], d: int, p: int | None, runs: int, seed: int,
                     first_layer: str = "gaussian", show_progress: bool = True) -> xr.Dataset:
    """Run the protocol at every n; result with dimensions (n, run)."""
    parts = []
    for k, n in enumerate(ns):
        exp = convergence_experiment(int(n), d, p, runs, seed + 1000 * k, first_layer)
        parts.append(run_point(exp, show_progress).expand_dims(n=[int(n)])
                     .assign_coords(p=("n", [exp.model.width])))
    out = xr.concat(parts, dim="n", combine_attrs="drop")
    out.attrs.update({"d": d, "first_layer": first_layer})
    return out


def summarise(grid: xr.Dataset, rule: str = "text") -> xr.Dataset:
    """Per n: convergence probability and normalised final loss (0 for converged runs)."""
    conv = grid[f"converged_{rule}"]
    ratio = xr.where(conv, 0.0, grid.final_loss / grid.initial_loss)
    return xr.Dataset({"probability": conv.mean("run"), "successes": conv.sum("run"),
                       "trials": conv.count("run"), "normalised_final_loss": ratio.mean("run")})
