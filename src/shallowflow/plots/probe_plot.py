"""Curves of recorded probes against flow time: every run thin, the median bold."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

LOG_SCALE = {"loss", "pl_curvature", "balance_drift", "neuron_norm", "param_norm_sq"}


def _per_run(da: xr.DataArray) -> xr.DataArray:
    """Reduce trailing dims (neuron, sample, ...) so that one curve per run remains."""
    extra = [d for d in da.dims if d not in ("run", "time")]
    return da.max(extra) if extra else da


def plot_probes(ds: xr.Dataset, names: Sequence[str] = ("loss", "pl_curvature"),
                max_lines: int = 50) -> plt.Figure:
    """One panel per probe: each run thin (at most ``max_lines``), the median over runs bold.
    Per-neuron probes are shown as their maximum over neurons."""
    names = [n for n in names if n in ds]
    if not names:
        raise ValueError(f"names: none of the requested probes is recorded; have {list(ds)}")
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.4), squeeze=False)
    t = ds["time"].values
    positive_t = t > 0
    for ax, name in zip(axes[0], names, strict=True):
        da = _per_run(ds[name])
        values = np.asarray(da.values, dtype=float)
        for row in values[:max_lines]:
            ax.plot(t[positive_t], row[positive_t], lw=0.6, alpha=0.35, color="C0")
        ax.plot(t[positive_t], np.nanmedian(values, axis=0)[positive_t], lw=2, color="C1",
                label="median")
        ax.set_xscale("log")
        if name in LOG_SCALE and np.nanmin(values) > 0:
            ax.set_yscale("log")
        title = name if da.ndim == ds[name].ndim else f"max over neurons of {name}"
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("flow time t")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return fig
