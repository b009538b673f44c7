"""Shared pieces of town-fig5 and town-fig6: the squared norm of the interpolator that gradient
descent finds on orthonormal data (docs/math.md §3.5, §3.7; paper 003 App. A.2).

Both figures train networks f(x) = Σ_j a_j relu(w_j·x) on X = I_n with labels y ~ N(0, 1) until
the PyTorch MSE loss (1/n) Σ r² is below a threshold, and compare the squared parameter norm
Σ_j a_j² + ||w_j||² of the final network with

- the minimum-norm value ||θ*||² = 2 (||y_+|| + ||y_-||) (eq.15,
  :func:`~shallowflow.theory.interpolator_norms.min_norm_sq`), and
- the λ -> 0 prediction ||θ_∞||² = 2 Σ_k ||D_{j_k}^{(k-1)}|| of Algorithm 1 for the same initial
  directions and signs (docs/math.md §3.4,
  :func:`~shallowflow.theory.interpolator_norms.learned_norm_sq`).

Helpers:

* :func:`prop2_width`: the width rule m = ceil(log(n/δ) / log(4/3)) (Proposition 2's row term);
* :func:`interpolation_experiment`, :func:`balanced_init`: the validated experiment of one
  configuration (orthonormal data, normal labels, GD on MSE with an early stop);
* :func:`run_summary`: per run of a training Dataset, the final squared norm and the status
  (interpolated: stopped, not diverged and below the loss threshold);
* :func:`limit_summary`: Algorithm 1's ||θ_∞||² per run; :func:`limit_norms`: the stored ones
  where the limit interpolates;
* :func:`padded`: ragged per-configuration arrays as one NaN-padded array (one Dataset for all
  widths);
* :func:`run_groups`: the finite values per x that the slope fits use; :func:`median_slope`:
  the log-log slope of their medians.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from shallowflow.analysis.fits import loglog_slope
from shallowflow.config import Experiment, experiment_from_mapping
from shallowflow.theory.interpolator_norms import learned_norm_sq
from shallowflow.theory.saddle_process import SaddleProcess, from_run
from shallowflow.training.overlays import saddle_process_from_experiment

RECORD_POINTS = 60  # geometrically spaced records of the loss and squared-norm probes


def prop2_width(n: int, delta: float) -> int:
    """Smallest m >= 2 with n (3/4)^m <= δ: every point then has a correctly signed active
    neuron with probability >= 1 - δ (Proposition 2(i), row term; docs/math.md §3.5)."""
    return max(2, math.ceil(math.log(n / delta) / math.log(4.0 / 3.0)))


def balanced_init(log10_lambda: float) -> dict[str, Any]:
    """Balanced small initialisation: random directions, ||w_j|| = |a_j| = λ/sqrt(m) with
    λ = 10^log10_lambda, random output signs (docs/math.md §3.7)."""
    return {"scheme": "balanced", "log_scale": log10_lambda * math.log(10.0),
            "width_scaling": True}


def interpolation_experiment(name: str, *, seed: int, runs: int, n: int, width: int,
                             data_seed: int, init: dict[str, Any], lr: float, steps: int,
                             stop_loss: float) -> Experiment:
    """``runs`` networks of width ``width`` on X = I_n, y ~ N(0, 1) (data seed ``data_seed``),
    full-batch GD with step ``lr`` on L = (1/n) Σ r² for at most ``steps`` epochs, stopped once
    L < ``stop_loss``; the loss and Σ_j a_j² + ||w_j||² recorded at geometric points."""
    return experiment_from_mapping({
        "name": name, "seed": seed, "runs": runs,
        "data": {"kind": "orthonormal", "n": n, "d": n, "labels": "normal", "seed": data_seed},
        "model": {"width": width},
        "init": init,
        "train": {"loss": "mse", "lr": lr, "steps": steps, "stop_loss": stop_loss},
        "record": {"points": RECORD_POINTS, "probes": ["loss", "param_norm_sq"]},
    })


def run_summary(ds: xr.Dataset, stop_loss: float) -> dict[str, np.ndarray]:
    """Per run of a training Dataset: squared norm Σ_j a_j² + ||w_j||² at the last and first
    record (the engine's probe), final loss, epochs used (the stop step of a stopped run, else
    the last step), diverged, and interpolated = stopped and not diverged and final L < stop_loss.
    """
    stopped = np.asarray(ds.stopped.values, bool)
    diverged = np.asarray(ds.diverged.values, bool)
    final_loss = np.asarray(ds.loss.values[:, -1], float)
    epochs = np.where(stopped, ds.stop_step.values, ds.step.values[-1]).astype(int)
    norms = np.asarray(ds.param_norm_sq.values, float)
    return {"sq_norm": norms[:, -1], "sq_norm_init": norms[:, 0],
            "interpolated": stopped & ~diverged & (final_loss < stop_loss),
            "diverged": diverged, "final_loss": final_loss, "epochs": epochs}


def limit_for(exp: Experiment, run: int, ds: xr.Dataset, X: np.ndarray,
              y: np.ndarray) -> SaddleProcess:
    """Algorithm 1 for the initial directions and signs of run ``run`` (the same at every λ):
    from the trained Dataset, or from the experiment when the stored initial network
    underflowed (tiny λ)."""
    try:
        return from_run(ds, X, y, run=run)
    except ValueError:  # initial network underflowed: rebuild it from the experiment
        return saddle_process_from_experiment(exp, run)


def limit_summary(exp: Experiment, ds: xr.Dataset) -> dict[str, np.ndarray]:
    """Per run of ``exp`` (trained into ``ds``, with its data X, y): the Algorithm 1 limit
    ||θ_∞||² = 2 Σ_k ||D_{j_k}^{(k-1)}||, its number of unfitted points (> 0: a point has no
    correctly signed active neuron, the limit does not interpolate) and Assumption 4's check."""
    X, y = np.asarray(ds.X.values, float), np.asarray(ds.y.values, float)
    limits = [limit_for(exp, r, ds, X, y) for r in range(ds.sizes["run"])]
    return {"limit_sq_norm": np.array([learned_norm_sq(p) for p in limits]),
            "limit_unfitted": np.array([len(p.unfitted) for p in limits]),
            "assumption4_ok": np.array([bool(p.report.ok) for p in limits])}


def limit_norms(ds: xr.Dataset) -> np.ndarray:
    """Algorithm 1's ||theta_inf||^2 (..., run) of a reproduction's Dataset (``limit_sq_norm``,
    ``limit_unfitted``) where the limit interpolates, NaN elsewhere."""
    return np.where(ds.limit_unfitted.values == 0, ds.limit_sq_norm.values, np.nan)


def padded(arrays: Sequence[np.ndarray]) -> np.ndarray:
    """Stack arrays of equal rank but different shapes into one float array, each padded at the
    end of every axis with NaN to the largest shape (e.g. weights of several widths)."""
    arrays = [np.asarray(a, float) for a in arrays]
    shape = tuple(max(s) for s in zip(*(a.shape for a in arrays), strict=True))
    out = np.full((len(arrays), *shape), np.nan)
    for k, a in enumerate(arrays):
        out[(k, *(slice(0, s) for s in a.shape))] = a
    return out


def run_groups(xs: Sequence[float], values: np.ndarray) -> dict[float, list[float]]:
    """{x: the finite values of row i} for the slope fits (values (len(xs), runs))."""
    return {float(x): values[i][np.isfinite(values[i])].tolist() for i, x in enumerate(xs)}


def median_slope(groups: dict[float, list[float]]) -> float | None:
    """Least-squares log-log slope of the median over runs at each x with runs (None with fewer
    than two): the per-x statistic's other reasonable choice beside the mean."""
    med = {x: float(np.median(v)) for x, v in groups.items() if v}
    return round(loglog_slope(list(med), list(med.values())), 3) if len(med) > 1 else None


def rounded_per(xs: Sequence[int], values: np.ndarray, digits: int = 3) -> dict[int, float | None]:
    """{x: value rounded to ``digits``}, None where the value is not finite."""
    return {int(x): (None if not np.isfinite(v) else round(float(v), digits))
            for x, v in zip(xs, values, strict=True)}
