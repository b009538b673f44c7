"""MMV alignment theory (docs/math.md §4.2, §4.4): cones, x_a, the direction field, μ and the
constants of Theorem 1 against brute force; recorded quantities against numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shallowflow.theory import alignment as al
from shallowflow.theory import alignment_measures as measures

RNG = np.random.default_rng(7)


def separated(n_plus=4, n_minus=3, d=3, spread=0.5, seed=0):
    """μ-separated data: positives around e_1, negatives around −e_1 (small spread)."""
    rng = np.random.default_rng(seed)
    centre = np.zeros(d)
    centre[0] = 1.0
    Xp = centre + spread * rng.standard_normal((n_plus, d)) / np.sqrt(d)
    Xm = -centre + spread * rng.standard_normal((n_minus, d)) / np.sqrt(d)
    X = np.concatenate([Xp, Xm]) * rng.uniform(0.5, 2.0, (n_plus + n_minus, 1))
    y = np.concatenate([np.ones(n_plus), -np.ones(n_minus)])
    return X, y


def brute_code(w, X, y):
    act = [float(np.dot(w, x)) > 0 for x in X]
    if not any(act):
        return al.S_DEAD
    if all(a == (yi > 0) for a, yi in zip(act, y, strict=True)):
        return al.S_PLUS
    if all(a == (yi < 0) for a, yi in zip(act, y, strict=True)):
        return al.S_MINUS
    return al.OTHER


def brute_xa(w, X, y, leak=0.0):
    out = np.zeros(X.shape[1])
    for x, yi in zip(X, y, strict=True):
        z = float(np.dot(w, x))
        if z > 0:
            out += yi * x
        elif z < 0:
            out += leak * yi * x
    return out


# ------------------------------------------------------------------------------- cones, x_a
def test_class_directions_and_mu_against_loops():
    X, y = separated(5, 4)
    xp, xm = al.class_directions(X, y)
    np.testing.assert_allclose(xp, sum(x for x, yi in zip(X, y, strict=True) if yi > 0))
    np.testing.assert_allclose(xm, sum(x for x, yi in zip(X, y, strict=True) if yi < 0))
    n = len(y)
    cos = [[y[i] * y[k] * X[i] @ X[k] / (np.linalg.norm(X[i]) * np.linalg.norm(X[k]))
            for k in range(n)] for i in range(n)]
    assert al.mu_separation(X, y, block=2) == pytest.approx(np.min(cos), abs=1e-14)
    assert al.mu_separation(X, y) > 0
    agree = np.mean([cos[i][k] > 0 for i in range(n) for k in range(i + 1, n)])
    assert al.pair_sign_agreement(X, y, block=3) == pytest.approx(agree)
    Xb = X.copy()
    Xb[0] = -Xb[0]  # a positive point on the wrong side
    assert al.mu_separation(Xb, y) < 0 and al.pair_sign_agreement(Xb, y) < 1


@pytest.mark.parametrize("leak", [0.0, 0.3])
def test_signed_activation_sum_against_brute_force(leak):
    X, y = separated(6, 5, d=4)
    W = RNG.standard_normal((3, 7, 4))
    got = al.signed_activation_sum(W, X, y, leak)
    assert got.shape == (3, 7, 4)
    for idx in np.ndindex(3, 7):
        np.testing.assert_allclose(got[idx], brute_xa(W[idx], X, y, leak), atol=1e-12)


def test_cone_membership_against_brute_force():
    X, y = separated(5, 4, d=3)
    xp, xm = al.class_directions(X, y)
    W = np.concatenate([RNG.standard_normal((400, 3)),
                        [xp, xm, [0.0, 0.0, 0.0], -xp + xm]])  # S_+, S_-, dead, ...
    W = W.reshape(2, 202, 3)
    got = al.cone_membership(W, X, y)
    assert got.shape == (2, 202) and got.dtype == np.int8
    want = np.array([[brute_code(w, X, y) for w in row] for row in W])
    np.testing.assert_array_equal(got, want)
    assert set(np.unique(got)) == {al.OTHER, al.S_PLUS, al.S_MINUS, al.S_DEAD}
    assert got[1, -4] == al.S_PLUS and got[1, -3] == al.S_MINUS and got[1, -2] == al.S_DEAD
    # a dead neuron orthogonal to all the data: <w, x_i> = 0 counts as inactive
    Xp = np.array([[1.0, 0.2, 0.0], [0.9, -0.1, 0.0], [-1.0, 0.1, 0.0]])
    assert al.cone_membership([0.0, 0.0, 1.0], Xp, [1, 1, -1]) == al.S_DEAD


def test_cone_agreement_against_brute_force():
    X, y = separated(5, 4, d=3)
    W = RNG.standard_normal((3, 10, 3))
    got = al.cone_agreement(W, X, y)
    assert got.shape == (3, 10, 2)
    for idx in np.ndindex(3, 10):
        act = np.array([W[idx] @ x > 0 for x in X])
        assert got[idx][0] == pytest.approx(np.mean(act == (y > 0)))
        assert got[idx][1] == pytest.approx(np.mean(act == (y < 0)))
    code = al.cone_membership(W, X, y)
    np.testing.assert_array_equal(got[..., 0] == 1.0, code == al.S_PLUS)
    np.testing.assert_array_equal(got[..., 1] == 1.0, code == al.S_MINUS)


def test_cone_counts_split_by_sign():
    X, y = separated(5, 4, d=3)
    W = RNG.standard_normal((4, 30, 3))
    v = RNG.standard_normal((4, 30))
    v[0, :3] = 0.0
    codes = al.cone_membership(W, X, y)
    counts = al.cone_counts(W, X, y)
    split = al.cone_counts(W, X, y, v)
    assert counts.shape == (4, 4) and split.shape == (4, 2, 4)
    for r in range(4):
        for c in range(4):
            assert counts[r, c] == np.sum(codes[r] == c)
            assert split[r, 0, c] == np.sum((codes[r] == c) & (v[r] > 0))
            assert split[r, 1, c] == np.sum((codes[r] == c) & (v[r] < 0))
    assert split[0].sum() == 27 and counts[0].sum() == 30


def test_direction_field_against_brute_force():
    X, y = separated(4, 4, d=3)
    W = RNG.standard_normal((5, 3))
    v = np.array([1.0, -2.0, 0.5, -0.1, 3.0])
    got = al.direction_field(W, v, X, y)
    for j in range(5):
        w = W[j]
        P = np.eye(3) - np.outer(w, w) / (w @ w)
        np.testing.assert_allclose(got[j], np.sign(v[j]) * P @ brute_xa(w, X, y), atol=1e-12)
        assert abs(got[j] @ w) < 1e-12  # tangent to the sphere


# ------------------------------------------------------------------------------- constants
def test_assumption2_by_hand():
    X = np.array([[1.0, 0.0], [-1.0, 0.1]])
    y = np.array([1.0, -1.0])
    W0 = np.array([[0.0, 1.0], [1.0, 0.0], [-1.0, 0.1]])
    v = np.array([1.0, -1.0, 1.0])  # neuron 2 in V_+ points exactly along x_-
    chk = al.assumption2(W0, v, X, y)
    assert chk.max_cos_plus == pytest.approx(1.0) and not chk.holds and chk.zeta2 == pytest.approx(0.0)
    chk = al.assumption2(W0[:2], v[:2], X, y)
    xm = X[1] / np.linalg.norm(X[1])
    assert chk.max_cos_plus == pytest.approx(xm[1])  # cos((0, 1), x_-)
    assert chk.max_cos_minus == pytest.approx(1.0)  # neuron 1 in V_- along x_+
    assert not chk.holds
    chk = al.assumption2(W0[:1], v[:1], X, y)
    assert chk.holds and chk.max_cos_minus == -math.inf
    assert chk.zeta2 == pytest.approx(1 - xm[1] ** 2)


def _in_plus(z, X, y):
    return np.all(((X @ z.T) > 0) == (y[:, None] > 0), axis=0)


def test_zeta1_is_the_largest_cap_inside_s_plus():
    """2-D: every direction in the cap {cos(z, x_+) > sqrt(1 - ζ_1)} is in S_+; a 1 % wider cap is not."""
    X, y = separated(4, 3, d=2, spread=0.6, seed=3)
    z1 = al.zeta1_constant(X, y)
    assert 0 < z1 < 1
    xp, _ = al.class_directions(X, y)
    base = math.atan2(xp[1], xp[0])
    half = math.asin(math.sqrt(z1))  # cap half-angle (minus-cap may be the smaller one)
    ang = base + np.linspace(-half, half, 4001)[1:-1]
    assert np.all(_in_plus(np.stack([np.cos(ang), np.sin(ang)], 1), X, y))
    xm = -al.class_directions(X, y)[1]
    wide = 1.01 * half
    out = []
    for c in (xp, xm):
        b = math.atan2(c[1], c[0])
        a = b + np.array([-wide, wide])
        z = np.stack([np.cos(a), np.sin(a)], 1)
        out.append(~_in_plus(z, X, y) if c is xp else
                   ~np.all(((X @ -z.T) > 0) == (y[:, None] < 0), axis=0))
    assert np.any(np.concatenate(out))


def test_xi_equals_mu_squared_by_sampling():
    """Lemma 9: sup |cos(z_1, z_2)| over z_1 ∈ K, z_2 outside S_+ ∪ S_- is sqrt(1 - μ²)."""
    X, y = separated(4, 3, d=2, spread=0.7, seed=5)
    mu = al.mu_separation(X, y)
    assert mu > 0 and al.xi_constant(X, y) == pytest.approx(mu ** 2)
    U = X * y[:, None]
    coef = np.random.default_rng(1).exponential(size=(500, len(y))) ** 3
    Z1 = np.concatenate([U, coef @ U])
    Z1 /= np.linalg.norm(Z1, axis=1, keepdims=True)
    ang = np.linspace(0, 2 * np.pi, 40001)
    Z2 = np.stack([np.cos(ang), np.sin(ang)], 1)
    code = al.cone_membership(Z2, X, y)
    Z2 = Z2[(code != al.S_PLUS) & (code != al.S_MINUS)]
    sup = np.max(np.abs(Z1 @ Z2.T))
    assert sup <= math.sqrt(1 - mu ** 2) + 1e-9
    assert sup >= math.sqrt(1 - mu ** 2) - 1e-4


def test_theorem1_constants_two_point_set():
    a = 0.1
    X = np.array([[1.0, 0.0], [math.sin(a), math.cos(a)]])
    y = np.ones(2)
    W0 = np.array([[0.0, 1.0], [1.0, -1.0], [-1.0, 0.2]])
    v = np.array([1.0, 1.0, -1.0])
    c = al.theorem1_constants(X, y, W0, v, eps=1e-6)
    assert c.mu == pytest.approx(math.sin(a)) and c.assumption1 and c.assumption2
    assert (c.n, c.n_plus, c.n_minus, c.h) == (2, 2, 0, 3)
    assert c.X_min == pytest.approx(1.0) and c.X_max == pytest.approx(1.0)
    assert c.W_max == pytest.approx(math.sqrt(2)) and c.W_min == pytest.approx(1.0)
    xp = X.sum(0) / np.linalg.norm(X.sum(0))
    assert c.zeta1 == pytest.approx(min(xp @ X[0], xp @ X[1]) ** 2)
    assert c.zeta1 == pytest.approx(math.cos((math.pi / 2 - a) / 2) ** 2)  # half the angle x_1, x_2
    assert c.xi == pytest.approx(math.sin(a) ** 2)
    assert c.zeta2 == pytest.approx(1 - max(0.0, (W0[2] / np.linalg.norm(W0[2])) @ xp) ** 2)
    assert c.zeta == pytest.approx(min(c.zeta1, c.zeta2))
    t1 = 16 * math.log(2) / (min(c.zeta, c.xi) * math.sqrt(math.sin(a)) * 1.0)
    assert c.t1 == pytest.approx(t1)
    assert c.alpha == pytest.approx(math.sin(a) ** 2 / 32)
    assert c.horizon == pytest.approx(math.log(1 / (math.sqrt(3) * 1e-6)) / (4 * 2))
    assert c.eps_bound_second_term == pytest.approx(math.exp(-8 * t1) / math.sqrt(3))
    assert len(c.notes) >= 2
    # without Assumption 1: infinite t_1, NaN α
    c0 = al.theorem1_constants(np.array([[1.0, 0.0], [-1.0, 0.1]]), y, W0, v)
    assert not c0.assumption1 and c0.t1 == math.inf and math.isnan(c0.alpha)


def test_bounds_by_hand():
    t1 = al.alignment_time_bound(10, 0.25, 2.0, 0.5, 0.1)
    assert t1 == pytest.approx(16 * math.log(10) / (0.1 * 0.5 * 2))
    assert al.alignment_time_bound(10, -0.1, 2.0, 0.5, 0.1) == math.inf
    alpha = al.loss_rate_alpha(0.5, 2.0, 4.0)
    assert alpha == pytest.approx(1.0 / 128)
    t = np.array([0.0, 1.0, 3.0])
    b = al.loss_bound(t, 1.0, 2.0, alpha)
    assert math.isnan(b[0]) and b[1] == pytest.approx(2.0) and b[2] == pytest.approx(2 / (1 + 2 * 2 / 128))
    assert al.frobenius_bound(3.0, 4, 0.1, 2.0) == pytest.approx(6 + 4 * 2 * 0.1 * 4)
    assert al.stable_rank_bound(np.array([1.0, 1e6]), 4, 0.1, 2.0) == pytest.approx([2 + 3.2, 2 + 3.2e-6])
    assert al.time_factor("exponential", "sum") == 1.0
    assert al.time_factor("logistic", "mean", 100) == 200.0
    with pytest.raises(ValueError, match="loss"):
        al.time_factor("square")


def test_labels_must_be_signs():
    with pytest.raises(ValueError, match="y: labels must be -1 or"):
        al.class_directions(np.eye(2), [1.0, 0.0])


# ------------------------------------------------------------------------------- monotonicity
def test_activation_violations_by_hand():
    X = np.array([[1.0, 0.0], [0.0, 1.0]])  # x_1 positive, x_2 negative
    y = np.array([1.0, -1.0])
    # neuron 0 (V_+): active on x_1 -> loses x_1 (violation) -> gains x_2 (violation) -> loses x_2 (ok)
    # neuron 1 (V_-): gains x_1 (violation) and loses x_2 (violation) at the same step
    W = np.array([
        [[1.0, -1.0], [-1.0, 1.0]],
        [[-1.0, -1.0], [1.0, -1.0]],
        [[-1.0, 1.0], [1.0, -1.0]],
        [[-1.0, -1.0], [1.0, -1.0]],
    ])
    v = np.array([1.0, -1.0])
    got = measures.activation_violations(W, v, X, y)
    np.testing.assert_array_equal(got, [[1, 2], [1, 0], [0, 0]])
    # sign of v changes between records 0 and 1 for neuron 1: that pair counts nothing
    vt = np.array([[1.0, -1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    got = measures.activation_violations(W, vt, X, y)
    np.testing.assert_array_equal(got, [[1, 0], [1, 0], [0, 0]])  # V_+ neuron 1 loses x_2: allowed
    # a tiny crossing within tol is ignored
    Wt = np.array([[[1.0, 1e-9]], [[1.0, -1e-9]], [[1.0, 1e-9]]])
    assert measures.activation_violations(Wt, [-1.0], X, y).sum() == 1  # V_-: gains x_2 again
    assert measures.activation_violations(Wt, [-1.0], X, y, tol=1e-6).sum() == 0
    # batch axes: (run, time, p, d) with v (run, p)
    Wb = np.stack([W, W])
    got = measures.activation_violations(Wb, np.stack([v, v]), X, y)
    assert got.shape == (2, 3, 2) and got.sum() == 8


def test_gd_on_separated_data_keeps_patterns_monotone():
    """Small-initialisation GD on μ-separated data: no violation, and the V_+ neurons end in S_+ or S_dead."""
    X, y = separated(6, 5, d=3, spread=0.4, seed=11)
    rng = np.random.default_rng(0)
    eps, h = 1e-6, 12
    W = eps * rng.standard_normal((h, 3)) / np.sqrt(3)
    v = np.linalg.norm(W, axis=1) * np.where(np.arange(h) % 2 == 0, 1.0, -1.0)  # balanced
    rec = [W.copy()]
    lr = 2e-3
    for step in range(6000):
        pre = W @ X.T
        out = v @ np.maximum(pre, 0.0)
        g = -y * np.exp(-y * out)  # d ℓ / d f, exponential loss, sum
        gW = (v[:, None] * (pre > 0) * g) @ X
        gv = np.maximum(pre, 0.0) @ g
        W, v = W - lr * gW, v - lr * gv
        if step % 50 == 0:
            rec.append(W.copy())
    rec = np.array(rec)
    assert measures.activation_violations(rec, np.sign(v), X, y).sum() == 0
    counts = al.cone_counts(W, X, y, v)
    assert counts[0, al.OTHER] == 0 and counts[0, al.S_MINUS] == 0
    assert counts[1, al.OTHER] == 0 and counts[1, al.S_PLUS] == 0


# ------------------------------------------------------------------------------- recorded quantities
def test_alignment_cosines_against_loops():
    W = RNG.standard_normal((3, 8, 5))
    v = RNG.standard_normal((3, 8))
    v[2] = -np.abs(v[2])  # V_+ empty in run 2
    xp, xm = RNG.standard_normal(5), RNG.standard_normal(5)
    got = measures.alignment_cosines(W, v, xp, xm)

    def cos(a, b):
        return a @ b / (np.linalg.norm(a) * np.linalg.norm(b))

    for r in range(3):
        for key, sgn, x in (("plus", 1, xp), ("minus", -1, xm)):
            idx = [j for j in range(8) if np.sign(v[r, j]) == sgn]
            if not idx:
                assert math.isnan(got[key][r]) and math.isnan(got[key + "_min"][r])
                continue
            cs = [cos(W[r, j], x) for j in idx]
            assert got[key][r] == pytest.approx(cos(W[r, idx].mean(0), x))
            assert got[key + "_min"][r] == pytest.approx(min(cs))
            assert got[key + "_max"][r] == pytest.approx(max(cs))


def _svd_reference(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """||W||_2^2 and ||W||_F^2 / ||W||_2^2 per matrix from numpy's SVD (NaN where W = 0)."""
    s = np.linalg.svd(W, compute_uv=False)
    top = s[..., 0] ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return top, np.where(top > 0, np.sum(s**2, axis=-1) / top, np.nan)


@pytest.mark.parametrize("shape", [(6, 10), (10, 6), (12, 200), (7, 7)])
def test_stable_rank_and_spectral_norm_against_svd(shape):
    """Wide, tall and square stacks: full rank, rank one, rank two, a zero matrix, and entries
    of 1e-150 and 1e150 (where a Gram matrix of the raw entries would underflow or overflow)."""
    m, k = shape
    W = RNG.standard_normal((7, m, k))
    W[1] = np.outer(RNG.standard_normal(m), RNG.standard_normal(k))  # rank one
    W[2] = RNG.standard_normal((m, 2)) @ RNG.standard_normal((2, k))  # rank two
    W[3] = 0.0
    W[4] *= 1e-150
    W[5] *= 1e150
    top, rank = _svd_reference(W)
    np.testing.assert_allclose(measures.spectral_norm_sq(W), top, rtol=1e-12, atol=0)
    np.testing.assert_allclose(measures.stable_rank(W), rank, rtol=1e-12, atol=0)  # NaN at W[3]
    np.testing.assert_allclose(measures.stable_rank(W, top), rank, rtol=1e-12, atol=0)
    assert measures.spectral_norm_sq(W[3]) == 0.0 and math.isnan(measures.stable_rank(W[3]))
    assert measures.stable_rank(W[1]) == pytest.approx(1.0, rel=1e-12)
    for r in range(len(W)):  # one matrix at a time: floats, the same numbers
        assert measures.spectral_norm_sq(W[r]) == pytest.approx(float(top[r]), rel=1e-12, abs=0)
    assert measures.stable_rank(np.linalg.norm(W[0], ord="fro") * np.eye(5)) == pytest.approx(5.0)
    assert math.isnan(measures.stable_rank(np.zeros((3, 2))))
    assert np.shape(measures.spectral_norm_sq(np.zeros((4, 0, 3)))) == (4,)


def test_changes_by_hand():
    W = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 0.0]])
    G = np.array([[1.0, 2.0], [0.0, 2.0], [5.0, 5.0]])  # ∇L; -∇L = -G
    norms, dirs = measures.changes_from_gradient(W, G)
    # neuron 0: u = (0.6, 0.8), <-G, u> = -2.2, tangential part of -G: (-1, -2) + 2.2 u = (0.32, -0.24)
    # neuron 1: u = (1, 0), <-G, u> = 0, tangential (0, -2), ||w|| = 1; neuron 2 (zero) left out
    assert norms == pytest.approx(2.2)
    assert dirs == pytest.approx(math.hypot(0.32, -0.24) / 5 + 2.0)
    W2 = np.stack([W, W + np.array([[0.0, 1.0], [1.0, 1.0], [1.0, 0.0]])])
    n2, d2 = measures.changes_from_snapshots(W2, [0.0, 0.5])
    # neuron 0: ||(3, 5)|| - 5; neuron 1: ||(2, 1)|| - 1; neuron 2 zero at the first record
    assert n2 == pytest.approx([(abs(math.hypot(3, 5) - 5) + abs(math.sqrt(5) - 1)) / 0.5])
    u0 = np.linalg.norm(np.array([3, 5]) / math.hypot(3, 5) - np.array([0.6, 0.8]))
    u1 = np.linalg.norm(np.array([2, 1]) / math.sqrt(5) - np.array([1.0, 0.0]))
    assert d2 == pytest.approx([(u0 + u1) / 0.5])
    with pytest.raises(ValueError, match="increase"):
        measures.changes_from_snapshots(W2, [1.0, 1.0])


def test_snapshot_changes_match_gradient_changes_for_a_small_step():
    W = RNG.standard_normal((2, 7, 4))
    G = RNG.standard_normal((2, 7, 4))
    lr = 1e-7
    n_g, d_g = measures.changes_from_gradient(W, G)
    n_s, d_s = measures.changes_from_snapshots(np.stack([W, W - lr * G], axis=1), [0.0, lr])
    np.testing.assert_allclose(n_s[:, 0], n_g, rtol=1e-5)
    np.testing.assert_allclose(d_s[:, 0], d_g, rtol=1e-5)


def test_violations_are_the_same_in_chunks(monkeypatch):
    X, y = separated(5, 4, d=3)
    W = RNG.standard_normal((2, 9, 6, 3))
    v = RNG.standard_normal((2, 9, 6))
    whole = measures.activation_violations(W, v, X, y)
    assert whole.sum() > 0
    monkeypatch.setattr(al, "_CHUNK_ENTRIES", 2 * 6 * 9 * 2)  # two records per chunk
    np.testing.assert_array_equal(measures.activation_violations(W, v, X, y), whole)


def test_direction_velocity_matches_the_early_field():
    """Lemma 1: one small GD step from a small balanced start moves w_j/||w_j|| along sign(v_j) P x_a."""
    X, y = separated(5, 4, d=3, seed=2)
    rng = np.random.default_rng(4)
    W = 1e-8 * rng.standard_normal((6, 3))
    v = np.linalg.norm(W, axis=1) * np.where(np.arange(6) < 3, 1.0, -1.0)
    lr = 1e-6
    pre = W @ X.T
    g = -y * np.exp(-y * (v @ np.maximum(pre, 0.0)))  # exponential loss, sum
    W1 = W - lr * (v[:, None] * (pre > 0) * g) @ X
    vel = measures.direction_velocity(np.stack([W, W1]), [0.0, lr])[0]
    field = al.direction_field(W, v, X, y)
    np.testing.assert_allclose(vel, field, atol=1e-4 * np.max(np.abs(field)))
