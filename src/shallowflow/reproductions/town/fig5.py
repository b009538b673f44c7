"""town-fig5: squared parameter norm of the learned interpolator against n (slope about 1/2).

Paper (003 App. A.2, Figure 5; docs/math.md §3.5, §3.7): X = I_n, labels y ~ N(0, 1), a network of
width m "sufficient to interpolate" with balanced initialisation (random directions, hidden norms
and |a_j| equal to lambda/sqrt(m), random output signs), full-batch GD with learning rate 0.5 on
PyTorch's MSE (1/n) sum r^2, at most 10^6 epochs with an early stop on a loss threshold, three
random initialisations per n. The squared norm sum_j a_j^2 + ||w_j||^2 of the final network is
plotted against n on log-log axes together with the minimum-norm value
||theta*||^2 = 2 (||y_+|| + ||y_-||) (eq.15): both lines have slope about 1/2, so the learned norm
is within a constant factor of the optimum (Theorem 3).

Illegible in the paper and chosen here (documented in the report): lambda, the width rule, the
range of n and the loss threshold. The width is m = ceil(log(n/delta) / log(4/3)) (the smallest m
for which Proposition 2's row term n (3/4)^m is at most delta, docs/math.md §3.5). Runs that do
not reach the loss threshold within the epoch budget are flagged and left out of every fit. The
Algorithm 1 prediction ||theta_inf||^2 (the lambda -> 0 limit, docs/math.md §3.4) is computed for
the same initial directions and signs, and a second, smaller lambda shows the approach to it.

Saved Dataset (``results.nc``): dims ``n, lam, run`` for the run summaries, the final weights
``a_final`` (n, lam, run, neuron) and ``W_final`` (n, lam, run, neuron, dim) and the labels ``y``
(n, sample), NaN-padded to the largest width and n (``width`` (n) gives each n's width).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr
from pydantic import Field

from shallowflow.analysis.fits import loglog_slope, nan_band, slope_interval
from shallowflow.config import Experiment
from shallowflow.plots.labels import lambda_label
from shallowflow.reproductions.base import Figure, Params, Reproduction, Section
from shallowflow.reproductions.claims import Claim, band_verdict
from shallowflow.reproductions.fields import LearningRate, NegativeLog10, Runs, Seed, StopLoss
from shallowflow.reproductions.town import tblel_sources as sources
from shallowflow.reproductions.town.interpolation import (
    balanced_init,
    interpolation_experiment,
    limit_norms,
    limit_summary,
    median_slope,
    padded,
    prop2_width,
    run_groups,
    run_summary,
)
from shallowflow.theory.interpolator_norms import min_norm_sq
from shallowflow.training.entry import Trainer


class Fig5Params(Params):
    """Parameters of town-fig5."""

    n_values: list[int] = Field(min_length=1, description="numbers of points n (X = I_n)")
    runs: Runs = Field(description="random initialisations per n and lambda")
    log10_lambdas: list[NegativeLog10] = Field(
        min_length=1, description="decimal logs of the initial scale; the first is the main one")
    width: int = Field(ge=0, description="network width; 0: Proposition 2's rule per n")
    width_delta: float = Field(gt=0, lt=1, description="delta of the width rule "
                                                       "m = ceil(log(n/delta)/log(4/3))")
    lr: LearningRate = Field(description="GD learning rate on the MSE (1/n) sum r^2")
    max_epochs: int = Field(ge=1, description="epoch budget of every run")
    stop_loss: StopLoss
    seed: Seed = Field(description="base seed (run seed seed + n, data seed 10000 + seed + n)")


PRESETS = {
    "quick": {"n_values": [8, 16, 32, 64, 128, 256], "runs": 3, "log10_lambdas": [-12, -60],
              "width": 0, "width_delta": 0.01, "lr": 0.5, "max_epochs": 1000000,
              "stop_loss": 1.0e-6, "seed": 0},
    "paper": {"n_values": [8, 16, 32, 64, 128, 256, 512, 1024], "runs": 3,
              "log10_lambdas": [-12, -60], "width": 0, "width_delta": 0.01, "lr": 0.5,
              "max_epochs": 1000000, "stop_loss": 1.0e-6, "seed": 0},
}
PAPER_SLOPE = 0.5
SLOPE_TOL = 0.05  # "slope about 1/2": the band 0.5 +- 0.05 (fixed before running)
SLOPE_MAX_WIDTH = 0.3  # a slope interval wider than this cannot decide
MIN_NS = 3  # values of n with interpolating runs needed for a slope
RATIO_SLOPE_MAX = 0.1  # a ratio growing slower than n^0.1 over the range counts as bounded
INTERPOLATION_PARTLY = 0.8  # fraction of interpolating runs for "partly"
LIMIT_SHARE = 0.8  # share of initialisations closer to the limit at the smaller lambda
PAPER_WALL_S = (116.0, 166.0)  # measured twice: paper preset, 2 CPU cores (report section "Cost")
SUMMARY = (
    "Squared parameter norm of the interpolator found by gradient descent from a small "
    "balanced initialisation on orthonormal data, against the number of points n, compared "
    "with the minimum-norm interpolator and the Algorithm 1 limit (Figure 5 of Town et al.).")


# -------------------------------------------------------------------------------- simulate
def fig5_experiment(n: int, m: int, log10_lambda: float, P: Fig5Params) -> Experiment:
    """The runs at one n and lambda (one label draw per n, shared by every lambda)."""
    return interpolation_experiment(
        f"town-fig5-n{n}", seed=P.seed + n, runs=P.runs, n=n, width=m,
        data_seed=10_000 + P.seed + n, init=balanced_init(log10_lambda), lr=P.lr,
        steps=P.max_epochs, stop_loss=P.stop_loss)


def simulate(P: Fig5Params, train: Trainer) -> xr.Dataset:
    """Every (n, lambda) trained in batches of equal signature; summaries, final weights and
    labels of every n in one NaN-padded Dataset, with Algorithm 1's limit per initialisation."""
    ns = sorted(P.n_values)
    lams = [float(v) for v in P.log10_lambdas]
    widths = [P.width if P.width > 0 else prop2_width(n, P.width_delta) for n in ns]
    exps = [[fig5_experiment(n, m, lam, P) for lam in lams]
            for n, m in zip(ns, widths, strict=True)]
    trained = iter(train([e for row in exps for e in row], label="town-fig5", keep_data=True))
    rows = [[next(trained) for _ in lams] for _ in ns]  # (n, lam) Datasets of `runs` runs
    summ = [[run_summary(ds, P.stop_loss) for ds in row] for row in rows]
    limits = [limit_summary(row_exps[0], row[0]) for row_exps, row in zip(exps, rows, strict=True)]

    def grid(key: str) -> np.ndarray:  # (n, lam, run)
        return np.array([[s[key] for s in row] for row in summ])

    run3, run2 = ("n", "lam", "run"), ("n", "run")
    data = {k: (run3, grid(k)) for k in ("sq_norm", "interpolated", "diverged", "final_loss",
                                          "epochs")}
    data |= {k: (run2, np.array([lim[k] for lim in limits]))
             for k in ("limit_sq_norm", "limit_unfitted", "assumption4_ok")}
    data |= {
        "min_norm_sq": ("n", [min_norm_sq(row[0].y.values) for row in rows]),
        "width": ("n", widths),
        "y": (("n", "sample"), padded([row[0].y.values for row in rows])),
        "a_final": ((*run3, "neuron"),
                    padded([np.stack([ds.a_final.values for ds in row]) for row in rows])),
        "W_final": ((*run3, "neuron", "dim"),
                    padded([np.stack([ds.W_final.values for ds in row]) for row in rows])),
    }
    return xr.Dataset(
        data, coords={"n": ns, "lam": lams, "run": np.arange(P.runs)},
        attrs={"lr": P.lr, "loss": "mse (1/n) sum r^2", "stop_loss": P.stop_loss,
               "max_epochs": P.max_epochs,
               "lam_meaning": "log10 lambda; hidden norms and |a_j| are lambda/sqrt(m)",
               "padding": "a_final, W_final, y: NaN beyond each n's width and n"})


# ----------------------------------------------------------------------------------- judge
def kept_norms(ds: xr.Dataset) -> np.ndarray:
    """Squared norms (n, lam, run) of the interpolating runs, NaN for the others."""
    return np.where(ds.interpolated.values, ds.sq_norm.values, np.nan)


def slope_verdict(usable: int, interval: tuple[float, float]) -> str:
    """The band rule (:func:`band_verdict`) for the slope, band PAPER_SLOPE +- SLOPE_TOL, at
    most SLOPE_MAX_WIDTH wide; inconclusive with fewer than MIN_NS values of n."""
    if usable < MIN_NS:
        return "inconclusive"
    return band_verdict(interval, (PAPER_SLOPE - SLOPE_TOL, PAPER_SLOPE + SLOPE_TOL),
                        SLOPE_MAX_WIDTH)


def norm_slope_claim(ds: xr.Dataset, P: Fig5Params) -> Claim:
    """Log-log slope of the mean squared norm against n at the main lambda."""
    ns, lams, kept = [int(n) for n in ds.n.values], ds.lam.values.tolist(), kept_norms(ds)
    groups = run_groups(ns, kept[:, 0])
    slope, interval, parts = slope_interval(groups, P.seed)
    verdict = slope_verdict(sum(1 for v in groups.values() if v), interval)
    lim_mean, _, _ = nan_band(limit_norms(ds))
    lim_slope = loglog_slope(ns, lim_mean) if np.all(np.isfinite(lim_mean)) else float("nan")
    variants: dict[str, Any] = {
        "minimum-norm slope": round(loglog_slope(ns, ds.min_norm_sq.values), 3),
        "Algorithm 1 limit slope": round(lim_slope, 3),
        "bootstrap interval (runs)": [round(v, 3) for v in parts["bootstrap"]],
        "least-squares interval": [round(v, 3) for v in parts["least squares"]],
        "slope of the median over runs (least squares)": median_slope(groups)}
    for li, lam in enumerate(lams[1:], start=1):
        s, iv, _ = slope_interval(run_groups(ns, kept[:, li]), P.seed)
        variants[f"GD slope at lambda = {lambda_label(lam)}"] = [round(s, 3)] + [round(v, 3)
                                                                               for v in iv]
    return Claim(
        "norm_slope", "The squared norm of the learned interpolator grows like sqrt(n): "
        "log-log slope about 1/2", PAPER_SLOPE, round(slope, 3), verdict,
        (round(interval[0], 3), round(interval[1], 3)),
        f"Slope of log(mean squared norm) on log n at lambda = {lambda_label(lams[0])} over n = "
        f"{ns[0]}..{ns[-1]}, interpolating runs only. Interval: hull of the 95% run bootstrap "
        f"and the 95% least-squares interval. Rule (fixed before running): reproduced if the "
        f"interval meets the band {PAPER_SLOPE} +- {SLOPE_TOL} ('about 1/2'), not reproduced if "
        f"disjoint, inconclusive with fewer than {MIN_NS} values of n or an interval wider than "
        f"{SLOPE_MAX_WIDTH}.",
        variants, source=sources.NORM_SLOPE)


def ratio_verdict(ratio: np.ndarray, interval: tuple[float, float]) -> str:
    """Reproduced if the ratio's log-log slope interval lies below RATIO_SLOPE_MAX and every
    finite mean ratio is >= 1; not reproduced if it lies at or above RATIO_SLOPE_MAX."""
    finite = np.isfinite(ratio)
    if not finite.any() or not np.all(np.isfinite(interval)):
        return "inconclusive"
    if interval[1] < RATIO_SLOPE_MAX and np.all(ratio[finite] >= 1 - 1e-6):
        return "reproduced"
    if interval[0] >= RATIO_SLOPE_MAX:
        return "not reproduced"
    return "inconclusive"


def constant_factor_claim(ds: xr.Dataset, P: Fig5Params) -> Claim:
    """Learned / minimum-norm ratio against n at the main lambda: its log-log slope."""
    ns, kept, mn = [int(n) for n in ds.n.values], kept_norms(ds), ds.min_norm_sq.values
    groups = run_groups(ns, kept[:, 0])
    ratio = np.array([np.mean(v) if v else np.nan for v in groups.values()]) / mn
    rgroups = run_groups(ns, kept[:, 0] / mn[:, None])
    rslope, rint, _ = slope_interval(rgroups, P.seed)
    upper = {k: v for k, v in rgroups.items() if k >= np.median(ns)}
    upper_slope, upper_iv, _ = slope_interval(upper, P.seed)
    lim_ratio = nan_band(limit_norms(ds))[0] / mn
    return Claim(
        "constant_factor", "The learned squared norm is only a constant factor above the "
        "minimum-norm value ||theta*||^2 = 2(||y+|| + ||y-||) (Theorem 3)",
        "ratio bounded in n", round(float(np.nanmax(ratio)), 3), ratio_verdict(ratio, rint),
        (round(rint[0], 3), round(rint[1], 3)),
        f"Measured: the largest mean ratio learned/minimum over n (lambda = "
        f"{lambda_label(float(ds.lam[0]))}); interval: 95% interval of the log-log slope of the "
        f"ratio against n (slope {rslope:.3f}). Rule: reproduced if the slope's upper end is "
        f"below {RATIO_SLOPE_MAX} (the ratio grows more slowly than n^{RATIO_SLOPE_MAX} over the "
        f"range; a finite range cannot prove boundedness) and every ratio is >= 1; not reproduced "
        f"if the lower end is >= {RATIO_SLOPE_MAX}.",
        {"ratio per n": {n: round(float(r), 3) for n, r in zip(ns, ratio, strict=True)},
         "ratio slope over the upper half of n (not used by the rule)": [
             round(upper_slope, 3)] + [round(v, 3) for v in upper_iv],
         "Algorithm 1 ratio per n": {n: round(float(r), 3)
                                     for n, r in zip(ns, lim_ratio, strict=True)}},
        source=sources.CONSTANT_FACTOR)


def interpolation_verdict(ok: np.ndarray) -> str:
    """Reproduced if every run interpolates, partly if at least INTERPOLATION_PARTLY do."""
    if np.all(ok):
        return "reproduced"
    return "partly" if ok.mean() >= INTERPOLATION_PARTLY else "not reproduced"


def interpolation_claim(ds: xr.Dataset, P: Fig5Params) -> Claim:
    """Fraction of the main-lambda runs that reach the loss threshold."""
    ns, ok = [int(n) for n in ds.n.values], ds.interpolated.values
    zero_rows = ds.limit_unfitted.values > 0
    failed = ~ok[:, 0]
    explained = int(np.sum(failed & zero_rows))
    return Claim(
        "interpolation", f"With m of order log n (here m = ceil(log(n/{P.width_delta})/"
        "log(4/3))) a typical run interpolates", 1.0, round(float(ok[:, 0].mean()), 3),
        interpolation_verdict(ok[:, 0]), None,
        f"Fraction of runs (lambda = {lambda_label(float(ds.lam[0]))}) reaching loss < "
        f"{P.stop_loss:g} within {P.max_epochs} epochs. {int(failed.sum())} run(s) failed, "
        f"{explained} of them have a point with no correctly signed active neuron at "
        f"initialisation (a zero row of the mask, which no training can fit; "
        f"{int(np.sum(zero_rows))} such runs in all). Rule: reproduced if all runs interpolate, "
        f"partly if at least {INTERPOLATION_PARTLY:.0%} do.",
        {"fraction per n": {n: round(float(f), 3)
                            for n, f in zip(ns, ok[:, 0].mean(axis=1), strict=True)},
         "width per n": {n: int(w) for n, w in zip(ns, ds.width.values, strict=True)},
         "max epochs used (interpolating runs)": int(np.max(np.where(ok, ds.epochs.values,
                                                                     0)))},
        source=sources.INTERPOLATION)


def share_verdict(closer: np.ndarray) -> str:
    """Reproduced if at least LIMIT_SHARE of the initialisations are closer to the limit at the
    smaller lambda; inconclusive with none to compare."""
    if not closer.size:
        return "inconclusive"
    return "reproduced" if float(closer.mean()) >= LIMIT_SHARE else "not reproduced"


def limit_approach_claim(ds: xr.Dataset) -> Claim:
    """Relative gap to Algorithm 1's squared norm at the smallest vs the main lambda."""
    lams, ok = ds.lam.values.tolist(), ds.interpolated.values
    sq, lim = ds.sq_norm.values, ds.limit_sq_norm.values
    small = int(np.argmin(lams))
    gaps = np.abs(sq - lim[:, None, :]) / lim[:, None, :]
    both = ok[:, 0] & ok[:, small] & ~(ds.limit_unfitted.values > 0)
    closer = gaps[:, small][both] < gaps[:, 0][both]
    share = float(closer.mean()) if closer.size else float("nan")
    return Claim(
        "limit_approach", "As lambda -> 0 the final network approaches the Algorithm 1 "
        "interpolator (Theorem 2): its squared norm moves towards ||theta_inf||^2",
        "gap decreases as lambda decreases", round(share, 3), share_verdict(closer), None,
        f"Share of initialisations whose relative gap |GD - limit|/limit is smaller at lambda "
        f"= {lambda_label(lams[small])} than at {lambda_label(lams[0])} (same directions and "
        f"signs). Rule: reproduced if at least {LIMIT_SHARE:.0%}. Convergence is slow, "
        f"O(1/log(1/lambda)).",
        {f"median gap at lambda = {lambda_label(lam)}": round(float(np.median(gaps[:, li][both])),
                                                              4) if both.any() else None
         for li, lam in enumerate(lams)},
        source=sources.LIMIT_APPROACH)


def judge(ds: xr.Dataset, P: Fig5Params) -> list[Claim]:
    """The four claims; limit_approach only with at least two lambdas."""
    claims = [norm_slope_claim(ds, P), constant_factor_claim(ds, P), interpolation_claim(ds, P)]
    if ds.sizes["lam"] >= 2:
        claims.append(limit_approach_claim(ds))
    return claims


# ------------------------------------------------------------------------------------ draw
def draw(ds: xr.Dataset, P: Fig5Params) -> list[Figure]:
    """Squared norm against n (left) and its ratio to the minimum norm (right)."""
    import matplotlib.pyplot as plt
    import matplotlib.ticker as ticker

    ns, lams, widths = [int(n) for n in ds.n.values], ds.lam.values.tolist(), ds.width.values
    sq, ok, kept = ds.sq_norm.values, ds.interpolated.values, kept_norms(ds)
    mn = ds.min_norm_sq.values
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8))
    colors = ["C0", "C1", "C4", "C5"]
    for li, lam in enumerate(lams):
        mean, lo, hi = nan_band(kept[:, li])
        c, ls, tex = colors[li % len(colors)], "-" if li == 0 else "--", lambda_label(lam, True)
        ax1.plot(ns, mean, "o" + ls, color=c, ms=4, label=f"GD, {tex} (mean, min/max band)")
        ax1.fill_between(ns, lo, hi, color=c, alpha=0.2)
        ax2.plot(ns, mean / mn, "o" + ls, color=c, ms=4, label=f"GD, {tex}")
        ax2.fill_between(ns, lo / mn, hi / mn, color=c, alpha=0.2)
        bad_n, bad_r = np.nonzero(~ok[:, li])
        if len(bad_n):
            ax1.plot(np.array(ns)[bad_n], sq[bad_n, li, bad_r], "x", color=c, ms=8,
                     label=f"no interpolation, {tex} (excluded)")
    lim_mean, lim_lo, lim_hi = nan_band(limit_norms(ds))
    ax1.plot(ns, lim_mean, "s:", color="C2", ms=4,
             label=r"Algorithm 1 limit $\|\theta_\infty\|^2$ (same initialisations)")
    ax1.fill_between(ns, lim_lo, lim_hi, color="C2", alpha=0.15)
    ax1.plot(ns, mn, "k^-", ms=4, label=r"minimum norm $\|\theta^*\|^2 = 2(\|y_+\| + \|y_-\|)$")
    guide = mn[0] * (np.asarray(ns) / ns[0]) ** 0.5 * 0.6
    ax1.plot(ns, guide, color="grey", lw=0.8, ls="-.", label="slope 1/2 guide")
    ax1.set_xscale("log", base=2)
    ax1.set_yscale("log")
    ax1.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax1.yaxis.set_minor_formatter(ticker.FormatStrFormatter("%g"))
    ax1.set_xlabel("number of points n")
    ax1.set_ylabel(r"squared parameter norm $\Sigma_j\, a_j^2 + \|w_j\|^2$")
    ax1.legend(fontsize=7, loc="upper left")
    ax2.plot(ns, lim_mean / mn, "s:", color="C2", ms=4, label="Algorithm 1 limit")
    ax2.fill_between(ns, lim_lo / mn, lim_hi / mn, color="C2", alpha=0.15)
    ax2.axhline(1.0, color="k", lw=0.8)
    ax2.set_xscale("log", base=2)
    ax2.set_xlabel("number of points n")
    ax2.set_ylabel(r"squared norm / $\|\theta^*\|^2$")
    ax2.legend(fontsize=7)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3, which="both")
    fig.suptitle(f"TBLEL Fig. 5: X = I_n, y ~ N(0,1), m = {widths[0]}..{widths[-1]} "
                 f"(Prop. 2 rule), GD lr {P.lr} on MSE, {P.runs} initialisations per n",
                 fontsize=10)
    return [Figure(
        "fig5_norm_vs_n", fig,
        "Left: squared parameter norm of the final network against n (log-log), mean over "
        "the runs that reached the loss threshold with min/max band, the minimum-norm "
        "value (black) and the lambda -> 0 prediction of Algorithm 1 for the same "
        "initialisations (green). Crosses: runs that did not reach the threshold (excluded). "
        "Right: the same divided by the minimum-norm value.")]


# ---------------------------------------------------------------------------------- method
def method(ds: xr.Dataset, P: Fig5Params) -> list[Section]:
    """Sections "Method" and "Cost"."""
    ns, widths = [int(n) for n in ds.n.values], [int(w) for w in ds.width.values]
    lams = ", ".join(lambda_label(v) for v in ds.lam.values.tolist())
    return [("Method", (
        f"Data: x_i = e_i (X = I_n), y_i ~ N(0, 1), one label draw per n shared by the "
        f"{P.runs} initialisations (the paper repeats with new initial weights). Width m = "
        f"ceil(log(n/delta)/log(4/3)) with delta = {P.width_delta} (Proposition 2's row "
        f"term; the paper's formula for m is illegible): m = "
        f"{', '.join(f'{w} (n={n})' for n, w in zip(ns, widths, strict=True))}. Initialisation: "
        f"balanced, hidden directions uniform on the sphere, ||w_j|| = |a_j| = lambda/sqrt(m), "
        f"random signs; lambda = {lams} (illegible in the paper; the first is the main one, the "
        f"others share the directions and signs). Training: full-batch GD, lr {P.lr} on "
        f"L = (1/n) sum r_i^2 (PyTorch MSE; lr 0.5 here equals lr 1 with the 1/(2n) "
        f"convention), float64, early stop at L < {P.stop_loss:g} (the paper's threshold is "
        f"illegible), at most {P.max_epochs} epochs. Squared norm: sum_j a_j^2 + ||w_j||^2 of "
        f"the final network. Limit: Algorithm 1 (theory.saddle_process) on the same initial "
        f"directions and signs. n = {ns[0]}..{ns[-1]} (the paper's range is not legible).")),
        ("Cost", (
            f"The paper preset (n = 8..1024, 3 runs x {len(PRESETS['paper']['log10_lambdas'])} "
            f"lambdas) took {PAPER_WALL_S[0]:.0f} s and {PAPER_WALL_S[1]:.0f} s in two "
            f"measurements on 2 shared CPU cores (JAX float64, compilation included); the "
            f"largest n dominates."))]


REPRODUCTION = Reproduction(
    "town-fig5", "squared norm of the learned interpolator against n",
    "Town, Boursier, Lewis, Englert, Lazic (003), Figure 5", params=Fig5Params, presets=PRESETS,
    simulate=simulate, judge=judge, draw=draw, method=method, summary=SUMMARY)
