"""Fits: recover known laws from synthetic data (the data are drawn from the law in the test)."""

from __future__ import annotations

import numpy as np
import pytest

from shallowflow.analysis.fits import (
    bootstrap_slope,
    grid_sigmoid_threshold,
    logistic_threshold,
    scaling_fits,
)


def test_logistic_threshold_recovers_threshold_and_covers_it():
    """Binomial data from P = sigmoid((n - 3000)/60): the MLE is near 3000 and the 95% profile
    interval covers the truth in most of 40 repetitions (coverage 0.95 nominal)."""
    rng = np.random.default_rng(0)
    n = np.arange(2500, 3501, 50.0)
    p = 1 / (1 + np.exp(-(n - 3000) / 60))
    covered, errors = 0, []
    for _ in range(40):
        k = rng.binomial(25, p)
        fit = logistic_threshold(n, k, np.full_like(k, 25), decreasing=False)
        errors.append(fit.threshold - 3000)
        covered += fit.interval[0] <= 3000 <= fit.interval[1]
        assert fit.interval[0] < fit.threshold < fit.interval[1]
    assert abs(np.mean(errors)) < 15
    assert covered >= 33  # P(Binomial(40, 0.95) < 33) ~ 0.3%


def test_logistic_likelihood_is_maximal_at_the_fit():
    """Perturbing N or the width lowers the binomial log-likelihood (computed here directly)."""
    n = np.array([1.0, 2, 3, 4, 5, 6, 7])
    k = np.array([0, 1, 3, 5, 8, 9, 10])
    m = np.full(7, 10)
    fit = logistic_threshold(n, k, m, decreasing=False)

    def ll(N, w):
        q = 1 / (1 + np.exp(-(n - N) / w))
        return np.sum(k * np.log(q) + (m - k) * np.log(1 - q))

    best = ll(fit.threshold, fit.width)
    for dN, dw in [(0.05, 0), (-0.05, 0), (0, 0.05), (0, -0.05)]:
        assert ll(fit.threshold + dN, fit.width * (1 + dw)) < best


def test_grid_sigmoid_finds_the_code_threshold():
    """The DPB code's decreasing sigmoid 1/(1 + e^(n - K)) fitted to itself gives K back."""
    n = np.arange(90.0, 111.0)
    prob = 1 / (1 + np.exp(n - 100.3))
    assert abs(grid_sigmoid_threshold(n, prob) - 100.3) < 0.01


def test_scaling_fits_pick_the_true_law():
    x = np.linspace(10, 100, 10)
    lin = scaling_fits(x, 3 + 2 * x)
    assert lin["linear"].r2 > 1 - 1e-12 and np.allclose(lin["linear"].coef, (3, 2))
    pw = scaling_fits(x, 5 * x**0.5)
    assert np.allclose(pw["power"].coef, (5, 0.5), rtol=1e-6)
    assert pw["power"].aic < pw["linear"].aic and pw["power"].aic < pw["log"].aic
    lg = scaling_fits(x, 1 + 4 * np.log(x))
    assert np.allclose(lg["log"].coef, (1, 4)) and lg["log"].aic < lg["linear"].aic


def test_bootstrap_slope_of_a_noisy_power_law():
    """Runs scattered multiplicatively around 2 n^(-1/2): the slope interval contains -1/2."""
    rng = np.random.default_rng(1)
    groups = {n: 2 * n**-0.5 * np.exp(0.1 * rng.standard_normal(25)) for n in
              (1000.0, 1250, 1500, 1750, 2000)}
    slope, (lo, hi) = bootstrap_slope(groups, resamples=500)
    assert lo < -0.5 < hi and lo < slope < hi and hi - lo < 0.3


@pytest.mark.parametrize("statistic", [np.mean, np.median])
def test_bootstrap_slope_against_a_loop_of_fits(statistic):
    """The resamples' slopes at once equal a loop drawing each resample with rng.choice (one
    x after another) and fitting it with np.polyfit, to rounding."""
    rng = np.random.default_rng(3)
    groups = {x: np.exp(rng.standard_normal(k)) * x**0.7 for x, k in ((1.0, 3), (2.0, 9),
                                                                     (5.0, 4), (11.0, 17))}
    draw = np.random.default_rng(7)
    boot = []
    for _ in range(300):
        stats = [statistic(draw.choice(groups[x], len(groups[x]))) for x in sorted(groups)]
        boot.append(np.polyfit(np.log(sorted(groups)), np.log(stats), 1)[0])
    slope, (lo, hi) = bootstrap_slope(groups, statistic, resamples=300, seed=7)
    assert slope == pytest.approx(np.polyfit(np.log(sorted(groups)), np.log(
        [statistic(groups[x]) for x in sorted(groups)]), 1)[0], rel=1e-12)
    np.testing.assert_allclose([lo, hi], np.quantile(boot, [0.025, 0.975]), rtol=1e-12)


def test_decreasing_threshold_is_the_mirror_image():
    """Convergence probabilities fall with n: fitting the mirrored data gives the same N."""
    n = np.arange(100.0, 301.0, 20)
    k = np.array([10, 10, 9, 9, 7, 4, 1, 0, 0, 1, 0])
    dec = logistic_threshold(n, k, np.full(11, 10))
    inc = logistic_threshold(n, 10 - k, np.full(11, 10), decreasing=False)
    assert abs(dec.threshold - inc.threshold) < 1e-3 * inc.threshold
    assert dec.probability(np.array([100.0]))[0] > 0.9 > 0.1 > dec.probability(np.array([300.0]))[0]
    assert dec.interval[0] < dec.threshold < dec.interval[1]
