"""The convergence threshold N(d, p) (DPB Figures 4 and 5; MATH.md §1.4(13), §5).

N is the n at which the probability of convergence (the paper's rule, L < C_y^-/(2n) within
t_inf) crosses 1/2. Protocol for one (d, p): a coarse search with few runs brackets the crossing
(from n = 4d, multiplied by ``growth`` until fewer than half of the runs converge), then the
paper's grid n = N0 - span d .. N0 + span d in steps of ``step`` d around the bracket's midpoint
N0 is run with ``runs`` runs per n, and N is the binomial maximum-likelihood logistic fit
(:func:`shallowflow.fits.logistic_threshold`) with its 95% profile interval. The paper uses
span = 15, step = 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from shallowflow.fits import ThresholdFit, logistic_threshold, scaling_fits
from shallowflow.reproductions.base import Context
from shallowflow.reproductions.claims import Claim
from shallowflow.reproductions.dana.convergence import convergence_grid, summarise

MAX_REL_WIDTH = 0.5  # thresholds less certain than this (median interval / N) decide nothing


@dataclass
class ThresholdResult:
    d: int
    p: int
    coarse: list[tuple[int, float]]
    grid: xr.Dataset
    fit: ThresholdFit | None


def find_threshold(d: int, p: int, runs: int, coarse_runs: int, span: float, step: float,
                   seed: int, n_start: int | None = None, growth: float = 1.5,
                   show_progress: bool = True) -> ThresholdResult:
    """Bracket and fit N(d, p) (module docstring)."""
    n = max(4, n_start or 4 * d)  # below ~4d the budget t_inf (which grows with n) is tiny
    coarse: list[tuple[int, float]] = []
    for k in range(40):
        g = convergence_grid([n], d, p, coarse_runs, seed + 100_000 + k, "gaussian", show_progress)
        prob = float(summarise(g).probability.values[0])
        coarse.append((n, prob))
        if prob < 0.5:
            break
        n = int(np.ceil(n * growth))
    above = [m for m, q in coarse if q >= 0.5]
    low = above[-1] if above else max(2, int(n / growth))
    centre = 0.5 * (low + n)
    stride = max(1, round(step * d))
    lo = max(2, round(centre - span * d), round(centre / 2))  # small n: t_inf is tiny there
    ns = np.arange(lo, round(centre + span * d) + 1, stride)
    grid = convergence_grid(ns, d, p, runs, seed, "gaussian", show_progress)
    return ThresholdResult(d, p, coarse, grid, grid_threshold(grid))


def grid_threshold(grid: xr.Dataset, rule: str = "text") -> ThresholdFit | None:
    """The logistic threshold of a convergence grid under ``rule`` ("text": L < C_y^-/(2n), "code":
    L < 1/(2n)); None when it cannot be fitted or lies outside the grid by more than one step (an
    extrapolated threshold, the grid missed the transition, decides nothing)."""
    ns = grid.n.values
    s = summarise(grid, rule)
    try:
        fit = logistic_threshold(ns, s.successes.values, s.trials.values)
    except ValueError:
        return None
    stride = np.diff(ns).max() if len(ns) > 1 else 0
    return fit if ns.min() - stride <= fit.threshold <= ns.max() + stride else None


def threshold_scan(ctx: Context, axis: str, values: Sequence[int],
                   fixed: dict[str, int], paper_law: str,
                   verdict_rule: Callable[[dict, np.ndarray, np.ndarray], tuple[str, str]]
                   ) -> list[Claim]:
    """Run :func:`find_threshold` for each value of ``axis`` ("d" or "p"), draw N against it
    with linear, power-law and logarithmic fits, and state the paper's law as a claim."""
    P = ctx.params
    results = []
    for k, v in enumerate(values):
        dp = {**fixed, axis: int(v)}
        results.append(find_threshold(dp["d"], dp["p"], P["runs"], P["coarse_runs"], P["span"],
                                      P["step"], P["seed"] + 10_000 * k,
                                      show_progress=ctx.show_progress))
    for r in results:
        ctx.data(f"grid_{axis}{getattr(r, axis)}", r.grid)
    ok = [r for r in results if r.fit is not None]
    x = np.array([getattr(r, axis) for r in ok], float)
    N = np.array([r.fit.threshold for r in ok])
    lo = np.array([r.fit.interval[0] for r in ok])
    hi = np.array([r.fit.interval[1] for r in ok])
    table = xr.Dataset({"threshold": (axis, N), "lower": (axis, lo), "upper": (axis, hi)},
                       coords={axis: x})
    ctx.data("thresholds", table)
    fits = scaling_fits(x, N) if len(x) >= 3 else {}

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ax1.errorbar(x, N, yerr=[N - lo, np.where(np.isfinite(hi), hi - N, 0)], fmt="o", color="k",
                 ms=4, capsize=2, label="fitted threshold (95% interval)")
    xx = np.linspace(x.min(), x.max(), 200) if len(x) else x
    for (law, f), c in zip(fits.items(), ("C0", "C1", "C2"), strict=False):
        ax1.plot(xx, f(xx), color=c, lw=1, label=f"{law}: {f.formula} (R2 {f.r2:.3f})")
    ax1.set_xlabel(axis)
    label = f"threshold N(d, p = {fixed['p']})" if axis == "d" else f"threshold N(d = {fixed['d']}, p)"
    ax1.set_ylabel(label)
    ax1.legend(fontsize=7)
    ax1.grid(alpha=0.3)
    for r, c in zip(results, plt.cm.viridis(np.linspace(0, 1, len(results))), strict=True):
        s = summarise(r.grid)
        ax2.plot(r.grid.n, s.probability, ".", color=c, label=f"{axis} = {getattr(r, axis)}")
        if r.fit is not None:
            nn = np.linspace(float(r.grid.n.min()), float(r.grid.n.max()), 200)
            ax2.plot(nn, r.fit.probability(nn), "-", color=c, lw=0.8)
    ax2.set_xlabel("n")
    ax2.set_ylabel("probability of convergence")
    ax2.legend(fontsize=6, ncol=2)
    ax2.grid(alpha=0.3)
    ctx.figure(f"threshold_vs_{axis}", fig,
               f"Left: convergence threshold N against {axis} with linear, power-law and "
               "logarithmic least-squares fits. Right: the convergence probabilities and "
               "logistic fits they come from.")
    rows = "\n".join(f"| {int(a)} | {n_:.1f} | [{l_:.1f}, {h_:.1f}] |"
                     for a, n_, l_, h_ in zip(x, N, lo, hi, strict=True))
    fit_rows = "\n".join(f"| {law} | {f.formula} | {f.r2:.4f} | {f.rmse:.3g} | {f.aic:.2f} |"
                         for law, f in fits.items())
    ctx.section("Thresholds", f"| {axis} | N | 95% interval |\n|---|---|---|\n{rows}\n\n"
                f"| law | fit | R2 | RMSE | AIC |\n|---|---|---|---|---|\n{fit_rows}")
    claim_id = f"threshold_{paper_law.replace('-', '_')}_in_{axis}"
    statement = f"The convergence threshold N grows {paper_law} in {axis}"
    if len(x) < 3:
        return [Claim(claim_id, statement, paper_law, "too few thresholds", "inconclusive")]
    formulas = {law: f.formula for law, f in fits.items()}
    if "power" not in fits:
        return [Claim(claim_id, statement, paper_law, formulas, "inconclusive", None,
                      "Fewer than 3 positive thresholds: no power law.")]
    verdict, note = verdict_rule(fits, x, N)
    code_fits = [grid_threshold(r.grid, "code") for r in ok]
    code_N = np.array([np.nan if f is None else f.threshold for f in code_fits])
    variants = {f"N code rule L < 1/(2n) at {axis} = {int(a)}": round(float(v), 1)
                for a, v in zip(x, code_N, strict=True)}
    code_laws = scaling_fits(x, code_N) if np.all(np.isfinite(code_N)) else {}
    if "power" in code_laws:  # (a power law needs 3 positive thresholds)
        variants["code rule: power exponent"] = round(float(code_laws["power"].coef[1]), 3)
        variants["code rule: best law by AIC"] = min(code_laws, key=lambda k: code_laws[k].aic)
    rel_width = (hi - lo) / N
    if not np.all(np.isfinite(rel_width)) or np.median(rel_width) > MAX_REL_WIDTH:
        verdict = "inconclusive"
        note += (f" The thresholds are too uncertain to decide (median 95% interval width "
                 f"{np.median(rel_width):.0%} of N, limit {MAX_REL_WIDTH:.0%}): more runs per n.")
    return [Claim(claim_id, statement, paper_law, formulas, verdict, None, note,
                  {f"R2 {law}": round(f.r2, 4) for law, f in fits.items()}
                  | {f"AIC {law}": round(f.aic, 2) for law, f in fits.items()} | variants)]


def scan_build(axis: str, paper_law: str,
               verdict_rule: Callable[[dict, np.ndarray, np.ndarray], tuple[str, str]],
               summary: str) -> Callable[[Context], list[Claim]]:
    """The ``build`` of a threshold figure: :func:`threshold_scan` along ``axis`` ("d" or "p")
    over the preset's ``{axis}_values`` at its fixed value of the other one."""
    other = "p" if axis == "d" else "d"

    def build(ctx: Context) -> list[Claim]:
        P = ctx.params
        ctx.summary = summary
        return threshold_scan(ctx, axis, P[f"{axis}_values"], {other: P[other]}, paper_law,
                              verdict_rule)

    return build
