"""Curves of recorded probes against flow time: every run thin, the median bold."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from shallowflow.errors import UserError, shown
from shallowflow.output import claim_files
from shallowflow.store import check_run_folder, load_run

LOG_SCALE = {"loss", "pl_curvature", "balance_drift", "neuron_norm", "param_norm_sq"}
PANEL_BYTES = 2**20
"""About the most bytes one panel adds to a PNG (a 500 x 400 pixel panel at 120 dpi takes a
tenth of that)."""


def _per_run(da: xr.DataArray) -> xr.DataArray:
    """Reduce trailing dims (neuron, sample, ...) so that one curve per run remains."""
    extra = [d for d in da.dims if d not in ("run", "time")]
    return da.max(extra) if extra else da


def recorded(ds: xr.Dataset) -> list[str]:
    """The probes of ``ds`` that can be drawn against flow time (one value per run and time)."""
    return [str(n) for n, da in ds.data_vars.items() if {"run", "time"} <= set(da.dims)]


def plot_probes(ds: xr.Dataset, names: Sequence[str] = ("loss", "pl_curvature"),
                max_lines: int = 50, field: str = "names") -> plt.Figure:
    """One panel per probe: each run thin (at most ``max_lines``), the median over runs bold.
    Per-neuron probes are shown as their maximum over neurons. Against log flow time, or, where
    nothing was recorded after time 0 (a run of 0 steps), as points at time 0. Requested probes
    that were not recorded are left out; none recorded is refused (naming ``field``)."""
    have = recorded(ds)
    drawn = [n for n in names if n in have]
    if not drawn:
        raise UserError(f"{field}: none of {', '.join(names) or 'no probes'} is recorded; "
                        f"recorded: {', '.join(have)}")
    names = drawn
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.4), squeeze=False)
    t = ds["time"].values
    at = t > 0 if (t > 0).any() else np.ones_like(t, dtype=bool)
    marker = "o" if at.sum() == 1 else None  # a single time: a point, not an empty line
    for ax, name in zip(axes[0], names, strict=True):
        da = _per_run(ds[name])
        values = np.asarray(da.values, dtype=float)
        for row in values[:max_lines]:
            ax.plot(t[at], row[at], lw=0.6, alpha=0.35, color="C0", marker=marker)
        ax.plot(t[at], np.nanmedian(values, axis=0)[at], lw=2, color="C1",
                label="median", marker=marker)
        if (t > 0).any():
            ax.set_xscale("log")
        finite = values[:, at][np.isfinite(values[:, at])]
        if name in LOG_SCALE and finite.size and finite.min() > 0:
            ax.set_yscale("log")
        title = name if da.ndim == ds[name].ndim else f"max over neurons of {name}"
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("flow time t")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_run(folder: str | Path, names: Sequence[str], target: str | Path | None = None,
             overwrite: bool = False, field: str = "RUN_DIR", force: bool = False) -> Path:
    """``shallowflow plot``: the probes ``names`` of the run folder ``folder`` drawn into the
    PNG ``target`` (default ``FOLDER/probes.png``). Before any work: the run folder and its
    files (named as ``field``), the output file (:func:`shallowflow.output.claim_files`: not a
    folder or a link, replaced only with ``overwrite`` and where shallowflow wrote it, room on
    the disk unless ``force``), held for the whole call."""
    folder = check_run_folder(folder, field)
    target = Path(target) if target is not None else folder / "probes.png"
    if target.suffix.lower() != ".png":
        raise UserError(f"--out: must name a .png file (got {shown(target)})")
    with claim_files([target], overwrite, PANEL_BYTES * max(len(names), 1), "--out",
                     force=force) as place:
        fig = plot_probes(load_run(folder, field), names, field="--probes")
        try:
            with place.writing() as (tmp,):
                fig.savefig(tmp, dpi=120, format="png")
        finally:
            plt.close(fig)
    return target
