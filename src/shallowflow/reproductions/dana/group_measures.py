"""Measurements on the group-dynamics runs of dana-fig2 (docs/math.md §1.5, §8.2): the distance
of the rescaled loss to its limit off the jumps, the transition windows of the group losses, the
records of one saved GD run, and the same measurements at the other reasonable choices of their
free constants (the claims' variants).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from shallowflow.analysis.curves import first_crossing
from shallowflow.theory import group_dynamics as group


def sup_outside(s: np.ndarray, L: np.ndarray, Linf: np.ndarray, jumps: np.ndarray,
                delta: float) -> float:
    """max |L_n - L_inf| over rescaled times farther than ``delta`` from every jump."""
    keep = np.all(np.abs(s[:, None] - jumps[None, :]) > delta, axis=1)
    return float(np.max(np.abs(L - Linf)[keep]))


def gd_windows(b: xr.Dataset, D: np.ndarray, eps: float) -> np.ndarray:
    """(t^j(eps) - t^j(1 - eps))/t_n of each group loss: first records at or below the levels
    eps/2 ||D_j||^2 and (1-eps)/2 ||D_j||^2, linearly interpolated (docs/math.md §8.2)."""
    t, t_n = b.time.values, float(b.t_n)
    out = []
    for j, Dj in enumerate(D):
        levels = 0.5 * np.array([eps, 1 - eps]) * Dj**2
        cross = first_crossing(b.group_loss.values[:, j], t, levels, inclusive=True,
                               below_at_start="nan")
        out.append((cross[0] - cross[1]) / t_n)
    return np.array(out)


def gd_run(ds: xr.Dataset, n: int, lr: float) -> xr.Dataset:
    """The records of the GD run (n, lr), without the NaN padding."""
    run = ds.sel(n=n, lr=lr)
    return run.isel(record=np.flatnonzero(np.isfinite(run.time.values)))


def other_window_variants(ds: xr.Dataset, jumps: np.ndarray, tol: float,
                          deltas: Sequence[float]) -> dict[str, Any]:
    """The limit rule (sup |L_n - L_inf| decreasing in n for the closed form and for GD at the
    fine step, below ``tol`` at the last closed-form n) with the other half-widths ``deltas``
    of the windows left out around the jumps; {} without the saved curves."""
    if "closed_loss" not in ds:
        return {}
    s, lr2 = ds.s.values, float(ds.lr.values[-1])
    out: dict[str, Any] = {}
    for delta in deltas:
        dc = [sup_outside(s, L, ds.limit_loss.values, jumps, delta) for L in ds.closed_loss.values]
        dg = [sup_outside(b.time_rescaled.values, b.loss.values, b.loss_limit.values, jumps, delta)
              for b in (gd_run(ds, n, lr2) for n in ds.n.values)]
        holds = bool(np.all(np.diff(dc) < 0) and np.all(np.diff(dg) < 0) and dc[-1] < tol)
        out[f"half-width {delta}: closed form at n = e^42"] = round(dc[-1], 4)
        out[f"half-width {delta}: GD per n"] = [round(v, 4) for v in dg]
        out[f"half-width {delta}: rule holds"] = holds
    return out


def other_eps_variants(ds: xr.Dataset, D: np.ndarray, eps_values: Sequence[float]
                       ) -> dict[str, Any]:
    """Per n, the worst relative deviation over the groups of the GD windows (fine step) from
    the derived window 2 log C(eps)/(||D_j|| log(np)) (docs/math.md §1.5) at the levels
    ``eps_values`` (Theorem 2 holds for every eps); None where a window is undefined (the group
    loss starts below the level (1 - eps)/2 ||D_j||^2 at small n); {} without the saved
    curves."""
    if "group_loss" not in ds:
        return {}
    p, lr2 = len(D), float(ds.lr.values[-1])
    out: dict[str, Any] = {}
    for eps in eps_values:
        rel = [np.max(np.abs(gd_windows(gd_run(ds, n, lr2), D, eps)
                             / np.asarray(group.window_width(D, int(n), p, eps)) - 1))
               for n in ds.n.values]
        out[f"eps = {eps}: worst relative deviation from the derived window per n"] = [
            round(float(r), 4) if np.isfinite(r) else None for r in rel]
    return out
