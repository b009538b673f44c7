"""Verdict rules of town-fig1, town-fig3, town-fig4 and town-convergence on small synthetic
Datasets (no training): each rule with a measurement inside, outside and straddling its band or
threshold.

The synthetic problem: X = I_5, y = (3, 4, 1, 2, 1.5), three balanced neurons with signs +1 and
directions (1, 1, -1, -1, -1), (-1, 1, 1, 1, -1), (-1, -1, -1, -1, -1) (the third neuron has no
correctly signed active point: slope 0 throughout; point 4 is covered by nobody: a loss floor).
Algorithm 1: neuron 0 fits {0, 1} at τ_1, neuron 1 fits {2, 3} at τ_2; β^(0) = c_L (5, √21, 0),
β^(1) = c_L (0, √5, 0) with c_L = 2/n (MSE).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from shallowflow.reproductions.town import fig1, fig3, fig4
from shallowflow.reproductions.town import limit_convergence as convergence
from shallowflow.reproductions.town.scale_runs import limit_fitted_counts, limit_of
from shallowflow.theory.saddle_process import SaddleProcess

Y = np.array([3.0, 4.0, 1.0, 2.0, 1.5])
DIRECTIONS = np.array([[1, 1, -1, -1, -1], [-1, 1, 1, 1, -1], [-1, -1, -1, -1, -1]]) / 2.0
LOG10S = [-10.0, -100.0]  # two runs; the last is the smallest lambda


def problem() -> xr.Dataset:
    """The limit process's inputs as a reproduction stores them (setup.process_vars)."""
    n = Y.size
    return xr.Dataset({"X": (("sample", "dim"), np.eye(n)), "y": ("sample", Y),
                       "limit_sign": ("neuron", np.ones(3)),
                       "limit_direction": (("neuron", "dim"), DIRECTIONS),
                       "limit_c_L": ((), 2.0 / n), "limit_normaliser": ((), 1.0 / n)})


P0 = limit_of(problem())


def by_id(claims: list) -> dict:
    return {c.id: c for c in claims}


def test_synthetic_problem_is_as_documented():
    assert P0.sequence.tolist() == [0, 1] and P0.losses[-1] > 0
    np.testing.assert_allclose(P0.slopes[0], 0.4 * np.array([5.0, math.sqrt(21), 0.0]))
    np.testing.assert_allclose(P0.slopes[1], [0.0, 0.4 * math.sqrt(5), 0.0])


# ------------------------------------------------------------------------------------ fig1
def fig1_ds(time_rel: list[list[float]], loss_rel: list[list[float]],
            counts: list[list[int]] | None = None, grow: list[float] | None = None,
            fitted: list[int] | None = None) -> xr.Dataset:
    """Runs at LOG10S whose jump times are τ (1 + time_rel[r]) and plateaus L (1 + loss_rel[r])."""
    p, R = P0, len(LOG10S)
    grow = [float(p.tau[0]), float(p.tau[1]), math.nan] if grow is None else grow
    return problem().assign(
        jump_time_measured=(("run", "jump"), p.tau[None] * (1 + np.array(time_rel))),
        plateau_loss=(("run", "saddle"), p.losses[None] * (1 + np.array(loss_rel))),
        neurons_per_drop=(("run", "jump"), np.array(counts or [[1, 1]] * R)),
        growth_time=(("run", "neuron"), np.array([grow] * R)),
        plateau_fitted=(("run", "saddle"),
                        np.array([fitted or limit_fitted_counts(p).tolist()] * R)),
    ).assign_coords(log10_lambda=("run", LOG10S))


P1 = fig1.Fig1Params(**fig1.PRESETS["quick"])
T, LT = fig1.TIME_RTOL, fig1.LOSS_RTOL


@pytest.mark.parametrize(("small", "large", "verdict"), [
    ([0.5 * T, 0.2 * T], [0.1, 0.1], "reproduced"),  # inside
    ([2.0 * T, 3.0 * T], [0.1, 0.1], "not reproduced"),  # outside
    ([0.5 * T, 1.5 * T], [0.1, 0.1], "not reproduced"),  # straddling: the worst jump decides
    ([0.9 * T, 0.0], [0.5 * T, 0.5 * T], "not reproduced"),  # within, but not below the largest
])
def test_fig1_jump_time_rule(small, large, verdict):
    ds = fig1_ds([large, small], [[0.0] * 3] * 2)
    assert by_id(fig1.judge(ds, P1))["jump_times"].verdict == verdict


@pytest.mark.parametrize(("small", "before", "verdict"), [
    ([0.0, 0.5 * LT, -0.5 * LT], [0.1] * 3, "reproduced"),  # inside
    ([0.0, 2.0 * LT, 0.0], [0.0, 3.0 * LT, 0.0], "partly"),  # outside, still approaching
    ([0.0, 2.0 * LT, 0.0], [0.0, 1.5 * LT, 0.0], "not reproduced"),  # outside, moving away
    ([3.0 * LT, 0.5 * LT, 0.0], [LT, 0.0, 0.0], "not reproduced"),  # straddling, moving away
])
def test_fig1_plateau_rule(small, before, verdict):
    ds = fig1_ds([[0.1, 0.1], [0.0, 0.0]], [before, small])
    assert by_id(fig1.judge(ds, P1))["plateau_losses"].verdict == verdict


def test_fig1_one_neuron_and_fitted_points_rules():
    ok = by_id(fig1.judge(fig1_ds([[0.1, 0.1], [0, 0]], [[0] * 3] * 2), P1))
    assert ok["one_neuron_per_jump"].verdict == "reproduced"
    assert ok["fitted_points"].verdict == "reproduced"
    two = fig1_ds([[0.1, 0.1], [0, 0]], [[0] * 3] * 2, counts=[[1, 1], [2, 0]])
    assert by_id(fig1.judge(two, P1))["one_neuron_per_jump"].verdict == "not reproduced"
    swapped = fig1_ds([[0.1, 0.1], [0, 0]], [[0] * 3] * 2, grow=[2.0, 1.0, math.nan])
    assert by_id(fig1.judge(swapped, P1))["one_neuron_per_jump"].verdict == "not reproduced"
    off = fig1_ds([[0.1, 0.1], [0, 0]], [[0] * 3] * 2, fitted=[0, 2, 3])
    assert by_id(fig1.judge(off, P1))["fitted_points"].verdict == "not reproduced"


# ------------------------------------------------------------------------------------ fig3
def fig3_ds(rel: list[float], rel_before: list[float] | None = None, flat: float = 0.0,
            r2: float = 0.9999, r2_before: float = 0.9999) -> xr.Dataset:
    """Measured slopes β (1 + rel[i]) on the three positive-β neuron-intervals (interval 0:
    neurons 0, 1; interval 1: neuron 1), ``flat`` x max β where β = 0, NaN where fitted."""
    p, beta = P0, P0.slopes
    fitted = np.array([p.fitted_neurons(k) for k in range(p.K + 1)])
    pos = ~fitted & (beta > 0)

    def slopes(r: list[float]) -> np.ndarray:
        s = np.where(fitted, np.nan, flat * beta.max())
        s[pos] = beta[pos] * (1 + np.array(r))
        return s

    r2s = [np.where(fitted, np.nan, v) for v in (r2_before, r2)]
    return problem().assign(
        slope_measured=(("run", "interval", "neuron"), np.stack([slopes(rel_before or rel),
                                                                 slopes(rel)])),
        slope_r2=(("run", "interval", "neuron"), np.stack(r2s)),
    ).assign_coords(log10_lambda=("run", LOG10S))


P3 = fig3.Fig3Params(**fig3.PRESETS["quick"])
S, FA, R2 = fig3.SLOPE_RTOL, fig3.FLAT_ATOL, fig3.R2_MIN


@pytest.mark.parametrize(("rel", "before", "verdict"), [
    ([0.5 * S, -0.5 * S, 0.2 * S], None, "reproduced"),  # inside
    ([2 * S, -3 * S, 2 * S], [3 * S, -4 * S, 3 * S], "partly"),  # outside, approaching
    ([2 * S, -3 * S, 2 * S], [S, -S, S], "not reproduced"),  # outside, moving away
    ([0.5 * S, 2 * S, 0.0], [0.0, 3 * S, 0.0], "partly"),  # straddling, the one over improves
    ([0.5 * S, 2 * S, 0.0], [0.0, S, 0.0], "not reproduced"),  # straddling, it got worse
])
def test_fig3_slope_rule(rel, before, verdict):
    assert by_id(fig3.judge(fig3_ds(rel, before), P3))["slopes"].verdict == verdict


@pytest.mark.parametrize(("flat", "verdict"), [
    (0.5 * FA, "reproduced"), (-0.5 * FA, "reproduced"), (2 * FA, "not reproduced"),
    (-2 * FA, "not reproduced")])
def test_fig3_flat_rule(flat, verdict):
    assert by_id(fig3.judge(fig3_ds([0.0] * 3, flat=flat), P3))["slopes"].verdict == verdict


@pytest.mark.parametrize(("r2", "before", "verdict"), [
    (0.5 * (1 + R2), R2, "reproduced"),  # inside
    (R2 - 0.01, R2 - 0.02, "partly"),  # below, straighter than at the larger lambda
    (R2 - 0.01, R2 - 0.005, "not reproduced"),  # below, less straight
])
def test_fig3_r2_rule(r2, before, verdict):
    ds = fig3_ds([0.0] * 3, r2=r2, r2_before=before)
    assert by_id(fig3.judge(ds, P3))["piecewise_linear"].verdict == verdict


def test_fig3_decreasing_rule():
    """Neuron 1's slope may rise from interval 0 to 1 by at most SLOPE_RTOL max β."""
    beta = P0.slopes
    drop = beta[0, 1] / beta[1, 1] - 1  # rel on neuron-interval (1, 1) making it equal to (0, 1)
    for extra, verdict in ((0.5, "reproduced"), (2.0, "not reproduced")):
        rel = [0.0, 0.0, drop + extra * S * beta.max() / beta[1, 1]]
        ds = fig3_ds(rel)
        assert by_id(fig3.judge(ds, P3))["piecewise_linear"].verdict == verdict, extra


# ------------------------------------------------------------------------------------ fig4
def fig4_ds(cos_jump: tuple[float, float] = (1.0, 1.0), grown: float = 1.0,
            other_norm: float = 0.1 * fig4.SMALL_NORM,
            turn: tuple[float, float, float] = (0.995, 0.5, 0.5)) -> xr.Dataset:
    """Snapshots of the synthetic problem: neuron 0 jumps first; ``cos_jump`` its cosines with
    D^(0) at 0.98 τ_1 and τ_1; at 1.02 τ_1 its norm is ``grown`` x its final norm 2 and the
    others' ``other_norm``; neuron 1 (its direction changes) has cosine turn[0] with D^(1) and
    turn[1] with D^(0) at 1.02 τ_1, turn[2] with D^(1) at 0.98 τ_1."""
    names = list(fig4.snapshot_times(P0))
    cos_old, cos_new = np.full((len(names), 3), 0.5), np.full((len(names), 3), 0.5)
    log_norm = np.full((len(names), 3), math.log(other_norm))
    at = {nm: i for i, nm in enumerate(names)}
    cos_old[at["0.98 τ_1"], 0], cos_old[at["τ_1"], 0] = cos_jump
    log_norm[at["1.02 τ_1"], 0] = math.log(2.0 * grown)
    cos_new[at["1.02 τ_1"], 1], cos_old[at["1.02 τ_1"], 1] = turn[:2]
    cos_new[at["0.98 τ_1"], 1] = turn[2]
    return problem().assign(
        cos_old=(("snapshot", "neuron"), cos_old), cos_new=(("snapshot", "neuron"), cos_new),
        log_norm=(("snapshot", "neuron"), log_norm),
        log_norm_final=("neuron", np.log([2.0, 1.0, 1e-9]))).assign_coords(snapshot=names)


P4 = fig4.Fig4Params(**fig4.PRESETS["quick"])
C = fig4.COS_MIN


@pytest.mark.parametrize(("cos", "verdict"), [
    ((C + 0.005, 1.0), "reproduced"), ((C - 0.01, C - 0.02), "not reproduced"),
    ((C + 0.005, C - 0.005), "not reproduced")])  # straddling: both times must pass
def test_fig4_direction_rule(cos, verdict):
    assert by_id(fig4.judge(fig4_ds(cos_jump=cos), P4))["jump_direction"].verdict == verdict


@pytest.mark.parametrize(("grown", "other", "verdict"), [
    (0.9, 0.5 * fig4.SMALL_NORM, "reproduced"),
    (0.9, 2.0 * fig4.SMALL_NORM, "not reproduced"),  # another neuron already O(1)
    (0.4, 0.5 * fig4.SMALL_NORM, "not reproduced"),  # the jumping neuron not yet grown
])
def test_fig4_alone_rule(grown, other, verdict):
    ds = fig4_ds(grown=grown, other_norm=other)
    assert by_id(fig4.judge(ds, P4))["alone_grows"].verdict == verdict


@pytest.mark.parametrize(("turn", "verdict"), [
    ((C + 0.005, 0.5, 0.5), "reproduced"),
    ((C - 0.05, 0.5, 0.5), "partly"),  # turned, not yet at COS_MIN
    ((0.4, 0.5, 0.3), "not reproduced"),  # closer to the old direction
    ((C + 0.005, 0.5, 0.999), "not reproduced"),  # no turn since 0.98 τ_1
])
def test_fig4_realignment_rule(turn, verdict):
    claims = by_id(fig4.judge(fig4_ds(turn=turn), P4))
    assert claims["realignment"].verdict == verdict
    assert list(claims["realignment"].measured) == ["neuron 1"]


# ----------------------------------------------------------------------------- convergence
L10 = [-10.0, -20.0, -40.0, -80.0]
PC = convergence.ConvergenceParams(**{**convergence.PRESETS["quick"], "log10_lambdas": L10,
                                      "boot": 200})


def conv_ds(jump_slopes: list[float], weight_slopes: list[float],
            bias: tuple[float, float] = (0.0, 0.0), hand_rel: tuple[float, float] = (0.0, 0.0),
            ) -> xr.Dataset:
    """Problems (the last is the hand vector) with jump-time errors 0.1 (L/L_0)^s (both jumps,
    both step sizes, plus ``bias`` per step size) and final-weight errors 0.1 (L/L_0)^s; the
    hand vector is measured at HAND_TAU (1 + hand_rel) at the smallest lambda (an error 0 there
    leaves that point out of its slope fit)."""
    L = -np.array(L10) * math.log(10)
    Q = len(jump_slopes)
    tau = np.array([[1.0, 2.0]] * (Q - 1) + [list(convergence.HAND_TAU)])
    err = np.array([0.1 * (L / L[0]) ** s for s in jump_slopes])  # (Q, R)
    cross = tau[:, None, :] + err[:, :, None]
    cross[-1, -1] = np.array(convergence.HAND_TAU) * (1 + np.array(hand_rel))
    werr = np.array([0.1 * (L / L[0]) ** s for s in weight_slopes])
    names = [f"random seed {q}" for q in range(Q - 1)] + [convergence.HAND_NAME]
    return xr.Dataset(
        {"cross": (("lr", "problem", "lam", "jump"), np.stack([cross + b for b in bias])),
         "final_error": (("lr", "problem", "lam"), np.stack([werr, werr])),
         "tau": (("problem", "jump"), tau), "K": ("problem", [2] * Q),
         "loss_floor": ("problem", np.zeros(Q)),
         "seed_tried": ("tried", [0]), "seed_selected": ("tried", [1])},
        coords={"lr": [PC.lr, PC.lr / PC.refine], "problem": names,
                "log10_lambda": ("lam", L10), "log_lambda": ("lam", -L)})


@pytest.mark.parametrize(("slopes", "verdict"), [
    ([-1.0, -1.0, -1.0], "reproduced"),  # the interval contains -1
    ([-0.8, -0.8, -0.8], "reproduced"),  # interval (-0.8, -0.8) misses -1, the mean is in the band
    ([-1.35, -1.35, -1.35], "not reproduced"),  # just outside the band, interval misses -1
    ([-2.0, -2.0, -2.0], "not reproduced"),
    ([0.2, -3.2, -1.0], "reproduced"),  # straddling: mean -1.33 outside the band, interval holds -1
    ([-0.5, -0.6, -0.55], "not reproduced"),  # near the band's edge: mean -0.55 outside
])
def test_convergence_rate_rule(slopes, verdict):
    claim = by_id(convergence.judge(conv_ds(slopes, [-2.0] * 3), PC))["jump_time_rate"]
    assert claim.measured == pytest.approx(np.mean(slopes), abs=1e-3)
    assert claim.verdict == verdict, (claim.measured, claim.interval)


def test_convergence_rate_rule_is_the_band_rule():
    assert convergence.rate_verdict(-1.5, (-2.0, -0.9)) == "reproduced"
    assert convergence.rate_verdict(-0.8, (-0.85, -0.75)) == "reproduced"
    assert convergence.rate_verdict(-0.69, (-0.7, -0.68)) == "not reproduced"
    assert convergence.rate_verdict(math.nan, (math.nan, math.nan)) == "not reproduced"


@pytest.mark.parametrize(("slopes", "verdict"), [
    ([-2.0, -3.0, -2.0], "reproduced"), ([-0.5, -0.5, -0.5], "not reproduced"),
    ([-0.3, -0.4, -2.0], "not reproduced")])  # straddling: mean -0.9, the interval reaches -0.3
def test_convergence_weight_rule(slopes, verdict):
    claim = by_id(convergence.judge(conv_ds([-1.0] * 3, slopes), PC))["final_weight_rate"]
    assert claim.verdict == verdict, claim.interval


@pytest.mark.parametrize(("bias", "verdict"), [
    ((0.01, 0.002), "reproduced"), ((0.002, 0.01), "not reproduced")])
def test_convergence_bias_rule(bias, verdict):
    """A check (not a claim of the paper) that can fail: the coarse step's bias is the larger."""
    claim = by_id(convergence.judge(conv_ds([-1.0] * 2, [-2.0] * 2, bias=bias), PC))["gd_step_bias"]
    assert claim.verdict == verdict and claim.role == "check"


@pytest.mark.parametrize(("rel", "verdict"), [
    ((0.005, -0.005), "reproduced"), ((0.02, 0.03), "not reproduced"),
    ((0.005, 0.02), "not reproduced")])
def test_convergence_hand_rule(rel, verdict):
    claim = by_id(convergence.judge(conv_ds([-1.0] * 2, [-2.0] * 2, hand_rel=rel), PC))["hand_vector"]
    assert claim.verdict == verdict


def test_limit_of_rebuilds_the_process():
    q = limit_of(problem())
    assert isinstance(q, SaddleProcess)
    np.testing.assert_array_equal(q.tau, P0.tau)
