"""town-fig6: squared norm of the trained network against the width m, small vs He initialisation.

Paper (003 App. A.2, Figure 6; docs/math.md §3.7): n = 32 orthonormal points (X = I),
y ~ N(0, 1), the width m varied, two initialisations:

1. balanced small (as in Figure 5: random directions, ||w_j|| = |a_j| = lambda/sqrt(m), random
   output signs), GD learning rate 1;
2. PyTorch's default He-uniform (hidden entries U(-1/sqrt(d), 1/sqrt(d)) with d = 32, output
   entries U(-1/sqrt(m), 1/sqrt(m))), GD learning rate 0.001;

both on PyTorch's MSE (1/n) sum r^2, at most 10^6 epochs with an early stop on a loss threshold,
three runs per width. Claim: with the small initialisation the squared norm of the trained network
approaches the minimum-norm value ||theta*||^2 = 2(||y_+|| + ||y_-||) as m grows; with He-uniform
it keeps increasing.

Here the squared norm of each run is divided by ||theta*||^2 of the (single, shared) label draw.
Runs that do not reach the loss threshold are flagged and left out of the fits. The Algorithm 1
ratio (lambda -> 0 limit) is overlaid for the simulated initialisations and, on a wider range of
widths, averaged over independent random balanced initialisations.

Saved Dataset (``results.nc``): dims ``width, scheme, run`` for the run summaries, the initial
and final weights ``a_*`` (width, scheme, run, neuron) and ``W_*`` (width, scheme, run, neuron,
dim), NaN-padded to the largest width, the labels ``y`` (sample), and the Algorithm 1 ratios of
random initialisations ``theory_ratio`` (theory_width, draw).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr
from pydantic import Field

from shallowflow.analysis.fits import nan_band, slope_interval
from shallowflow.config import Experiment
from shallowflow.plots.labels import lambda_label
from shallowflow.reproductions.base import Figure, Params, Reproduction, Section
from shallowflow.reproductions.claims import Claim, Source
from shallowflow.reproductions.fields import Log10Lambda, Runs, Seed, StopLoss
from shallowflow.reproductions.town import tblel_sources as sources
from shallowflow.reproductions.town.interpolation import (
    balanced_init,
    interpolation_experiment,
    limit_norms,
    limit_summary,
    median_slope,
    padded,
    rounded_per,
    run_groups,
    run_summary,
)
from shallowflow.theory.interpolator_norms import min_norm_sq, norm_ratio
from shallowflow.theory.saddle_process import limit_process, loss_constant
from shallowflow.training.entry import Trainer


class Fig6Params(Params):
    """Parameters of town-fig6."""

    n: int = Field(ge=2, description="number of points (X = I_n)")
    widths: list[int] = Field(min_length=1, description="network widths m")
    runs: Runs = Field(description="runs per width and initialisation")
    log10_lambda: Log10Lambda = Field(description="decimal log of the small initial scale lambda")
    lr_small: float = Field(gt=0, description="GD learning rate, small initialisation")
    lr_he: float = Field(gt=0, description="GD learning rate, He-uniform initialisation")
    max_epochs_small: int = Field(ge=1, description="epoch budget, small initialisation")
    max_epochs_he: int = Field(ge=1, description="epoch budget, He-uniform initialisation")
    stop_loss: StopLoss
    theory_max_log2_width: int = Field(ge=3, description="Algorithm 1 curve: widths 8..2^this")
    theory_draws: int = Field(ge=1, description="Algorithm 1 curve: random inits per width")
    seed: Seed = Field(description="base seed (runs, data 20000 + seed, theory seed + 99)")


PRESETS = {
    "quick": {"n": 32, "widths": [8, 32, 128, 512], "runs": 3, "log10_lambda": -12,
              "lr_small": 1.0, "lr_he": 0.001, "max_epochs_small": 1000000,
              "max_epochs_he": 200000, "stop_loss": 1.0e-6, "theory_max_log2_width": 12,
              "theory_draws": 30, "seed": 0},
    "paper": {"n": 32, "widths": [8, 16, 32, 64, 128, 256, 512], "runs": 3,
              "log10_lambda": -12, "lr_small": 1.0, "lr_he": 0.001,
              "max_epochs_small": 1000000, "max_epochs_he": 1000000, "stop_loss": 1.0e-6,
              "theory_max_log2_width": 14, "theory_draws": 50, "seed": 0},
}
SCHEMES = ("small", "he")
LABELS = {"small": "balanced small init, lr 1", "he": "He-uniform (PyTorch default), lr 0.001"}
MIN_WIDTHS = 3  # widths with interpolating runs needed for a trend
INTERPOLATE_PARTLY = 0.5  # fraction of interpolating runs for "partly" ("half" in the notes)
PAPER_WALL_S = 152.0  # measured: paper preset, 2 CPU cores (see the report's section "Cost")
SUMMARY = (
    "Squared parameter norm of the trained network, relative to the minimum-norm "
    "interpolator, against the width for a small balanced and the PyTorch default "
    "initialisation on 32 orthonormal points (Figure 6 of Town et al.).")


# -------------------------------------------------------------------------------- simulate
def fig6_experiment(scheme: str, m: int, P: Fig6Params) -> Experiment:
    """The runs of one initialisation scheme at width m (one label draw for all)."""
    if scheme == "small":
        init, lr, epochs = balanced_init(P.log10_lambda), P.lr_small, P.max_epochs_small
    else:
        init, lr, epochs = {"scheme": "pytorch"}, P.lr_he, P.max_epochs_he
    return interpolation_experiment(
        f"town-fig6-{scheme}-m{m}", seed=P.seed + 7 * m + (0 if scheme == "small" else 1),
        runs=P.runs, n=P.n, width=m, data_seed=20_000 + P.seed, init=init, lr=lr, steps=epochs,
        stop_loss=P.stop_loss)


def theory_widths(P: Fig6Params) -> list[int]:
    """Widths of the Algorithm 1 curve: 8, 16, ..., 2^theory_max_log2_width."""
    return [2**k for k in range(3, P.theory_max_log2_width + 1)]


def theory_ratios(y: np.ndarray, widths: list[int], draws: int, seed: int) -> np.ndarray:
    """(width, draw): Algorithm 1 ratio ||theta_inf||^2 / ||theta*||^2 (docs/math.md §3.5) for
    independent random balanced initialisations (signs +-1, directions uniform on the sphere;
    X = I), NaN where a point has no correctly signed active neuron (the limit then does not
    interpolate)."""
    n = y.shape[0]
    rng = np.random.default_rng(seed)
    c_L = loss_constant("mse", n)
    out = np.full((len(widths), draws), np.nan)
    for i, m in enumerate(widths):
        for k in range(draws):
            p = limit_process(None, y, rng.choice([-1.0, 1.0], m), rng.standard_normal((m, n)),
                              c_L)
            if len(p.unfitted) == 0:
                out[i, k] = norm_ratio(p)
    return out


def simulate(P: Fig6Params, train: Trainer) -> xr.Dataset:
    """Both schemes at every width, trained in batches of equal signature; summaries and weights
    in one NaN-padded Dataset, Algorithm 1 for the small initialisations and for random ones."""
    widths = sorted(P.widths)
    exps = [[fig6_experiment(s, m, P) for s in SCHEMES] for m in widths]
    trained = iter(train([e for row in exps for e in row], label="town-fig6", keep_data=True))
    rows = [[next(trained) for _ in SCHEMES] for _ in widths]  # (width, scheme)
    summ = [[run_summary(ds, P.stop_loss) for ds in row] for row in rows]
    limits = [limit_summary(row_exps[0], row[0]) for row_exps, row in zip(exps, rows, strict=True)]
    y = np.asarray(rows[0][0].y.values, float)  # one label draw for every width and run
    run3 = ("width", "scheme", "run")
    data = {k: (run3, np.array([[s[k] for s in row] for row in summ]))
            for k in ("sq_norm", "sq_norm_init", "interpolated", "diverged", "final_loss",
                      "epochs")}
    data |= {k: (("width", "run"), np.array([lim[k] for lim in limits]))
             for k in ("limit_sq_norm", "limit_unfitted")}
    for k in ("a_final", "a_init", "W_final", "W_init"):
        dims = (*run3, "neuron") if k[0] == "a" else (*run3, "neuron", "dim")
        data[k] = (dims, padded([np.stack([ds[k].values for ds in row]) for row in rows]))
    tw = theory_widths(P)
    data |= {"y": ("sample", y), "min_norm_sq": ((), min_norm_sq(y)),
             "theory_ratio": (("theory_width", "draw"),
                              theory_ratios(y, tw, P.theory_draws, P.seed + 99))}
    return xr.Dataset(
        data, coords={"width": widths, "scheme": list(SCHEMES), "run": np.arange(P.runs),
                      "theory_width": tw},
        attrs={"n": P.n, "log10_lambda": P.log10_lambda, "lr_small": P.lr_small,
               "lr_he": P.lr_he, "stop_loss": P.stop_loss, "loss": "mse (1/n) sum r^2",
               "theory_seed": P.seed + 99,
               "note": "a_init/W_init of 'small' are the lambda-scaled network; weights are "
                       "NaN beyond each width"})


# ----------------------------------------------------------------------------------- judge
def norm_ratios(ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """(width, scheme, run): squared norm / ||theta*||^2 of every run, and of the interpolating
    runs only (NaN for the others)."""
    ratio = ds.sq_norm.values / float(ds.min_norm_sq)
    return ratio, np.where(ds.interpolated.values, ratio, np.nan)


def trend_verdict(used: int, interval: tuple[float, float], sign: int) -> str:
    """sign -1: reproduced if the slope interval lies below 0, not reproduced if above; sign +1
    the reverse; inconclusive if it contains 0, is not finite, or with fewer than MIN_WIDTHS
    widths."""
    lo, hi = interval
    if used < MIN_WIDTHS or not np.all(np.isfinite(interval)):
        return "inconclusive"
    if (sign < 0 and hi < 0) or (sign > 0 and lo > 0):
        return "reproduced"
    if (sign < 0 and lo > 0) or (sign > 0 and hi < 0):
        return "not reproduced"
    return "inconclusive"


def trend_claim(cid: str, statement: str, paper: str, widths: list[int], ratios: np.ndarray,
                sign: int, seed: int, extra: str, variants: dict[str, Any],
                source: Source) -> Claim:
    """Log-log slope of the ratio (width, run) against m over widths with interpolating runs,
    judged by :func:`trend_verdict` on the run bootstrap interval; ``source`` quotes the
    paper."""
    groups = run_groups(widths, ratios)
    slope, hull, parts = slope_interval(groups, seed)
    iv = parts["bootstrap"]
    used = [int(m) for m, v in groups.items() if v]
    means = np.array([np.mean(groups[float(m)]) for m in used])
    steps = np.sign(np.diff(means)) if len(means) > 1 else np.array([])
    monotone = bool(len(steps) and np.all(steps == sign))
    direction = "below" if sign < 0 else "above"
    return Claim(cid, statement, paper, round(slope, 4), trend_verdict(len(used), iv, sign),
                 (round(iv[0], 4), round(iv[1], 4)),
                 f"Log-log slope of (squared norm / ||theta*||^2) against m over the widths with "
                 f"interpolating runs ({used}); interval: 95% bootstrap over the runs at each "
                 f"width (all widths share one label draw, so the runs are the only source of "
                 f"noise; the least-squares interval, which also counts curvature of the curve as "
                 f"noise, is given as a variant). Rule: reproduced if the interval lies "
                 f"{direction} 0, not reproduced if it lies on the other side, inconclusive "
                 f"otherwise or with fewer than {MIN_WIDTHS} widths. {extra}",
                 variants | {"monotone between consecutive widths": monotone,
                             "least-squares interval": [round(v, 4) for v in parts["least squares"]],
                             "hull of both": [round(v, 4) for v in hull],
                             "slope of the median over runs (least squares)": median_slope(
                                 groups)},
                 source=source)


def interpolate_verdict(ok: np.ndarray) -> str:
    """Reproduced if every run interpolates, partly if at least INTERPOLATE_PARTLY do."""
    if ok.all():
        return "reproduced"
    return "partly" if ok.mean() >= INTERPOLATE_PARTLY else "not reproduced"


def runs_interpolate_claim(ds: xr.Dataset, P: Fig6Params) -> Claim:
    """Fraction of all runs (both schemes) that reach the loss threshold."""
    widths, ok = [int(m) for m in ds.width.values], ds.interpolated.values
    small_fail = ~ok[:, 0]
    zero_rows = ds.limit_unfitted.values > 0
    frac = ok.mean(axis=2)  # (width, scheme)
    return Claim(
        "runs_interpolate", "The trained networks whose norms are plotted interpolate the data "
        "(training until the loss threshold, at most 10^6 epochs)", 1.0,
        round(float(ok.mean()), 3), interpolate_verdict(ok), None,
        f"Fraction of runs reaching L < {P.stop_loss:g} (small: within "
        f"{P.max_epochs_small} epochs; He: within {P.max_epochs_he} epochs). Small init: "
        f"{int(small_fail.sum())} failure(s), {int(np.sum(small_fail & zero_rows))} of them with "
        f"a point that no correctly signed neuron activates at initialisation (probability "
        f"1 - (1 - (3/4)^m)^n: large at m = 8). He-uniform failures come from the step budget "
        f"at lr 0.001. Rule: reproduced if every run interpolates, partly if at least half do. "
        f"A check, not counted: a precondition of the width trends, not a claim of the paper.",
        {f"fraction per width ({scheme})": {m: round(float(f), 3)
                                            for m, f in zip(widths, frac[:, si], strict=True)}
         for si, scheme in enumerate(SCHEMES)}
        | {"He final loss of failed runs (max)": (
            round(float(np.max(np.where(~ok[:, 1], ds.final_loss.values[:, 1], 0))), 6))},
        source=sources.RUNS_INTERPOLATE, role="check")


def judge(ds: xr.Dataset, P: Fig6Params) -> list[Claim]:
    """The two width trends (small: down, He: up) and the interpolation check."""
    widths, mn = [int(m) for m in ds.width.values], float(ds.min_norm_sq)
    _, kept = norm_ratios(ds)
    small_means = nan_band(kept[:, 0])[0]
    last = small_means[np.isfinite(small_means)]
    he_init = nan_band(ds.sq_norm_init.values[:, 1])[0]
    return [
        trend_claim(
            "small_init_approaches_optimum", "With the small balanced initialisation the squared "
            "norm of the trained network approaches the minimum-norm value as the width grows",
            "ratio decreases towards 1", widths, kept[:, 0], -1, P.seed,
            f"Ratio at the largest width with interpolating runs: "
            f"{last[-1]:.3f}." if last.size else "No width with interpolating runs.",
            {"mean ratio per width": rounded_per(widths, small_means),
             "Algorithm 1 ratio (random inits) per width": rounded_per(
                 ds.theory_width.values, nan_band(ds.theory_ratio.values)[0])},
            sources.SMALL_INIT),
        trend_claim(
            "he_init_keeps_increasing", "With He-uniform initialisation the squared norm of the "
            "trained network keeps increasing with the width", "ratio increases with m", widths,
            kept[:, 1], +1, P.seed,
            "The He-uniform network's squared norm at initialisation is about m/3 + 1/3 (hidden "
            "entries U(-1/sqrt(d), 1/sqrt(d)): m d / (3 d); outputs: m / (3 m)) and training at "
            "lr 0.001 changes it little at large m (lazy regime).",
            {"mean ratio per width": rounded_per(widths, nan_band(kept[:, 1])[0]),
             "ratio at initialisation": {m: round(float(v) / mn, 3)
                                         for m, v in zip(widths, he_init, strict=True)}},
            sources.HE_INIT),
        runs_interpolate_claim(ds, P)]


# ------------------------------------------------------------------------------------ draw
def draw(ds: xr.Dataset, P: Fig6Params) -> list[Figure]:
    """Ratio to the minimum norm against the width (left); He-uniform norms (right)."""
    import matplotlib.pyplot as plt
    import matplotlib.ticker as ticker

    widths, mn = [int(m) for m in ds.width.values], float(ds.min_norm_sq)
    ok = ds.interpolated.values
    ratio, kept = norm_ratios(ds)
    theory_w = [int(m) for m in ds.theory_width.values]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 5.6), gridspec_kw={"width_ratios": [3, 2]})
    colors = {"small": "C0", "he": "C3"}
    for si, scheme in enumerate(SCHEMES):
        mean, lo, hi = nan_band(kept[:, si])
        c = colors[scheme]
        ax.plot(widths, mean, "o-", color=c, ms=5, label=f"GD, {LABELS[scheme]}")
        ax.fill_between(widths, lo, hi, color=c, alpha=0.2)
        bad_w, bad_r = np.nonzero(~ok[:, si])
        if len(bad_w):
            ax.plot(np.array(widths)[bad_w], ratio[bad_w, si, bad_r], "x", color=c, ms=8,
                    label=f"{scheme}: loss threshold not reached (excluded)")
    t_mean, t_lo, t_hi = nan_band(ds.theory_ratio.values)
    ax.plot(theory_w, t_mean, "s:", color="C2", ms=4,
            label=f"Algorithm 1 limit, {P.theory_draws} random balanced inits (mean, min/max)")
    ax.fill_between(theory_w, t_lo, t_hi, color="C2", alpha=0.12)
    ax.plot(widths, nan_band(limit_norms(ds) / mn)[0], "D", color="C2", ms=5, mfc="none",
            label="Algorithm 1 limit for the simulated small inits")
    ax.axhline(1.0, color="k", lw=0.9, label=r"minimum norm $\|\theta^*\|^2$")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("width m")
    ax.set_ylabel(r"squared norm / $\|\theta^*\|^2$")
    ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(ticker.FormatStrFormatter("%g"))
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
    ax.set_title(f"n = {P.n}, X = I, y ~ N(0,1); small init {lambda_label(P.log10_lambda, True)}"
                 f"$/\\sqrt{{m}}$; {P.runs} runs per width; stop at L < {P.stop_loss:g}",
                 fontsize=9)
    he_final, he_lo, he_hi = nan_band(np.where(ok[:, 1], ds.sq_norm.values[:, 1], np.nan))
    ax2.plot(widths, he_final, "o-", color="C3", ms=5, label="He-uniform, trained (interpolating)")
    ax2.fill_between(widths, he_lo, he_hi, color="C3", alpha=0.2)
    ax2.plot(widths, nan_band(ds.sq_norm_init.values[:, 1])[0], "v--", color="C3", ms=4, lw=1,
             label="He-uniform at initialisation")
    mm = np.array(widths, float)
    ax2.plot(mm, mm / 3 + 1 / 3, color="grey", lw=0.8, label="E at init: m/3 + 1/3")
    ax2.axhline(mn, color="k", lw=0.9, label=r"$\|\theta^*\|^2$")
    ax2.set_xscale("log", base=2)
    ax2.set_yscale("log")
    ax2.set_xlabel("width m")
    ax2.set_ylabel(r"squared norm $\Sigma_j\, a_j^2 + \|w_j\|^2$")
    ax2.set_title("He-uniform: trained vs initial squared norm", fontsize=9)
    ax2.legend(fontsize=7, loc="upper left")
    for a in (ax, ax2):
        a.grid(alpha=0.3, which="both")
    fig.suptitle("TBLEL Fig. 6: squared norm of the trained network against the width", fontsize=10)
    return [Figure(
        "fig6_norm_vs_width", fig,
        f"Left: squared parameter norm of the trained network divided by the minimum-norm "
        f"value {mn:.3f} of the label draw, against the width: mean of the runs that "
        f"reached the loss threshold with min/max band (crosses: runs that did not, "
        f"excluded). Green: the lambda -> 0 prediction of Algorithm 1 (squares: independent "
        f"random initialisations up to m = {theory_w[-1]}; open diamonds: the simulated "
        f"small initialisations). Right: He-uniform squared norms, trained and at "
        f"initialisation, with the expected initial value m/3 + 1/3.")]


# ---------------------------------------------------------------------------------- method
def method(ds: xr.Dataset, P: Fig6Params) -> list[Section]:
    """Sections "Method" and "Cost"."""
    widths = [int(m) for m in ds.width.values]
    return [("Method", (
        f"Data: X = I_{P.n}, y ~ N(0, 1), one label draw shared by all widths and runs "
        f"(||theta*||^2 = {float(ds.min_norm_sq):.4f}). Widths m = {widths}. Small init: "
        f"balanced, directions uniform on the sphere, ||w_j|| = |a_j| = lambda/sqrt(m) with "
        f"lambda = {lambda_label(P.log10_lambda)} (illegible in the paper), random signs, GD lr "
        f"{P.lr_small}, at most {P.max_epochs_small} epochs. He-uniform: "
        f"init.scheme 'pytorch' (W entries U(-1/sqrt(32), 1/sqrt(32)), a entries "
        f"U(-1/sqrt(m), 1/sqrt(m)); no biases, as in the paper's network), GD lr {P.lr_he}, "
        f"at most {P.max_epochs_he} epochs. Loss: PyTorch MSE (1/n) sum r^2, float64, early "
        f"stop at L < {P.stop_loss:g} (the paper's threshold is illegible). Runs that do not "
        f"reach the threshold are shown as crosses and excluded from means and fits. Algorithm "
        f"1 curve: widths 8..{int(ds.theory_width[-1])}, {P.theory_draws} random balanced "
        f"initialisations each (draws with an unfittable point excluded).")),
        ("Cost", (
            f"The paper preset ({len(PRESETS['paper']['widths'])} widths x 2 schemes x 3 runs, "
            f"He runs up to 10^6 epochs) took {PAPER_WALL_S:.0f} s on 2 CPU cores (measured "
            f"once, JAX float64)."))]


REPRODUCTION = Reproduction(
    "town-fig6", "squared norm against width: small vs He initialisation",
    "Town, Boursier, Lewis, Englert, Lazic (003), Figure 6", params=Fig6Params, presets=PRESETS,
    simulate=simulate, judge=judge, draw=draw, method=method, summary=SUMMARY)
