"""Verdict rules of town-fig5 and town-fig6 on small synthetic Datasets (no training): for each
rule a measurement inside, outside and straddling its band or threshold, through judge() (for
fig5, through the claim builder judge() calls for that claim, which skips the bootstraps of the
other claims; test_fig5_judge_all_claims runs judge() itself)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from shallowflow.analysis.fits import slope_interval
from shallowflow.reproductions.town import fig5, fig6

NS = [8, 16, 32, 64, 128]
WIDTHS = [8, 16, 32, 64]
P5 = fig5.Fig5Params(**fig5.PRESETS["quick"])
P6 = fig6.Fig6Params(**fig6.PRESETS["quick"])


# ----------------------------------------------------------------------------------- fig5
def fig5_ds(sq: np.ndarray, ok: np.ndarray | None = None, limit: np.ndarray | None = None,
            unfitted: np.ndarray | None = None, lams: tuple[float, ...] = (-12.0, -60.0)
            ) -> xr.Dataset:
    """sq (n, lam, run); minimum norm 2 sqrt(n); limit (n, run) defaults to 1.1 x minimum."""
    ns = NS[: sq.shape[0]]
    mn = 2.0 * np.sqrt(np.asarray(ns, float))
    runs = sq.shape[2]
    ok = np.ones(sq.shape, bool) if ok is None else ok
    limit = 1.1 * mn[:, None] * np.ones(runs) if limit is None else limit
    unfitted = np.zeros((len(ns), runs), int) if unfitted is None else unfitted
    return xr.Dataset(
        {"sq_norm": (("n", "lam", "run"), sq), "interpolated": (("n", "lam", "run"), ok),
         "epochs": (("n", "lam", "run"), np.full(sq.shape, 100)),
         "limit_sq_norm": (("n", "run"), limit), "limit_unfitted": (("n", "run"), unfitted),
         "min_norm_sq": ("n", mn), "width": ("n", [24 + i for i in range(len(ns))])},
        coords={"n": ns, "lam": list(lams[: sq.shape[1]]), "run": np.arange(runs)})


def power_norms(slope: float, eps: float = 0.0, runs: int = 3, lams: int = 1) -> np.ndarray:
    """(n, lam, run) squared norms n^slope, the mean at the i-th n scaled by exp(eps (-1)^i)."""
    base = np.array([np.exp(slope * np.log(n) + eps * (-1) ** i) for i, n in enumerate(NS)])
    return base[:, None, None] * np.ones((1, lams, runs))


def claim(claims: list, cid: str):
    return {c.id: c for c in claims}[cid]


def judged(ds: xr.Dataset, cid: str):
    """The fig5 claim ``cid`` from its builder (the one judge() uses)."""
    builders = {"norm_slope": fig5.norm_slope_claim, "constant_factor": fig5.constant_factor_claim,
                "interpolation": fig5.interpolation_claim,
                "limit_approach": lambda d, _: fig5.limit_approach_claim(d)}
    return builders[cid](ds, P5)


def test_fig5_judge_all_claims():
    claims = fig5.judge(fig5_ds(power_norms(0.5, lams=2)), P5)
    assert [c.id for c in claims] == ["norm_slope", "constant_factor", "interpolation",
                                      "limit_approach"]
    assert claim(claims, "norm_slope").verdict == "reproduced"
    assert claim(claims, "interpolation").verdict == "reproduced"


def slope_of(sq: np.ndarray) -> tuple[float, float]:
    return slope_interval({float(n): sq[i, 0].tolist() for i, n in enumerate(NS)}, P5.seed)[1]


def test_norm_slope_inside_band():
    c = judged(fig5_ds(power_norms(0.5)), "norm_slope")
    assert c.measured == pytest.approx(0.5) and c.verdict == "reproduced"


def test_norm_slope_outside_band():
    c = judged(fig5_ds(power_norms(0.8)), "norm_slope")
    assert c.interval[0] > fig5.PAPER_SLOPE + fig5.SLOPE_TOL
    assert c.verdict == "not reproduced"


def test_norm_slope_straddling_band_edge():
    sq = power_norms(0.6, eps=0.05)
    lo, hi = slope_of(sq)
    edge = fig5.PAPER_SLOPE + fig5.SLOPE_TOL
    assert lo < edge < hi and hi - lo <= fig5.SLOPE_MAX_WIDTH
    assert judged(fig5_ds(sq), "norm_slope").verdict == "reproduced"


def test_norm_slope_too_wide_or_too_few_n():
    sq = power_norms(0.5, eps=0.2)
    lo, hi = slope_of(sq)
    assert lo < fig5.PAPER_SLOPE < hi and hi - lo > fig5.SLOPE_MAX_WIDTH
    assert judged(fig5_ds(sq), "norm_slope").verdict == "inconclusive"
    ok = np.zeros(sq.shape, bool)
    ok[:2] = True  # only two values of n interpolate
    c = judged(fig5_ds(power_norms(0.5), ok), "norm_slope")
    assert c.verdict == "inconclusive"


def ratio_norms(ratio_slope: float, factor: float = 1.2, eps: float = 0.0) -> np.ndarray:
    """Squared norms whose ratio to the minimum norm 2 sqrt(n) is factor n^ratio_slope."""
    mn = 2.0 * np.sqrt(np.asarray(NS, float))
    return power_norms(ratio_slope, eps) * factor * mn[:, None, None]


def test_constant_factor_inside():
    c = judged(fig5_ds(ratio_norms(0.0)), "constant_factor")
    assert c.measured == pytest.approx(1.2) and c.interval[1] < fig5.RATIO_SLOPE_MAX
    assert c.verdict == "reproduced"


def test_constant_factor_below_optimum_is_inconclusive():
    c = judged(fig5_ds(ratio_norms(0.0, factor=0.9)), "constant_factor")
    assert c.interval[1] < fig5.RATIO_SLOPE_MAX and c.verdict == "inconclusive"


def test_constant_factor_outside():
    c = judged(fig5_ds(ratio_norms(0.3)), "constant_factor")
    assert c.interval[0] >= fig5.RATIO_SLOPE_MAX and c.verdict == "not reproduced"


def test_constant_factor_straddling():
    c = judged(fig5_ds(ratio_norms(0.1, eps=0.05)), "constant_factor")
    assert c.interval[0] < fig5.RATIO_SLOPE_MAX < c.interval[1]
    assert c.verdict == "inconclusive"


@pytest.mark.parametrize(("failed", "verdict"), [(0, "reproduced"), (2, "partly"),
                                                 (3, "not reproduced")])
def test_interpolation_fraction(failed, verdict):
    """10 runs at the main lambda: all, exactly 80% and 70% interpolate."""
    sq = power_norms(0.5, runs=2, lams=2)
    ok = np.ones(sq.shape, bool)
    ok[:failed, 0, 0] = False  # lambda 0, run 0 of the first `failed` values of n
    ok[:, 1] = False  # the second lambda does not count
    c = judged(fig5_ds(sq, ok), "interpolation")
    assert c.measured == pytest.approx(1 - failed / 10) and c.verdict == verdict


def limit_ds(closer: int, runs: int = 2, unfitted: np.ndarray | None = None) -> xr.Dataset:
    """10 initialisations; ``closer`` of them nearer the limit at lambda 1e-60 than at 1e-12."""
    limit = np.full((len(NS), runs), 10.0)
    sq = np.empty((len(NS), 2, runs))
    sq[:, 0] = 12.0  # gap 0.2 at the main lambda
    flat = np.full(len(NS) * runs, 13.0)  # gap 0.3: farther
    flat[:closer] = 10.5  # gap 0.05: closer
    sq[:, 1] = flat.reshape(len(NS), runs)
    return fig5_ds(sq, limit=limit, unfitted=unfitted)


@pytest.mark.parametrize(("closer", "verdict"), [(10, "reproduced"), (8, "reproduced"),
                                                 (7, "not reproduced")])
def test_limit_approach_share(closer, verdict):
    c = judged(limit_ds(closer), "limit_approach")
    assert c.measured == pytest.approx(closer / 10) and c.verdict == verdict


def test_limit_approach_needs_comparable_runs_and_two_lambdas():
    c = judged(limit_ds(10, unfitted=np.ones((len(NS), 2), int)), "limit_approach")
    assert c.verdict == "inconclusive"
    claims = fig5.judge(fig5_ds(power_norms(0.5)), P5)
    assert "limit_approach" not in {c.id for c in claims}


# ----------------------------------------------------------------------------------- fig6
def fig6_ds(small: np.ndarray, he: np.ndarray, ok: np.ndarray | None = None) -> xr.Dataset:
    """Ratios (width, run) of both schemes with minimum norm 2 (so squared norms 2 x ratio)."""
    sq = 2.0 * np.stack([small, he], axis=1)
    ok = np.ones(sq.shape, bool) if ok is None else ok
    runs = sq.shape[2]
    tw = [8, 16, 32]
    return xr.Dataset(
        {"sq_norm": (("width", "scheme", "run"), sq),
         "sq_norm_init": (("width", "scheme", "run"), np.ones(sq.shape)),
         "interpolated": (("width", "scheme", "run"), ok),
         "final_loss": (("width", "scheme", "run"), np.where(ok, 1e-7, 1e-3)),
         "limit_sq_norm": (("width", "run"), np.full((len(WIDTHS), runs), 2.2)),
         "limit_unfitted": (("width", "run"), np.zeros((len(WIDTHS), runs), int)),
         "min_norm_sq": ((), 2.0),
         "theory_ratio": (("theory_width", "draw"), np.full((len(tw), 4), 1.1))},
        coords={"width": WIDTHS, "scheme": list(fig6.SCHEMES), "run": np.arange(runs),
                "theory_width": tw})


def trend(slope: float, spread: float = 0.01) -> np.ndarray:
    """(width, run) ratios m^slope times (1 - spread, 1, 1 + spread)."""
    m = np.asarray(WIDTHS, float)[:, None]
    return m**slope * (1.0 + spread * np.array([-1.0, 0.0, 1.0]))


FLAT = trend(0.0, spread=0.5)  # the run bootstrap interval of the slope contains 0


@pytest.mark.parametrize(("small", "verdict"), [(trend(-0.2), "reproduced"),
                                                (trend(0.2), "not reproduced"),
                                                (FLAT, "inconclusive")])
def test_small_init_trend(small, verdict):
    c = claim(fig6.judge(fig6_ds(small, trend(0.2)), P6), "small_init_approaches_optimum")
    if verdict == "reproduced":
        assert c.interval[1] < 0
    elif verdict == "not reproduced":
        assert c.interval[0] > 0
    else:
        assert c.interval[0] < 0 < c.interval[1]
    assert c.verdict == verdict


@pytest.mark.parametrize(("he", "verdict"), [(trend(0.2), "reproduced"),
                                             (trend(-0.2), "not reproduced"),
                                             (FLAT, "inconclusive")])
def test_he_init_trend(he, verdict):
    c = claim(fig6.judge(fig6_ds(trend(-0.2), he), P6), "he_init_keeps_increasing")
    assert c.verdict == verdict
    assert c.variants["monotone between consecutive widths"] == (verdict == "reproduced")


def test_trend_needs_three_widths():
    ok = np.ones((len(WIDTHS), 2, 3), bool)
    ok[2:, 0] = False  # small init: only two widths interpolate
    c = claim(fig6.judge(fig6_ds(trend(-0.2), trend(0.2), ok), P6),
              "small_init_approaches_optimum")
    assert c.verdict == "inconclusive"


@pytest.mark.parametrize(("failed", "verdict"), [(0, "reproduced"), (12, "partly"),
                                                 (13, "not reproduced")])
def test_runs_interpolate_fraction(failed, verdict):
    """24 runs: all, exactly half and fewer than half interpolate."""
    ok = np.ones((len(WIDTHS), 2, 3), bool)
    ok.reshape(-1)[:failed] = False
    c = claim(fig6.judge(fig6_ds(trend(-0.2), trend(0.2), ok), P6), "runs_interpolate")
    assert c.measured == pytest.approx(round(1 - failed / 24, 3)) and c.verdict == verdict
