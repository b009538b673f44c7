"""Min-Mallada-Vidal reproductions (mmv-fig5/10/11, mmv-two-point, mmv-fig6, mmv-fig12).

1. The experiment builder of ``mmv.setup`` on an MNIST pair (exponential loss, **mean**: the
   headline reading) against plain numpy GD written here (the sum reading is checked in
   tests/test_new_data_and_paths.py).
2. Each judge on synthetic Datasets whose verdicts are known by construction (no training).
3. Tiny end-to-end runs (mmv-fig5 with one reading, mmv-fig6) checked with
   ``check_reproduction_folder``; re-judging gives identical claims.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import xarray as xr

from conftest import assert_sourced, check_reproduction_folder
from shallowflow.reproductions import rejudge, run_reproduction
from shallowflow.reproductions.mmv import digit_pairs as mnist
from shallowflow.reproductions.mmv import fig6, fig12, twopoint
from shallowflow.reproductions.mmv.alignment_curves import TOY_X, TOY_Y, mmv_experiment
from shallowflow.theory.alignment import mu_separation
from shallowflow.training.entry import train


# ------------------------------------------------------------------ 1. library vs numpy GD
def test_mnist_mean_reading_matches_numpy_gd():
    steps, lr, width = 30, 2e-3, 5
    exp = mmv_experiment(data={"kind": "mnist", "digits": [1, 0], "per_digit": 12}, width=width,
                         alpha=0.05, lr=lr, steps=steps, loss="exponential", reduction="mean",
                         every=10)
    ds = train([exp], keep_data=True, show_progress=False)[0]
    X, y = ds["X"].values, ds["y"].values
    a, W = ds["a_init"].values[0].copy(), ds["W_init"].values[0].copy()
    n = len(y)
    for _ in range(steps):
        Z = X @ W.T
        h = np.maximum(Z, 0) @ a
        g = -y * np.exp(-y * h) / n  # dL/dh for L = (1/n) sum_i exp(-y_i h_i)
        grad_a = np.maximum(Z, 0).T @ g
        grad_W = ((Z > 0) * g[:, None] * a[None, :]).T @ X
        a, W = a - lr * grad_a, W - lr * grad_W
    np.testing.assert_allclose(ds["W"].values[0, -1], W, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(ds["a"].values[0, -1], a, rtol=1e-10, atol=1e-14)
    loss = np.mean(np.exp(-y * (np.maximum(X @ W.T, 0) @ a)))
    assert float(ds["loss"].values[0, -1]) == pytest.approx(loss, rel=1e-10)


def test_toy_set_is_mu_separated():
    assert mu_separation(TOY_X, TOY_Y) == pytest.approx(math.cos(math.radians(50)), abs=1e-12)


# ------------------------------------------------------------------ 2. judges, synthetic
def mnist_ds(align_at=1500.0, onset_at=3000.0, rank=1.05, cos_top=1.0, all_at=None) -> xr.Dataset:
    """Synthetic curves of one reading: the mean-neuron cosines rise linearly from 0 to
    ``cos_top`` at ``align_at``, the smallest cosines over V_+/V_- at ``all_at`` (default
    ``align_at``); the loss is 1 until ``onset_at`` then falls to 0.01, and ||W||_2^2 grows from
    1e-12 by e per 100 iterations after it, to 1; the stable rank ends at ``rank``."""
    it = np.arange(0, 15001, 100)
    cos = np.clip(it / align_at, 0, 1) * cos_top
    cos_min = np.clip(it / (all_at or align_at), 0, 1) * cos_top
    loss = np.where(it < onset_at, 1.0, np.maximum(0.01, 1.0 - (it - onset_at) / 2000))
    spectral = np.minimum(1.0, 1e-12 * np.exp(np.maximum(0.0, it - onset_at) / 100))
    sr = np.full(len(it), rank)
    sr[0] = 30.0
    curves = {k: ("iteration", cos) for k in ("cos_plus", "cos_minus")}
    curves |= {k: ("iteration", cos_min) for k in ("cos_plus_min", "cos_minus_min")}
    ds = xr.Dataset({**curves, "loss": ("iteration", loss), "stable_rank": ("iteration", sr),
                     "spectral_sq": ("iteration", spectral)}, coords={"iteration": it})
    return ds.expand_dims(reading=["exponential-mean"])


P_MNIST = mnist.MnistParams.model_validate({**mnist.presets()["quick"],
                                            "readings": ["exponential-mean"]})


def verdicts(claims):
    """Verdicts by claim id, after checking that every claim has a source (issue 34)."""
    assert_sourced(claims)
    return {c.id: c.verdict for c in claims}


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({}, {"alignment_time": "reproduced", "growth_onset": "reproduced",
          "stable_rank": "reproduced", "loss_falls": "reproduced"}),
    ({"align_at": 5000.0, "onset_at": 6000.0}, {"alignment_time": "not reproduced",
                                                "growth_onset": "not reproduced"}),
    ({"cos_top": 0.8}, {"alignment_time": "not reproduced", "growth_onset": "not reproduced"}),
    ({"rank": 1.8}, {"stable_rank": "partly"}),
    ({"rank": 2.5}, {"stable_rank": "not reproduced"}),
    ({"align_at": 2900.0, "onset_at": 2500.0}, {"growth_onset": "not reproduced"}),  # order
    # "about 2000" is read symmetrically, 2000 / 1.5 to 2000 x 1.5, like the growth onset's
    # band (issue 34): half the paper's time misses it (0.95 is reached at 0.95 x align_at)
    ({"align_at": 1000.0}, {"alignment_time": "not reproduced"}),
    ({"align_at": 1450.0}, {"alignment_time": "reproduced"}),
])
def test_mnist_judge(kwargs, expected):
    got = verdicts(mnist.judge(mnist_ds(**kwargs), P_MNIST))
    for k, v in expected.items():
        assert got[k] == v, (k, got)


def test_mnist_judge_variants_follow_the_other_statistics():
    """The all-neurons alignment and the two other onset readings get their own verdicts under
    the same bands, beside the headline (which they do not change)."""
    claims = {c.id: c for c in mnist.judge(mnist_ds(align_at=1000.0, all_at=2600.0), P_MNIST)}
    align = claims["alignment_time"]
    assert align.verdict == "not reproduced"
    row = align.variants["exponential-mean"]
    assert row["all_neurons_alignment_iteration"] == pytest.approx(2470.0, abs=100)
    assert row["verdict (all neurons)"] == "reproduced"
    onset = claims["growth_onset"].variants["exponential-mean"]
    assert onset["onset_at_0.9_L0"] == pytest.approx(3200.0, abs=100)  # loss 0.9 at 3200
    assert onset["norm_onset_iteration"] == pytest.approx(3000 + 100 * math.log(1e10), abs=100)
    assert onset["verdict (L <= 0.9 L(0))"] == "reproduced"


def two_point_ds(outside_at_check: int, ortho_far: bool = False) -> xr.Dataset:
    """Three settings, records at iterations 0, 2000, 7000, 21000, 25000, 6 neurons (4 with
    v > 0, 2 with v < 0 and dead). For sin 0.1 all positive neurons are in S_+ from 2000 on; for
    sin 0.001 ``outside_at_check`` of them sit just below x_1 (active on x_1 only) until 21000
    and one stays there. At mu = 0 two positive neurons sit on x_1 and x_2 (or 0.3 rad off with
    ``ortho_far``) with norm 1e-6, two on x_+ grow to norm 1."""
    it = np.array([0, 2000, 7000, 21000, 25000])
    T, p = len(it), 6
    a = np.tile(np.array([1e-6, 1e-6, 1e-6, 1e-6, -1e-6, -1e-6]), (T, 1))
    dead = np.array([-1.0, -1.0]) / math.sqrt(2)
    below_x1 = np.array([math.cos(-0.01), math.sin(-0.01)])
    settings = {}
    for s, x2 in (("sin 0.1", [math.sin(0.1), math.cos(0.1)]),
                  ("sin 0.001", [math.sin(0.001), math.cos(0.001)]), ("0", [0.0, 1.0])):
        X = np.array([[1.0, 0.0], x2])
        xp = (X[0] + X[1]) / np.linalg.norm(X[0] + X[1])
        W = np.zeros((T, p, 2))
        W[:, 4:] = 1e-6 * dead
        W[0, :4] = 1e-6 * np.array([[1.0, 0.2], [0.3, 1.0], [1.0, -0.5], [0.5, 0.5]])
        for k in range(1, T):
            W[k, :4] = 1e-6 * xp
            if s == "sin 0.001":
                stay = outside_at_check if k <= 2 else (1 if k >= 3 else 0)
                W[k, :stay] = 1e-6 * below_x1
            if s == "0":
                off = 0.3 if ortho_far else 0.0  # 0.3 rad off x_1, still active on x_1 only
                W[k, 0] = 1e-6 * np.array([math.cos(off), -math.sin(off)])
                W[k, 1] = 1e-6 * np.array([0.0, 1.0])
                if k >= 3:
                    W[k, 2:4] = xp
        loss = np.array([1.0, 1.0, 1.0, 0.2, 0.01])
        loss[2] = 0.95  # onset between 2000 and 7000 (the mu = 0 read-off at 7000)
        settings[s] = xr.Dataset({"W": (("time", "neuron", "dim"), W),
                                  "a": (("time", "neuron"), a), "loss": ("time", loss),
                                  "X": (("sample", "dim"), X), "y": ("sample", np.ones(2))})
    ds = xr.concat([settings[s].expand_dims(setting=[s]) for s in twopoint.SETTINGS], "setting")
    return ds.assign_coords(iteration=("time", it), time=it * 2e-3)


P_TWO = twopoint.TwoPointParams.model_validate(twopoint.PRESETS["quick"])


@pytest.mark.parametrize(("outside", "far", "expected"), [
    (2, False, {"slower_as_mu_falls": "reproduced", "aligned_mu_positive": "reproduced",
                "orthogonal_three_directions": "reproduced",
                "orthogonal_only_splus_grow": "reproduced"}),
    (0, True, {"slower_as_mu_falls": "partly", "orthogonal_three_directions": "not reproduced"}),
])
def test_two_point_judge(outside, far, expected):
    got = verdicts(twopoint.judge(two_point_ds(outside, far), P_TWO))
    for k, v in expected.items():
        assert got[k] == v, (k, got)


def fig12_ds(both_peak: int, both_rise: int) -> xr.Dataset:
    it = np.arange(0, 5000, 100)
    out = []
    for s, peak, rise in (("both layers", both_peak, both_rise), ("first layer only", 0, 0)):
        du = np.exp(-((it - peak) / 500.0) ** 2)
        dn = 1.0 / (1.0 + np.exp(-(it - rise - 300) / 60.0))
        out.append(xr.Dataset({"loss": ("iteration", 1.0 - 0.9 * dn),
                               "norm_changes": ("iteration", dn),
                               "direction_changes": ("iteration", du)},
                              coords={"iteration": it}).expand_dims(scheme=[s]))
    ds = xr.concat(out, "scheme")
    ds.attrs.update(n=200, batch=200)
    return ds


P12 = fig12.Fig12Params.model_validate(fig12.PRESETS["quick"])


@pytest.mark.parametrize(("peak", "rise", "both"), [
    (1000, 2500, "reproduced"), (2500, 1000, "not reproduced"), (0, 2500, "not reproduced")])
def test_fig12_judge(peak, rise, both):
    got = verdicts(fig12.judge(fig12_ds(peak, rise), P12))
    assert got == {"two_phases_both_layers": both, "no_two_phases_first_layer": "reproduced"}


def fig6_ds(spread: bool = False) -> xr.Dataset:
    """A synthetic mmv-fig6 run on the toy set: 2 neurons with v > 0 and 2 with v < 0 start in
    random directions at norm 1e-6, sit along x_+ (x_-) from iteration 500 on, and grow to norm 1
    from iteration 2000, while the loss falls from 1 to 0.01. ``spread``: the final neurons lie
    along x_+ and its normal, equal in norm (stable rank 2)."""
    rng = np.random.default_rng(1)
    it = np.arange(0, 4001, 100)
    up = np.array([1.0, 1.0, -1.0, -1.0])
    xp = TOY_X[TOY_Y > 0].sum(axis=0)
    xm = TOY_X[TOY_Y < 0].sum(axis=0)
    target = np.array([xp, xp, xm, xm]) / np.linalg.norm([xp, xp, xm, xm], axis=1, keepdims=True)
    if spread:
        normal = np.array([-xp[1], xp[0]]) / np.linalg.norm(xp)
        target = np.array([xp / np.linalg.norm(xp), normal, xm / np.linalg.norm(xm), -normal])
    start = rng.standard_normal((4, 2))
    start /= np.linalg.norm(start, axis=1, keepdims=True)
    norm = np.where(it < 2000, 1e-6, np.minimum(1.0, 1e-6 * np.exp((it - 2000) / 100)))
    W = np.where((it < 500)[:, None, None], start[None], target[None]) * norm[:, None, None]
    a = up[None] * norm[:, None]
    loss = np.where(it < 2000, 1.0, np.maximum(0.01, 1.0 - (it - 2000) / 1500))
    return xr.Dataset({"W": (("time", "neuron", "dim"), W), "a": (("time", "neuron"), a),
                       "loss": ("time", loss), "X": (("sample", "dim"), TOY_X),
                       "y": ("sample", TOY_Y)},
                      coords={"time": it * 2e-3, "iteration": ("time", it)})


P6 = fig6.Fig6Params.model_validate(fig6.PRESETS["quick"])


def test_fig6_judge():
    """The two bounds are checks (not counted); the low-rank claim can fail now: W has two
    rows, so Theorem 1.3's stable rank <= 2 held for any run, while 'approximately low-rank'
    (in [1, 1.5]) fails for neurons spread over two orthogonal directions."""
    claims = fig6.judge(fig6_ds(), P6)
    got = verdicts(claims)
    assert {c.id for c in claims if c.role == "check"} == {"t1_bound", "loss_rate"}
    assert got["alignment"] == "reproduced" and got["low_rank"] == "reproduced"
    assert got["monotone_patterns"] == "reproduced"
    assert verdicts(fig6.judge(fig6_ds(spread=True), P6))["low_rank"] == "not reproduced"


# ------------------------------------------------------------------ 3. end to end
def _rejudged_same(name, folder, tmp_path):
    again, _ = rejudge(name, folder, tmp_path / "again")
    assert (json.loads((again / "claims.json").read_text())
            == json.loads((folder / "claims.json").read_text()))


def test_fig5_tiny_end_to_end(tmp_path):
    folder, _ = run_reproduction(
        "mmv-fig5", tmp_path / "fig5", "quick",
        ["per_digit=10", "steps=400", "every=50", 'readings=["exponential-mean", "exponential-sum"]'],
        show_progress=False)
    claims, report = check_reproduction_folder(
        folder, {"alignment_time", "growth_onset", "stable_rank", "loss_falls"})
    assert set(claims["alignment_time"]["variants"]) == {"exponential-mean", "exponential-sum"}
    assert "exponential-sum" in report
    _rejudged_same("mmv-fig5", folder, tmp_path)


def test_fig6_tiny_end_to_end(tmp_path):
    folder, claims = run_reproduction("mmv-fig6", tmp_path / "fig6", "quick",
                                      ["steps=16000", "every=200"], show_progress=False)
    check_reproduction_folder(folder, {"alignment", "t1_bound", "started_active", "loss_rate",
                                       "low_rank", "monotone_patterns"})
    assert {c.id: c.verdict for c in claims}["alignment"] == "reproduced"
    _rejudged_same("mmv-fig6", folder, tmp_path)


def test_rank_bound_reads_the_experiment_start_in_the_theory_form():
    """W(0) = eps W_0 with eps = alpha sqrt(D): 4 sqrt(h) eps W_max^2 = 4 sqrt(h) max_j ||w_j(0)||^2
    / (alpha sqrt(D)); the bound tends to 2 as ||W||_2^2 grows (docs/math.md §4.2)."""
    from shallowflow.reproductions.mmv.digit_pairs import rank_bound

    h, D, alpha = 4, 9, 1e-3
    W = np.zeros((2, h, D))
    W[0, :, 0] = alpha * np.array([1.0, 2.0, 3.0, 0.5])  # largest ||w_j(0)|| = 3 alpha
    spectral = np.array([1e-6, 1e6])
    expected = 2 + 4 * np.sqrt(h) * (3 * alpha) ** 2 / (alpha * np.sqrt(D)) / spectral
    np.testing.assert_allclose(rank_bound(W, alpha, spectral), expected, rtol=1e-12)
    assert rank_bound(W, alpha, np.array([1e12]))[0] == pytest.approx(2.0, abs=1e-9)


def test_mnist_reproductions_take_a_users_files(tmp_path):
    """``mnist_path`` replaces the embedded subset (any number of images per digit); without it
    more than 500 per digit is refused, naming the field."""
    from shallowflow.reproductions.mmv.alignment_curves import MnistSource, mmv_experiment

    rng = np.random.default_rng(0)
    labels = np.array([1, 0, 1, 7, 0, 1])
    np.savez(tmp_path / "mine.npz", images=rng.integers(0, 256, (6, 28, 28), dtype=np.uint8),
             labels=labels)
    src = MnistSource(mnist_path=str(tmp_path / "mine.npz"), per_digit=None)
    X, y = mmv_experiment(data=src.data((1, 0))).data.arrays()
    assert X.shape == (5, 784) and sorted(np.asarray(y).tolist()) == [-1, -1, 1, 1, 1]
    with pytest.raises(ValueError, match="per_digit"):
        MnistSource(per_digit=501)
    assert MnistSource(per_digit=501, mnist_path="x.npz").per_digit == 501
