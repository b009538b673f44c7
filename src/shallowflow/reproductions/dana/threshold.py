"""The convergence threshold N(d, p) (DPB Figures 4 and 5; docs/math.md §1.4(13), §5).

N is the n at which the probability of convergence (the paper's rule, L < C_y^-/(2n) within
t_inf) crosses 1/2. The chain for one (d, p): a coarse search with few runs brackets the crossing
(from n = 4d, multiplied by ``growth`` until fewer than half of the runs converge), then the
paper's grid n = N0 - span d .. N0 + span d in steps of ``step`` d around the bracket's midpoint
N0 is run with ``runs`` runs per n, and N is the binomial maximum-likelihood logistic fit
(:func:`shallowflow.analysis.fits.logistic_threshold`) with its 95% profile interval. The paper uses
span = 15, step = 1.

:class:`ThresholdScan` is the reproduction of a scan of N along ``d`` (dana-fig4) or ``p``
(dana-fig5): ``simulate`` runs the protocol at every value of the axis (the grids are saved with
:func:`~shallowflow.reproductions.dana.convergence_grids.stack_grids`, ``grid`` = the axis value),
``judge`` fits linear, power-law and logarithmic laws to the thresholds and applies the figure's
verdict rule, ``draw`` and ``method`` show the thresholds and the fits.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
import xarray as xr
from pydantic import Field

from shallowflow.analysis.fits import (
    LawFit,
    ThresholdFit,
    grid_sigmoid_threshold,
    logistic_threshold,
    scaling_fits,
)
from shallowflow.plots.intervals import interval_bars
from shallowflow.reproductions.base import Figure, Section
from shallowflow.reproductions.claims import Claim, Source
from shallowflow.reproductions.dana.convergence_grids import (
    GridRequest,
    grid_part,
    grid_steps,
    stack_grids,
    summarise,
)
from shallowflow.reproductions.fields import Runs, Seed
from shallowflow.training.entry import Chain, Trainer

MAX_REL_WIDTH = 0.5  # thresholds less certain than this (median interval / N) decide nothing
MIN_THRESHOLDS = 3  # laws are fitted to at least this many thresholds

VerdictRule = Callable[[dict[str, LawFit], np.ndarray, np.ndarray], tuple[str, str]]
"""A figure's law rule: (law fits, axis values, thresholds) -> (verdict, note)."""

# Parameter fields shared by the scans (dana-fig4, dana-fig5 add the axis and the fixed value)
ScanRuns = Annotated[Runs, Field(description="runs per n on the fitted grid")]
CoarseRuns = Annotated[Runs, Field(description="runs per n of the coarse bracketing search")]
Span = Annotated[float, Field(gt=0, description="the grid spans N0 - span d .. N0 + span d")]
Step = Annotated[float, Field(gt=0, description="grid step in units of d")]
ScanSeed = Annotated[Seed, Field(description="base seed (the k-th axis value adds 10000 k)")]


# ------------------------------------------------------------------------------------ simulate
def find_threshold(d: int, p: int, runs: int, coarse_runs: int, span: float, step: float,
                   seed: int, train: Trainer, n_start: int | None = None,
                   growth: float = 1.5) -> xr.Dataset:
    """Bracket N(d, p) and return the convergence grid around it (module docstring)."""
    return find_thresholds([(d, p, seed)], runs, coarse_runs, span, step, train, n_start,
                           growth)[0]


def find_thresholds(points: Sequence[tuple[int, int, int]], runs: int, coarse_runs: int,
                    span: float, step: float, train: Trainer, n_start: int | None = None,
                    growth: float = 1.5) -> list[xr.Dataset]:
    """:func:`find_threshold` at every ``(d, p, seed)`` of ``points``, side by side: each
    point's search is a :data:`~shallowflow.training.entry.Chain` (:func:`threshold_search`) and
    ``train.chains`` hands every step to the executor as soon as it is known, so one point's
    final grid trains while another is still bracketing. Each point's runs, seeds and decisions
    are those of its own :func:`find_threshold`."""
    dims = ", ".join(sorted({str(d) for d, _, _ in points}, key=int))
    return train.chains(
        [threshold_search(d, p, seed, runs, coarse_runs, span, step, n_start, growth)
         for d, p, seed in points], keep_data=True, label=f"d = {dims}: threshold search")


def threshold_search(d: int, p: int, seed: int, runs: int, coarse_runs: int, span: float,
                     step: float, n_start: int | None = None, growth: float = 1.5) -> Chain:
    """The chain of one (d, p) (module docstring): the coarse search, one n per step, then
    the final grid; returns the grid."""
    n = max(4, n_start or 4 * d)  # below ~4d the budget t_inf is tiny
    coarse: list[tuple[int, float]] = []
    for k in range(40):
        g = yield from grid_steps(GridRequest([n], d, p, coarse_runs, seed + 100_000 + k))
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
    return (yield from grid_steps(GridRequest(np.arange(lo, round(centre + span * d) + 1, stride),
                                              d, p, runs, seed)))


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


# ------------------------------------------------------------------------------ saved scan
@dataclass(frozen=True)
class Scan:
    """The grids of a saved scan along ``axis`` with their threshold fits (text rule); ``x, N,
    lo, hi``: axis values, thresholds and 95% intervals of the grids with a fit; ``laws``: the
    scaling laws fitted to them (none below MIN_THRESHOLDS)."""

    axis: str
    values: np.ndarray
    grids: list[xr.Dataset]
    fits: list[ThresholdFit | None]

    @property
    def ok(self) -> list[int]:
        return [k for k, f in enumerate(self.fits) if f is not None]

    @property
    def x(self) -> np.ndarray:
        return np.array([self.values[k] for k in self.ok], float)

    def _fitted(self, read: Callable[[ThresholdFit], float]) -> np.ndarray:
        return np.array([read(f) for f in self.fits if f is not None], float)

    @property
    def N(self) -> np.ndarray:
        return self._fitted(lambda f: f.threshold)

    @property
    def lo(self) -> np.ndarray:
        return self._fitted(lambda f: f.interval[0])

    @property
    def hi(self) -> np.ndarray:
        return self._fitted(lambda f: f.interval[1])

    @property
    def laws(self) -> dict[str, LawFit]:
        return scaling_fits(self.x, self.N) if len(self.ok) >= MIN_THRESHOLDS else {}


def read_scan(ds: xr.Dataset, axis: str) -> Scan:
    """The :class:`Scan` of a saved scan Dataset (dims ``grid, n, run``, grid = axis value)."""
    grids = [grid_part(ds, k) for k in range(ds.sizes["grid"])]
    return Scan(axis, ds.grid.values, grids, [grid_threshold(g) for g in grids])


# --------------------------------------------------------------------------------------- judge
def uncertainty(scan: Scan) -> tuple[bool, float]:
    """(too uncertain, median relative width): the thresholds decide nothing when the median
    of (hi - lo)/N exceeds MAX_REL_WIDTH or a width is not finite."""
    rel_width = (scan.hi - scan.lo) / scan.N
    median = float(np.median(rel_width))
    return not np.all(np.isfinite(rel_width)) or median > MAX_REL_WIDTH, median


def code_rule_variants(scan: Scan) -> dict[str, Any]:
    """The thresholds under the code's rule L < 1/(2n) and, when 3 are positive, their power
    exponent and best law by AIC."""
    code_fits = [grid_threshold(scan.grids[k], "code") for k in scan.ok]
    code_N = np.array([np.nan if f is None else f.threshold for f in code_fits])
    variants: dict[str, Any] = {
        f"N code rule L < 1/(2n) at {scan.axis} = {int(a)}": round(float(v), 1)
        for a, v in zip(scan.x, code_N, strict=True)}
    code_laws = scaling_fits(scan.x, code_N) if np.all(np.isfinite(code_N)) else {}
    if "power" in code_laws:  # (a power law needs 3 positive thresholds)
        variants["code rule: power exponent"] = round(float(code_laws["power"].coef[1]), 3)
        variants["code rule: best law by AIC"] = min(code_laws, key=lambda k: code_laws[k].aic)
    return variants


def fixed_slope_variants(scan: Scan) -> dict[str, Any]:
    """The thresholds of the DPB code's fixed-slope least-squares sigmoid fit
    (:func:`~shallowflow.analysis.fits.grid_sigmoid_threshold`, docs/math.md §1.4(13)) on the
    same grids (the paper's rule) and, when 3 are positive, their power exponent and best law
    by AIC: the threshold's measurement choice."""
    x = np.array(scan.values, float)
    N = np.array([grid_sigmoid_threshold(g.n.values, summarise(g).probability.values)
                  for g in scan.grids])
    variants: dict[str, Any] = {
        f"N code's fixed-slope fit at {scan.axis} = {int(a)}": round(float(v), 1)
        for a, v in zip(x, N, strict=True)}
    laws = scaling_fits(x, N) if len(N) >= MIN_THRESHOLDS and np.ptp(N) > 0 else {}
    if "power" in laws:
        variants["fixed-slope fit: power exponent"] = round(float(laws["power"].coef[1]), 3)
        variants["fixed-slope fit: best law by AIC"] = min(laws, key=lambda k: laws[k].aic)
    return variants


def scan_claim(scan: Scan, paper_law: str, rule: VerdictRule, source: Source) -> Claim:
    """The paper's law (``paper_law``, e.g. "linearly") of the thresholds along the scan's axis,
    decided by ``rule`` unless there are too few thresholds or they are too uncertain; ``source``
    quotes the paper's words."""
    claim_id = f"threshold_{paper_law.replace('-', '_')}_in_{scan.axis}"
    statement = f"The convergence threshold N grows {paper_law} in {scan.axis}"
    if len(scan.ok) < MIN_THRESHOLDS:
        return Claim(claim_id, statement, paper_law, "too few thresholds", "inconclusive",
                     source=source)
    laws = scan.laws
    formulas = {law: f.formula for law, f in laws.items()}
    if "power" not in laws:
        return Claim(claim_id, statement, paper_law, formulas, "inconclusive", None,
                     "Fewer than 3 positive thresholds: no power law.", source=source)
    verdict, note = rule(laws, scan.x, scan.N)
    too_uncertain, median = uncertainty(scan)
    if too_uncertain:
        verdict = "inconclusive"
        note += (f" The thresholds are too uncertain to decide (median 95% interval width "
                 f"{median:.0%} of N, limit {MAX_REL_WIDTH:.0%}): more runs per n.")
    return Claim(claim_id, statement, paper_law, formulas, verdict, None, note,
                 {f"R2 {law}": round(f.r2, 4) for law, f in laws.items()}
                 | {f"AIC {law}": round(f.aic, 2) for law, f in laws.items()}
                 | code_rule_variants(scan) | fixed_slope_variants(scan), source=source)


# --------------------------------------------------------------------------- draw and method
def draw_scan(scan: Scan, ylabel: str) -> Figure:
    """N against the axis with the law fits; the convergence probabilities behind each N."""
    import matplotlib.pyplot as plt

    x, N, lo, hi, axis = scan.x, scan.N, scan.lo, scan.hi, scan.axis
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    interval_bars(ax1, x, N, lo, hi, label="fitted threshold (95% interval)")
    xx = np.linspace(x.min(), x.max(), 200) if len(x) else x
    for (law, f), c in zip(scan.laws.items(), ("C0", "C1", "C2"), strict=False):
        ax1.plot(xx, f(xx), color=c, lw=1, label=f"{law}: {f.formula} (R2 {f.r2:.3f})")
    ax1.set_xlabel(axis)
    ax1.set_ylabel(ylabel)
    ax1.legend(fontsize=7)
    ax1.grid(alpha=0.3)
    colours = plt.cm.viridis(np.linspace(0, 1, len(scan.grids)))
    for v, g, fit, c in zip(scan.values, scan.grids, scan.fits, colours, strict=True):
        ax2.plot(g.n, summarise(g).probability, ".", color=c, label=f"{axis} = {v}")
        if fit is not None:
            nn = np.linspace(float(g.n.min()), float(g.n.max()), 200)
            ax2.plot(nn, fit.probability(nn), "-", color=c, lw=0.8)
    ax2.set_xlabel("n")
    ax2.set_ylabel("probability of convergence")
    ax2.legend(fontsize=6, ncol=2)
    ax2.grid(alpha=0.3)
    return Figure(f"threshold_vs_{axis}", fig,
                  f"Left: convergence threshold N against {axis} with linear, power-law and "
                  "logarithmic least-squares fits. Right: the convergence probabilities and "
                  "logistic fits they come from.")


def threshold_tables(scan: Scan) -> str:
    """The thresholds with their intervals, and the law fits (Markdown)."""
    rows = "\n".join(f"| {int(a)} | {n_:.1f} | [{l_:.1f}, {h_:.1f}] |"
                     for a, n_, l_, h_ in zip(scan.x, scan.N, scan.lo, scan.hi, strict=True))
    fit_rows = "\n".join(f"| {law} | {f.formula} | {f.r2:.4f} | {f.rmse:.3g} | {f.aic:.2f} |"
                         for law, f in scan.laws.items())
    return (f"| {scan.axis} | N | 95% interval |\n|---|---|---|\n{rows}\n\n"
            f"| law | fit | R2 | RMSE | AIC |\n|---|---|---|---|---|\n{fit_rows}")


# ------------------------------------------------------------------------------- reproduction
@dataclass(frozen=True)
class ThresholdScan:
    """The pieces of a threshold reproduction along ``axis`` ("d" or "p"): its parameters hold
    ``{axis}_values``, the fixed value of the other one and the :data:`Runs` ... :data:`Seed`
    fields; ``paper_law`` names the claim, ``rule`` decides it, ``source`` quotes the paper."""

    axis: str
    paper_law: str
    rule: VerdictRule
    source: Source

    @property
    def other(self) -> str:
        return "p" if self.axis == "d" else "d"

    def simulate(self, P: Any, train: Trainer) -> xr.Dataset:
        """:func:`find_thresholds` at every value of the axis (seed + 10000 k at the k-th)."""
        values = [int(v) for v in getattr(P, f"{self.axis}_values")]
        points = []
        for k, v in enumerate(values):
            dp = {self.other: getattr(P, self.other), self.axis: v}
            points.append((dp["d"], dp["p"], P.seed + 10_000 * k))
        grids = find_thresholds(points, P.runs, P.coarse_runs, P.span, P.step, train)
        return stack_grids(grids, values).assign_attrs(axis=self.axis)

    def judge(self, ds: xr.Dataset, P: Any) -> list[Claim]:
        return [scan_claim(read_scan(ds, self.axis), self.paper_law, self.rule, self.source)]

    def draw(self, ds: xr.Dataset, P: Any) -> list[Figure]:
        fixed = getattr(P, self.other)
        ylabel = (f"threshold N(d, p = {fixed})" if self.axis == "d"
                  else f"threshold N(d = {fixed}, p)")
        return [draw_scan(read_scan(ds, self.axis), ylabel)]

    def method(self, ds: xr.Dataset, P: Any) -> list[Section]:
        return [("Thresholds", threshold_tables(read_scan(ds, self.axis)))]
