"""town-fig6: squared norm of the trained network against the width m, small vs He initialisation.

Paper (003 App. A.2, Figure 6; MATH.md §3.7): n = 32 orthonormal points (X = I), y ~ N(0, 1),
the width m varied, two initialisations:

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
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import matplotlib.pyplot as plt
import matplotlib.ticker as ticker
import numpy as np
import xarray as xr

from shallowflow.config import Experiment, experiment_from_mapping
from shallowflow.experiment import RunRef, dataset_of
from shallowflow.reproductions.base import Context, Reproduction, register
from shallowflow.reproductions.claims import Claim
from shallowflow.reproductions.town.fig5 import (
    band,
    fmt_lam,
    limit_for,
    run_summary,
    slope_interval,
    tex_lam,
    train_refs,
)
from shallowflow.theory.interpolator_norms import learned_norm_sq, min_norm_sq, norm_ratio
from shallowflow.theory.saddle_process import limit_process, loss_constant

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
PAPER_WALL_S = 152.0  # measured: paper preset, 2 CPU cores (see the report's section "Cost")


def fig6_experiment(scheme: str, m: int, P: Mapping) -> Experiment:
    n = P["n"]
    if scheme == "small":
        init = {"scheme": "balanced", "log_scale": P["log10_lambda"] * math.log(10.0),
                "width_scaling": True}
        lr, epochs = P["lr_small"], P["max_epochs_small"]
    else:
        init, lr, epochs = {"scheme": "pytorch"}, P["lr_he"], P["max_epochs_he"]
    return experiment_from_mapping({
        "name": f"town-fig6-{scheme}-m{m}", "seed": P["seed"] + 7 * m + (0 if scheme == "small"
                                                                          else 1),
        "runs": P["runs"],
        "data": {"kind": "orthonormal", "n": n, "d": n, "labels": "normal",
                 "seed": 20_000 + P["seed"]},
        "model": {"width": m},
        "init": init,
        "train": {"loss": "mse", "lr": lr, "steps": epochs, "stop_loss": P["stop_loss"]},
        "record": {"points": 60, "probes": ["loss", "param_norm_sq"]},
    })


def simulate_width(m: int, P: Mapping, show_progress: bool) -> tuple[xr.Dataset, np.ndarray]:
    """Both schemes at width m: summaries (scheme, run), final and initial weights."""
    R = P["runs"]
    cols: dict[str, list] = {k: [] for k in ("sq_norm", "sq_norm_init", "interpolated",
                                             "diverged", "final_loss", "epochs", "a_final",
                                             "W_final", "a_init", "W_init")}
    limits = []
    X, y = dataset_of(RunRef(fig6_experiment(SCHEMES[0], m, P), 0))  # one draw for all runs
    for scheme in SCHEMES:
        exp = fig6_experiment(scheme, m, P)
        refs = [RunRef(exp, r) for r in range(R)]
        parts = train_refs(refs, f"fig6 {scheme} m={m}", show_progress)
        for ds in parts:
            s = run_summary(ds, y, P["stop_loss"])
            cols["sq_norm"].append(s["sq_norm"])
            cols["sq_norm_init"].append(float(ds.param_norm_sq.values[0, 0]))
            for k in ("interpolated", "diverged", "final_loss", "epochs"):
                cols[k].append(s[k])
            cols["a_final"].append(s["a"])
            cols["W_final"].append(s["W"])
            cols["a_init"].append(np.asarray(ds.a_init.values[0], float))
            cols["W_init"].append(np.asarray(ds.W_init.values[0], float))
        if scheme == "small":
            limits = [limit_for(exp, r, parts[r], X, y) for r in range(R)]
    shape = (len(SCHEMES), R)
    dims2 = ("scheme", "run")
    data = {k: (dims2, np.array(cols[k]).reshape(shape))
            for k in ("sq_norm", "sq_norm_init", "interpolated", "diverged", "final_loss",
                      "epochs")}
    n = P["n"]
    data["a_final"] = ((*dims2, "neuron"), np.array(cols["a_final"]).reshape(*shape, m))
    data["W_final"] = ((*dims2, "neuron", "dim"), np.array(cols["W_final"]).reshape(*shape, m, n))
    data["a_init"] = ((*dims2, "neuron"), np.array(cols["a_init"]).reshape(*shape, m))
    data["W_init"] = ((*dims2, "neuron", "dim"), np.array(cols["W_init"]).reshape(*shape, m, n))
    data["y"] = ("sample", y)
    data["min_norm_sq"] = ((), min_norm_sq(y))
    data["limit_sq_norm"] = ("run", [learned_norm_sq(p) for p in limits])
    data["limit_unfitted"] = ("run", [len(p.unfitted) for p in limits])
    ds = xr.Dataset(data, coords={"scheme": list(SCHEMES), "run": np.arange(R)},
                    attrs={"width": m, "n": n, "log10_lambda": P["log10_lambda"],
                           "lr_small": P["lr_small"], "lr_he": P["lr_he"],
                           "stop_loss": P["stop_loss"], "loss": "mse (1/n) sum r^2",
                           "note": "a_init/W_init of 'small' are the lambda-scaled network"})
    return ds, y


def theory_ratios(y: np.ndarray, widths: list[int], draws: int, seed: int) -> xr.Dataset:
    """Algorithm 1 ratio ||theta_inf||^2 / ||theta*||^2 for independent random balanced
    initialisations (signs +-1, directions uniform on the sphere; X = I), NaN where a point has
    no correctly signed active neuron (the limit then does not interpolate)."""
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
    return xr.Dataset({"ratio": (("width", "draw"), out)}, coords={"width": widths},
                      attrs={"seed": seed})


def trend_claim(cid: str, statement: str, paper: str, widths: list[int], ratios: np.ndarray,
                sign: int, seed: int, extra: str, variants: dict) -> Claim:
    """Log-log slope of the ratio against m over widths with interpolating runs. sign -1:
    reproduced if the interval lies below 0; +1: above 0."""
    groups = {float(m): ratios[i][np.isfinite(ratios[i])].tolist()
              for i, m in enumerate(widths)}
    slope, hull, parts = slope_interval(groups, seed)
    iv = parts["bootstrap"]
    used = [int(m) for m, v in groups.items() if v]
    means = np.array([np.mean(groups[float(m)]) for m in used])
    steps = np.sign(np.diff(means)) if len(means) > 1 else np.array([])
    monotone = bool(len(steps) and np.all(steps == sign))
    if len(used) < 3 or not np.all(np.isfinite(iv)):
        verdict = "inconclusive"
    elif (sign < 0 and iv[1] < 0) or (sign > 0 and iv[0] > 0):
        verdict = "reproduced"
    elif (sign < 0 and iv[0] > 0) or (sign > 0 and iv[1] < 0):
        verdict = "not reproduced"
    else:
        verdict = "inconclusive"
    direction = "below" if sign < 0 else "above"
    return Claim(cid, statement, paper, round(slope, 4), verdict,
                 (round(iv[0], 4), round(iv[1], 4)),
                 f"Log-log slope of (squared norm / ||theta*||^2) against m over the widths with "
                 f"interpolating runs ({used}); interval: 95% bootstrap over the runs at each "
                 f"width (all widths share one label draw, so the runs are the only source of "
                 f"noise; the least-squares interval, which also counts curvature of the curve as "
                 f"noise, is given as a variant). Rule: reproduced if the interval lies {direction} 0, "
                 f"not reproduced if it lies on the other side, inconclusive otherwise or with "
                 f"fewer than 3 widths. {extra}",
                 variants | {"monotone between consecutive widths": monotone,
                             "least-squares interval": [round(v, 4) for v in parts["least squares"]],
                             "hull of both": [round(v, 4) for v in hull]})


def build(ctx: Context) -> list[Claim]:
    P = ctx.params
    widths = sorted(int(m) for m in P["widths"])
    per_m = {}
    y = None
    for m in widths:
        per_m[m], y = simulate_width(m, P, ctx.show_progress)
        ctx.data(f"m{m:04d}", per_m[m])
    names = ("sq_norm", "sq_norm_init", "interpolated", "diverged", "final_loss", "epochs")
    summary = xr.Dataset(
        {k: (("width", "scheme", "run"), np.stack([per_m[m][k].values for m in widths]))
         for k in names}
        | {"limit_sq_norm": (("width", "run"),
                             np.stack([per_m[m].limit_sq_norm.values for m in widths])),
           "limit_unfitted": (("width", "run"),
                              np.stack([per_m[m].limit_unfitted.values for m in widths])),
           "y": ("sample", y), "min_norm_sq": ((), min_norm_sq(y))},
        coords={"width": widths, "scheme": list(SCHEMES), "run": np.arange(P["runs"])})
    ctx.data("summary", summary)
    theory_w = [2**k for k in range(3, P["theory_max_log2_width"] + 1)]
    theory = theory_ratios(y, theory_w, P["theory_draws"], P["seed"] + 99)
    ctx.data("theory", theory)

    mn = float(summary.min_norm_sq)
    ok = summary.interpolated.values  # (width, scheme, run)
    ratio = summary.sq_norm.values / mn
    kept = np.where(ok, ratio, np.nan)
    lim = np.where(summary.limit_unfitted.values == 0, summary.limit_sq_norm.values / mn, np.nan)

    # ------------------------------------------------------------------------------ figure
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(13, 5.6), gridspec_kw={"width_ratios": [3, 2]})
    colors = {"small": "C0", "he": "C3"}
    for si, scheme in enumerate(SCHEMES):
        mean, lo, hi = band(kept[:, si])
        c = colors[scheme]
        ax.plot(widths, mean, "o-", color=c, ms=5, label=f"GD, {LABELS[scheme]}")
        ax.fill_between(widths, lo, hi, color=c, alpha=0.2)
        bad_w, bad_r = np.nonzero(~ok[:, si])
        if len(bad_w):
            ax.plot(np.array(widths)[bad_w], ratio[bad_w, si, bad_r], "x", color=c, ms=8,
                    label=f"{scheme}: loss threshold not reached (excluded)")
    t_mean, t_lo, t_hi = band(theory.ratio.values)
    ax.plot(theory_w, t_mean, "s:", color="C2", ms=4,
            label=f"Algorithm 1 limit, {P['theory_draws']} random balanced inits (mean, min/max)")
    ax.fill_between(theory_w, t_lo, t_hi, color="C2", alpha=0.12)
    l_mean, _, _ = band(lim)
    ax.plot(widths, l_mean, "D", color="C2", ms=5, mfc="none",
            label="Algorithm 1 limit for the simulated small inits")
    ax.axhline(1.0, color="k", lw=0.9, label=r"minimum norm $\|\theta^*\|^2$")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("width m")
    ax.set_ylabel(r"squared norm / $\|\theta^*\|^2$")
    ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(ticker.FormatStrFormatter("%g"))
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
    ax.set_title(f"n = {P['n']}, X = I, y ~ N(0,1); small init {tex_lam(P['log10_lambda'])}"
                 f"$/\\sqrt{{m}}$; {P['runs']} runs per width; stop at L < {P['stop_loss']:g}",
                 fontsize=9)
    he_final, he_lo, he_hi = band(np.where(ok[:, 1], summary.sq_norm.values[:, 1], np.nan))
    he_init, _, _ = band(summary.sq_norm_init.values[:, 1])
    ax2.plot(widths, he_final, "o-", color="C3", ms=5, label="He-uniform, trained (interpolating)")
    ax2.fill_between(widths, he_lo, he_hi, color="C3", alpha=0.2)
    ax2.plot(widths, he_init, "v--", color="C3", ms=4, lw=1, label="He-uniform at initialisation")
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
    ctx.figure("fig6_norm_vs_width", fig,
               f"Left: squared parameter norm of the trained network divided by the minimum-norm "
               f"value {mn:.3f} of the label draw, against the width: mean of the runs that "
               f"reached the loss threshold with min/max band (crosses: runs that did not, "
               f"excluded). Green: the lambda -> 0 prediction of Algorithm 1 (squares: independent "
               f"random initialisations up to m = {theory_w[-1]}; open diamonds: the simulated "
               f"small initialisations). Right: He-uniform squared norms, trained and at "
               f"initialisation, with the expected initial value m/3 + 1/3.")

    # ------------------------------------------------------------------------------ claims
    def per_width(si: int) -> dict:
        mean, _, _ = band(kept[:, si])
        return {int(m): (None if not np.isfinite(v) else round(float(v), 3))
                for m, v in zip(widths, mean, strict=True)}

    claims = []
    small_means, _, _ = band(kept[:, 0])
    last = small_means[np.isfinite(small_means)]
    claims.append(trend_claim(
        "small_init_approaches_optimum", "With the small balanced initialisation the squared "
        "norm of the trained network approaches the minimum-norm value as the width grows",
        "ratio decreases towards 1", widths, kept[:, 0], -1, P["seed"],
        f"Ratio at the largest width with interpolating runs: "
        f"{last[-1]:.3f}." if last.size else "No width with interpolating runs.",
        {"mean ratio per width": per_width(0),
         "Algorithm 1 ratio (random inits) per width": {
             int(m): (None if not np.isfinite(v) else round(float(v), 3))
             for m, v in zip(theory_w, t_mean, strict=True)}}))
    he_init_ratio = {int(m): round(float(v) / mn, 3) for m, v in zip(widths, he_init, strict=True)}
    claims.append(trend_claim(
        "he_init_keeps_increasing", "With He-uniform initialisation the squared norm of the "
        "trained network keeps increasing with the width", "ratio increases with m", widths,
        kept[:, 1], +1, P["seed"],
        "The He-uniform network's squared norm at initialisation is about m/3 + 1/3 (hidden "
        "entries U(-1/sqrt(d), 1/sqrt(d)): m d / (3 d); outputs: m / (3 m)) and training at "
        "lr 0.001 changes it little at large m (lazy regime).",
        {"mean ratio per width": per_width(1), "ratio at initialisation": he_init_ratio}))
    frac = ok.mean(axis=2)  # (width, scheme)
    zero_rows = summary.limit_unfitted.values > 0
    small_fail = ~ok[:, 0]
    verdict = ("reproduced" if ok.all() else "partly" if ok.mean() >= 0.5 else "not reproduced")
    claims.append(Claim(
        "runs_interpolate", "The trained networks whose norms are plotted interpolate the data "
        "(training until the loss threshold, at most 10^6 epochs)", 1.0,
        round(float(ok.mean()), 3), verdict, None,
        f"Fraction of runs reaching L < {P['stop_loss']:g} (small: within "
        f"{P['max_epochs_small']} epochs; He: within {P['max_epochs_he']} epochs). Small init: "
        f"{int(small_fail.sum())} failure(s), {int(np.sum(small_fail & zero_rows))} of them with "
        f"a point that no correctly signed neuron activates at initialisation (probability "
        f"1 - (1 - (3/4)^m)^n: large at m = 8). He-uniform failures come from the step budget "
        f"at lr 0.001. Rule: reproduced if every run interpolates, partly if at least half do.",
        {f"fraction per width ({scheme})": {int(m): round(float(f), 3)
                                            for m, f in zip(widths, frac[:, si], strict=True)}
         for si, scheme in enumerate(SCHEMES)}
        | {"He final loss of failed runs (max)": (
            round(float(np.max(np.where(~ok[:, 1], summary.final_loss.values[:, 1], 0))), 6))}))

    ctx.section("Protocol", (
        f"Data: X = I_{P['n']}, y ~ N(0, 1), one label draw shared by all widths and runs "
        f"(||theta*||^2 = {mn:.4f}). Widths m = {widths}. Small init: balanced, directions "
        f"uniform on the sphere, ||w_j|| = |a_j| = lambda/sqrt(m) with lambda = "
        f"{fmt_lam(P['log10_lambda'])} (illegible in the paper), random signs, GD lr "
        f"{P['lr_small']}, at most {P['max_epochs_small']} epochs. He-uniform: "
        f"init.scheme 'pytorch' (W entries U(-1/sqrt(32), 1/sqrt(32)), a entries "
        f"U(-1/sqrt(m), 1/sqrt(m)); no biases, as in the paper's network), GD lr {P['lr_he']}, "
        f"at most {P['max_epochs_he']} epochs. Loss: PyTorch MSE (1/n) sum r^2, float64, early "
        f"stop at L < {P['stop_loss']:g} (the paper's threshold is illegible). Runs that do not "
        f"reach the threshold are shown as crosses and excluded from means and fits. Algorithm "
        f"1 curve: widths 8..{theory_w[-1]}, {P['theory_draws']} random balanced "
        f"initialisations each (draws with an unfittable point excluded)."))
    ctx.section("Cost", (
        f"The paper preset ({len(PRESETS['paper']['widths'])} widths x 2 schemes x 3 runs, He "
        f"runs up to 10^6 epochs) took {PAPER_WALL_S:.0f} s on 2 CPU cores (measured once, "
        f"JAX float64)."))
    ctx.summary = (
        "Squared parameter norm of the trained network, relative to the minimum-norm "
        "interpolator, against the width for a small balanced and the PyTorch default "
        "initialisation on 32 orthonormal points (Figure 6 of Town et al.).")
    return claims


register(Reproduction("town-fig6", "squared norm against width: small vs He initialisation",
                      "Town, Boursier, Lewis, Englert, Lazic (003), Figure 6", build, PRESETS,
                      __doc__ or ""))
