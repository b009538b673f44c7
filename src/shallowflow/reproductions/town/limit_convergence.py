"""town-convergence: how fast tiny-initialisation GD approaches the limit process as lambda -> 0
(not a figure of the paper; Theorem 2, docs/math.md §3.4).

Theorem 2 says the accelerated-time trajectory converges to Algorithm 1's jump process as
lambda -> 0, uniformly away from the jump times; the jump times and the saddles converge. The
proof's phases around a jump last O(1) in flow time, i.e. O(1/log(1/lambda)) in accelerated time,
so the jump-time errors should decay like 1/log(1/lambda). This reproduction measures, for
lambda = 1e-2 ... 1e-200, on several random orthonormal problems (random basis, labels N(0, 1))
and on the hand vector of docs/math.md §3.6:

* the jump-time errors: first crossing of the midpoint between consecutive limit plateaus minus
  Algorithm 1's τ_k, in accelerated time (the largest over the jumps of a problem);
* the final-weight errors: max |a - a_lim|, |W - W_lim| at the end of training (each run
  trains for 1.08 τ_K log(1/lambda) + 400 flow time).

GD with step lr is the Euler scheme of the flow and moves every jump by about lr/2 in accelerated
time whatever lambda (its exponent grows by log(1 + lr g) instead of lr g per step), which does
not vanish as lambda -> 0. Two step sizes are run; their Richardson extrapolation
(r t(lr/r) - t(lr)) / (r - 1) removes the O(lr) part and estimates the flow's own error, on which
the main claim is judged. The raw errors of both step sizes are reported too.

Saved Dataset (``results.nc``): the measured crossing times ``cross`` (lr, problem, lam, jump)
and final-weight errors ``final_error`` (lr, problem, lam), Algorithm 1's ``tau`` (problem, jump;
NaN beyond each problem's K jumps), ``K`` and ``loss_floor`` per problem, and the random seeds
tried by the selection rule (``seed_tried``, ``seed_selected``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr
from pydantic import Field

from shallowflow.analysis.curves import crossing_times
from shallowflow.analysis.fits import bootstrap_mean, loglog_slope
from shallowflow.plots.labels import lambda_label
from shallowflow.reproductions.base import Figure, Params, Reproduction, Section
from shallowflow.reproductions.claims import Claim, band_verdict, interval_verdict
from shallowflow.reproductions.fields import LearningRate, NegativeLog10, RecordDt, Seed
from shallowflow.reproductions.town import tblel_sources as sources
from shallowflow.reproductions.town.interpolation import padded
from shallowflow.reproductions.town.scale_runs import ScaleRuns, limit_processes, simulate_problems
from shallowflow.theory.saddle_process import SaddleProcess
from shallowflow.training.entry import Trainer


class ConvergenceParams(Params):
    """Parameters of town-convergence."""

    n: int = Field(ge=2, description="points n = d of the random problems (random basis)")
    m: int = Field(ge=1, description="width of the random problems")
    problems: int = Field(ge=1, description="number of random problems")
    seed: Seed = Field(description="first seed of the random problems and bootstrap seed")
    log10_lambdas: list[NegativeLog10] = Field(
        min_length=2, description="decimal logs of the initial scales lambda")
    lr: LearningRate = Field(description="coarse GD learning rate (the fine one is lr / refine)")
    refine: int = Field(ge=2, description="ratio r of the two step sizes (Richardson)")
    record_dt: RecordDt
    fit_max_log10: float = Field(lt=0, description="slopes fitted over lambda <= 10^this")
    boot: int = Field(ge=1, description="bootstrap draws of the mean slope over problems")


PRESETS = {
    "quick": {"n": 12, "m": 5, "problems": 3, "seed": 0,
              "log10_lambdas": [-2.0, -5.0, -10.0, -25.0, -50.0, -100.0], "lr": 0.01,
              "refine": 5, "record_dt": 0.1, "fit_max_log10": -10.0, "boot": 2000},
    "paper": {"n": 32, "m": 8, "problems": 6, "seed": 0,
              "log10_lambdas": [-2.0, -5.0, -10.0, -25.0, -50.0, -100.0, -200.0], "lr": 0.01,
              "refine": 10, "record_dt": 0.05, "fit_max_log10": -10.0, "boot": 2000},
}
RATE_SLOPE = -1.0  # the rate O(1/log(1/lambda)) derived from Theorem 2's proof, as a log-log slope
SLOPE_BAND = (-1.3, -0.7)  # rule: fitted slope of log|error| against log log(1/lambda)
HAND_RTOL = 0.01  # hand vector: GD jump times within 1% of (0.8, 0.949342)
GROUP_RATIO = 5.5  # lambda groups trained in one batch (see scale_groups)
SETTLE = 400.0  # flow time after 1.08 τ_K log(1/lambda) for the last fit to converge
MIN_GAP = 0.05  # random problems: consecutive jump times at least this fraction of τ_K apart
HAND_Y = np.array([3.0, 4.0, 1.0, 2.0])  # docs/math.md §3.6
HAND_DIR = np.array([[1.0, 1.0, -1.0, -1.0], [-1.0, 1.0, 1.0, 1.0]]) / 2.0
HAND_TAU = (0.8, 0.949342)  # docs/math.md §3.6 (c_L = 1/4: loss (1/(2n)) sum r^2)
HAND_NAME = "hand vector §3.6"
SUMMARY = ("Convergence of gradient descent from tiny initialisations to the limit "
           "saddle-to-saddle process (Theorem 2) as lambda goes from 1e-2 to 1e-200: "
           "jump-time and final-weight errors against log(1/lambda).")


# -------------------------------------------------------------------------------- simulate
def hand_problem() -> dict[str, Any]:
    """The §3.6 hand vector as a problem: X = I_4, y = (3, 4, 1, 2), two balanced neurons with
    a = (+1, +1) and the directions of docs/math.md, square loss (1/(2n)) Σ r² (c_L = 1/4); data
    and network given in memory."""
    return {"n": 4, "m": 2, "seed": 0, "loss": "square",
            "data": {"kind": "arrays", "X": np.eye(4), "y": HAND_Y},
            "init": {"scheme": "given", "a": np.ones(2), "W": HAND_DIR}}


def random_problems(n: int, m: int, count: int, seed: int
                    ) -> tuple[list[dict], list[SaddleProcess], list[int]]:
    """The first ``count`` seeds >= ``seed`` whose limit process has at least two jumps, unique
    argmins and consecutive jump times at least MIN_GAP τ_K apart (so that each jump has its own
    plateau at moderate lambda); returns the problems, their limit processes and the rejected
    seeds."""
    chosen, procs, rejected, start = [], [], [], seed
    while len(chosen) < count:
        pbs = [{"n": n, "m": m, "seed": s, "labels": "normal", "basis": "random", "loss": "mse"}
               for s in range(start, start + 4 * count)]
        for pb, p in zip(pbs, limit_processes(pbs), strict=True):
            if len(chosen) == count:
                break
            gaps = np.diff(p.jump_starts)
            if p.K >= 2 and p.report.argmin_unique and gaps.min() >= MIN_GAP * p.tau[-1]:
                chosen.append(pb)
                procs.append(p)
            else:
                rejected.append(pb["seed"])
        start += 4 * count
        if start - seed > 50 * count:
            raise RuntimeError("random_problems: too few seeds pass the selection rule")
    return chosen, procs, rejected


def scale_groups(L: np.ndarray) -> list[np.ndarray]:
    """Indices of ``L`` (increasing) in groups whose largest log(1/lambda) is at most GROUP_RATIO
    times the smallest: one batch per group, every run trained for the group's duration."""
    groups, start = [], 0
    for i in range(1, len(L) + 1):
        if i == len(L) or L[i] > GROUP_RATIO * L[start]:
            groups.append(np.arange(start, i))
            start = i
    return groups


def errors(runs: ScaleRuns) -> tuple[np.ndarray, np.ndarray]:
    """(crossing times (R, K), final-weight errors max(|a - a_lim|, |W - W_lim|) (R,)) of one
    problem's runs (docs/math.md §8.3)."""
    ds, p = runs.ds, runs.process
    cross = crossing_times(ds.loss.values, ds.time_accelerated.values, p.losses)
    werr = np.maximum(np.abs(ds.W_final.values - p.W_final).max(axis=(1, 2)),
                      np.abs(ds.a_final.values - p.a_final).max(axis=1))
    return cross, werr


def simulate(P: ConvergenceParams, train: Trainer) -> xr.Dataset:
    """Every (step size, lambda group, problem set) in one batch; crossing times and final-weight
    errors per problem and lambda."""
    log10s = sorted(P.log10_lambdas, reverse=True)
    lls = np.array(log10s) * math.log(10)
    labels = [lambda_label(v) for v in log10s]
    lrs = [P.lr, P.lr / P.refine]
    problems, random_procs, rejected = random_problems(P.n, P.m, P.problems, P.seed)
    hand = hand_problem()
    hand_procs = limit_processes([hand])
    procs = random_procs + hand_procs
    cross, werr = [], []  # per lr: (problem) lists of (R, K_q) and (R,)
    for lr in lrs:
        parts = []  # per lambda group: list over problems of (cross (G, K), final errors (G,))
        for g in scale_groups(-lls):
            runs_all = []
            for pset, pprocs, tag in ((problems, random_procs, f"n={P.n}"),
                                      ([hand], hand_procs, "hand vector")):
                runs_all += simulate_problems(
                    train, pset, lls[g], lr, P.record_dt, settle=SETTLE, probes=("loss",),
                    label=f"town-convergence {tag}, lambda {labels[g[0]]}..{labels[g[-1]]}",
                    stop=False, processes=pprocs)
            parts.append([errors(ru) for ru in runs_all])
        cross.append([np.concatenate([pt[q][0] for pt in parts]) for q in range(len(procs))])
        werr.append(np.stack([np.concatenate([pt[q][1] for pt in parts])
                              for q in range(len(procs))]))
    tried = sorted([pb["seed"] for pb in problems] + rejected)
    chosen = {pb["seed"] for pb in problems}
    return xr.Dataset(
        {"cross": (("lr", "problem", "lam", "jump"), np.stack([padded(c) for c in cross])),
         "final_error": (("lr", "problem", "lam"), np.stack(werr)),
         "tau": (("problem", "jump"), padded([p.tau for p in procs])),
         "K": ("problem", [p.K for p in procs]),
         "loss_floor": ("problem", [p.losses[-1] for p in procs]),
         "seed_tried": ("tried", tried),
         "seed_selected": ("tried", [int(s in chosen) for s in tried])},
        coords={"lr": lrs, "problem": [f"random seed {pb['seed']}" for pb in problems] + [HAND_NAME],
                "log10_lambda": ("lam", log10s), "log_lambda": ("lam", lls),
                "jump": np.arange(max(p.K for p in procs))},
        attrs={"description": "jump-time crossings (accelerated time) and final-weight errors"})


# ----------------------------------------------------------------------------------- judge
def slope_fit(L: np.ndarray, err: np.ndarray) -> float:
    """Least-squares slope of log|err| against log L over the finite, positive entries."""
    ok = np.isfinite(err) & (err > 0)
    if ok.sum() < 2:
        return math.nan
    return loglog_slope(L[ok], err[ok])


@dataclass(frozen=True)
class Rates:
    """The errors of every problem q and their log-log slopes over the fitted lambda.

    cross[li][q] (R, K_q): crossing times at step li (0 coarse, 1 fine); taus[q] (K_q,);
    rich[q] (R, K_q): Richardson estimate (r t(lr/r) - t(lr)) / (r - 1) - τ; main (Q, R) and
    raw[li] (Q, R): the largest |error| over the jumps; werr[li] (Q, R): final-weight errors;
    slopes_main (Q,), slopes_raw[li], slopes_w[li]: slopes over ``fit`` (R,) bool."""

    L: np.ndarray
    fit: np.ndarray
    taus: list[np.ndarray]
    cross: list[list[np.ndarray]]
    rich: list[np.ndarray]
    main: np.ndarray
    raw: list[np.ndarray]
    werr: np.ndarray
    slopes_main: np.ndarray
    slopes_raw: list[np.ndarray]
    slopes_w: list[np.ndarray]


def rates(ds: xr.Dataset, P: ConvergenceParams) -> Rates:
    """The :class:`Rates` of a saved Dataset (docs/math.md §3.4: error O(1/log(1/lambda)) is a
    log-log slope of -1)."""
    L, r, K = -ds.log_lambda.values, float(P.refine), ds.K.values
    fit = ds.log10_lambda.values <= P.fit_max_log10
    Q = ds.sizes["problem"]
    taus = [ds.tau.values[q, : K[q]] for q in range(Q)]
    cross = [[ds.cross.values[li, q, :, : K[q]] for q in range(Q)] for li in range(2)]
    rich = [(r * cross[1][q] - cross[0][q]) / (r - 1.0) - taus[q][None] for q in range(Q)]

    def worst(e: np.ndarray) -> np.ndarray:  # (R, K) -> (R,) max |error| over jumps (NaN kept)
        return np.max(np.abs(e), axis=1)

    main = np.stack([worst(e) for e in rich])
    raw = [np.stack([worst(cross[li][q] - taus[q][None]) for q in range(Q)]) for li in range(2)]
    werr = ds.final_error.values

    def slopes(err: np.ndarray) -> np.ndarray:
        return np.array([slope_fit(L[fit], err[q, fit]) for q in range(Q)])

    return Rates(L, fit, taus, cross, rich, main, raw, werr, slopes(main),
                 [slopes(raw[li]) for li in range(2)], [slopes(werr[li]) for li in range(2)])


def rate_verdict(mean: float, interval: tuple[float, float]) -> str:
    """Reproduced if the bootstrap interval contains RATE_SLOPE (:func:`interval_verdict`) or
    the mean lies in SLOPE_BAND (the band rule on the point (mean, mean)); else not
    reproduced."""
    hits = (interval_verdict(RATE_SLOPE, interval), band_verdict((mean, mean), SLOPE_BAND))
    return "reproduced" if "reproduced" in hits else "not reproduced"


def weight_verdict(interval: tuple[float, float]) -> str:
    """Reproduced if the whole interval lies below SLOPE_BAND's upper end (the final weights
    converge at least as fast as 1/log(1/lambda)); else not reproduced."""
    return "reproduced" if interval[1] <= SLOPE_BAND[1] else "not reproduced"


def context(ds: xr.Dataset, P: ConvergenceParams) -> tuple[list[str], list[float], list[str], str]:
    """(problem names, step sizes, lambda labels, the fitted range in words)."""
    labels = [lambda_label(v) for v in ds.log10_lambda.values]
    fit = ds.log10_lambda.values <= P.fit_max_log10
    fit_txt = f"lambda <= 1e{int(P.fit_max_log10)} ({', '.join(np.array(labels)[fit])})"
    return [str(v) for v in ds.problem.values], [P.lr, P.lr / P.refine], labels, fit_txt


def rate_claim(ds: xr.Dataset, P: ConvergenceParams, rt: Rates) -> Claim:
    """Mean log-log slope of the extrapolated jump-time errors over problems (bootstrap)."""
    names, lrs, _, fit_txt = context(ds, P)
    mean, lo, hi = bootstrap_mean(rt.slopes_main, P.boot, P.seed)
    return Claim(
        "jump_time_rate",
        "The jump times converge to Algorithm 1's τ_k as lambda -> 0 (Theorem 2) at the rate "
        "O(1/log(1/lambda)) derived from its proof (log-log slope -1)",
        RATE_SLOPE, round(mean, 3), rate_verdict(mean, (lo, hi)), (round(lo, 3), round(hi, 3)),
        f"Per problem, least-squares slope of log(max_k |t_k - τ_k|) against log log(1/lambda) over "
        f"{fit_txt}, on the Richardson extrapolation of GD lr = {lrs[0]:g} and {lrs[1]:g}; mean over "
        f"the {len(names)} problems with a 95% bootstrap interval over problems. Rule (fixed in "
        f"advance): reproduced if the interval contains -1 or the mean lies in {list(SLOPE_BAND)}.",
        {**{f"slope {nm}": round(float(s), 3) for nm, s in zip(names, rt.slopes_main, strict=True)},
         **{f"raw GD lr = {lrs[li]:g}: mean slope": round(float(np.nanmean(rt.slopes_raw[li])), 3)
            for li in range(2)},
         "first jump only (extrapolated): mean slope": round(float(np.nanmean(
             [slope_fit(rt.L[rt.fit], np.abs(e[rt.fit, 0])) for e in rt.rich])), 3)},
        source=sources.RATE)


def bias_claim(ds: xr.Dataset, P: ConvergenceParams, rt: Rates) -> Claim:
    """The raw steps' Euler bias, a check (not a claim of the paper): reproduced if the coarse
    step's median signed error at the smallest lambda is the larger, else not reproduced."""
    _, lrs, labels, _ = context(ds, P)
    bias = {lrs[li]: float(np.nanmedian([np.nanmean((rt.cross[li][q] - rt.taus[q][None])[-1])
                                         for q in range(len(rt.taus))])) for li in range(2)}
    return Claim(
        "gd_step_bias",
        "GD at a fixed step converges to the flow's limit only up to an O(lr) Euler bias",
        "not in the paper (GD lr 0.01 throughout)",
        {f"median signed error at lambda = {labels[-1]}, lr = {k:g}": round(v, 5)
         for k, v in bias.items()},
        "reproduced" if bias[lrs[0]] > bias[lrs[1]] else "not reproduced", None,
        f"At the smallest lambda the raw errors at lr = {lrs[0]:g} exceed those at lr = {lrs[1]:g} "
        f"(Euler bias about lr/2 in accelerated time per first jump, independent of lambda), so "
        f"the raw slopes flatten at small lambda: mean raw slope "
        f"{np.nanmean(rt.slopes_raw[0]):.3f} (lr = {lrs[0]:g}) vs "
        f"{np.nanmean(rt.slopes_raw[1]):.3f} (lr = {lrs[1]:g}). Rule: reproduced if the coarse "
        f"step's error is the larger, else not reproduced (a consistency check of the bias "
        f"model, not a paper claim: not counted).",
        {f"lr = {lrs[li]:g}: slope per problem": [round(float(s), 3) for s in rt.slopes_raw[li]]
         for li in range(2)},
        source=sources.STEP_BIAS, role="check")


def weight_claim(ds: xr.Dataset, P: ConvergenceParams, rt: Rates) -> Claim:
    """Mean log-log slope of the final-weight errors at the fine step (bootstrap)."""
    names, lrs, labels, fit_txt = context(ds, P)
    wm, wlo, whi = bootstrap_mean(rt.slopes_w[1], P.boot, P.seed + 1)
    return Claim(
        "final_weight_rate",
        "The final network converges to Algorithm 1's last saddle as lambda -> 0 (Theorem 2), at "
        "least as fast as the O(1/log(1/lambda)) derived from its proof",
        "slope <= -1 (error O(1/log(1/lambda)) or faster)", round(wm, 3),
        weight_verdict((wlo, whi)), (round(wlo, 3), round(whi, 3)),
        f"Per problem, slope of log(max |a - a_lim|, |W - W_lim|) against log log(1/lambda) over "
        f"{fit_txt}, GD lr = {lrs[1]:g}; mean over problems and 95% bootstrap interval. Rule: the "
        f"interval lies below {SLOPE_BAND[1]}. The final weights converge faster than "
        f"1/log(1/lambda) (a point fitted by neuron i while neuron j was also active on it keeps "
        f"the part of w_j it had then, of norm lambda^(-e_j) = lambda^(|e_j|), so the error decays "
        f"like a power of lambda, slowly when two jumps are close). Errors at lambda = "
        f"{labels[-1]}: {[float(f'{v:.3g}') for v in rt.werr[1][:, -1]]}.",
        {**{f"slope {nm}": round(float(s), 3) for nm, s in zip(names, rt.slopes_w[1], strict=True)},
         f"GD lr = {lrs[0]:g}: mean slope": round(float(np.nanmean(rt.slopes_w[0])), 3)},
        source=sources.FINAL_WEIGHTS)


def hand_verdict(tau: np.ndarray, measured: np.ndarray) -> str:
    """Reproduced if Algorithm 1 gives HAND_TAU (to 1e-6) and GD's jump times are within
    HAND_RTOL of it; else not reproduced."""
    ok = np.allclose(tau, HAND_TAU, atol=1e-6) and np.all(
        np.abs(measured - HAND_TAU) < HAND_RTOL * np.array(HAND_TAU))
    return "reproduced" if ok else "not reproduced"


def hand_claim(ds: xr.Dataset, P: ConvergenceParams, rt: Rates) -> Claim:
    """The §3.6 hand vector's jump times at the smallest lambda, fine step."""
    names, lrs, labels, _ = context(ds, P)
    h = names.index(HAND_NAME)
    fine = rt.cross[1][h]
    return Claim(
        "hand_vector", "docs/math.md §3.6: GD at lambda -> 0 jumps at τ = (0.8, 0.949342)",
        list(HAND_TAU), [round(float(v), 5) for v in fine[-1]], hand_verdict(rt.taus[h], fine[-1]),
        None,
        f"Raw GD at lr = {lrs[1]:g}, lambda = {labels[-1]}; Algorithm 1 gives "
        f"{np.array2string(rt.taus[h], precision=6)}. Rule: within {HAND_RTOL:.0%} (docs/math.md "
        f"quotes GD at 0.822 and 0.961 at its lambda). Extrapolated: "
        f"{np.array2string(rt.rich[h][-1] + rt.taus[h], precision=5)}.",
        {f"lambda {labels[i]}": [round(float(v), 5) for v in fine[i]] for i in range(len(labels))},
        source=sources.HAND)


def judge(ds: xr.Dataset, P: ConvergenceParams) -> list[Claim]:
    """The three claims and the step-bias check."""
    rt = rates(ds, P)
    return [rate_claim(ds, P, rt), bias_claim(ds, P, rt), weight_claim(ds, P, rt),
            hand_claim(ds, P, rt)]


# ------------------------------------------------------------------------------------ draw
def draw(ds: xr.Dataset, P: ConvergenceParams) -> list[Figure]:
    """Jump-time and final-weight errors against log(1/lambda), raw and times log(1/lambda)."""
    import matplotlib.pyplot as plt

    rt, (names, lrs, _, _) = rates(ds, P), context(ds, P)
    L, fit, main, raw, werr, Q = rt.L, rt.fit, rt.main, rt.raw, rt.werr, len(names)
    colors = plt.cm.tab10(np.arange(Q))
    fig, axes = plt.subplots(2, 2, figsize=(13, 9.5))
    (a1, a2), (a3, a4) = axes
    for q in range(Q):
        c = colors[q]
        a1.loglog(L, main[q], "o-", color=c, ms=4, label=f"{names[q]} (extrapolated)")
        a2.semilogx(L, main[q] * L, "o-", color=c, ms=4, label=names[q])
        for li, ls, mk in ((0, ":", "x"), (1, "--", "+")):
            a1.loglog(L, raw[li][q], mk + ls, color=c, ms=5, lw=0.8)
            a2.semilogx(L, raw[li][q] * L, mk + ls, color=c, ms=5, lw=0.8)
            a3.loglog(L, werr[li][q], mk + ls, color=c, ms=5, lw=0.9,
                      label=names[q] if li == 1 else None)
            a4.semilogx(L, werr[li][q] * L, mk + ls, color=c, ms=5, lw=0.9)
    for ax, data in ((a1, main), (a3, werr[1])):
        ref_at = np.nanmedian(data[:, fit][:, 0]) if np.any(np.isfinite(data[:, fit])) else 1.0
        xs = np.array([L[fit][0], L[-1]])
        ax.loglog(xs, ref_at * xs[0] / xs, "k-", lw=1.5, alpha=0.6, label="slope -1 reference")
    for li, ls, mk in ((0, ":", "x"), (1, "--", "+")):
        a1.plot([], [], mk + ls, color="0.3", label=f"GD lr = {lrs[li]:g} (raw)")
        a3.plot([], [], mk + ls, color="0.3", label=f"GD lr = {lrs[li]:g}")
    a1.set_ylabel("max_k |measured - τ_k| (accelerated time)")
    a1.set_title("(a) jump-time error")
    a2.set_ylabel("max_k |error| x log(1/lambda) (flow time)")
    a2.set_title("(b) error x log(1/lambda): bounded if the error is O(1/log(1/lambda))")
    a3.set_ylabel("max |a - a_lim|, |W - W_lim| at the end")
    a3.set_title("(c) final-weight error")
    a4.set_ylabel("final-weight error x log(1/lambda)")
    a4.set_title("(d) final-weight error x log(1/lambda)")
    a4.set_yscale("log")
    for ax in axes.ravel():
        ax.set_xlabel("log(1/lambda)")
        ax.grid(alpha=0.3, which="both")
        ax.axvspan(L[fit].min(), L[fit].max(), color="0.9", zorder=-1)
    for ax in (a1, a2, a3):
        ax.legend(fontsize=7)
    fig.suptitle(f"Convergence to Algorithm 1: {Q - 1} random problems (n = d = {P.n}, "
                 f"m = {P.m}, random basis, labels N(0,1), MSE) and the §3.6 hand vector (square "
                 f"loss); GD lr = {lrs[0]:g} and {lrs[1]:g}", fontsize=10)
    fig.tight_layout()
    return [Figure(
        "convergence", fig,
        "(a) Largest jump-time error of each problem against log(1/lambda), log-log: "
        f"Richardson extrapolation of the two step sizes (circles, solid; the flow's own "
        f"error), raw GD at lr = {lrs[0]:g} (x, dotted) and {lrs[1]:g} (+, dashed); black: "
        "slope -1. (b) The same errors times log(1/lambda): flat for an O(1/log(1/lambda)) "
        "error; the raw curves bend up at large log(1/lambda) from the Euler bias (about "
        "lr/2 in accelerated time, independent of lambda). (c, d) Final-weight errors. "
        "Grey band: the lambda range of the slope fits.")]


# ---------------------------------------------------------------------------------- method
def method(ds: xr.Dataset, P: ConvergenceParams) -> list[Section]:
    """Section "Method": the problems, the batches and the error table."""
    rt, (names, lrs, labels, _) = rates(ds, P), context(ds, P)
    L, K = rt.L, ds.K.values
    seeds, chosen = ds.seed_tried.values, ds.seed_selected.values == 1
    head = "| problem | K | lambda | log(1/λ) | " + " | ".join(
        [f"max err lr={lrs[0]:g}", f"max err lr={lrs[1]:g}", "max err extrapolated",
         "x log(1/λ)", f"final err lr={lrs[1]:g}"]) + " |"
    rows = [head, "|" + "---|" * 9]
    for q, nm in enumerate(names):
        for i in range(len(L)):
            rows.append(f"| {nm} | {K[q]} | {labels[i]} | {L[i]:.1f} | "
                        f"{rt.raw[0][q, i]:.3g} | {rt.raw[1][q, i]:.3g} | {rt.main[q, i]:.3g} | "
                        f"{rt.main[q, i] * L[i]:.3g} | {rt.werr[1][q, i]:.3g} |")
    groups = "; ".join(", ".join(labels[i] for i in g) for g in scale_groups(L))
    return [("Method", (
        f"Random problems: n = d = {P.n} orthonormal points in a random basis, labels N(0,1), "
        f"m = {P.m} balanced neurons, MSE loss (c_L = 2/n), seeds {seeds[chosen].tolist()} "
        f"(the first {P.problems} seeds from {P.seed} whose limit process has >= 2 jumps, "
        f"unique argmins and consecutive jumps >= {MIN_GAP} τ_K apart; rejected: "
        f"{seeds[~chosen].tolist()}). Hand vector: X = I_4, y = (3, 4, 1, 2), m = 2, loss "
        f"(1/(2n)) sum r^2 (c_L = 1/4). Log-norm parametrisation (balance 'free', trained in the "
        f"data span); the lambda are trained in groups (log(1/lambda) within a factor "
        f"{GROUP_RATIO}: {groups}), each group in one batch for 1.08 τ_K log(1/lambda) of its "
        f"smallest lambda + {SETTLE:.0f} flow time (τ_K the largest over the problems), loss "
        f"recorded every {P.record_dt} flow time; the final weights are those at the end. "
        f"Crossing times interpolate linearly between records. Algorithm 1 per problem:\n\n"
        + "\n".join(f"- {nm}: τ = {np.array2string(rt.taus[q], precision=4)}, loss floor "
                    f"{ds.loss_floor.values[q]:.3g}" for q, nm in enumerate(names))
        + "\n\n" + "\n".join(rows)))]


REPRODUCTION = Reproduction(
    "town-convergence", "convergence rate to the limit process",
    "Town, Boursier, Lewis, Englert, Lazić (003), Theorem 2 (not a figure)",
    params=ConvergenceParams, presets=PRESETS, simulate=simulate, judge=judge, draw=draw,
    method=method, summary=SUMMARY)
