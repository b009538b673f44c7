"""Verdict rules of dana-fig2 and dana-fig6 on small synthetic Datasets (no training): a value
inside, outside and on the edge of every band and threshold, through ``judge``."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from shallowflow.reproductions.dana import fig2, fig6

# ---------------------------------------------------------------------------------- dana-fig2
P2 = fig2.Fig2Params(**fig2.PRESETS["quick"])


def fig2_ds(ratio: float = 2.0, rich: float = 0.1, dist_closed: list[float] | None = None,
            dist_gd: list[float] | None = None, derived_miss: float = 0.01,
            printed_miss: float = 3.0, windows: list[list[float]] | None = None) -> xr.Dataset:
    """The measures judge reads: GD error err2 = 1/4 at lr/2 and ratio * err2 at lr, the
    Richardson error rich * err2, distances to L_inf, and windows off the derived and printed
    formulas by the given relative amounts (dyadic values: the edges are exact)."""
    ns, err2 = [64, 256], 0.25
    win = np.array(windows if windows is not None else [[0.75, 0.375], [0.5625, 0.28125]])
    derived = win / (1 + derived_miss)
    printed = win / (1 + printed_miss)
    closed_big = np.array([0.087, 0.044])
    return xr.Dataset(
        {"error": (("n", "lr"), [[ratio * err2, err2]] * 2),
         "error_richardson": ("n", [rich * err2] * 2),
         "dist_closed": ("n_closed", dist_closed or [0.3, 0.1, 0.005]),
         "dist_gd": ("n", dist_gd or [0.36, 0.28]),
         "half_time_gd": (("n", "neuron"), [[0.6, 0.45], [0.7, 0.47]]),
         "half_time_paper": ("neuron", [0.96, 0.5]),
         "window_gd": (("n", "neuron"), win),
         "window_derived": (("n", "neuron"), derived),
         "window_printed": (("n", "neuron"), printed),
         "window_closed_paper": ("neuron", closed_big),
         "window_derived_paper": ("neuron", closed_big),
         "window_printed_paper": ("neuron", closed_big / 7)},
        coords={"n": ns, "lr": [0.5, 0.25], "n_closed": [1e2, 1e6, 1.7e18], "neuron": [0, 1]})


def fig2_verdicts(ds: xr.Dataset) -> dict[str, str]:
    return {c.id: c.verdict for c in fig2.judge(ds, P2)}


@pytest.mark.parametrize(("ratio", "rich", "verdict"), [
    (2.0, 0.1, "reproduced"),  # halves with the step, Richardson 10x closer
    (1.6, 0.1, "reproduced"),  # edges of the first-order band
    (2.4, 0.25, "reproduced"),  # Richardson exactly 4x closer
    (1.0, 0.1, "not reproduced"),  # error does not shrink with the step
    (1.59, 0.1, "not reproduced"),  # just below the band
    (2.41, 0.1, "not reproduced"),  # just above the band
    (2.0, 0.3, "not reproduced"),  # Richardson not 4x closer
])
def test_fig2_closed_form_rule(ratio, rich, verdict):
    assert fig2_verdicts(fig2_ds(ratio=ratio, rich=rich))["closed_form_vs_gd"] == verdict


@pytest.mark.parametrize(("closed", "gd", "verdict"), [
    ([0.3, 0.1, 0.005], [0.36, 0.28], "reproduced"),
    ([0.3, 0.1, 0.0099], [0.36, 0.28], "reproduced"),  # just below the 0.01 tolerance
    ([0.3, 0.1, 0.01], [0.36, 0.28], "not reproduced"),  # at the tolerance (strict)
    ([0.3, 0.1, 0.02], [0.36, 0.28], "not reproduced"),  # decreasing but too far at e^42
    ([0.3, 0.4, 0.005], [0.36, 0.28], "not reproduced"),  # closed form not decreasing
    ([0.3, 0.1, 0.005], [0.28, 0.36], "not reproduced"),  # GD not decreasing
])
def test_fig2_limit_rule(closed, gd, verdict):
    ds = fig2_ds(dist_closed=closed, dist_gd=gd)
    assert fig2_verdicts(ds)["limit_step_function"] == verdict


@pytest.mark.parametrize(("derived", "printed", "windows", "verdict"), [
    (0.01, 3.0, None, "partly"),  # derived formula holds, printed misses by 300%
    (0.01, 0.2, None, "reproduced"),  # the printed formula within 50% too
    (0.049, 0.51, None, "partly"),  # just inside both edges
    (0.01, 0.5, None, "reproduced"),  # printed miss exactly 50% (strict)
    (0.06, 3.0, None, "not reproduced"),  # derived formula off by 6%
    (0.01, 3.0, [[0.75, 0.375], [0.875, 0.28125]], "not reproduced"),  # a window grows with n
])
def test_fig2_window_rule(derived, printed, windows, verdict):
    ds = fig2_ds(derived_miss=derived, printed_miss=printed, windows=windows)
    assert fig2_verdicts(ds)["transition_window"] == verdict


def test_fig2_claim_values_from_the_dataset():
    claims = {c.id: c for c in fig2.judge(fig2_ds(), P2)}
    assert claims["closed_form_vs_gd"].measured == {"n=64": 0.5, "n=256": 0.5}
    assert claims["closed_form_vs_gd"].variants["n=64, ratio lr/(lr/2)"] == 2.0
    assert claims["limit_step_function"].measured["n=1.7e+18"] == 0.005
    assert claims["transition_window"].variants["GD n=256"] == [0.5625, 0.2812]


# ---------------------------------------------------------------------------------- dana-fig6
PAPER6 = fig6.Fig6Params(**fig6.PRESETS["paper"])
QUICK6 = fig6.Fig6Params(**fig6.PRESETS["quick"])


def fig6_ds(interval: tuple[float, float] = (-0.55, -0.45), mu_t_inf: list[float] | None = None,
            mu_avg: list[float] | None = None, converged: list[bool] | None = None,
            uniform: bool = False) -> xr.Dataset:
    """Two n, five Gaussian runs each (ten values, row-major (n, run)) and optionally five
    uniform ones; every stored slope has ``interval`` (slope at its middle). Defaults: every run
    converged, inside Lemma 7's bracket [1, 3] and above Theorem 1's C/n."""
    ns, R = [1000, 2000], 5
    layers = ["gaussian", "uniform"] if uniform else ["gaussian"]
    runs = R * len(layers)

    def per_run(values: list | None, default: float | bool) -> np.ndarray:
        out = np.full((2, runs), default)
        if values is not None:
            out[:, :R] = np.reshape(values, (2, R))
        return out

    measures = [*fig6.MEASURES, *fig6.EXTRA]
    shape = (len(layers), 2, len(measures))
    lo, hi = interval
    dims = ("layer", "subset", "measure")
    return xr.Dataset(
        {"mu_t_inf": (("n", "run"), per_run(mu_t_inf, 2.0)),
         "mu_exact": (("n", "run"), per_run(None, 2.0)),
         "mu_t_inf_avg": (("n", "run"), per_run(None, 2.0)),
         "mu_low": (("n", "run"), per_run(None, 1.0)),
         "mu_upp": (("n", "run"), per_run(None, 3.0)),
         "mu_avg": (("n", "run"), per_run(mu_avg, 1e-2)),
         "theorem1_C": (("n", "run"), per_run(None, 1.0)),
         "converged_text": (("n", "run"), per_run(converged, True).astype(bool)),
         "stopped": (("n", "run"), np.zeros((2, runs), bool)),
         "slope": (dims, np.full(shape, (lo + hi) / 2)),
         "slope_lo": (dims, np.full(shape, lo)),
         "slope_hi": (dims, np.full(shape, hi))},
        coords={"n": ns, "run": np.arange(runs),
                "first_layer": ("run", [k for k in layers for _ in range(R)]),
                "layer": layers, "subset": ["all", "I"], "measure": measures})


def fig6_verdicts(ds: xr.Dataset, P: fig6.Fig6Params = PAPER6) -> dict[str, str]:
    return {c.id: c.verdict for c in fig6.judge(ds, P)}


@pytest.mark.parametrize(("interval", "verdict"), [
    ((-0.55, -0.45), "reproduced"),  # inside [-0.6, -0.4]
    ((-0.7, -0.5), "reproduced"),  # straddles the lower edge
    ((-0.45, -0.3), "reproduced"),  # straddles the upper edge
    ((-0.9, -0.7), "not reproduced"),  # below the band
    ((-0.3, -0.2), "not reproduced"),  # above the band
    ((-1.0, -0.35), "inconclusive"),  # wider than 0.6
    ((float("nan"), float("nan")), "inconclusive"),  # no fit
])
def test_fig6_slope_rule(interval, verdict):
    verdicts = fig6_verdicts(fig6_ds(interval))
    assert all(verdicts[f"slope_{k}"] == verdict for k in fig6.MEASURES)


def test_fig6_slope_rule_needs_the_paper_setting():
    verdicts = fig6_verdicts(fig6_ds((-0.55, -0.45)), QUICK6)
    assert all(verdicts[f"slope_{k}"] == "inconclusive" for k in fig6.MEASURES)


def test_fig6_slope_variants_listed():
    claims = {c.id: c for c in fig6.judge(fig6_ds(uniform=True), PAPER6)}
    variants = claims["slope_mu_t_inf"].variants
    assert abs(float(variants.pop("median over runs (least squares)"))) < 1e-9  # all at 2.0
    assert set(variants) == {"code: mean of the last 100 epochs",
                             "exact mu = p||grad L||^2/L at t_inf (probe)",
                             "gaussian first layer, conditioned on I", "uniform first layer",
                             "uniform first layer, conditioned on I"}
    assert variants["uniform first layer"] == "-0.500 [-0.550, -0.450]"


@pytest.mark.parametrize(("mu_avg", "converged", "verdict"), [
    (None, None, "reproduced"),  # every converged run above C/n
    ([1e-4] + [1e-2] * 9, None, "not reproduced"),  # one converged run below C/n = 1e-3
    ([1e-3] + [1e-2] * 9, None, "reproduced"),  # on the bound (>=)
    ([1e-4] + [1e-2] * 9, [False] + [True] * 9, "reproduced"),  # the failing run did not converge
    (None, [False] * 10, "inconclusive"),  # no converged run
])
def test_fig6_theorem1_rule(mu_avg, converged, verdict):
    ds = fig6_ds(mu_avg=mu_avg, converged=converged)
    assert fig6_verdicts(ds)["theorem1_rate"] == verdict


@pytest.mark.parametrize(("mu_t_inf", "verdict"), [
    (None, "reproduced"),  # all inside [mu_low, mu_upp]
    ([1.0, 3.0] + [2.0] * 8, "reproduced"),  # on the bounds
    ([4.0] + [2.0] * 9, "partly"),  # 90% inside
    ([4.0, 0.5] + [2.0] * 8, "not reproduced"),  # 80% inside
])
def test_fig6_lemma7_rule(mu_t_inf, verdict):
    assert fig6_verdicts(fig6_ds(mu_t_inf=mu_t_inf))["lemma7_bracket"] == verdict
