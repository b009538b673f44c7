"""mmv-fig12: two-phase training (paper 004, App. A.5, Figures 12 and 13 in one reproduction):
with both layers trained from a small start, the neuron directions change first while the norms
stay put, then the norms grow and the loss falls; training the first layer only (fixed v = +-1)
shows no such two phases.

Method: MNIST 1 (+1) vs 0 (-1) as in Fig. 5, h = 50, SGD with step 2e-3 and the paper's batch
2000. The embedded subset has at most 1000 images per pair, so the batch is min(2000, n), i.e.
the full batch (SGD then equals GD; said in the report). Both layers: W and v entries
N(0, alpha^2). First layer only (``train.second_layer_rate = 0``): W entries N(0, alpha^2), v_j = +-1
fixed (``alignment_curves.first_layer_init``). The A.5 "changes" (docs/math.md §4.4) are measured every
``every`` iterations as finite differences over one step (records at k and k + 1;
``theory.alignment_measures.changes_from_snapshots``), which with the full batch is the rate of a full
gradient step to first order.

Rule of "two phases" (fixed before the runs): with each change curve read relative to its own
maximum, the direction changes peak (a) after the first measured interval and (b) before the norm
changes first reach :data:`NORM_RISE` of their maximum. Claims: ``two_phases_both_layers``
(the rule holds with both layers), ``no_two_phases_first_layer`` (it fails with the first layer
only).
"""

from __future__ import annotations

import time

import numpy as np
import xarray as xr
from pydantic import Field

from shallowflow.reproductions.base import Figure, Reproduction, Section, run_time
from shallowflow.reproductions.claims import Claim, qualitative
from shallowflow.reproductions.fields import Alpha, HiddenWidth, LearningRate, LossReading, Seed, Steps
from shallowflow.reproductions.mmv.alignment_curves import (
    PAPER_ALPHA,
    PAPER_BATCH,
    PAPER_LR,
    PAPER_STEPS,
    PAPER_WIDTH,
    PRIMARY,
    MnistSource,
    first_layer_init,
    iterations,
    mmv_experiment,
    reading,
)
from shallowflow.theory.alignment_measures import changes_from_snapshots
from shallowflow.training.entry import Trainer

DIGITS = (1, 0)
SCHEMES = ("both layers", "first layer only")
NORM_RISE = 0.1  # the norm changes "start": first reach 10 % of their maximum
NORM_RISE_VARIANTS = (0.05, 0.2)  # other levels of the norm rise, reported beside


class Fig12Params(MnistSource):
    """Parameters of mmv-fig12."""

    width: HiddenWidth
    alpha: Alpha = Field(description="initial scale of W (and of v with both layers)")
    lr: LearningRate = Field(description="SGD step size")
    steps: Steps = Field(description="SGD iterations")
    batch: int = Field(gt=0, description="SGD batch size (capped at n)")
    every: int = Field(ge=2, description="iterations between change measurements")
    seed: Seed = Field(description="seed of the initialisation and the batches")
    reading: LossReading


_COMMON = {"width": PAPER_WIDTH, "alpha": PAPER_ALPHA, "lr": PAPER_LR, "steps": PAPER_STEPS,
           "batch": PAPER_BATCH, "every": 100, "seed": 0, "reading": PRIMARY}
PRESETS = {"quick": {**_COMMON, "per_digit": 100}, "paper": {**_COMMON, "per_digit": None}}


def simulate(P: Fig12Params, train: Trainer) -> xr.Dataset:
    """Both layers and first layer only; saves per scheme the loss and the two changes against
    iteration (W is not kept)."""
    start = time.perf_counter()
    data = P.data(DIGITS)
    n = mmv_experiment(data=data).data.shape[0]
    batch = min(P.batch, n)
    loss, red = reading(P.reading)
    marks = list(range(1, P.steps, P.every))
    common = dict(data=data, width=P.width, alpha=P.alpha, lr=P.lr, steps=P.steps, loss=loss,
                  reduction=red, seed=P.seed, every=P.every, at_steps=marks, optimizer="sgd",
                  batch_size=batch, name="mmv-fig12")
    both = mmv_experiment(**common)
    d = both.data.arrays()[0].shape[1]
    first = mmv_experiment(**common, second_layer_rate=0.0,
                           init=first_layer_init(P.seed, P.width, d, P.alpha))
    out = []
    for ds, s in zip(train([both, first], label="mmv-fig12"), SCHEMES, strict=True):
        it = iterations(ds, P.lr)
        base = np.flatnonzero(np.isin(it + 1, it) & (it % P.every == 0))
        W = ds["W"].values[0]
        t = ds["time"].values
        norms = np.empty(len(base))
        dirs = np.empty(len(base))
        for i, k in enumerate(base):
            dn, du = changes_from_snapshots(W[k:k + 2], t[k:k + 2])
            norms[i], dirs[i] = dn[0], du[0]
        one = xr.Dataset({"loss": ("iteration", ds["loss"].values[0][base]),
                          "norm_changes": ("iteration", norms),
                          "direction_changes": ("iteration", dirs)},
                         coords={"iteration": it[base]})
        out.append(one.expand_dims(scheme=[s]))
    res = xr.concat(out, dim="scheme")
    res.attrs.update(n=n, batch=batch, lr=P.lr, simulate_wall_s=time.perf_counter() - start)
    return res


def phases(ds: xr.Dataset, s: str, level: float = NORM_RISE) -> dict[str, float | bool]:
    """The two-phase rule (module docstring) on one scheme, the norm rise at ``level`` of the
    maximum."""
    one = ds.sel(scheme=s)
    it = one["iteration"].values
    dn, du = one["norm_changes"].values, one["direction_changes"].values
    k_dir = int(np.argmax(du))
    rise = np.flatnonzero(dn >= level * dn.max())
    k_rise = int(rise[0]) if rise.size else len(it) - 1
    return {"direction_peak_iteration": float(it[k_dir]),
            "norm_rise_iteration": float(it[k_rise]),
            "two_phases": bool(k_dir > 0 and k_dir < k_rise)}


def judge(ds: xr.Dataset, P: Fig12Params) -> list[Claim]:
    """The two claims of mmv-fig12 (module docstring)."""
    b, f = phases(ds, SCHEMES[0]), phases(ds, SCHEMES[1])
    note = (f"Rule: the direction changes peak after the first measured interval and before the "
            f"norm changes first reach {NORM_RISE} of their maximum (a level of the project's "
            f"own; the paper reads the two phases off the plot). Batch {ds.attrs['batch']} of "
            f"n = {ds.attrs['n']} (the paper: 2000 of all training images of the pair).")

    def other(s: str) -> dict[str, bool]:
        return {f"two phases with the norm rise at {v:g}": bool(phases(ds, s, v)["two_phases"])
                for v in NORM_RISE_VARIANTS}

    return [Claim("two_phases_both_layers", "Training both layers from a small start shows two "
                  "phases: directions change first, then the norms grow and the loss falls "
                  "(Fig. 12)", "two phases", b, "reproduced" if b["two_phases"] else "not reproduced",
                  None, note, other(SCHEMES[0]),
                  source=qualitative("App. A.5, Fig. 12 caption: \"At the early phase of the "
                                     "training, only neuron directions are changing while neurons' "
                                     "norms do not grow. In the second stage, neurons start to grow "
                                     "their norms and loss starts to decrease\"")),
            Claim("no_two_phases_first_layer", "Training the first layer only (fixed v = +-1) shows "
                  "no two phases (Fig. 13)", "no two phases", f,
                  "reproduced" if not f["two_phases"] else "not reproduced", None, note,
                  other(SCHEMES[1]),
                  source=qualitative("App. A.5, Fig. 13 caption: \"No two-phase training when "
                                     "only the first layer is trained\"; \"The plot indicates "
                                     "that two-phase training does not happen in this case\""))]


def draw(ds: xr.Dataset, P: Fig12Params) -> list[Figure]:
    """Figs. 12 and 13: loss and the two changes against iteration, per scheme."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 4))
    for ax, s, name in zip(axes, SCHEMES, ("Fig. 12", "Fig. 13"), strict=True):
        one = ds.sel(scheme=s)
        it = one["iteration"].values
        ax.plot(it, one["loss"], color="C0", label="loss")
        ax2 = ax.twinx()
        ax2.plot(it, one["norm_changes"], "--", color="C3", label="changes in neuron norms")
        ax2.plot(it, one["direction_changes"], color="C2", label="changes in neuron directions")
        ax.set_xlabel("iteration")
        ax.set_title(f"{name}: {s}", fontsize=9)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="center right")
    fig.suptitle(f"MMV A.5: SGD batch {ds.attrs['batch']} of n = {ds.attrs['n']} (MNIST 1 vs 0), "
                 f"step {P.lr:g}, h = {P.width}, alpha = {P.alpha:g}, loss {P.reading}", fontsize=10)
    fig.tight_layout()
    return [Figure("fig12_13", fig, "Loss (left axis) and the changes in neuron norms and "
                   "directions (right axis; rates of one full-batch step, docs/math.md §4.4) "
                   "against iteration, both layers (Fig. 12) and first layer only (Fig. 13).")]


def method(ds: xr.Dataset, P: Fig12Params) -> list[Section]:
    """Sections "Method", "Measured" and "Run time"."""
    rows = ["| scheme | direction peak | norm rise | two phases |", "|---|---|---|---|"]
    for s in SCHEMES:
        m = phases(ds, s)
        rows.append(f"| {s} | {m['direction_peak_iteration']:.0f} | {m['norm_rise_iteration']:.0f} "
                    f"| {m['two_phases']} |")
    return [("Method", (
        f"MNIST 1 (+1) vs 0 (-1), {ds.attrs['n']} images of the embedded subset, centred; h = "
        f"{P.width}; SGD step {P.lr:g}, batch {ds.attrs['batch']} (the paper's {P.batch} capped at "
        f"n: with the full batch SGD is GD), {P.steps} iterations, loss {P.reading} (the paper "
        f"defines a sum of exponential or logistic losses but does not say which its experiments "
        f"use, nor the normalisation), seed {P.seed}. Both layers: W, v entries N(0, {P.alpha:g}^2). First "
        f"layer only: W entries N(0, {P.alpha:g}^2), v = +-1 fixed. Changes every {P.every} "
        f"iterations from records one step apart.")),
        ("Measured", "\n".join(rows)),
        run_time(ds)]


REPRODUCTION = Reproduction(
    "mmv-fig12", "two phases with both layers, none with the first layer only (Figs. 12-13)",
    "Min, Mallada, Vidal (004), Figures 12 and 13", params=Fig12Params, presets=PRESETS,
    simulate=simulate, judge=judge, draw=draw, method=method,
    summary="Changes in neuron norms and directions under SGD from a small start: directions "
            "first, then norms, when both layers train; no such phases when only the first layer "
            "trains with fixed v = +-1 (Figures 12 and 13 of Min, Mallada and Vidal).")
