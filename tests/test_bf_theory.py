"""Boursier-Flammarion theory (docs/math.md §2.3, §2.4, §2.7, §8.11): G, the pattern vectors D_A,
the critical directions of G (exact on the circle, searched above), OLS and Theorem 2's limit, the
alignment diagnostics and the phase ends read off curves.

References are independent of the code: direct sums over the samples, finite differences, dense
grids of angles (every strict local extremum of G on the grid), every activation pattern met on a
dense sample of the sphere tested against Definition 1 by hand, exact rational arithmetic for the
§2.4 test vector, and synthetic piecewise-linear curves whose crossings are known in closed form."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import xarray as xr

from shallowflow.analysis.curves import bf_phase_ends, first_rise, settling_time
from shallowflow.data import boursier
from shallowflow.model.activations import Activation
from shallowflow.model.losses import Loss
from shallowflow.theory import bf_alignment, extremal, ols

SEEDS = (0, 1, 2, 3, 4)


def _onedim(seed: int, n: int = 7) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, n)
    return np.stack([x, np.ones(n)], axis=1), rng.standard_normal(n)


def _G_direct(w: np.ndarray, X: np.ndarray, y: np.ndarray, leak: float = 0.0) -> float:
    """BF's eq.7 for the mse loss at h = 0, term by term: -(1/n) sum_k d1 ell(0, y_k) sigma(<w, x_k>)
    with d1 ell(0, y) = 2 (0 - y)."""
    total = 0.0
    for xk, yk in zip(X, y, strict=True):
        z = float(w @ xk)
        total += -(2.0 * (0.0 - yk)) * (z if z > 0 else leak * z)
    return total / len(y)


def _D_direct(A: np.ndarray, X: np.ndarray, c: np.ndarray, leak: float = 0.0) -> np.ndarray:
    out = np.zeros(X.shape[1])
    for Ak, xk, ck in zip(A, X, c, strict=True):
        out += ck * (1.0 if Ak > 0 else leak if Ak < 0 else 0.0) * xk
    return out


# ---------------------------------------------------------------------------------------- G, D_A


@pytest.mark.parametrize("seed", SEEDS)
def test_G_gradient_and_pattern_vector_against_direct_sums(seed):
    X, y = _onedim(seed)
    rng = np.random.default_rng(100 + seed)
    c = extremal.residual_weights(y)
    np.testing.assert_allclose(c, 2 * y / len(y), rtol=1e-15)
    W = rng.standard_normal((5, 4, 2))
    for leak in (0.0, 0.25):
        act = Activation(leak)
        got = extremal.G(W, X, c, act)
        assert got.shape == (5, 4)
        want = np.array([[_G_direct(w, X, y, leak) for w in row] for row in W])
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
        # the gradient field: D_{A(w)} against the direct sum and central differences of G
        A = extremal.pattern(W, X)
        D = extremal.gradient(W, X, c, act)
        for i in range(5):
            for j in range(4):
                np.testing.assert_allclose(D[i, j], _D_direct(A[i, j], X, c, leak), atol=1e-14)
                h = 1e-7
                fd = [(_G_direct(W[i, j] + h * e, X, y, leak) - _G_direct(W[i, j] - h * e, X, y, leak))
                      / (2 * h) for e in np.eye(2)]
                np.testing.assert_allclose(D[i, j], fd, atol=1e-6)
        # G is positively homogeneous and equals <w, D_{A(w)}> (linear on each cone)
        np.testing.assert_allclose(got, np.sum(W * D, axis=-1), atol=1e-13)


def test_residual_weights_follow_the_loss_convention():
    y = np.array([1.0, -2.0, 0.5])
    h = np.array([0.3, 0.1, -0.4])
    n = len(y)
    np.testing.assert_allclose(extremal.residual_weights(y, h), 2 * (y - h) / n)
    np.testing.assert_allclose(extremal.residual_weights(y, h, Loss("square")), (y - h) / n)
    np.testing.assert_allclose(extremal.residual_weights(y, h, Loss("mse", "sum")), 2 * (y - h))
    np.testing.assert_allclose(extremal.residual_weights(y, h, Loss("logistic")),
                               y / (1 + np.exp(y * h)) / n, rtol=1e-14)


# ------------------------------------------------------------------- critical directions, exact


def _grid_local_extrema(X, c, leak, m=200_000):
    """Strict local maxima and minima of G over a circular grid of m angles (angle, kind)."""
    phi = np.linspace(0, 2 * np.pi, m, endpoint=False)
    Z = np.stack([np.cos(phi), np.sin(phi)], 1) @ X.T
    v = np.where(Z > 0, Z, leak * Z) @ c
    left, right = np.roll(v, 1), np.roll(v, -1)
    out = [(p, "max") for p in phi[(v > left) & (v > right)]]
    out += [(p, "min") for p in phi[(v < left) & (v < right)]]
    return sorted(out), phi[1] - phi[0]


def _brute_extremal(X, c, leak, samples):
    """Every activation pattern met on the sample directions, tested against Definition 1 by hand:
    D_A (direct sum) with sign(<D_A, x_k>) = A_k for all k (max) or sign(<-D_A, x_k>) = A_k (min)."""
    found = set()
    for row in np.unique(np.sign(samples @ X.T).astype(int), axis=0):
        A = tuple(int(v) for v in row)
        if 0 in A:
            continue
        D = _D_direct(np.array(A), X, c, leak)
        if np.linalg.norm(D) == 0:
            continue
        for sign, kind in ((1, "max"), (-1, "min")):
            if tuple(np.sign(sign * X @ D).astype(int)) == A:
                found.add((A, kind))
    return found


@pytest.mark.parametrize("seed,leak", [(s, 0.0) for s in SEEDS] + [(5, 0.2), (6, 0.2)])
def test_circle_local_extrema_match_a_dense_grid(seed, leak):
    X, y = _onedim(seed)
    c = extremal.residual_weights(y)
    act = Activation(leak)
    crit = extremal.circle_local_extrema(X, c, act)
    assert crit.exact
    grid, step = _grid_local_extrema(X, c, leak)
    ang = np.mod(np.arctan2(crit.directions[:, 1], crit.directions[:, 0]), 2 * np.pi)
    assert len(crit) == len(grid) and len(crit) >= 2  # a continuous G has a max and a min
    for (p, kind), a, k in zip(grid, ang, crit.kinds, strict=True):
        gap = abs((p - a + np.pi) % (2 * np.pi) - np.pi)
        assert gap <= 2 * step and kind == k
    np.testing.assert_allclose(np.linalg.norm(crit.directions, axis=1), 1.0)
    np.testing.assert_allclose(crit.values, [_G_direct(u, X, y, leak) for u in crit.directions],
                               atol=1e-13)
    # the smooth ones are exactly the extremal vectors (and their min-type mirrors) of Definition 1
    phi = np.linspace(0, 2 * np.pi, 20_000, endpoint=False)
    brute = _brute_extremal(X, c, leak, np.stack([np.cos(phi), np.sin(phi)], 1))
    every = extremal.extremal_vectors(X, c, act)
    np.testing.assert_array_equal(every.directions, crit.directions)
    ext = every.select(every.smooth)
    assert {(tuple(int(v) for v in A), k) for A, k in zip(ext.patterns, ext.kinds, strict=True)} == brute
    assert np.all(np.sum(ext.patterns == 0, axis=1) == 0)
    # a kink has one zero in its pattern, and the minimal-norm pattern vector there (brute force over
    # the boundary sample's slope s in [gamma, 1]) is G(u) u: the kink is a critical direction
    for u, A, value in zip(crit.directions[~crit.smooth], crit.patterns[~crit.smooth],
                           crit.values[~crit.smooth], strict=True):
        (k,) = np.nonzero(A == 0)[0]
        s = np.linspace(leak, 1, 100_001)
        cand = _D_direct(A, X, c, leak)[None, :] + (s * c[k])[:, None] * X[k][None, :]
        best = cand[np.argmin(np.linalg.norm(cand, axis=1))]
        got = extremal.min_norm_pattern_vector(A, X, c, act)
        np.testing.assert_allclose(got, best, atol=1e-4 * np.abs(c[k]) * np.linalg.norm(X[k]))
        np.testing.assert_allclose(got, value * u, atol=1e-12)
    # a smooth critical direction has zero sphere gradient and |G| = ||D_A||
    np.testing.assert_allclose(extremal.sphere_gradient(ext.directions, X, c, act), 0, atol=1e-13)
    D = extremal.pattern_vector(ext.patterns, X, c, act)
    np.testing.assert_allclose(np.abs(ext.values), np.linalg.norm(D, axis=1), rtol=1e-13)
    np.testing.assert_array_equal(ext.values > 0, ext.kinds == "max")
    # the search finds the same set on the circle
    found = extremal.extremal_vectors(X, c, act, method="search")
    assert not found.exact
    assert np.all(found.smooth)
    key = sorted(zip(map(tuple, found.patterns.tolist()), found.kinds, strict=True))
    assert key == sorted(zip(map(tuple, ext.patterns.tolist()), ext.kinds, strict=True))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_search_in_three_dimensions_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((6, 3))
    c = rng.standard_normal(6)
    found = extremal.extremal_vectors(X, c)
    S = rng.standard_normal((200_000, 3))
    brute = _brute_extremal(X, c, 0.0, S / np.linalg.norm(S, axis=1, keepdims=True))
    assert {(tuple(int(v) for v in A), k) for A, k in zip(found.patterns, found.kinds, strict=True)} == brute
    assert len(found) > 0
    for u, kind, value in zip(found.directions, found.kinds, found.values, strict=True):
        V = rng.standard_normal((2000, 3)) * 1e-4
        P = (u + V) / np.linalg.norm(u + V, axis=1, keepdims=True)
        around = extremal.G(P, X, c)
        assert np.all(around <= value + 1e-15) if kind == "max" else np.all(around >= value - 1e-15)


# --------------------------------------------------------------- the §2.4 test vector, Theorem 2


def test_three_point_test_vector_exactly():
    X, y = boursier.three_point()
    np.testing.assert_array_equal(X, [[-0.75, 1], [-0.5, 1], [0.125, 1]])
    np.testing.assert_array_equal(y, [1.1, 0.1, 0.8])
    # exact rational OLS: slope = S_xy / S_xx, intercept = ybar - slope xbar
    xs = [Fraction(-3, 4), Fraction(-1, 2), Fraction(1, 8)]
    ys = [Fraction(11, 10), Fraction(1, 10), Fraction(4, 5)]
    xb, yb = sum(xs) / 3, sum(ys) / 3
    slope = sum((a - xb) * (b - yb) for a, b in zip(xs, ys, strict=True)) / sum((a - xb) ** 2 for a in xs)
    intercept = yb - slope * xb
    mse = sum((slope * a + intercept - b) ** 2 for a, b in zip(xs, ys, strict=True)) / 3
    fit = ols.ols(X, y)
    assert fit.slope == pytest.approx(float(slope), abs=1e-15)
    assert fit.intercept == pytest.approx(float(intercept), abs=1e-15)
    assert fit.loss == pytest.approx(float(mse), rel=1e-14)
    # docs/math.md §2.4's printed digits
    assert fit.slope == pytest.approx(-0.0615385, abs=5e-8)
    assert fit.intercept == pytest.approx(0.6435897, abs=5e-8)
    assert fit.loss == pytest.approx(0.175043, abs=5e-7)
    np.testing.assert_allclose(fit.fitted, [0.68974, 0.67436, 0.63590], atol=5e-6)
    assert fit.positive and min(fit.fitted) == pytest.approx(0.636, abs=5e-4)
    assert ols.ols(X, y, Loss("square")).loss == pytest.approx(float(mse) / 2, rel=1e-14)
    # the single extremal vector: all points active, D ∝ sum_k y_k x~_k
    ext = extremal.extremal_vectors(X, extremal.residual_weights(y))
    assert len(ext) == 1 and ext.kinds[0] == "max" and ext.smooth[0]
    np.testing.assert_array_equal(ext.patterns[0], [1, 1, 1])
    s = (y[:, None] * X).sum(0)
    np.testing.assert_allclose(ext.directions[0], s / np.linalg.norm(s), atol=1e-15)
    np.testing.assert_allclose(ext.directions[0], [-0.36132, 0.93244], atol=5e-6)
    # Theorem 2's limit: the positive part of the OLS line; equal to OLS on the data
    xq = np.linspace(-20, 20, 81)
    np.testing.assert_allclose(ols.theorem2_limit(boursier.with_bias(xq), fit.beta),
                               np.maximum(0, float(slope) * xq + float(intercept)), atol=1e-14)
    np.testing.assert_allclose(ols.theorem2_limit(X, fit.beta), fit.fitted)


@pytest.mark.parametrize("seed", SEEDS)
def test_assumption3_data_have_one_extremal_vector_and_a_spurious_ols(seed):
    X, y = boursier.assumption3(seed, eta=0.05)
    assert X[0, 0] <= -0.95 and abs(X[1, 0]) <= 0.05 and X[2, 0] >= 0.95 and 0 <= y[1] <= 0.05
    ext = extremal.extremal_vectors(X, extremal.residual_weights(y))
    assert len(ext) == 1 and ext.kinds[0] == "max" and np.all(ext.patterns[0] == 1)
    fit = ols.ols(X, y)
    assert fit.positive and y[1] < fit.fitted[1] and fit.loss > 0  # middle point below the line


def test_stewart_data():
    X, y = boursier.stewart(3)
    assert X.shape == (40, 2) and np.all(X[:, 1] == 1) and np.all(np.abs(X[:, 0]) <= 1)
    np.testing.assert_allclose(y, np.interp(X[:, 0], [-1, -0.7, -0.55, -0.4, 0, 0.5, 0.6, 0.7, 1],
                                            [0, 0.7, 0.5, 1, 0, 1, 0.6, 0.7, 0]), atol=1e-15)
    X2, _ = boursier.stewart(3)
    np.testing.assert_array_equal(X, X2)


def test_direction_flow_aligns_live_neurons_with_the_extremal_vector():
    """Euler steps of eq.8, du/dt = (I - u u^T) D_{A(u)} (positive neurons), from 400 directions:
    the live ones reach D* (Theorem 1), the dead ones (inactive on all data) do not move."""
    X, y = boursier.three_point()
    c = extremal.residual_weights(y)
    D_star = extremal.extremal_vectors(X, c).directions[0]
    phi = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    U = np.stack([np.cos(phi), np.sin(phi)], 1)
    live = np.any(U @ X.T > 0, axis=1)
    U0 = U.copy()
    for _ in range(3000):
        U = U + 0.01 * extremal.sphere_gradient(U, X, c)
        U /= np.linalg.norm(U, axis=1, keepdims=True)
    assert np.all(U[live] @ D_star > np.cos(1e-3))
    np.testing.assert_allclose(U[~live], U0[~live], atol=1e-14)


# ------------------------------------------------------------------------------ diagnostics


def test_alignment_diagnostics_against_direct_computation():
    X, y = _onedim(11, n=6)
    c = extremal.residual_weights(y)
    crit = extremal.extremal_vectors(X, c)
    assert set(crit.kinds) == {"max", "min"}  # neurons of both signs have a target
    rng = np.random.default_rng(7)
    T, p = 4, 9
    W = rng.standard_normal((T, p, 2))
    W[1, 2] = 0.0
    W[2, 3] = crit.directions[0] * 0.3  # exactly aligned
    a = rng.standard_normal((T, p))
    a[:, 0] = 0.0
    time = np.array([0.0, 0.5, 1.5, 3.0])
    delta = 0.3
    ds = bf_alignment.alignment(a, W, X, y, time=time, delta=delta)
    np.testing.assert_array_equal(ds.time.values, time)
    cones = extremal.circle_cones(X)
    for t in range(T):
        for j in range(p):
            w = W[t, j]
            nw = np.linalg.norm(w)
            if nw == 0:
                assert np.isnan(ds.cos_nearest[t, j]) and np.isnan(ds.G[t, j])
                assert ds.cone_index[t, j] == -1 and not ds.live[t, j]
                continue
            cs = [float(w @ e) / nw for e in crit.directions]
            assert ds.cos_nearest[t, j] == pytest.approx(max(cs), abs=1e-14)
            want = "max" if a[t, j] > 0 else "min" if a[t, j] < 0 else None
            typed = [v for v, k in zip(cs, crit.kinds, strict=True) if k == want]
            if typed:
                assert ds.cos_typed[t, j] == pytest.approx(max(typed), abs=1e-14)
                assert bool(ds.aligned[t, j]) == (max(typed) >= np.cos(delta))
            else:
                assert np.isnan(ds.cos_typed[t, j]) and not ds.aligned[t, j]
            assert ds.G[t, j] == pytest.approx(_G_direct(w / nw, X, y), abs=1e-14)
            assert bool(ds.live[t, j]) == any(float(w @ x) > 0 for x in X)
            A = np.sign(X @ w)  # the cone by its pattern, not by its angle
            hits = [k for k in range(len(cones)) if np.array_equal(cones.patterns[k], A)]
            assert hits == [int(ds.cone_index[t, j])]
        pos, neg = a[t] > 0, a[t] < 0
        al = ds.aligned.values[t]
        assert ds.frac_pos[t] == pytest.approx((al & pos).sum() / pos.sum())
        live = ds.live.values[t]
        if (pos & live).sum():
            assert ds.frac_pos_live[t] == pytest.approx((al & pos & live).sum() / (pos & live).sum())
        assert ds.frac_neg[t] == pytest.approx((al & neg).sum() / neg.sum())
        norms = np.linalg.norm(W[t], axis=1)
        assert ds.positive_mass[t] == pytest.approx(np.sum(np.abs(a[t]) * norms * pos))
        assert ds.negative_mass[t] == pytest.approx(np.sum(np.abs(a[t]) * norms * neg))
        idx = ds.cone_index.values[t]
        for k in range(len(cones)):
            assert ds.cone_count[t, k] == np.sum(idx == k)
            assert ds.cone_count_pos[t, k] == np.sum((idx == k) & pos)
            assert ds.cone_count_neg[t, k] == np.sum((idx == k) & neg)
    own = "max" if a[2, 3] > 0 else "min"
    assert bool(ds.aligned[2, 3]) == (crit.kinds[0] == own)  # w exactly along critical direction 0
    # the same through a results Dataset
    res = xr.Dataset({"a": (("run", "time", "neuron"), a[None]),
                      "W": (("run", "time", "neuron", "dim"), W[None]),
                      "X": (("sample", "dim"), X), "y": ("sample", y)}, coords={"time": time})
    again = bf_alignment.run_alignment(res, 0, delta=delta)
    xr.testing.assert_identical(again, ds)


# ---------------------------------------------------------------------------- phase detection


def test_first_rise_and_settling_time_on_closed_forms():
    t = np.linspace(0, 10, 101)
    np.testing.assert_allclose(first_rise(t**2, t, [4.0, 1e3]), [2.0, np.nan])
    v = np.exp(-t) + 1
    tol = 1e-3 * v[-1]
    # between records, linear interpolation of |v - v_end| = e^-t - e^-10 across tol
    k = np.max(np.nonzero(np.abs(v - v[-1]) > tol)[0])
    d0, d1 = v[k] - v[-1], v[k + 1] - v[-1]
    assert settling_time(v, t) == pytest.approx(t[k] + (d0 - tol) / (d0 - d1) * 0.1, rel=1e-12)
    assert abs(settling_time(v, t) - np.log(1 / (tol + np.exp(-10)))) < 0.01
    assert settling_time(np.ones(5), np.arange(5.0)) == 0.0


def test_bf_phase_ends_on_synthetic_curves():
    """Piecewise-linear curves whose crossings are known: aligned rises as t/20 (0.9 at t = 18);
    log(mass / final) rises linearly from log 1e-6 at t = 0 to 0 at t = 60 (log 1e-2 at t = 40);
    the excess loss falls linearly from 1 at t = 40 to 0 at t = 60 (0.01 at t = 59.8)."""
    t = np.linspace(0, 100, 2001)
    L0, L_ols = 1.0, 0.175
    aligned = np.clip(t / 20, 0, 1)
    logm = np.log(1e-6) * np.clip(1 - t / 60, 0, 1)
    f = np.clip((60 - t) / 20, 0, 1)
    loss = L_ols + (L0 - L_ols) * f
    out = bf_phase_ends(t, loss, np.exp(logm) * 3.0, aligned, limit_loss=L_ols)
    assert out["alignment"] == pytest.approx(18.0, abs=1e-9)
    assert out["phase2a"] == pytest.approx(40.0, abs=1e-9)
    assert out["phase2"] == pytest.approx(59.8, abs=1e-9)
    assert out["convergence"] == pytest.approx(60 - 20 * 1e-3 * L_ols / (L0 - L_ols), abs=1e-9)
    # batched over runs (a later copy of the same curves) and with the default limit (last loss)
    shift = 5.0
    both = bf_phase_ends(np.stack([t, t + shift]), np.stack([loss, loss]),
                         np.stack([np.exp(logm), np.exp(logm)]), np.stack([aligned, aligned]))
    for key, value in out.items():
        np.testing.assert_allclose(both[key], [value, value + shift], atol=1e-9)
    # a curve that never gets there: NaN
    assert np.isnan(bf_phase_ends(t, loss, np.exp(logm), 0.5 * aligned)["alignment"])


def test_a_small_gradient_descent_run_goes_through_the_phases_to_the_ols_line():
    """Plain numpy GD (mse, balanced start, lambda = 1e-3) on the 3-point data: the loss ends at the
    OLS loss (Theorem 2), the phase ends come in order, the live positive neurons are aligned at the
    end of the alignment phase, and at the end every neuron sits in the all-active or the
    all-inactive cone (BF Fig. 2(h))."""
    X, y = boursier.three_point()
    rng = np.random.default_rng(0)
    m, lam, lr = 100, 1e-3, 5e-3
    W = rng.standard_normal((m, 2)) * lam / np.sqrt(m)
    a = np.sign(rng.standard_normal(m)) * np.linalg.norm(W, axis=1)
    rec: dict[str, list] = {"W": [], "a": [], "loss": [], "t": []}
    for k in range(8001):
        Z = X @ W.T
        r = np.maximum(Z, 0) @ a - y
        if k % 50 == 0:
            for key, v in (("W", W.copy()), ("a", a.copy()), ("loss", np.mean(r**2)), ("t", k * lr)):
                rec[key].append(v)
        M = ((2 * r / 3)[:, None] * (Z > 0)).T @ X
        W, a = W - lr * a[:, None] * M, a - lr * np.sum(M * W, axis=1)
    t, loss = np.array(rec["t"]), np.array(rec["loss"])
    ds = bf_alignment.alignment(np.array(rec["a"]), np.array(rec["W"]), X, y, time=t)
    fit = ols.ols(X, y)
    assert loss[-1] == pytest.approx(fit.loss, rel=1e-5)  # not 0: two neurons could interpolate
    ends = bf_phase_ends(t, loss, ds.positive_mass.values, ds.frac_pos_live.values, limit_loss=fit.loss)
    order = [ends[k] for k in ("alignment", "phase2a", "phase2", "convergence")]
    assert np.all(np.isfinite(order)) and np.all(np.diff(order) > 0)
    assert ds.frac_pos_live.sel(time=ends["alignment"], method="bfill") >= 0.9
    occupied = ds.cone_pattern.values[ds.cone_count.values[-1] > 0]
    assert sorted(map(tuple, occupied.tolist())) == [(-1, -1, -1), (1, 1, 1)]


def test_norms_exact_at_any_scale():
    """(3, 4) s has norm 5 s for every scale s, also where the squares underflow (s = 1e-200,
    where numpy's norm gives 0) or overflow (s = 1e200); a zero row has norm 0 and direction NaN."""
    from shallowflow.analysis.vectors import norms, units

    for s in (1.0, 1e-200, 1e-300, 1e200):
        x = np.array([[3.0, 4.0], [0.0, 0.0]]) * s
        np.testing.assert_allclose(norms(x)[0], 5.0 * s, rtol=1e-15)
        np.testing.assert_allclose(units(x)[0], [0.6, 0.8], rtol=1e-15)
        assert norms(x)[1] == 0.0 and np.all(np.isnan(units(x)[1]))
    assert np.linalg.norm([3e-200, 4e-200]) == 0.0  # the failure the helper avoids


@pytest.mark.parametrize("scale", [1e-200, 1e-300])
def test_alignment_diagnostics_are_scale_free(scale):
    """Directions, cosines, alignment, activity and G do not depend on the neurons' scale: a
    network multiplied by 1e-200 or 1e-300 (BF's lambda range, where squared weights underflow)
    gives the diagnostics of the unscaled one."""
    X, y = boursier.three_point()
    rng = np.random.default_rng(4)
    W = rng.standard_normal((3, 40, 2))
    a = np.linalg.norm(W, axis=-1) * np.where(rng.random((3, 40)) < 0.5, 1.0, -1.0)
    ref = bf_alignment.alignment(a, W, X, y)
    small = bf_alignment.alignment(a * scale, W * scale, X, y)
    for name in ("cos_nearest", "cos_typed", "G"):
        np.testing.assert_allclose(small[name].values, ref[name].values, rtol=1e-13, atol=1e-15)
    for name in ("aligned", "live", "nearest", "frac_pos_live", "frac_neg_live", "cone_count"):
        np.testing.assert_array_equal(small[name].values, ref[name].values)
