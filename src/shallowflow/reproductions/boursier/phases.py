"""Common set-up of the Boursier-Flammarion reproductions bf-fig2, bf-init, bf-alignment and
bf-fig3 (docs/math.md §2; paper 002, Section 6 and App. B).

The paper's protocol (docs/math.md §2.1-§2.2): h(x) = sum_j a_j relu(<w_j, (x, 1)>) (no output
scaling, a hidden bias), the loss (1/n) sum (h(x_k) - y_k)^2 without 1/2 (``loss = "mse"``),
full-batch GD, initialisation (lambda/sqrt(m)) (w~_j, a~_j) (``width_scaling = true``) with the
schemes balanced (a_j = +-||w_j||, Gaussian w: ``balanced``, ``radial = "gaussian"``), dominated
(``dominated``) and unbalanced (``gaussian``).

Helpers:

* :func:`bf_experiment`: the validated experiment of one setting (data, width, scheme, scale,
  lr, steps, records, end-state certificate);
* :func:`stack_runs`: one-run-per-experiment Datasets of equal shapes as one Dataset;
* :func:`run_measures`: the alignment diagnostics (``theory.bf_alignment``) and the phase ends
  (``curves.bf_phase_ends``, docs/math.md §8.11) of one recorded run: the one place where
  judge and draw read phases off a saved Dataset;
* :func:`record_at`: the record index at or after a flow time;
* :func:`active_counts`, :func:`direction_angle`, :func:`effective_kinks`: measurements on a
  network snapshot (activity per neuron, the angle between two directions, the kinks of a
  one-dimensional ReLU network with a bias).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from shallowflow.analysis.curves import bf_phase_ends
from shallowflow.config import Experiment
from shallowflow.model.run_attrs import RunAttrs
from shallowflow.theory.bf_alignment import DEFAULT_DELTA, alignment
from shallowflow.theory.extremal import CriticalSet, extremal_vectors, residual_weights
from shallowflow.theory.ols import OLSFit, ols

PAPER_LAMBDA = 1e-3  # App. B.1-B.2: the initial scale lambda
PAPER_LR = 1e-3  # the authors' GD learning rate
PAPER_STEPS = 2_000_000  # "up to millions of iterations" (code: 2e6)
PHASES = ("alignment", "phase2a", "phase2", "convergence")
SCHEMES = {"balanced": {"scheme": "balanced", "radial": "gaussian"},
           "dominated": {"scheme": "dominated"},
           "unbalanced": {"scheme": "gaussian"}}
"""BF's three initialisations (docs/math.md §2.2) as shallowflow init specs."""


def bf_experiment(*, data: dict[str, Any], m: int, scheme: str, log10_lambda: float, lr: float,
                  steps: int, seed: int = 0, runs: int = 1, points: int = 100,
                  snapshots: bool = True, probes: Sequence[str] = ("loss", "a", "output"),
                  polish: str = "none", end_state: bool = False, onedim: str = "auto",
                  parametrisation: str = "auto", name: str = "bf") -> Experiment:
    """One setting of the paper's protocol (module docstring): ``scheme`` one of :data:`SCHEMES`,
    initial scale lambda = 10^log10_lambda given by its natural log (``init.log_scale``, so any
    lambda, also below the float range, with the log-norm parametrisation chosen automatically
    when lambda^2/m underflows), divided by sqrt(m) (``width_scaling``). Records ``points``
    geometric points with ``probes`` (and W with ``snapshots``)."""
    return Experiment.model_validate({
        "name": name, "seed": seed, "runs": runs, "data": data,
        "model": {"width": m, "bias": True},
        "init": {**SCHEMES[scheme], "log_scale": log10_lambda * math.log(10), "width_scaling": True},
        "train": {"loss": "mse", "lr": lr, "steps": steps, "onedim": onedim,
                  "parametrisation": parametrisation, "polish": polish,
                  "end_state": end_state},
        "record": {"points": points, "probes": list(probes), "snapshots": snapshots},
    })


def stack_runs(dss: Sequence[xr.Dataset]) -> xr.Dataset:
    """The runs of Datasets with equal record schedules as one Dataset, run 0..R-1; variables
    without a run dimension (shared data) are kept once."""
    out = xr.concat(list(dss), dim="run", data_vars="minimal", coords="minimal",
                    compat="override", combine_attrs="override")
    return out.assign_coords(run=np.arange(out.sizes["run"]))


def data_of(ds: xr.Dataset, run: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The data X~ (n, 2) with its bias column and y (n,) of run ``run``."""
    X, y = ds["X"], ds["y"]
    X = X.isel(run=run) if "run" in X.dims else X
    y = y.isel(run=run) if "run" in y.dims else y
    return X.values, y.values


def critical_at_init(X: np.ndarray, y: np.ndarray) -> CriticalSet:
    """The critical directions of G at initialisation (h = 0; docs/math.md §2.3, §2.7)."""
    return extremal_vectors(X, residual_weights(y))


@dataclass
class RunMeasures:
    """One run's alignment diagnostics per record (``align``: ``theory.bf_alignment``), its
    phase ends (flow times, NaN when not reached), the OLS fit of its data and the critical
    directions of G at initialisation."""

    align: xr.Dataset
    phases: dict[str, float]
    fit: OLSFit
    critical: CriticalSet
    t: np.ndarray

    def index(self, phase: str) -> int:
        """The record at or after the end of ``phase`` (-1: the last record if not reached)."""
        return record_at(self.t, self.phases[phase])


_last_measures: list[Any] = []  # [weakref to the Dataset, arguments, RunMeasures]: judge, draw
# and method read the same saved run; the weak reference keeps no Dataset alive


def run_measures(ds: xr.Dataset, run: int = 0, delta: float = DEFAULT_DELTA,
                 limit_loss: str = "ols") -> RunMeasures:
    """Alignment diagnostics of run ``run`` (records ``a``, ``W``, ``loss``) and its phase ends
    (docs/math.md §8.11): alignment = first rise of the fraction of live positive neurons within
    ``delta`` of a maximum of G to 0.9; phase2a, phase2, convergence from the positive mass and
    the loss; ``limit_loss = "ols"``: Phase 2 ends at the OLS loss (Theorem 2), ``"last"``: at
    the last recorded loss. The last result is reused for the same Dataset object and arguments
    (Datasets are not modified in place by the reproductions)."""
    args = (run, delta, limit_loss)
    if _last_measures and _last_measures[0]() is ds and _last_measures[1] == args:
        return _last_measures[2]
    measures = _measure(ds, run, delta, limit_loss)
    _last_measures[:] = [weakref.ref(ds), args, measures]
    return measures


def _measure(ds: xr.Dataset, run: int, delta: float, limit_loss: str) -> RunMeasures:
    X, y = data_of(ds, run)
    crit = critical_at_init(X, y)
    one = ds.isel(run=run)
    t = one["time"].values
    al = alignment(one["a"].values, one["W"].values, X, y, time=t, critical=crit, delta=delta)
    fit = ols(X, y)
    ends = bf_phase_ends(t, one["loss"].values, al["positive_mass"].values,
                         al["frac_pos_live"].values,
                         limit_loss=fit.loss if limit_loss == "ols" else None)
    return RunMeasures(al, {k: float(v) for k, v in ends.items()}, fit, crit, t)


def record_at(t: np.ndarray, when: float) -> int:
    """Index of the first record at or after flow time ``when`` (the last record when ``when`` is
    NaN or after the end)."""
    if not math.isfinite(when):
        return len(t) - 1
    return int(min(np.searchsorted(t, when - 1e-12 * max(1.0, abs(when))), len(t) - 1))


def active_counts(W: np.ndarray, X: np.ndarray) -> np.ndarray:
    """(..., p): number of points with <w_j, x~_k> > 0 per neuron (W (..., p, d), X (n, d))."""
    return np.sum(np.asarray(W) @ np.asarray(X).T > 0, axis=-1)


def angle_deg(u: np.ndarray, v: np.ndarray) -> float:
    """The angle between two non-zero vectors, in degrees."""
    cos = float(np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v)))
    return math.degrees(math.acos(min(1.0, max(-1.0, cos))))


def direction_angle(a: np.ndarray, W: np.ndarray, X: np.ndarray, reference: np.ndarray) -> float:
    """Angle (degrees) between the mass-weighted direction sum_{a_j > 0, live} a_j w_j of the live
    positive neurons and ``reference``; NaN when there is none."""
    live = active_counts(W, X) > 0
    sel = (a > 0) & live
    if not sel.any():
        return math.nan
    v = (a[sel, None] * W[sel]).sum(axis=0)
    return angle_deg(v, reference) if np.linalg.norm(v) > 0 else math.nan


def effective_kinks(a: np.ndarray, W: np.ndarray, X: np.ndarray, rtol: float) -> np.ndarray:
    """Positions x = -b_j/w_j inside the data range of the kinks of h(x) = sum_j a_j relu(w_j x + b_j)
    whose slope change is at least ``rtol`` times the largest one: the neurons are grouped by the
    data interval holding their kink (neurons whose kinks lie between the same two consecutive
    data points act on the data as one), each group's slope change is |sum a_j |w_j||, and a
    group's position is the slope-change weighted mean of its kinks."""
    x = np.sort(np.asarray(X)[:, 0])
    w, b = W[:, 0], W[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        kink = np.where(w != 0, -b / w, np.nan)
    inside = np.isfinite(kink) & (kink > x[0]) & (kink < x[-1])
    if not inside.any():
        return np.zeros(0)
    cell = np.searchsorted(x, kink[inside])
    change = a[inside] * np.abs(w[inside])
    cells = np.unique(cell)
    size = np.array([abs(change[cell == c].sum()) for c in cells])
    pos = np.array([np.average(kink[inside][cell == c], weights=np.abs(change[cell == c]) + 1e-300)
                    for c in cells])
    keep = size >= rtol * size.max() if size.max() > 0 else np.zeros_like(size, bool)
    return np.sort(pos[keep])


# ------------------------------------------------------------------------------------ drawing
def snapshot_panels(ds: xr.Dataset, indices: Sequence[int], titles: Sequence[str], run: int = 0,
                    reference: Any = None, reference_label: str = "reference",
                    cones: bool | None = None, suptitle: str = "", per_row: int = 2) -> Any:
    """A figure with one pair of panels per recorded snapshot ``indices`` (``per_row`` pairs per
    row): the network function and the polar neuron plot beside it (``plots.polar``, shifted-log
    radius with the run's floor and outer radius, so snapshots compare), BF Figs. 2-3 layout."""
    import matplotlib.pyplot as plt

    from shallowflow.plots.polar import (
        default_floor,
        draw_function,
        draw_polar,
        network_function,
        shifted_log_radius,
    )

    X, y = data_of(ds, run)
    one = ds.isel(run=run)
    floor = default_floor(one["W_init"].values)
    norms = np.sqrt((one["W"] ** 2).sum("dim")).values
    rmax = float(shifted_log_radius(np.array(np.nanmax(norms)), floor)) or 1.0
    kappa = RunAttrs.of(ds).kappa
    grid = np.linspace(min(-1.0, X[:, 0].min()), max(1.0, X[:, 0].max()), 201)
    outs = [network_function(one["a"].values[k], one["W"].values[k], grid, kappa) for k in indices]
    lo = min(0.0, float(np.min(y)), *(float(o.min()) for o in outs))
    hi = max(float(np.max(y)), *(float(o.max()) for o in outs))
    pad = 0.08 * (hi - lo)
    rows = -(-len(indices) // per_row)
    fig = plt.figure(figsize=(8.6 * per_row, 3.4 * rows))
    for r, (k, title) in enumerate(zip(indices, titles, strict=True)):
        a, W = one["a"].values[k], one["W"].values[k]
        ax_f = fig.add_subplot(rows, 2 * per_row, 2 * r + 1)
        draw_function(ax_f, a, W, X, y, kappa=kappa, reference=reference,
                      reference_label=reference_label, ylim=(lo - pad, hi + pad))
        ax_f.set_title(f"{title}: network function", fontsize=9)
        ax_p = fig.add_subplot(rows, 2 * per_row, 2 * r + 2, projection="polar")
        draw_polar(ax_p, a, W, X=X, floor=floor, rmax=rmax, cones=cones)
        ax_p.set_title(f"{title}: neurons (angle of (w, b), log radius)", fontsize=9)
    if suptitle:
        fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout()
    return fig


def movie(ds: xr.Dataset, filename: str, max_frames: int,
          **options: Any) -> Callable[[Path], Path]:
    """The ``Figure.movie`` writer of run 0's animation (``plots.animate``) as ``filename`` in
    the reproduction folder."""
    from shallowflow.plots.animate import animate

    def write(folder: Path) -> Path:
        return animate(ds, folder / filename, run=0, max_frames=max_frames, dpi=70, **options)

    return write


