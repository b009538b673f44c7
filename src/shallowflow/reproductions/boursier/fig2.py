"""bf-fig2: on BF's 3-point data a balanced small initialisation aligns the positive neurons with
the single extremal vector, then converges to the spurious OLS stationary point, not to an
interpolator.

Paper (002 Section 6, Fig. 2, App. B.1; docs/math.md §2.4): x = (-0.75, -0.5, 0.125) with a
hidden bias, y = (1.1, 0.1, 0.8); balanced initialisation at lambda = 1e-3 (times 1/sqrt(m)),
m = 20 000, GD with lr 1e-3 for up to 2 million steps on (1/n) sum (h - y)^2. The snapshot
pairs are taken at the phase ends read off the run's curves (docs/math.md §8.11): end of the
alignment phase, end of Phase 2a (positive neurons start to grow; the paper's (c, d)), end of
Phase 2 (output at the OLS line; (e, f)), convergence ((g, h)), with the initialisation ((a, b)).

Saved Dataset (``results.nc``): the run's records (``loss``, ``a``, ``W``, ``output`` against
flow time), its data and initial network; judge and draw recompute the alignment diagnostics and
phase ends from them (``phases.run_measures``). Figures: the snapshot pairs, the curves with the
phase ends, and the animation ``fig2_animation.gif`` (one frame per record).
"""

from __future__ import annotations

import math
import time

import numpy as np
import xarray as xr
from pydantic import Field

from shallowflow.analysis.curves import BF_ALIGN_LEVEL
from shallowflow.model.run_attrs import RunAttrs
from shallowflow.plots.labels import lambda_label
from shallowflow.reproductions.base import Figure, Params, Reproduction, Section, run_time
from shallowflow.reproductions.boursier.phases import (
    PHASES,
    RunMeasures,
    active_counts,
    angle_deg,
    bf_experiment,
    data_of,
    direction_angle,
    movie,
    run_measures,
    snapshot_panels,
)
from shallowflow.reproductions.claims import Claim, band_verdict, derived, qualitative
from shallowflow.reproductions.fields import AlignmentAngle, Frames, LearningRate, Log10Lambda, Seed, Steps
from shallowflow.theory.ols import theorem2_limit
from shallowflow.training.entry import Trainer


class Fig2Params(Params):
    """Parameters of bf-fig2."""

    m: int = Field(ge=2, description="network width")
    log10_lambda: Log10Lambda
    lr: LearningRate = Field(description="GD learning rate on (1/n) sum (h - y)^2")
    steps: Steps
    seed: Seed
    points: int = Field(ge=20, description="geometrically spaced records (snapshots of a and W)")
    delta: AlignmentAngle
    frames: Frames


PRESETS = {
    "quick": {"m": 1000, "log10_lambda": -3.0, "lr": 1e-3, "steps": 300_000, "seed": 0,
              "points": 160, "delta": 0.1, "frames": 60},
    "paper": {"m": 20_000, "log10_lambda": -3.0, "lr": 1e-3, "steps": 2_000_000, "seed": 0,
              "points": 300, "delta": 0.1, "frames": 120},
}
LOSS_ATOL = 5e-7  # |final loss - OLS loss| (3e-6 relative; the other candidate limit is 0)
OUTPUT_ATOL = 1e-3  # final outputs vs the OLS fitted values (labels are O(1))
ALIGNED_MIN = BF_ALIGN_LEVEL  # fraction of live positive neurons aligned at the end of Phase 2a
DELTA_VARIANTS = (0.05, 0.2)  # other alignment angles (rad), reported beside the headline delta
TITLES = {"init": "(a, b) initialisation", "alignment": "end of alignment",
          "phase2a": "(c, d) end of Phase 2a", "phase2": "(e, f) end of Phase 2",
          "convergence": "convergence"}
SUMMARY = ("Training dynamics of a balanced small initialisation on the 3-point data: early "
           "alignment with the single extremal vector, growth, and convergence to the OLS "
           "stationary point (Figure 2 of Boursier and Flammarion).")


# -------------------------------------------------------------------------------- simulate
def simulate(P: Fig2Params, train: Trainer) -> xr.Dataset:
    """One run, recorded at ``points`` geometric points (a, W, loss, outputs)."""
    start = time.perf_counter()
    exp = bf_experiment(data={"kind": "three_point"}, m=P.m, scheme="balanced",
                        log10_lambda=P.log10_lambda, lr=P.lr, steps=P.steps, seed=P.seed,
                        points=P.points, name="bf-fig2")
    ds = train([exp], label=f"bf-fig2: m {P.m}, lr {P.lr:g}", keep_data=True)[0]
    keep = ["loss", "a", "W", "output", "a_init", "W_init", "X", "y", "stop_reason", "end_step"]
    out = ds[keep]
    out.attrs.update(lr=P.lr, kappa=RunAttrs.of(ds).kappa,
                     loss="mse (1/n) sum r^2", simulate_wall_s=time.perf_counter() - start)
    return out


# ----------------------------------------------------------------------------------- judge
FIG2_CD = ("Section 6, on Fig. 2(c, d): \"all the positive neurons (in purple) are either "
           "aligned with the single extremal vector or deactivated with all data points\"; "
           "\"Figures 2(c) and 2(d) precisely show the end of Phase 2a\"")
THEOREM2 = ("Section 6, on Fig. 2(g, h): \"The learnt estimator converged to the optimal linear one, "
            "as predicted by Theorem 2\"; Section 7: \"only converges towards a spurious stationary "
            "point (corresponding to the least squares regressor)\". The paper prints no loss or "
            "output value")
OLS_HOW = ("beta* = (X~^T X~)^-1 X~^T y on the 3-point data of the authors' code with a bias "
           "column (x = (-0.75, -0.5, 0.125), y = (1.1, 0.1, 0.8)), computed from the saved data "
           "(theory.ols; docs/math.md §2.4)")


def alignment_claim(ds: xr.Dataset, M: RunMeasures, P: Fig2Params) -> Claim:
    """At the end of Phase 2a (the paper's Fig. 2(c, d)) the live positive neurons are within
    delta of the single extremal vector. Rule: one maximum of G, the fraction >= ALIGNED_MIN,
    and the alignment phase (fraction first >= BF_ALIGN_LEVEL) ended no later. Variants: the
    fraction at the angles :data:`DELTA_VARIANTS`."""
    maxima = M.critical.directions[M.critical.kinds == "max"]
    k = M.index("phase2a")
    al = M.align.isel(time=k)
    a = ds["a"].isel(run=0, time=k).values
    pos, live = a > 0, al["live"].values
    frac = float(al["frac_pos_live"])
    cos = al["cos_typed"].values[pos & live]
    dead_pos = int(np.sum(pos & ~live))
    ok = (len(maxima) == 1 and math.isfinite(frac) and frac >= ALIGNED_MIN
          and M.phases["alignment"] <= M.phases["phase2a"])
    undecided = not math.isfinite(M.phases["phase2a"])
    other = {f"aligned fraction within {d} rad": round(float(np.mean(cos >= math.cos(d))), 4)
             if cos.size else None for d in DELTA_VARIANTS}
    return Claim(
        "aligned_after_early_phase",
        "After the early alignment phase all positive neurons are aligned with the single "
        "extremal vector or inactive on all data (Fig. 2(c, d))",
        {"extremal vectors (maxima of G)": 1, "aligned fraction of live positive neurons": 1.0},
        {"extremal vectors (maxima of G)": len(maxima), "aligned fraction": round(frac, 4),
         "median cosine": round(float(np.median(cos)), 6) if cos.size else None,
         "min cosine": round(float(np.min(cos)), 6) if cos.size else None,
         "inactive positive neurons": dead_pos, "live positive neurons": int(cos.size)},
        "inconclusive" if undecided else "reproduced" if ok else "not reproduced", None,
        f"Read at the end of Phase 2a (flow time {M.phases['phase2a']:.4g}, positive mass at 1% "
        f"of its final value); the alignment phase ended at {M.phases['alignment']:.4g} (aligned "
        f"fraction first >= {BF_ALIGN_LEVEL}). Aligned: within delta = {P.delta} rad of a maximum "
        f"of G at initialisation (extremal direction "
        f"{np.round(maxima, 5).tolist() if len(maxima) else 'none'}). Rule: exactly one maximum, "
        f"aligned fraction >= {ALIGNED_MIN} at the end of Phase 2a, alignment ended no later. "
        f"The band [{ALIGNED_MIN}, 1] is one-sided because 'all' is the extreme and Theorem 1 "
        f"exempts the neurons that fail Condition 1 (Remark 1: 'a (small) fraction of neurons').",
        {**other, "critical directions": {"kinds": M.critical.kinds.tolist(),
                                          "directions": np.round(M.critical.directions, 5).tolist()}},
        source=qualitative(FIG2_CD))


def loss_claim(ds: xr.Dataset, M: RunMeasures) -> Claim:
    """Rule: |final loss - OLS loss| <= LOSS_ATOL, the OLS loss computed from the saved data."""
    final = float(ds["loss"].isel(run=0).values[-1])
    band = (M.fit.loss - LOSS_ATOL, M.fit.loss + LOSS_ATOL)
    return Claim(
        "ols_loss", "The final loss equals the OLS loss (the spurious stationary point of "
        "Theorem 2), not 0", round(M.fit.loss, 9), round(final, 9),
        band_verdict((final, final), band), (final, final),
        f"OLS loss (1/n) sum (<beta*, x~_k> - y_k)^2 = {M.fit.loss:.9f} (beta* = slope "
        f"{M.fit.slope:.7f}, intercept {M.fit.intercept:.7f}), derived, not printed by the paper. "
        f"Rule: final loss within {LOSS_ATOL:g} of it (3e-6 relative; an interpolating network, "
        f"the other candidate limit, has loss 0). {THEOREM2}.",
        source=derived(f"{OLS_HOW}: the mean squared residual of the OLS line"))


def outputs_claim(ds: xr.Dataset, M: RunMeasures) -> Claim:
    """Rule: max_k |h(x_k) - <beta*, x~_k>| <= OUTPUT_ATOL at the last record."""
    out = ds["output"].isel(run=0).values[-1]
    dev = float(np.max(np.abs(out - M.fit.fitted)))
    return Claim(
        "ols_outputs", "The final outputs on the data equal the OLS fitted values (positive part "
        "of the OLS line, Theorem 2)", np.round(M.fit.fitted, 6).tolist(),
        np.round(out, 6).tolist(),
        band_verdict((dev, dev), (0.0, OUTPUT_ATOL)), None,
        f"max |h(x_k) - <beta*, x~_k>| = {dev:.3g}. Rule: <= {OUTPUT_ATOL} (labels are O(1)). The "
        f"OLS values are all positive (min {M.fit.fitted.min():.4f}), so one ReLU direction can "
        f"carry them. {THEOREM2}.",
        source=derived(f"{OLS_HOW}: the fitted values <beta*, x~_k>"))


def all_or_none_claim(ds: xr.Dataset) -> Claim:
    """Rule: every final neuron is active on all n points or on none."""
    X, _ = data_of(ds)
    a, W = ds["a"].isel(run=0).values[-1], ds["W"].isel(run=0).values[-1]
    n, cnt = X.shape[0], active_counts(W, X)
    partial = (cnt > 0) & (cnt < n)
    mass = np.abs(a) * np.linalg.norm(W, axis=1)
    share = float(mass[partial].sum() / mass.sum()) if mass.sum() > 0 else math.nan

    def counts(sel: np.ndarray) -> dict[str, int]:
        return {"all points": int(np.sum(sel & (cnt == n))), "no point": int(np.sum(sel & (cnt == 0))),
                "some points": int(np.sum(sel & partial))}

    return Claim(
        "all_or_none", "At convergence every neuron (positive or negative) is active on all data "
        "points or on none (Fig. 2(h), Theorem 4)", {"some points": 0},
        {"positive": counts(a > 0), "negative": counts(a < 0)},
        "reproduced" if not partial.any() else "not reproduced", None,
        f"Activity <w_j, x~_k> > 0 at the last record. Neurons active on some points only: "
        f"{int(partial.sum())} of {len(a)}, carrying a share {share:.3g} of sum |a_j| ||w_j||. "
        f"Rule: none.",
        source=qualitative("Section 6: \"In Figure 2(h), all the neurons (including the negative "
                           "ones) are located in only two activation cones: either they are "
                           "activated with all the data points, or they are activated with no data "
                           "point\""))


def direction_claim(ds: xr.Dataset, M: RunMeasures, P: Fig2Params) -> Claim:
    """Rule: the final direction of the live positive neurons (mass-weighted) is more than delta
    away from their direction at the end of Phase 2a. Variant: the same angle from the end of
    the alignment phase."""
    X, _ = data_of(ds)
    one = ds.isel(run=0)
    maxima = M.critical.directions[M.critical.kinds == "max"]
    theory = angle_deg(maxima[0], M.fit.beta) if len(maxima) == 1 else math.nan
    limit = math.degrees(P.delta)

    def angle_from(phase: str) -> float:
        k = M.index(phase)
        ref = np.sum(one["a"].values[k, :, None] * one["W"].values[k]
                     * (one["a"].values[k, :, None] > 0), axis=0)
        return direction_angle(one["a"].values[-1], one["W"].values[-1], X, ref)

    angle = angle_from("phase2a")
    verdict = ("inconclusive" if not math.isfinite(angle)
               else "reproduced" if angle > limit else "not reproduced")
    early = angle_from("alignment")
    return Claim(
        "direction_change", "The final direction of the positive neurons differs from their "
        "direction at the end of the early alignment (Fig. 2(d) vs 2(h))",
        "differs (angle not given)", round(angle, 3), verdict, None,
        f"Angle (degrees) between sum a_j w_j over the live positive neurons at the end of Phase "
        f"2a and at the last record. Theory (Theorem 4: sum a_j w_j = beta* at the limit; aligned "
        f"direction = the extremal vector): angle(D*, beta*) = {theory:.3f} degrees. Rule: angle "
        f"> delta = {limit:.3f} degrees (the alignment tolerance: a smaller turn cannot be told "
        f"from the spread of the aligned neurons).",
        {"angle from the end of the alignment phase (degrees)":
         round(early, 3) if math.isfinite(early) else early},
        source=qualitative("Section 6: \"the final direction of the positive neurons changed from "
                           "their direction at the end of the early alignment (see difference "
                           "between Figures 2(d) and 2(h))\""))


def judge(ds: xr.Dataset, P: Fig2Params) -> list[Claim]:
    """The five claims of bf-fig2 on the saved run."""
    M = run_measures(ds, 0, P.delta)
    return [alignment_claim(ds, M, P), loss_claim(ds, M), outputs_claim(ds, M),
            all_or_none_claim(ds), direction_claim(ds, M, P)]


# ------------------------------------------------------------------------------------ draw
def draw(ds: xr.Dataset, P: Fig2Params) -> list[Figure]:
    """The snapshot pairs at the phase ends (with the animation) and the phase curves."""
    import matplotlib.pyplot as plt

    M = run_measures(ds, 0, P.delta)
    idx = [0] + [M.index(p) for p in PHASES] + [len(M.t) - 1]
    titles = ([TITLES["init"]] + [f"{TITLES[p]} (t = {M.t[M.index(p)]:.3g})" for p in PHASES]
              + [f"(g, h) last record (t = {M.t[-1]:.3g})"])
    beta = M.fit.beta

    def ols_line(x: np.ndarray) -> np.ndarray:
        return theorem2_limit(np.column_stack([x, np.ones_like(x)]), beta)

    snaps = snapshot_panels(ds, idx, titles, reference=ols_line,
                            reference_label="positive part of OLS",
                            suptitle=f"BF Fig. 2: 3 points, balanced, m = {P.m}, lambda = "
                                     f"{lambda_label(P.log10_lambda)}, GD lr = {P.lr:g}")
    animation = movie(ds, "fig2_animation.gif", P.frames, reference=ols_line,
                           reference_label="positive part of OLS")
    t = M.t
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(15, 4))
    loss = ds["loss"].isel(run=0).values
    ax1.loglog(t[1:], loss[1:] - M.fit.loss + 1e-16, color="C0", lw=1.4)
    ax1.set_ylabel("L(t) - L_OLS")
    ax1.set_title("excess loss over the OLS loss")
    ax2.semilogx(t[1:], M.align["frac_pos_live"].values[1:], color="C4", lw=1.4,
                 label="live positive neurons aligned")
    ax2.semilogx(t[1:], M.align["frac_neg_live"].values[1:], color="C3", lw=1.2,
                 label="live negative neurons aligned (to a min of G)")
    ax2.set_ylim(-0.02, 1.02)
    ax2.set_title(f"aligned fraction (delta = {P.delta} rad)")
    ax2.legend(fontsize=7)
    ax3.loglog(t[1:], M.align["positive_mass"].values[1:], color="C4", label="positive")
    ax3.loglog(t[1:], M.align["negative_mass"].values[1:], color="C3", label="negative")
    ax3.set_title("mass sum |a_j| ||w_j||")
    ax3.legend(fontsize=7)
    for ax in (ax1, ax2, ax3):
        for p, ls in zip(PHASES, (":", "--", "-.", "-"), strict=True):
            if math.isfinite(M.phases[p]):
                ax.axvline(M.phases[p], color="0.4", ls=ls, lw=0.9, label=None)
        ax.set_xlabel("flow time t (lr x step)")
        ax.grid(alpha=0.3)
    fig.suptitle("Phase ends (vertical lines: alignment :, Phase 2a --, Phase 2 -., "
                 "convergence -)", fontsize=10)
    fig.tight_layout()
    return [Figure("fig2_snapshots", snaps,
                   "Network function (left, with the positive part of the OLS line) and neurons in "
                   "polar coordinates (right: angle of (w_j, b_j), shifted-log radius; purple a_j > 0, "
                   "red a_j < 0; crosses: data directions; dotted: cone boundaries) at the "
                   "initialisation, at the detected phase ends (docs/math.md §8.11) and at the last "
                   "record (the paper's (g, h), at convergence). The "
                   "animation of the whole run is fig2_animation.gif in this folder.", movie=animation),
            Figure("fig2_phases", fig,
                   "Excess loss over the OLS loss, fraction of live neurons within delta of their "
                   "critical direction of G, and the masses of the positive and negative neurons "
                   "against flow time, with the detected phase ends.")]


# ---------------------------------------------------------------------------------- method
def method(ds: xr.Dataset, P: Fig2Params) -> list[Section]:
    """Sections "Method", "Phase ends" and "Run time"."""
    M = run_measures(ds, 0, P.delta)
    X, y = data_of(ds)
    steps = int(ds["end_step"].values[0])
    rows = ["| phase end | flow time | GD step | record used |", "|---|---|---|---|"]
    for p in PHASES:
        k = M.index(p)
        rows.append(f"| {p} | {M.phases[p]:.5g} | {M.phases[p] / P.lr:,.0f} | t = {M.t[k]:.5g} |")
    return [("Method", (
        f"3-point data x = {np.round(X[:, 0], 4).tolist()} with a hidden bias, "
        f"y = {np.round(y, 4).tolist()}; m = {P.m}, balanced initialisation (Gaussian "
        f"w~, a = +-||w~||) at lambda = {lambda_label(P.log10_lambda)} times 1/sqrt(m), seed "
        f"{P.seed}; GD lr = {P.lr:g} on (1/n) sum (h - y)^2 (no 1/2), float64, {steps:,} steps "
        f"(stop reason: {ds['stop_reason'].values[0]}), {ds.sizes['time']} geometric records. "
        f"Paper: m = 20 000, up to 2 million steps, float32.")),
        ("Phase ends", "\n".join(rows)),
        run_time(ds)]


REPRODUCTION = Reproduction(
    "bf-fig2", "early alignment and convergence to the OLS stationary point on 3 points",
    "Boursier, Flammarion (002), Figure 2", params=Fig2Params, presets=PRESETS,
    simulate=simulate, judge=judge, draw=draw, method=method, summary=SUMMARY)
