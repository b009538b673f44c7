"""bf-init: the nature of the 3-point limit under BF's three initialisations (new figure from the
paper's remarks, Section 5 and App. B.1).

Paper (002 Section 5; docs/math.md §2.4 remarks): with a perfectly balanced start the limit can
contain zero neurons (a_j = 0, w_j = 0): a saddle; with a dominated start (|a_j| > ||w_j||) the
limit has no zero neuron and is a local minimum; with an unbalanced start the weights stay
omnidirectional and the network reaches a global minimum (zero loss) on Assumption-3 data. Here:
the 3-point data of Fig. 2, each scheme at several widths and seeds, lambda = 1e-3 (times
1/sqrt(m)), GD on (1/n) sum (h - y)^2; every end point is polished (Newton, to the nearest
stationary point) and classified by the stationary-point certificate (docs/math.md §9:
``train.end_state``). The verdict counts are reported as they come out.

Saved Dataset (``results.nc``): per run (dim ``run``) its scheme, width and seed, the loss
curve (``run, time``) and the certificate's numbers (``end_label``, ``end_local_minimum``,
``end_dead_escape``, ``end_dead_distance``, ...).
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Annotated

import numpy as np
import xarray as xr
from pydantic import Field

from shallowflow.plots.labels import lambda_label
from shallowflow.reproductions.base import Figure, Params, Reproduction, Section, run_time
from shallowflow.reproductions.boursier.phases import (
    SCHEMES,
    bf_experiment,
    data_of,
)
from shallowflow.reproductions.claims import Claim, derived, qualitative
from shallowflow.reproductions.fields import LearningRate, Log10Lambda, Runs, Seed, Steps
from shallowflow.theory.ols import ols
from shallowflow.training.entry import Trainer


class InitParams(Params):
    """Parameters of bf-init."""

    widths: list[Annotated[int, Field(ge=2)]] = Field(min_length=1, description="network widths m")
    runs: Runs = Field(description="seeds (runs) per scheme and width")
    log10_lambda: Log10Lambda
    lr: LearningRate
    steps: Steps
    seed: Seed = Field(description="base seed")
    points: int = Field(ge=10, description="geometric records of the loss")


PRESETS = {
    "quick": {"widths": [50, 400], "runs": 4, "log10_lambda": -3.0, "lr": 1e-2, "steps": 100_000,
              "seed": 0, "points": 60},
    "paper": {"widths": [200, 2000, 20_000], "runs": 5, "log10_lambda": -3.0, "lr": 1e-3,
              "steps": 2_000_000, "seed": 0, "points": 100},
}
LOSS_ATOL = 1e-6  # |final loss - OLS loss| for "ends at the OLS loss" (6e-6 relative)
NATURE = "Section 5, 'Nature of the stationary point': "
ZERO_LOSS = 1e-10  # final loss below this: zero loss (the certificate's tol_loss)
KEEP = ("end_label", "end_reason", "end_local_minimum", "end_dead_escape", "end_dead_distance",
        "end_tol_curvature", "end_loss", "end_zero_neurons", "end_dead_neurons", "end_eig_min",
        "end_polish_distance", "end_grad_norm", "stop_reason", "end_step")
SUMMARY = ("Balanced, dominated and unbalanced small initialisations on the 3-point data: final "
           "loss and the certified nature of the end point (saddle, local or global minimum).")


# -------------------------------------------------------------------------------- simulate
def simulate(P: InitParams, train: Trainer) -> xr.Dataset:
    """Every scheme x width with ``runs`` seeds; end points polished and certified."""
    start = time.perf_counter()
    exps = [bf_experiment(data={"kind": "three_point"}, m=m, scheme=s, log10_lambda=P.log10_lambda,
                          lr=P.lr, steps=P.steps, seed=P.seed, runs=P.runs, points=P.points,
                          snapshots=False, probes=("loss",), polish="newton", end_state=True,
                          name=f"bf-init-{s}-m{m}")
            for s in SCHEMES for m in P.widths]
    dss = train(exps, label="bf-init", keep_data=True)
    parts = []
    for exp, ds in zip(exps, dss, strict=True):
        scheme = exp.name.split("-")[2]
        part = ds[["loss", *KEEP]]
        part = part.drop_vars([c for c in part.coords if c not in ("run", "time", "step")])
        parts.append(part.assign_coords(scheme=("run", [scheme] * ds.sizes["run"]),
                                        width=("run", [exp.model.width] * ds.sizes["run"]),
                                        seed=("run", ds["run_index"].values)))
    out = xr.concat(parts, dim="run", join="outer", combine_attrs="override")
    out = out.assign_coords(run=np.arange(out.sizes["run"]))
    X, y = data_of(dss[0])
    out = out.assign(X=(("sample", "dim"), X), y=("sample", y))
    out.attrs.update(lr=P.lr, loss="mse (1/n) sum r^2", simulate_wall_s=time.perf_counter() - start)
    return out


# ----------------------------------------------------------------------------------- judge
def _share_verdict(hits: int, total: int) -> str:
    """reproduced if all, partly if some, not reproduced if none (inconclusive without runs)."""
    if total == 0:
        return "inconclusive"
    return "reproduced" if hits == total else "partly" if hits > 0 else "not reproduced"


def _per_width(ds: xr.Dataset, scheme: str, hit: np.ndarray) -> dict[str, str]:
    sel = ds["scheme"].values == scheme
    return {f"{scheme} m = {m}": f"{int(hit[sel & (ds['width'].values == m)].sum())}/"
            f"{int(np.sum(sel & (ds['width'].values == m)))}"
            for m in np.unique(ds["width"].values[sel])}


def label_counts(ds: xr.Dataset) -> dict[str, dict[str, int]]:
    """Counts of each end-state verdict per scheme."""
    return {s: dict(Counter(ds["end_label"].values[ds["scheme"].values == s].tolist()))
            for s in SCHEMES if np.any(ds["scheme"].values == s)}


def saddle_nearby(ds: xr.Dataset) -> np.ndarray:
    """(run,) a local minimum whose dead neurons lead along a flat path to a zero neuron with an
    escape (docs/math.md §9.3, "Dead neurons"): end_dead_escape < -end_tol_curvature."""
    esc, tol = ds["end_dead_escape"].values, ds["end_tol_curvature"].values
    with np.errstate(invalid="ignore"):
        return np.isfinite(esc) & (esc < -tol)


def ols_claim(ds: xr.Dataset, fit_loss: float) -> Claim:
    """Rule: every balanced and dominated run ends within LOSS_ATOL of the OLS loss
    (reproduced), some do (partly), none (not reproduced)."""
    final = ds["loss"].values[:, -1]
    hit = np.abs(final - fit_loss) <= LOSS_ATOL
    sel = np.isin(ds["scheme"].values, ["balanced", "dominated"])
    return Claim(
        "balanced_dominated_ols", "Balanced and dominated starts end at the OLS loss (the "
        "spurious stationary point of Theorem 2)", round(fit_loss, 9),
        f"{int(hit[sel].sum())}/{int(sel.sum())} runs",
        _share_verdict(int(hit[sel].sum()), int(sel.sum())), None,
        f"Final loss within {LOSS_ATOL:g} of the OLS loss {fit_loss:.9f} (derived from the data; "
        f"the paper prints no loss value). Final losses: min {np.min(final[sel]):.7g}, max "
        f"{np.max(final[sel]):.7g}. Rule: all runs reproduced, some partly, none not reproduced. "
        f"Paper: Theorem 2 ('the parameters converge to some [limit]' whose outputs are the OLS "
        f"ones) for any start with |a_j| >= ||w_j|| (eq.4): balanced (equality) and dominated.",
        {**_per_width(ds, "balanced", hit), **_per_width(ds, "dominated", hit)},
        source=derived("the OLS loss (1/n) sum (<beta*, x~_k> - y_k)^2, beta* = (X~^T X~)^-1 X~^T y "
                       "on the saved 3-point data with a bias column (theory.ols; docs/math.md "
                       "§2.4)"))


def zero_loss_claim(ds: xr.Dataset) -> Claim:
    """Rule: every unbalanced run ends below ZERO_LOSS (reproduced), some (partly), none."""
    final = ds["loss"].values[:, -1]
    hit = final <= ZERO_LOSS
    sel = ds["scheme"].values == "unbalanced"
    return Claim(
        "unbalanced_zero_loss", "An unbalanced start keeps the weights omnidirectional and "
        "reaches a global minimum (zero loss)", 0.0,
        f"{int(hit[sel].sum())}/{int(sel.sum())} runs",
        _share_verdict(int(hit[sel].sum()), int(sel.sum())), None,
        f"Zero loss: final loss <= {ZERO_LOSS}. The others end at "
        f"{sorted({round(float(v), 7) for v in final[sel & ~hit]})}. The paper states this for "
        f"Assumption-3 data and an infinite width; these are the Fig. 2 points at finite m. "
        f"Rule: all runs reproduced, some partly, none not reproduced.",
        _per_width(ds, "unbalanced", hit),
        source=qualitative("Section 5, 'Generality of Theorem 2': \"the omnidirectionality of the "
                           "weights on [the sphere] is still preserved when considering unbalanced "
                           "initialisations in the example of Theorem 2. The parameters thus "
                           "converge towards a global minimum for unbalanced initialisation with "
                           "the data of Assumption 3\" (a global minimum has loss 0: two neurons "
                           "interpolate the 3 points)"))


def balanced_claim(ds: xr.Dataset) -> Claim:
    """Rule: reproduced if every balanced run is certified a saddle; partly if every one is a
    saddle or a local minimum with a saddle along a flat path (dead neurons, docs/math.md §9.3);
    else not reproduced."""
    sel = ds["scheme"].values == "balanced"
    labels = ds["end_label"].values[sel]
    saddle = labels == "saddle"
    near = saddle_nearby(ds)[sel] & ds["end_local_minimum"].values[sel].astype(bool)
    verdict = ("inconclusive" if not sel.any() else "reproduced" if saddle.all()
               else "partly" if (saddle | near).all() else "not reproduced")
    dist = ds["end_dead_distance"].values[sel]
    return Claim(
        "balanced_saddle", "A perfectly balanced start converges to a saddle point (its limit "
        "can include zero neurons)", "saddle", label_counts(ds).get("balanced", {}), verdict, None,
        f"Certificate of the Newton-polished end point (docs/math.md §9.6). Balanced runs that "
        f"are local minima with a saddle along a flat path: {int(near.sum())}/{int(sel.sum())} "
        f"(a dead neuron shrunk to zero, at distance {np.nanmin(dist):.3g} to "
        f"{np.nanmax(dist):.3g}, gives a zero neuron with an escape). Rule: all saddles "
        f"reproduced; all saddles or local minima next to a saddle partly; else not reproduced. "
        f"The paper says 'can include'; the rule asks it of every run.",
        {"end labels per scheme": label_counts(ds)},
        source=qualitative(NATURE + "\"If the initialisation counts perfectly balanced neurons "
                           "[...], the convergence point of the parameters, described by Theorem 4 "
                           "in the Appendix, can include zero neurons [...], which corresponds to "
                           "saddle points of the loss\""))


def dominated_claim(ds: xr.Dataset) -> Claim:
    """Rule: reproduced if every dominated run is certified a local minimum (strict, or
    non-strict by the §9.4 test) at positive loss; partly if some; else not reproduced."""
    sel = ds["scheme"].values == "dominated"
    labels = ds["end_label"].values[sel]
    local = ds["end_local_minimum"].values[sel].astype(bool) & (labels != "global minimum")
    local |= labels == "strict local minimum"
    near = saddle_nearby(ds)[sel] & local
    return Claim(
        "dominated_local_minimum", "A dominated start (|a_j| > ||w_j||) converges to a spurious "
        "local minimum", "local minimum", label_counts(ds).get("dominated", {}),
        _share_verdict(int(local.sum()), int(sel.sum())), None,
        f"Local minimum: the §9.4 test passes (strict or non-strict) at a loss above zero. Of "
        f"these, {int(near.sum())}/{int(local.sum())} have a saddle along a flat path (dead "
        f"neurons), as the balanced ones do. Rule: all reproduced, some partly, none not "
        f"reproduced.", {"end labels per scheme": label_counts(ds)},
        source=qualitative(NATURE + "\"If on the other hand we only consider dominated neurons "
                           "[...], the convergence point does not include zero neurons [...] the "
                           "convergence point is actually a local minimum of the loss\""))


def judge(ds: xr.Dataset, P: InitParams) -> list[Claim]:
    """The four claims of bf-init."""
    X, y = data_of(ds)
    fit = ols(X, y)
    return [ols_claim(ds, fit.loss), zero_loss_claim(ds), balanced_claim(ds), dominated_claim(ds)]


# ------------------------------------------------------------------------------------ draw
COLOURS = {"balanced": "C4", "dominated": "C2", "unbalanced": "C1"}


def draw(ds: xr.Dataset, P: InitParams) -> list[Figure]:
    """Loss curves by scheme, and the verdict counts."""
    import matplotlib.pyplot as plt

    X, y = data_of(ds)
    fit = ols(X, y)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.3))
    t = ds["time"].values
    widths = sorted(set(ds["width"].values.tolist()))
    styles = dict(zip(widths, ("-", "--", ":", "-."), strict=False))
    for r in range(ds.sizes["run"]):
        s, m = str(ds["scheme"].values[r]), int(ds["width"].values[r])
        ax1.loglog(t[1:], ds["loss"].values[r, 1:], color=COLOURS[s], ls=styles.get(m, "-"),
                   lw=1.0, alpha=0.8)
    for s in SCHEMES:
        ax1.plot([], [], color=COLOURS[s], label=s)
    for m in widths:
        ax1.plot([], [], color="0.3", ls=styles.get(m, "-"), label=f"m = {m}")
    ax1.axhline(fit.loss, color="k", lw=0.8, ls=":", label=f"OLS loss {fit.loss:.6f}")
    ax1.set_xlabel("flow time t")
    ax1.set_ylabel("training loss (1/n) sum r^2")
    ax1.legend(fontsize=7, loc="lower left")
    ax1.grid(alpha=0.3)
    ax1.set_title("loss by initialisation")
    counts = label_counts(ds)
    labels = sorted({k for c in counts.values() for k in c})
    xs = np.arange(len(labels))
    for i, s in enumerate(counts):
        ax2.bar(xs + (i - 1) * 0.27, [counts[s].get(k, 0) for k in labels], width=0.27,
                color=COLOURS[s], label=s)
    ax2.set_xticks(xs, labels, fontsize=8)
    ax2.set_ylabel("runs")
    ax2.legend(fontsize=8)
    ax2.set_title("certified end state (Newton-polished)")
    fig.suptitle(f"BF 3-point data, lambda = {lambda_label(P.log10_lambda)} / sqrt(m), GD lr = "
                 f"{P.lr:g}, {P.steps:,} steps", fontsize=10)
    fig.tight_layout()
    return [Figure("init_endstates", fig,
                   "Left: training loss of every run against flow time, by initialisation "
                   "(colour) and width (line style), with the OLS loss. Right: the end-state "
                   "verdicts of the stationary-point certificate (docs/math.md §9.6) per scheme.")]


# ---------------------------------------------------------------------------------- method
def method(ds: xr.Dataset, P: InitParams) -> list[Section]:
    """Sections "Method", "End states" and "Run time"."""
    rows = ["| scheme | m | seed | final loss | verdict | reason |", "|---|---|---|---|---|---|"]
    for r in range(ds.sizes["run"]):
        rows.append(f"| {ds['scheme'].values[r]} | {int(ds['width'].values[r])} | "
                    f"{int(ds['seed'].values[r])} | {float(ds['loss'].values[r, -1]):.9g} | "
                    f"{ds['end_label'].values[r]} | {ds['end_reason'].values[r]} |")
    return [("Method", (
        f"3-point data of Fig. 2 with a hidden bias; schemes balanced (Gaussian w~, a = "
        f"+-||w~||), dominated (w~ uniform, a = +-sqrt(2)), unbalanced (Gaussian w~ and a); "
        f"lambda = {lambda_label(P.log10_lambda)} times 1/sqrt(m); widths {P.widths}, "
        f"{P.runs} seeds each; GD lr = {P.lr:g}, {P.steps:,} steps (flow time "
        f"{P.lr * P.steps:g}), float64. End points polished by Newton's method to the nearest "
        f"stationary point and certified (docs/math.md §9.5-§9.6, default tolerances). Paper: lr "
        f"1e-3, 2 million steps, m = 20 000, no certificate (the nature of the limit is argued "
        f"in Section 5).")),
        ("End states", "\n".join(rows)),
        run_time(ds, runs=True)]


REPRODUCTION = Reproduction(
    "bf-init", "nature of the 3-point limit: balanced, dominated and unbalanced starts",
    "Boursier, Flammarion (002), Section 5 remarks (new figure)", params=InitParams,
    presets=PRESETS, simulate=simulate, judge=judge, draw=draw, method=method,
    summary=SUMMARY)
