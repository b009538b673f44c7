"""Fits of measured curves: convergence thresholds, scaling laws, slopes with intervals.

- :func:`logistic_threshold`: P(converged | n) = 1/(1 + exp(-(n - N)/w)) fitted by binomial
  maximum likelihood (threshold N and width w both free), with a profile-likelihood interval for N.
- :func:`grid_sigmoid_threshold`: the DPB code's fit (docs/math.md §1.4(13)): least squares with the
  width fixed to 1, as a variant.
- :func:`scaling_fits`: linear, power-law and logarithmic laws y(x) with their goodness of fit.
- :func:`bootstrap_slope`: the log-log slope of a per-x statistic, with a bootstrap interval
  from resampling the runs at every x; :func:`slope_interval` adds the least-squares interval.
- :func:`bootstrap_mean`, :func:`positive_mean`, :func:`nan_band`: summaries of repeated runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats


@dataclass(frozen=True)
class ThresholdFit:
    """Logistic fit of a convergence probability: threshold N (P = 1/2), width w, interval;
    ``decreasing``: P falls with n (convergence probability against the number of points)."""

    threshold: float
    width: float
    interval: tuple[float, float]
    level: float
    log_likelihood: float
    decreasing: bool = True

    def probability(self, n: np.ndarray) -> np.ndarray:
        z = (np.asarray(n, float) - self.threshold) / self.width
        return _sigmoid(-z if self.decreasing else z)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.tanh(z / 2))


def _log_lik(N: float, log_w: float, n: np.ndarray, k: np.ndarray, m: np.ndarray) -> float:
    z = (n - N) / np.exp(log_w)
    # log P = -log(1 + e^-z), log(1 - P) = -log(1 + e^z)
    return float(-(k * np.logaddexp(0, -z) + (m - k) * np.logaddexp(0, z)).sum())


def logistic_threshold(n: Sequence[float], successes: Sequence[int], trials: Sequence[int],
                       level: float = 0.95, decreasing: bool = True) -> ThresholdFit:
    """Binomial maximum-likelihood fit of P(n) = sigmoid(-(n - N)/w) (``decreasing``) or
    sigmoid((n - N)/w) to ``successes`` out of ``trials`` at each ``n``, with w > 0; the interval
    for N is where the profile log-likelihood is within chi2_1(level)/2 of its maximum (the width
    re-optimised at each N).

    Counts symmetric about n = 20 put the threshold there, inside its interval:

    >>> fit = logistic_threshold([10, 20, 30], [9, 5, 1], [10, 10, 10])
    >>> round(fit.threshold, 6), fit.interval[0] < 20 < fit.interval[1]
    (20.0, True)
    """
    n, k, m = (np.asarray(v, float) for v in (n, successes, trials))
    if decreasing:  # P(n) = sigmoid(-(n - N)/w) is the increasing law in -n, threshold -N
        fit = logistic_threshold(-n, k, m, level, decreasing=False)
        return ThresholdFit(-fit.threshold, fit.width, (-fit.interval[1], -fit.interval[0]),
                            level, fit.log_likelihood, True)
    if not (n.shape == k.shape == m.shape) or n.ndim != 1 or len(n) < 3:
        raise ValueError("n, successes, trials: need 1-D arrays of equal length >= 3")
    if np.any(k < 0) or np.any(k > m):
        raise ValueError("successes: must lie between 0 and trials")
    if k.sum() == 0 or np.all(k == m):
        raise ValueError("successes: all runs failed or all succeeded; the grid holds no transition")
    frac = k / m
    span = max(float(np.ptp(n)), 1e-12)
    N0 = float(n[np.argmin(np.abs(frac - 0.5))])
    best = None
    for w0 in (span / 50, span / 10, span / 3):
        res = optimize.minimize(lambda v: -_log_lik(v[0], v[1], n, k, m), [N0, np.log(w0)],
                                method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-10,
                                                               "maxiter": 4000})
        if best is None or res.fun < best.fun:
            best = res
    N, log_w = best.x
    ll = -best.fun
    drop = stats.chi2.ppf(level, 1) / 2

    def profile(Nt: float) -> float:
        r = optimize.minimize_scalar(lambda lw: -_log_lik(Nt, lw, n, k, m),
                                     bounds=(log_w - 12, log_w + 12), method="bounded")
        return -r.fun - (ll - drop)

    def edge(direction: float) -> float:
        step = max(np.exp(log_w), span / 100)
        far = N
        for _ in range(60):
            far = far + direction * step
            if profile(far) < 0:
                return float(optimize.brentq(profile, min(N, far), max(N, far)))
            step *= 2
        return float(direction * np.inf)

    return ThresholdFit(float(N), float(np.exp(log_w)), (edge(-1.0), edge(1.0)), level, ll, False)


def grid_sigmoid_threshold(n: Sequence[float], probability: Sequence[float],
                           grid: np.ndarray | None = None) -> float:
    """DPB code's threshold: argmin_K sum (P(n) - 1/(1 + e^(n - K)))^2 over a grid
    (docs/math.md §1.4(13)); note the sign: the code's sigmoid decreases in n."""
    n, prob = np.asarray(n, float), np.asarray(probability, float)
    grid = np.linspace(n.min(), n.max(), 20001) if grid is None else grid
    z = np.clip(n[None, :] - grid[:, None], -700, 700)
    err = ((prob[None, :] - 1 / (1 + np.exp(z))) ** 2).sum(axis=1)
    return float(grid[np.argmin(err)])


@dataclass(frozen=True)
class LawFit:
    """y = f(x; coef) with goodness of fit on the y scale."""

    law: str
    formula: str
    coef: tuple[float, ...]
    r2: float
    rmse: float
    aic: float

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return _law(self.law, self.coef, np.asarray(x, float))


def _law(law: str, coef: tuple[float, ...], x: np.ndarray) -> np.ndarray:
    a, b = coef
    if law == "linear":
        return a + b * x
    if law == "power":
        return a * x**b
    return a + b * np.log(x)


def _law_fit(law: str, x: np.ndarray, y: np.ndarray) -> LawFit:
    if law == "linear":
        b, a = np.polyfit(x, y, 1)
        coef, formula = (a, b), f"{a:.4g} + {b:.4g} x"
    elif law == "power":
        k, logc = np.polyfit(np.log(x), np.log(y), 1)
        res = optimize.least_squares(lambda c: c[0] * x ** c[1] - y, [np.exp(logc), k])
        coef, formula = (res.x[0], res.x[1]), f"{res.x[0]:.4g} x^{res.x[1]:.4g}"
    elif law == "log":
        b, a = np.polyfit(np.log(x), y, 1)
        coef, formula = (a, b), f"{a:.4g} + {b:.4g} log x"
    else:
        raise ValueError(f"law: must be linear, power or log, got {law!r}")
    coef = (float(coef[0]), float(coef[1]))
    resid = y - _law(law, coef, x)
    sse = float(resid @ resid)
    r2 = 1 - sse / float(((y - y.mean()) ** 2).sum())
    m = len(x)
    aic = m * np.log(sse / m + 1e-300) + 2 * 2
    return LawFit(law, formula, coef, r2, float(np.sqrt(sse / m)), float(aic))


def scaling_fits(x: Sequence[float], y: Sequence[float]) -> dict[str, LawFit]:
    """Linear a + b x, power a x^b and logarithmic a + b log x fits (least squares on y), each
    with R^2, RMSE and AIC (two parameters each, so AIC ranks them by residual size). The power
    law is fitted to the points with y > 0 and left out when fewer than 3 remain."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0)
    if ok.sum() < 3:
        raise ValueError("x, y: need at least 3 finite points with x > 0")
    out = {}
    for law in ("linear", "power", "log"):
        use = ok & (y > 0) if law == "power" else ok  # a power law needs positive values
        if use.sum() >= 3:
            out[law] = _law_fit(law, x[use], y[use])
    return out


def loglog_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of log y against log x.

    >>> round(loglog_slope([1, 2, 4], [3, 12, 48]), 12)  # y = 3 x^2
    2.0
    """
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def bootstrap_slope(groups: Mapping[float, Sequence[float]],
                    statistic: Callable[[np.ndarray], float] = np.mean,
                    resamples: int = 2000, level: float = 0.95,
                    seed: int = 0) -> tuple[float, tuple[float, float]]:
    """Log-log slope of ``statistic`` of the runs at each x, and a percentile bootstrap
    interval from resampling the runs (with replacement) independently at every x.

    ``statistic(values, axis=-1)`` reduces the last axis (np.mean, np.median). The resamples
    are drawn one after another, each x in turn (the stream of one ``rng.choice`` per x and
    resample); their statistics and least-squares slopes, sum (u - ū)(w - w̄) / sum (u - ū)²
    with u = log x and w = log statistic, are then computed for all resamples at once."""
    xs = np.array(sorted(groups), float)
    vals = [np.asarray(groups[x], float) for x in sorted(groups)]
    vals = [v[np.isfinite(v) & (v > 0)] for v in vals]
    if any(len(v) == 0 for v in vals) or len(xs) < 2:
        return float("nan"), (float("nan"), float("nan"))
    slope = loglog_slope(xs, [statistic(v, axis=-1) for v in vals])
    rng = np.random.default_rng(seed)
    picks = [np.empty((resamples, len(v)), np.int64) for v in vals]
    for b in range(resamples):
        for v, pick in zip(vals, picks, strict=True):
            pick[b] = rng.integers(0, len(v), len(v))  # = rng.choice(v, len(v)) on the indices
    w = np.log(np.stack([statistic(v[pick], axis=-1) for v, pick in zip(vals, picks, strict=True)],
                        axis=-1))  # (resamples, x)
    u = np.log(xs) - np.mean(np.log(xs))
    boot = (w - w.mean(axis=-1, keepdims=True)) @ u / (u @ u)
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return slope, (float(lo), float(hi))


def slope_interval(groups: Mapping[float, Sequence[float]], seed: int = 0
                   ) -> tuple[float, tuple[float, float], dict[str, tuple[float, float]]]:
    """Log-log slope of the per-x means, with the hull of two 95% intervals: the bootstrap over
    the runs at each x (:func:`bootstrap_slope`) and the least-squares t interval from the
    scatter of the means about the line (it carries a per-x random draw, e.g. of the labels,
    which the run bootstrap does not). Non-finite and non-positive values are dropped."""
    keys = sorted(k for k, v in groups.items() if np.any(np.isfinite(np.asarray(v, float))))
    groups = {k: [v for v in groups[k] if np.isfinite(v) and v > 0] for k in keys}
    groups = {k: v for k, v in groups.items() if v}
    if len(groups) < 2:
        nan = (float("nan"), float("nan"))
        return float("nan"), nan, {"bootstrap": nan, "least squares": nan}
    slope, boot = bootstrap_slope(groups, seed=seed)
    x = np.log(np.array(sorted(groups), float))
    yv = np.log([np.mean(groups[k]) for k in sorted(groups)])
    if len(x) > 2:
        fit = stats.linregress(x, yv)
        half = stats.t.ppf(0.975, len(x) - 2) * fit.stderr
        ols = (float(fit.slope - half), float(fit.slope + half))
    else:
        ols = (slope, slope)
    hull = (min(boot[0], ols[0]), max(boot[1], ols[1]))
    return slope, hull, {"bootstrap": boot, "least squares": ols}


def bootstrap_mean(values: np.ndarray, draws: int, seed: int) -> tuple[float, float, float]:
    """Mean of the finite ``values`` and a 95% percentile bootstrap interval: (mean, lo, hi);
    NaNs when no value is finite."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan, math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = rng.choice(v, (draws, v.size)).mean(axis=1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return float(v.mean()), float(lo), float(hi)


def positive_mean(values: np.ndarray) -> float:
    """Mean over the finite positive values (those a log-log fit can use); NaN if none."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v) & (v > 0)]
    return float(v.mean()) if v.size else float("nan")


def nan_band(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, min and max over the last axis ignoring NaN (NaN where a row has no finite value)."""
    vals = np.asarray(values, float)
    finite = np.isfinite(vals)
    has = np.any(finite, axis=-1)
    count = np.maximum(np.sum(finite, axis=-1), 1)
    mean = np.where(has, np.where(finite, vals, 0.0).sum(axis=-1) / count, np.nan)
    lo = np.where(has, np.min(np.where(finite, vals, np.inf), axis=-1), np.nan)
    hi = np.where(has, np.max(np.where(finite, vals, -np.inf), axis=-1), np.nan)
    return mean, lo, hi


def binomial_interval(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """The Clopper-Pearson (exact, conservative) interval of a binomial proportion: the
    quantiles (1 - level)/2 and (1 + level)/2 of Beta(s, n - s + 1) and Beta(s + 1, n - s),
    with 0 (s = 0) and 1 (s = n) at the ends; (nan, nan) when ``trials`` is 0."""
    s, n = int(successes), int(trials)
    if n <= 0:
        return math.nan, math.nan
    tail = (1.0 - level) / 2.0
    lo = 0.0 if s == 0 else float(stats.beta.ppf(tail, s, n - s + 1))
    hi = 1.0 if s == n else float(stats.beta.ppf(1.0 - tail, s + 1, n - s))
    return lo, hi
