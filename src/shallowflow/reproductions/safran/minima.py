"""safran-minima: the census of the end points of gradient descent on the Safran-Shamir objective,
at n = k students and under mild over-parameterization n = k + 1 (docs/math.md §11.8).

Papers: Safran and Shamir, "Spurious Local Minima are Common in Two-Layer ReLU Neural Networks"
(ICML 2018): F(W) = 1/2 E[(sum_i relu(<w_i, x>) - sum_i relu(<e_i, x>))^2] over W in R^{k x k},
Xavier starts, GD at step 5/k; Safran, Yehudai and Shamir, "The Effects of Mild
Over-parameterization on the Optimization Landscape of Shallow ReLU Neural Networks" (COLT
2021): the same objective with n = k + extra students. Method:
:mod:`shallowflow.reproductions.safran.census_runs`.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
import pandas as pd
import xarray as xr
from pydantic import Field

from shallowflow.analysis.fits import binomial_interval
from shallowflow.reproductions.base import Figure, Params, Reproduction, Section
from shallowflow.reproductions.claims import Claim, qualitative, threshold
from shallowflow.reproductions.fields import Runs, Seed
from shallowflow.reproductions.safran import safran_sources as sources
from shallowflow.reproductions.safran.census_runs import TOL, simulate_census
from shallowflow.training.entry import Trainer

MAX_K = 40
"""The largest teacher width: the dense Hessian of a k = 40, n = 44 end point has 1760 rows."""


class MinimaParams(Params):
    """Parameters of safran-minima."""

    k_values: list[Annotated[int, Field(ge=2, le=MAX_K)]] = Field(
        min_length=1, description=f"teacher widths k = input dimension d (2..{MAX_K})")
    runs: Runs = Field(description="runs (Xavier starts) per k and student width n")
    extra_values: list[Annotated[int, Field(ge=0, le=4)]] = Field(
        [0], min_length=1, description="student widths n = k + extra (0..4)")
    seed: Seed
    lr_scale: float = Field(5.0, gt=0, description="GD step lr_scale / k (the papers: 5)")
    steps: int = Field(100_000, gt=0, description="step budget per run")
    stop_grad: float = Field(1e-12, gt=0, description="stop once ||grad F||_F <= stop_grad")
    stop_loss: float = Field(
        0.0, ge=0, lt=TOL.loss, description="also stop once F < stop_loss, at a global minimum "
        f"(0: off, the papers' protocol; below the global tolerance {TOL.loss:g}, so that a run "
        "stopped here is global whatever the rounding of F); at n > k the global minima are "
        "degenerate and GD nears them too slowly to reach stop_grad (docs/math.md §11.8)")


PRESETS = {
    "quick": {"k_values": list(range(6, 11)), "runs": 100, "extra_values": [0], "seed": 0},
    "paper": {"k_values": [*range(6, 21), 30], "runs": 500, "extra_values": [0, 1], "seed": 0,
              "stop_loss": 1e-11},
}
CONFIDENCE = 0.95
"""The level of the Clopper-Pearson intervals of the fractions."""


def simulate(P: MinimaParams, train: Trainer) -> xr.Dataset:
    return simulate_census(P.k_values, P.extra_values, P.runs, P.seed, P.lr_scale, P.steps,
                           P.stop_grad, train, P.stop_loss)


# ------------------------------------------------------------------------------------ measures
def fractions(ds: xr.Dataset) -> pd.DataFrame:
    """Per (k, n): runs, converged runs (||grad F|| <= stop_grad), decided runs (converged, or at
    a global minimum by their loss F <= 1e-10 without converging: stopped by ``stop_loss`` or
    nearing a degenerate global minimum, docs/math.md §11.8), those at a spurious (non-global)
    minimum, their fraction among the decided runs and its Clopper-Pearson interval."""
    runs = pd.DataFrame({c: ds[f"run_{c}"].values for c in ("k", "n", "converged", "global")})
    rows = []
    for (k, n), g in runs.groupby(["k", "n"]):
        conv = int(g["converged"].sum())
        decided = int((g["converged"] | g["global"]).sum())
        spur = int((g["converged"] & ~g["global"]).sum())
        lo, hi = binomial_interval(spur, decided, CONFIDENCE)
        rows.append({"k": int(k), "n": int(n), "runs": len(g), "converged": conv,
                     "decided": decided, "spurious": spur,
                     "fraction": spur / decided if decided else np.nan, "lo": lo, "hi": hi})
    return pd.DataFrame(rows)


def census_table(ds: xr.Dataset, P: MinimaParams | None = None) -> pd.DataFrame:
    """The census (``census.csv``): one row per k, n and class, columns k, n, runs, converged,
    loss, eig_min, multiplicity, global (docs/math.md §11.8)."""
    cols = ("k", "n", "runs", "converged", "loss", "eig_min", "multiplicity", "global")
    table = pd.DataFrame({c: ds[f"class_{c}"].values for c in cols})
    return table.astype({"converged": bool, "global": bool})


def tables(ds: xr.Dataset, P: MinimaParams) -> dict[str, pd.DataFrame]:
    return {"census.csv": census_table(ds, P)}


def _spurious_classes(ds: xr.Dataset) -> pd.DataFrame:
    t = census_table(ds)
    return t[t["converged"] & ~t["global"]]


def work_shares(ds: xr.Dataset, budget: int) -> pd.DataFrame:
    """Per (k, n): the steps of all its runs, those of the runs that used the whole budget, and
    its share of the training work, counting a step of width n at k as n (n + k) k operations
    (the closed form's O((n^2 + n k) d), docs/math.md §11.2), largest first."""
    t = pd.DataFrame({"k": ds.run_k.values, "n": ds.run_n.values,
                      "steps": ds.run_steps.values.astype(np.int64)})
    t["at_budget"] = np.where(t["steps"] >= budget, t["steps"], 0)
    g = t.groupby(["k", "n"], as_index=False)[["steps", "at_budget"]].sum()
    work = g["steps"] * g["n"] * (g["n"] + g["k"]) * g["k"]
    g["share"] = work / work.sum()
    return g.sort_values("share", ascending=False, ignore_index=True)


def _time_parts(ds: xr.Dataset, budget: int) -> str:
    """Where the time went: training, Hessians, census (wall seconds) and the work by (k, n)."""
    g = work_shares(ds, budget)
    train = (f"training {ds.attrs['train_s']:.1f} s, " if "train_s" in ds.attrs else "")
    top = ", ".join(f"k = {int(r.k)}, n = {int(r.n)} {r.share:.0%}" for r in g.head(5).itertuples())
    total, stuck = int(g["steps"].sum()), int(g["at_budget"].sum())
    return (f"Parts: {train}Hessians and their spectra {ds.attrs['hessian_s']:.1f} s, "
            f"canonical forms and census {ds.attrs['census_s']:.1f} s. Steps of all runs: "
            f"{total}, of which {stuck} ({stuck / total:.1%}) by runs that used the whole budget. "
            f"Largest shares of the training work (steps x n (n + k) k): {top}.")


# -------------------------------------------------------------------------------------- claims
def _trend_claim(f: pd.DataFrame) -> Claim:
    """The spurious fraction at n = k grows with k: the interval at the largest k lies above the
    one at the smallest k."""
    own = f[f["n"] == f["k"]].sort_values("k")
    per_k = {int(r.k): [round(r.fraction, 4), [round(r.lo, 4), round(r.hi, 4)]]
             for r in own.itertuples()}
    if len(own) < 2:
        verdict = "inconclusive"
        notes = "one k only: no trend to judge."
    else:
        first, last = own.iloc[0], own.iloc[-1]
        verdict = ("reproduced" if last.lo > first.hi else
                   "not reproduced" if last.hi < first.lo else "inconclusive")
        notes = (f"Rule: the {CONFIDENCE:.0%} Clopper-Pearson interval at k = {int(last.k)} lies "
                 f"above the one at k = {int(first.k)} (reproduced), below it (not reproduced), "
                 "or they overlap (inconclusive). Fractions among the decided runs: converged, or "
                 f"at a global minimum by their loss (F <= {TOL.loss:g}).")
    return Claim("spurious-fraction-grows", "The fraction of GD runs from Xavier's start that "
                 "end at a spurious (non-global) minimum grows with k (n = k).",
                 "increasing in k", per_k, verdict, notes=notes,
                 source=qualitative(sources.INCREASING))


def _strict_claim(ds: xr.Dataset) -> Claim:
    """Every converged spurious end point at n = k is a strict local minimum."""
    own = (ds.run_n.values == ds.run_k.values) & ds.run_converged.values & ~ds.run_global.values
    labels = ds.run_label.values[own]
    strict = int(np.sum(labels == "strict local minimum"))
    eig = ds.run_eig_min.values[own]
    measured = {"spurious end points": int(own.sum()), "strict local minima": strict,
                "smallest eig_min": float(np.min(eig)) if eig.size else np.nan}
    verdict = ("inconclusive" if not own.any() else
               "reproduced" if strict == own.sum() else "not reproduced")
    return Claim("spurious-are-strict-minima", "Every spurious end point (n = k) is a strict "
                 "local minimum: its Hessian's smallest eigenvalue is positive.",
                 "eig_min > tol_curv at every spurious end point", measured, verdict,
                 notes=f"tol_curv = {TOL.curvature:g} x max(1, max|eigenvalue|) (docs/math.md "
                       "§9.6); the Hessian is exact at every end point (§11.3).",
                 source=qualitative(sources.LOCAL_MINIMA))


def _overparam_claims(ds: xr.Dataset, f: pd.DataFrame) -> list[Claim]:
    """n = k + 1 against n = k: the pooled spurious fraction falls; the global minima lose
    their strong convexity."""
    if not ((f["n"] == f["k"]).any() and (f["n"] == f["k"] + 1).any()):
        return []
    pooled = {}
    for extra in (0, 1):
        g = f[f["n"] == f["k"] + extra]
        spur, decided = int(g["spurious"].sum()), int(g["decided"].sum())
        pooled[extra] = (spur / decided if decided else np.nan,
                         binomial_interval(spur, decided, CONFIDENCE))
    (f0, i0), (f1, i1) = pooled[0], pooled[1]
    verdict = ("reproduced" if i1[1] < i0[0] else "not reproduced" if i1[0] > i0[1]
               else "inconclusive")
    fewer = Claim("overparameterization-helps", "One extra neuron (n = k + 1) makes GD reach a "
                  "global minimum more often than n = k (pooled over k).",
                  "fraction(n = k + 1) < fraction(n = k)",
                  {"n = k": [round(f0, 4), list(np.round(i0, 4))],
                   "n = k + 1": [round(f1, 4), list(np.round(i1, 4))]}, verdict,
                  interval=tuple(map(float, i1)),
                  notes="Rule: the pooled Clopper-Pearson intervals do not overlap.",
                  source=qualitative(sources.EASIER))
    convex = _convexity_claim(ds)
    return [fewer, convex]


def _convexity_claim(ds: xr.Dataset) -> Claim:
    """Strongly convex global minima at n = k; at n = k + 1 not: a singular Hessian at the
    converged global end points, or a negative eigenvalue at a global end point (F <= 1e-10)."""
    extra = ds.run_n.values - ds.run_k.values
    smooth = np.isfinite(ds.run_eig_min.values)
    glob, conv = ds.run_global.values, ds.run_converged.values
    eig = ds.run_eig_min.values
    tol = TOL.curvature * np.maximum(1.0, np.abs(ds.run_eig_max.values))
    at_zero = int(np.sum(glob & (extra == 1) & ~smooth))
    own, more = glob & smooth & (extra == 0), glob & smooth & (extra == 1)
    strongly = own.any() and bool(np.all(eig[own] > tol[own]))
    singular = bool((more & conv).any() and np.all(eig[more & conv] <= tol[more & conv]))
    negative = int(np.sum(more & (eig < -tol)))
    positive = bool(more.any() and np.all(eig[more] > tol[more]))
    if not (own.any() and more.any()):
        verdict = "inconclusive"
    elif not strongly or positive:
        verdict = "not reproduced"
    else:
        verdict = "reproduced" if singular or negative else "inconclusive"
    return Claim(
        "global-minima-convexity", "At n = k the global minima are strongly convex (eig_min > "
        "0); with one extra neuron they are not even locally convex.",
        "eig_min > tol at n = k; at n = k + 1 eig_min <= tol at the converged global end "
        "points, or < -tol at a global end point",
        {"n = k: smallest eig_min": float(eig[own].min()) if own.any() else np.nan,
         "n = k + 1: largest eig_min (converged)":
             float(eig[more & conv].max()) if (more & conv).any() else np.nan,
         "n = k + 1: smallest eig_min": float(eig[more].min()) if more.any() else np.nan,
         "n = k + 1: end points with eig_min < -tol": negative}, verdict,
        notes=f"Over the global end points (F <= {TOL.loss:g}, whether converged, stopped by stop_loss "
              "or at the budget) without a zero neuron (at a zero neuron L is not twice "
              f"differentiable, docs/math.md §11.3: {at_zero} such end point(s) at n = k + 1 "
              "left out). At n = k + 1 either reading shows the paper's point: a singular Hessian "
              f"at the minima (not strongly convex), or negative curvature within F <= {TOL.loss:g} of "
              "them (not convex on any ball that reaches that point); every eigenvalue above "
              "tol there is not reproduced. tol = tol_curv as in spurious-are-strict-minima.",
        source=qualitative(sources.CONVEXITY))


def _oracle_claim(ds: xr.Dataset) -> Claim:
    """The k = 7 minimum of the COLT 2021 code, if a class at k = n = 7 has its loss."""
    t = _spurious_classes(ds)
    t = t[(t["k"] == 7) & (t["n"] == 7)]
    near = t[np.abs(t["loss"] - sources.ORACLE_LOSS) <= 5e-7]
    if near.empty:
        return Claim("k7-oracle", "The spurious minimum of k = 7 printed with the COLT 2021 code "
                     "is among the end points at k = n = 7.", sources.ORACLE_LOSS,
                     "not found" if 7 in set(ds.run_k.values) else "k = 7 not run",
                     "inconclusive", notes="No class at k = n = 7 with F within 5e-7 of it.",
                     source=sources.ORACLE)
    row = near.iloc[0]
    ok = abs(row["eig_min"] - sources.ORACLE_EIG_MIN) <= 5e-6
    return Claim("k7-oracle", "The spurious minimum of k = 7 printed with the COLT 2021 code is "
                 "among the end points at k = n = 7, with its loss and smallest eigenvalue.",
                 [sources.ORACLE_LOSS, sources.ORACLE_EIG_MIN],
                 [float(row["loss"]), float(row["eig_min"])],
                 "reproduced" if ok else "not reproduced",
                 notes=f"Reached by {int(row['multiplicity'])} of {int(row['runs'])} runs.",
                 source=sources.ORACLE)


def _recount_check(ds: xr.Dataset) -> Claim:
    """The census adds up: the multiplicities of each (k, n) sum to its runs."""
    t = census_table(ds)
    sums = t.groupby(["k", "n"]).agg(total=("multiplicity", "sum"), runs=("runs", "first"),
                                     classes=("global", "size"))
    ok = bool((sums["total"] == sums["runs"]).all())
    spurious = _spurious_classes(ds).groupby(["k", "n"]).size()
    return Claim("census-recount", "The census counts every run once; distinct spurious "
                 "classes per (k, n) listed.", "multiplicities sum to runs",
                 {f"k={k}, n={n}": int(spurious.get((k, n), 0)) for k, n in sums.index},
                 "reproduced" if ok else "not reproduced", role="check",
                 source=threshold("a consistency check of the census (docs/math.md §11.8)"))


def judge(ds: xr.Dataset, P: MinimaParams) -> list[Claim]:
    f = fractions(ds)
    return [_trend_claim(f), _strict_claim(ds), *_overparam_claims(ds, f), _oracle_claim(ds),
            _recount_check(ds)]


# ------------------------------------------------------------------------------------- figures
def draw(ds: xr.Dataset, P: MinimaParams) -> list[Figure]:
    import matplotlib.pyplot as plt

    f = fractions(ds)
    fig1, ax = plt.subplots(figsize=(6, 4))
    for extra, g in f.assign(extra=f["n"] - f["k"]).groupby("extra"):
        ax.errorbar(g["k"], g["fraction"], yerr=[g["fraction"] - g["lo"], g["hi"] - g["fraction"]],
                    marker="o", ms=4, capsize=3, label=f"n = k + {extra}" if extra else "n = k")
    ax.set_xlabel("k (teacher width = input dimension)")
    ax.set_ylabel("fraction of runs at a spurious minimum")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    figures = [Figure("spurious_fraction", fig1,
                      f"Fraction of runs (Xavier start, GD at step {P.lr_scale:g}/k until "
                      f"||grad F|| <= {P.stop_grad:g}"
                      + (f" or F < {P.stop_loss:g}" if P.stop_loss else "")
                      + f") ending at a spurious minimum, among the runs that ended at a "
                      f"minimum, with {CONFIDENCE:.0%} Clopper-Pearson intervals; {P.runs} runs "
                      "per point.")]
    sp = _spurious_classes(ds)
    fig2, ax = plt.subplots(figsize=(6, 4))
    if not sp.empty:
        for extra, g in sp.assign(extra=sp["n"] - sp["k"]).groupby("extra"):
            sc = ax.scatter(g["loss"], g["eig_min"], s=12 + 8 * g["multiplicity"], c=g["k"],
                            marker="o" if extra == 0 else "^", cmap="viridis", alpha=0.7,
                            edgecolors="k", linewidths=0.3, vmin=min(P.k_values),
                            vmax=max(P.k_values),
                            label=f"n = k + {extra}" if extra else "n = k")
        fig2.colorbar(sc, ax=ax, label="k")
        ax.legend(fontsize=8)
    ax.set_xlabel("loss F at the minimum")
    ax.tick_params(axis="x", labelrotation=30)
    ax.set_ylabel("smallest Hessian eigenvalue")
    ax.grid(alpha=0.3)
    figures.append(Figure("census", fig2, "The census: each distinct spurious minimum (up to "
                          "permutations of neurons and coordinates) by its loss and smallest "
                          "Hessian eigenvalue; marker area grows with its multiplicity (runs "
                          "that reached it), colour = k."))
    if not sp.empty:
        own = sp[sp["n"] == sp["k"]]
        pick = own if not own.empty else sp
        pick = pick[pick["k"] == pick["k"].max()].sort_values("multiplicity").iloc[-1]
        c = int(pick.name)
        W = ds.class_W.values[c][: int(pick["n"]), : int(pick["k"])]
        fig3, ax = plt.subplots(figsize=(5, 4.4))
        lim = float(np.nanmax(np.abs(W)))
        im = ax.imshow(W, cmap="RdBu_r", vmin=-lim, vmax=lim)
        fig3.colorbar(im, ax=ax, label="w_ij")
        ax.set_xlabel("coordinate j")
        ax.set_ylabel("neuron i")
        ax.set_title(f"k = {int(pick['k'])}, n = {int(pick['n'])}: F = {pick['loss']:.6g}, "
                     f"eig_min = {pick['eig_min']:.4g}", fontsize=9)
        figures.append(Figure("spurious_minimum", fig3,
                              "The most frequent spurious minimum at the largest k, in its "
                              "canonical form (rows and columns permuted so that the matched "
                              "teacher coordinates lie on the diagonal; docs/math.md §11.8)."))
    return figures


def method(ds: xr.Dataset, P: MinimaParams) -> list[Section]:
    f = fractions(ds)
    stuck = int((~ds.run_converged.values).sum())
    undecided = int((~ds.run_converged.values & ~ds.run_global.values).sum())
    lines = [f"k = {int(r.k)}, n = {int(r.n)}: {r.spurious}/{r.decided} spurious "
             f"({r.fraction:.3f}, interval {r.lo:.3f}-{r.hi:.3f}); {r.runs - r.converged} not "
             f"converged, {r.runs - r.decided} of them away from a global minimum"
             for r in f.itertuples()]
    steps = ds.run_steps.values
    return [
        ("Method", "For each k and n = k + extra: independent runs from Xavier's start (w_ij ~ "
         "N(0, 1/k), output weights 1 and frozen), GD on the closed-form population loss "
         f"(docs/math.md §11.2) at step {P.lr_scale:g}/k until ||grad F||_F <= {P.stop_grad:g} "
         f"(tested every {int(ds.attrs['record_every'])} steps; budget {P.steps} steps)"
         + (f" or F < {P.stop_loss:g} (a global minimum: every spurious one found has F > 1e-3)"
            if P.stop_loss else "") + ". At every "
         "end point: the exact Hessian (assembled from its closed-form blocks, §11.3; equal to "
         "jax.hessian of the closed-form loss) and its spectrum, "
         "the verdict of §9.6, and the canonical form up to permutations of neurons and "
         f"coordinates; two end points are one minimum when their canonical forms agree to "
         f"{float(ds.attrs['class_tol']):g} in every entry (§11.8). census.csv lists every class "
         "(the converged global minima of each (k, n) as one; the runs that did not converge as one "
         "at a global minimum by their loss, one elsewhere)."),
        ("Counts", "; ".join(lines) + f". Runs not converged in all: {stuck}, {undecided} of "
         "them away from a global minimum (left out of the fractions)."),
        ("Run time", f"Runs trained: {ds.sizes['run']}; steps to stop: median "
         f"{np.median(steps):.0f}, max {np.max(steps):.0f}. " + _time_parts(ds, P.steps)),
    ]


REPRODUCTION = Reproduction(
    "safran-minima", "spurious minima of the Safran-Shamir objective, up to permutation",
    "Safran and Shamir (ICML 2018); Safran, Yehudai and Shamir (COLT 2021)",
    MinimaParams, PRESETS, simulate, judge, draw, method,
    summary="Gradient descent from Xavier's start on F(W) = 1/2 E[(sum_i relu(<w_i, x>) - "
            "sum_i relu(<e_i, x>))^2]: the fraction of runs that end at a spurious minimum "
            "against k, the census of distinct minima up to permutation (census.csv) and what "
            "one extra neuron changes.", tables=tables)
