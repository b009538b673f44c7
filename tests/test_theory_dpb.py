"""DPB theory modules (docs/math.md §1.3-1.5) against independent references: brute force, Monte Carlo,
exact probabilities, finite differences, scipy ODE integration, mpmath and library simulations."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq
from scipy.stats import binom

from shallowflow import demo
from shallowflow.config import experiment_from_mapping
from shallowflow.theory import data_constants as dc
from shallowflow.theory import good_init as gi
from shallowflow.theory import group_dynamics as gd
from shallowflow.theory import pl_bounds as pb
from shallowflow.theory import training_budget as tb
from shallowflow.training.batches import RunRef, dataset_of
from shallowflow.training.entry import simulate


# ------------------------------------------------------------------------- plain references
def np_mu(a, W, X, y):
    """mu = p ||grad L||^2 / L with h = (1/p) sum a_j relu(<w_j, x>), L = (1/(2n)) sum r^2, by
    central finite differences of a plain numpy loss."""
    p = a.size

    def L(theta):
        aa, WW = theta[:p], theta[p:].reshape(W.shape)
        h = np.maximum(X @ WW.T, 0.0) @ aa / p
        return 0.5 * np.mean((y - h) ** 2)

    theta = np.concatenate([a, W.ravel()])
    g = np.array([(L(theta + e) - L(theta - e)) / 2e-6 for e in 1e-6 * np.eye(theta.size)])
    return p * g @ g / L(theta)


def np_group_loss(n, p, D, N0, c0, t):
    """L^j(t) from docs/math.md §1.5 written with cosh/sinh (moderate c t only)."""
    k, g = n / p, math.sqrt(n / p) * D
    c = 2 * g / n
    ct = c * t
    cos = 1.0 if c0 == 1 else np.tanh(ct / 2 + np.arctanh(c0))
    num = p * g * N0 * ((1 + c0**2) * np.cosh(ct) + 2 * c0 * np.sinh(ct) + 1 - c0**2)
    den = 2 * p * g + N0 * ((1 + c0**2) * np.sinh(ct) + 2 * c0 * (np.cosh(ct) - 1) + (1 - c0**2) * ct)
    N = num / den
    return 0.5 * (D**2 - 2 / (math.sqrt(k) * p) * D * cos * N + N**2 / (k * p**2))


# --------------------------------------------------------------------------- good_init
def test_neurons_for_is_the_smallest_width_with_bound_below_eps():
    eps_values = [0.5, 0.3, 0.1, 0.05, 0.01, 1e-3, 1e-6] + [0.75**k for k in range(1, 12)]
    for n in [*range(1, 130), 1000, 4096, 10**6, 10**9]:
        for eps in eps_values:
            p = gi.neurons_for(n, eps)
            e = Fraction(eps)
            assert n * Fraction(3, 4) ** p < e, (n, eps, p)
            assert p == 0 or not n * Fraction(3, 4) ** (p - 1) < e, (n, eps, p)
            assert gi.lemma5_bound(n, p) > 1 - eps - 1e-15
    assert demo.neurons_for is gi.neurons_for and demo.budget is tb.budget  # no duplicated logic


def test_lemma5_width_rules():
    """p >= 4 log(n/eps) gives a bound >= 1 - eps (docs/math.md §1.4(5))."""
    for n in [2, 10, 100, 10**4]:
        for eps in [0.3, 0.05, 1e-4]:
            p = math.ceil(4 * math.log(n / eps))
            assert 1 - n * 0.75**p >= 1 - eps
            assert gi.lemma5_bound(n, p) == pytest.approx(1 - n * 0.75**p, rel=1e-14)


def test_good_init_event_against_loops():
    rng = np.random.default_rng(0)
    R, p, n, d = 50, 4, 6, 5
    a, W = rng.normal(size=(R, p)), rng.normal(size=(R, p, d))
    X, y = rng.normal(size=(n, d)), rng.normal(size=n)
    batch = gi.good_init_event(a, W, X, y)
    for r in range(R):
        ref = all(any(W[r, j] @ X[i] > 0 and a[r, j] * y[i] > 0 for j in range(p)) for i in range(n))
        assert batch[r] == ref == gi.good_init_event(a[r], W[r], X, y)
    assert 0 < batch.mean() < 1


@pytest.mark.parametrize(("p", "quoted"), [(15, 0.647), (20, 0.894)])
def test_lemma5_bound_below_monte_carlo_and_exact_probability(p, quoted):
    """Orthogonal data, n = d = 40, paper init: MC estimate of P(I) vs the bound 1 - n (3/4)^p and
    vs the exact P(I) = E_m[(1 - 2^-m)^{n+} (1 - 2^-(p-m))^{n-}], m ~ Bin(p, 1/2) positive neurons."""
    n, M = 40, 12000
    rng = np.random.default_rng(p)
    rho = rng.uniform(1, 2, n)
    X = np.diag(rho)
    y = rng.choice([-1.0, 1.0], n) * rng.uniform(1, 2, n)
    hits = []
    for _ in range(4):
        W = rng.normal(size=(M // 4, p, n)) / math.sqrt(n)
        a = rng.choice([-1.0, 1.0], (M // 4, p)) * (np.linalg.norm(W, axis=2)
                                                    + rng.exponential(size=(M // 4, p)))
        hits.append(gi.good_init_event(a, W, X, y))
    mc = float(np.mean(np.concatenate(hits)))
    se = math.sqrt(mc * (1 - mc) / M)
    m = np.arange(p + 1)
    npos = int(np.sum(y > 0))
    exact = float(np.sum(binom.pmf(m, p, 0.5) * (1 - 2.0**-m) ** npos * (1 - 2.0 ** -(p - m)) ** (n - npos)))
    bound = gi.lemma5_bound(n, p)
    assert abs(mc - exact) < 4 * se
    assert bound < mc - 3 * se
    assert bound < exact
    assert abs(exact - quoted) < 0.01  # docs/math.md §1.4(5) quotes 0.647 >= 0.466 and 0.894 >= 0.873


# ------------------------------------------------------------------------ data constants
def test_data_constants_and_assumption2_against_numpy():
    rng = np.random.default_rng(3)
    n, d = 12, 300
    U = rng.normal(size=(n, d))
    X = rng.uniform(1, 2, (n, 1)) * U / np.linalg.norm(U, axis=1, keepdims=True)
    y = rng.choice([-1, 1], n) * rng.uniform(1, 2, n)
    c = dc.data_constants(X, y)
    norms = np.sqrt(np.sum(X * X, axis=1))
    assert (c.C_x_minus, c.C_x_plus) == pytest.approx((norms.min(), norms.max()), rel=1e-14)
    assert (c.C_y_minus, c.C_y_plus) == (np.abs(y).min(), np.abs(y).max())
    G = X @ X.T - np.diag(norms**2)
    check = dc.assumption2(X, y)
    assert check.lhs == pytest.approx(np.linalg.norm(G, 2), rel=1e-12)
    assert check.rhs == pytest.approx(norms.min() ** 2 / (2 * np.sqrt(n)) * np.abs(y).min() / np.abs(y).max(),
                                      rel=1e-14)
    assert check.holds == (check.lhs < check.rhs) and not check.holds  # d = 300 is far too small

    Xo = np.zeros((n, 20))
    Xo[np.arange(n), rng.permutation(20)[:n]] = rng.uniform(1, 2, n)
    ortho = dc.assumption2(Xo, y)
    assert ortho.lhs == 0.0 and ortho.holds

    dim = dc.lemma3_dimension(n, 0.1, c, C=2.0)
    ref = 8 * (c.C_y_plus / c.C_y_minus) ** 2 * (c.C_x_plus / c.C_x_minus) ** 4 * (4 * n**2 + n * np.log(20))
    assert dim == pytest.approx(ref, rel=1e-14)


# ---------------------------------------------------------------------- training budget
def test_budget_epochs_and_thresholds():
    for n, p in [(64, 22), (1000, 35), (2000, 38)]:
        t = 1.5 * np.sqrt(n * p) / 4 * np.log(n * p)
        assert tb.budget(n, p) == pytest.approx(t, rel=1e-14)
        assert tb.epochs(n, p, 1.0) == int(np.floor(t)) + 1
        assert tb.epochs(n, p, 0.5) == int(np.floor(2 * t)) + 1
    n = 50
    assert tb.threshold(n, "paper", 1.5) == 1.5 / 100
    assert tb.threshold(n, "sign", 1.5) == 2.25 / 100
    assert tb.threshold(n, "code") == 1 / 100 and tb.threshold(n, "exp2") == 1e-6 / 100
    assert list(tb.converged(np.array([0.5, 1.0, np.nan, np.inf]), 1.0)) == [True, False, False, False]


def test_sign_threshold_forces_correct_signs():
    """L < (C_y^-)^2/(2n) implies sign(h(x_i)) = sign(y_i) for every i (docs/math.md §1.4(12) [D])."""
    rng = np.random.default_rng(5)
    for _ in range(2000):
        n = int(rng.integers(1, 20))
        y = rng.choice([-1, 1], n) * rng.uniform(0.5, 2, n)
        r = rng.normal(size=n)
        target = tb.threshold(n, "sign", float(np.abs(y).min()))
        r *= np.sqrt(2 * n * target * rng.uniform(0.2, 0.999999)) / np.linalg.norm(r)
        assert tb.converged(0.5 * np.mean(r**2), target)
        assert np.all(np.sign(y - r) == np.sign(y))


# ------------------------------------------------------------- PL bounds: library runs
def dpb_run(kind, n, d, p, duration, probes=("loss", "pl_curvature", "a", "W"), **extra):
    exp = experiment_from_mapping({
        "name": "t", "seed": 3, "runs": 4,
        "data": {"kind": kind, "n": n, "d": d, "seed": 101},
        "model": {"width": p, "kappa": "1/p"}, "init": {"scheme": "dpb"},
        "train": {"lr": extra.get("lr", 1.0), "duration": duration, "time_scale": "width"},
        "record": {"points": extra.get("points", 30), "every": extra.get("every"), "probes": list(probes)},
    })
    X, y = dataset_of(RunRef(exp, 0))
    return simulate(exp), X, y


@pytest.fixture(scope="module")
def orthogonal_runs():
    n, p = 32, 20
    return dpb_run("orthogonal", n, 64, p, tb.budget(n, p))


@pytest.fixture(scope="module")
def sphere_runs():
    return dpb_run("sphere", 16, 1024, 16, 60.0)


@pytest.mark.parametrize("which", ["orthogonal_runs", "sphere_runs"])
def test_lemma7_bounds_bracket_recorded_curvature(which, request):
    ds, X, y = request.getfixturevalue(which)
    c = dc.data_constants(X, y)
    assert c.C_x_minus**2 > dc.gram_offdiagonal_norm(X)  # the lower bound is informative
    mu, L = ds.pl_curvature.values, ds.loss.values
    ok = L > 1e-20  # mu is meaningful above round-off
    assert ok.mean() > 0.9
    lo = pb.mu_lower(ds.a.values, ds.W.values, X)
    up = pb.mu_upper(ds.a.values, ds.W.values, X)
    up_printed = pb.mu_upper(ds.a.values, ds.W.values, X, correlation=False)
    assert lo.shape == mu.shape == (4, ds.time.size)
    assert np.all(lo[ok] > 0)
    assert np.all(lo[ok] <= mu[ok] * (1 + 1e-9))
    assert np.all(mu[ok] <= up[ok] * (1 + 1e-9))
    assert np.all(mu[ok] <= up_printed[ok] * (1 + 1e-9))  # holds here; see the repeated-point test
    # the single-network call agrees with the batched one
    r, k = 2, ds.time.size // 2
    assert pb.mu_lower(ds.a.values[r, k], ds.W.values[r, k], X) == pytest.approx(lo[r, k], rel=1e-12)


def test_lemma7_printed_upper_bound_fails_on_correlated_data():
    """A repeated point: mu (finite differences) is twice the printed upper bound, and equals the
    corrected one ((C_x^+)^2 + ||X^T X - D_X||)."""
    X = np.array([[1.0, 0.0], [1.0, 0.0]])
    y = np.array([1.0, 1.0])
    a, W = np.array([1.0]), np.array([[0.5, 0.0]])
    mu = np_mu(a, W, X, y)
    assert mu == pytest.approx(2.5, rel=1e-6)
    assert mu == pytest.approx(2 * pb.mu_upper(a, W, X, correlation=False), rel=1e-6)
    assert mu <= pb.mu_upper(a, W, X) * (1 + 1e-6)
    assert pb.mu_lower(a, W, X) <= mu


def test_lemma7_bounds_on_random_networks_against_finite_differences():
    rng = np.random.default_rng(8)
    for _ in range(20):
        n, d, p = 5, 40, 4
        X = rng.normal(size=(n, d)) / math.sqrt(d) * rng.uniform(1, 2, (n, 1))
        y = rng.choice([-1, 1], n) * rng.uniform(1, 2, n)
        W = rng.normal(size=(p, d)) / math.sqrt(d)
        a = rng.choice([-1, 1], p) * (np.linalg.norm(W, axis=1) + rng.exponential(size=p))
        mu = np_mu(a, W, X, y)
        assert pb.mu_lower(a, W, X) <= mu * (1 + 1e-6) and mu <= pb.mu_upper(a, W, X) * (1 + 1e-6)


def test_theorem1_on_converging_runs(orthogonal_runs):
    """Orthogonal data (Assumption 2 holds), paper init (Assumption 1): eq.6 at every recorded time
    and <mu(t_inf)> >= C/n for the runs that converge within the budget and satisfy event I."""
    ds, X, y = orthogonal_runs
    n = X.shape[0]
    assert dc.assumption2(X, y).holds
    c = dc.data_constants(X, y)
    C = 1.2 * c.C_x_minus**2 * c.C_y_minus / c.C_x_plus
    assert pb.theorem1_rate(c) == pytest.approx(C, rel=1e-14)
    L, mu, t = ds.loss.values, ds.pl_curvature.values, ds.time.values
    good = gi.good_init_event(ds.a_init.values, ds.W_init.values, X, y)
    conv = tb.converged(L[:, -1], tb.threshold(n, "paper", c.C_y_minus)) & good
    assert conv.sum() >= 3
    avg = pb.average_curvature(L[conv][:, [0, -1]], lr=t[-1])
    assert np.all(avg >= C / n), (avg, C / n)
    eq6 = pb.theorem1_mu_lower(ds.a.values, ds.W.values, X, y)
    h = np.einsum("rtp,rtpn->rtn", ds.a.values, np.maximum(ds.W.values @ X.T, 0)) / ds.a.shape[-1]
    np.testing.assert_allclose(eq6, C / n * np.min(np.abs(h / y), axis=-1), rtol=1e-12)
    assert np.all(eq6[conv] <= mu[conv] * (1 + 1e-9))


def test_experiment2_measures_against_recorded_curvature():
    """Per-step records at lr = 0.1: the one-step log-ratio, the code's k-step average and <mu>
    match the recorded mu (the log-ratio is -d log L/dt), and mu_low <= mu <= mu_upp at the end."""
    n, p, lr = 32, 20, 0.1
    ds, X, _ = dpb_run("orthogonal", n, 32, p, 30.0, probes=("loss", "pl_curvature"), lr=lr,
                       points=0, every=1)
    L, mu, t = ds.loss.values, ds.pl_curvature.values, ds.time.values
    m = pb.experiment2_measures(L, ds.a_final.values, ds.W_final.values, X, k=50, lr=lr)
    np.testing.assert_allclose(m["mu_t_inf"], mu[:, -2], rtol=0.02)
    np.testing.assert_allclose(m["mu_t_inf_avg"], mu[:, -51:-1].mean(axis=1), rtol=0.02)
    integral = np.sum(0.5 * (mu[:, 1:] + mu[:, :-1]) * np.diff(t), axis=1)
    np.testing.assert_allclose(m["mu_avg"], integral / t[-1], rtol=0.02)
    act = ds.W_final.values @ X.T > 0  # (R, p, n)
    s = np.einsum("rp,rpn->rn", ds.a_final.values**2, act) / p
    np.testing.assert_allclose(m["mu_low"], 2 / n * s.min(axis=1), rtol=1e-12)
    np.testing.assert_allclose(m["mu_upp"], 16 / n * s.max(axis=1), rtol=1e-12)
    assert np.all(m["mu_low"] <= mu[:, -1]) and np.all(mu[:, -1] <= m["mu_upp"])


def test_theorem1_width():
    n, eps, caw, cx, cy = 100, 0.05, 0.7, 2.0, 2.0
    assert pb.theorem1_width(n, eps, caw, cx, cy) == pytest.approx(
        4 * np.log(4 * n / eps) * (1 + (caw * cx / cy) ** 2), rel=1e-14)
    assert pb.theorem1_width(n, eps, caw, cx, cy, corollary=True) == pytest.approx(
        4 * np.log(6 * n / eps) * (1 + (caw * cx / cy) ** 2), rel=1e-14)


# ----------------------------------------------------------------------- group dynamics
@pytest.mark.parametrize("aligned", [True, False])
def test_group_closed_form_matches_ode(aligned):
    """The raw flow of one group (a, v in the group's basis, no balance assumed beyond t = 0),
    integrated by scipy, against cos_j, N_j and L^j (docs/math.md §1.5)."""
    n, p = 64, 4
    k = n // p
    rng = np.random.default_rng(11)
    yg = np.abs(rng.normal(size=k)) + 0.2
    ybar = yg / np.linalg.norm(yg)
    v0 = 1.3 * ybar if aligned else rng.uniform(size=k) ** 4  # c_0 = 1, or c_0 < 1
    a0 = np.linalg.norm(v0)
    assert aligned or v0 @ ybar / a0 < 0.8

    def rhs(_, s):
        a, v = s[0], s[1:]
        r = yg - a * v / p
        return np.concatenate([[r @ v / n], a * r / n])

    D = math.sqrt(np.mean(yg**2))
    prob = gd.GroupProblem(float(n), p, np.full(p, D), np.full(p, a0**2), np.full(p, v0 @ ybar / a0))
    t = np.linspace(0, 4 * gd.rescaled_time(n, p), 60)
    sol = solve_ivp(rhs, (0, t[-1]), np.concatenate([[a0], v0]), t_eval=t, rtol=1e-11, atol=1e-13,
                    method="DOP853")
    a, V = sol.y[0], sol.y[1:]
    Lj = np.sum((yg[:, None] - a * V / p) ** 2, axis=0) / (2 * k)
    traj = gd.trajectory(prob, t)
    assert traj.group_loss.dims == ("time", "neuron")
    np.testing.assert_allclose(traj.group_loss.values[:, 0], Lj, rtol=1e-6)
    np.testing.assert_allclose(traj.norm_sq.values[:, 0], np.sum(V**2, axis=0), rtol=1e-8)
    np.testing.assert_allclose(traj.cos.values[:, 0], ybar @ V / np.linalg.norm(V, axis=0), rtol=1e-9)
    np.testing.assert_allclose(traj.loss.values, Lj, rtol=1e-6)  # all groups equal here
    assert Lj[-1] < 1e-3 * Lj[0]


def test_group_closed_form_matches_library_simulation():
    """Group-initialised networks trained by the library (GD at lr and lr/2): the error to the closed
    form is first order in lr, and the Richardson extrapolation 2 L(lr/2) - L(lr) agrees to 1e-4."""
    losses = {}
    for lr in (0.05, 0.025):
        exp = experiment_from_mapping({
            "name": "g", "seed": 1, "runs": 2,
            "data": {"kind": "orthonormal", "n": 64, "d": 64, "labels": "abs_normal", "seed": 777},
            "model": {"width": 4, "kappa": "1/p"},
            "init": {"scheme": "group", "scale": 1.0, "direction": "random"},
            "train": {"lr": lr, "duration": 90.0, "time_scale": "width"},
            "record": {"points": 0, "every": round(3.0 / lr), "probes": ["loss"]},
        })
        ds = simulate(exp)
        losses[lr] = ds.loss.values
    X, y = dataset_of(RunRef(exp, 0))
    t = ds.time.values
    for r in range(2):
        prob = gd.GroupProblem.from_network(X, y, ds.a_init.values[r], ds.W_init.values[r])
        assert np.all(prob.c0 < 0.9)  # a genuinely general c_0
        ref = gd.loss(prob, t).values
        assert ref[-1] < 1e-3 * ref[0]  # the whole transition is covered
        e1 = np.max(np.abs(losses[0.05][r] / ref - 1))
        e2 = np.max(np.abs(losses[0.025][r] / ref - 1))
        assert e2 < 3e-3 and 1.8 < e1 / e2 < 2.2
        extrapolated = 2 * losses[0.025][r] - losses[0.05][r]
        assert np.max(np.abs(extrapolated / ref - 1)) < 1e-4


@pytest.mark.parametrize("c0", [1.0, 0.4])
def test_transition_time_solves_its_equation(c0):
    n, p, eps = 1e4, 2, 0.1
    prob = gd.GroupProblem(n, p, np.array([1.0, 2.0]), np.array([1.0, 0.5]), np.full(p, c0))
    tt = gd.transition_time(prob, eps).values
    for j in range(p):
        Lj = np_group_loss(n, p, prob.D_norm[j], prob.N0[j], c0, tt[j])
        assert Lj == pytest.approx(eps / 2 * prob.D_norm[j] ** 2, rel=1e-9)
    if c0 == 1.0:  # the closed form also agrees with root finding on the plain formula
        for j in range(p):
            D, N0 = prob.D_norm[j], prob.N0[j]
            root = brentq(lambda t, D=D, N0=N0: np_group_loss(n, p, D, N0, 1.0, t) - eps / 2 * D**2,
                          0, 10 * tt[j], xtol=1e-12)
            assert root == pytest.approx(tt[j], rel=1e-9)


def test_transition_time_ratio_approaches_inverse_norm_monotonically():
    D = np.array([1.0, 2.0])
    gaps = []
    for n in 10.0 ** np.arange(4, 17):
        prob = gd.GroupProblem.uniform(n, D)
        ratio = gd.transition_time(prob, 0.1).values / gd.rescaled_time(n, 2)
        gaps.append(np.abs(ratio - 1 / D))
    gaps = np.array(gaps)
    assert np.all(np.diff(gaps, axis=0) < 0)
    assert np.all(gaps[-1] < 0.06) and np.all(gaps[0] > 2 * gaps[-1])


def test_figure2_setting_at_huge_n_is_finite_and_exact():
    """n = 100 + floor(e^42) ~ 1.7e18, p = 2, labels 1 and 2, N_0 = 1, c_0 = 1 (docs/math.md §1.5):
    levels 1.25 -> 0.25 -> 0 around t/t_n = 1/2 and 1, no overflow, and agreement with a
    40-digit mpmath evaluation of the cosh/sinh formula."""
    mpmath = pytest.importorskip("mpmath")
    n = 100.0 + math.floor(math.exp(42))
    prob = gd.GroupProblem.uniform(n, [1.0, 2.0])
    tn = gd.rescaled_time(n, 2)
    s = np.array([0.0, 0.25, 0.4, 0.75, 0.9, 1.5, 3.0, 50.0])
    traj = gd.trajectory(prob, s * tn)
    for name in traj.data_vars:
        assert np.all(np.isfinite(traj[name].values)), name
    L = traj.loss.values
    assert L[0] == pytest.approx(1.25, rel=1e-8) and L[1] == pytest.approx(1.25, rel=1e-3)
    assert L[3] == pytest.approx(0.25, rel=1e-2) and L[5] < 1e-4 and L[-1] >= 0
    np.testing.assert_allclose(traj.limit_loss.values, [1.25, 1.25, 1.25, 0.25, 0.25, 0, 0, 0])
    np.testing.assert_allclose(traj.time_rescaled.values, s, rtol=1e-14)
    mpmath.mp.dps = 40
    nn, pp = mpmath.mpf(100) + mpmath.floor(mpmath.e**42), 2
    for j, D in enumerate([1, 2]):
        g = mpmath.sqrt(nn / pp) * D
        c = 2 * g / nn
        for si, Lj in zip(s[:6], traj.group_loss.values[:6, j], strict=True):
            ct = c * mpmath.mpf(si) * mpmath.sqrt(nn * pp) / 4 * mpmath.log(nn * pp)
            N = pp * g * mpmath.e**ct / (pp * g + (mpmath.e**ct - 1))
            ref = (D - N / (mpmath.sqrt(nn / pp) * pp)) ** 2 / 2
            assert Lj == pytest.approx(float(ref), rel=1e-7, abs=1e-300)


def test_window_derived_and_as_printed():
    """The derived window 2 log C(eps)/(||D|| log(np)) is the exact (t(eps) - t(1-eps))/t_n of the
    dynamics (c_0 = 1). The printed eq.12/86 window differs by 4 [log C/log C^j] [log n/log(np)]:
    the 4 is eq.86's prefactor (1/(c t_n) = 2/(||D|| log n), printed 1/(2||D|| log n)); C^j(eps) of
    eq.87 is not C(eps), so the ratio is not 4."""
    n, p, eps = 1e6, 2, 0.1
    D = np.array([1.0, 2.0])
    prob = gd.GroupProblem.uniform(n, D, N0=0.7)
    tn = gd.rescaled_time(n, p)
    measured = []
    for j in range(p):
        times = [brentq(lambda t, e=e, j=j: np_group_loss(n, p, D[j], 0.7, 1.0, t) - e / 2 * D[j] ** 2,
                        0, 3 * tn, xtol=1e-10) for e in (eps, 1 - eps)]
        measured.append((times[0] - times[1]) / tn)
    derived = gd.window_width(D, n, p, eps)
    np.testing.assert_allclose(derived, measured, rtol=1e-8)
    from_times = (gd.transition_time(prob, eps) - gd.transition_time(prob, 1 - eps)).values / tn
    np.testing.assert_allclose(from_times, measured, rtol=1e-8)
    r, q = math.sqrt(eps), math.sqrt(1 - eps)
    C = (1 - r) / r * q / (1 - q)
    assert gd.window_constant(eps) == pytest.approx(C, rel=1e-14)
    Cj = (1 - r) / (1 + D * (1 - r)) * (1 + D * (1 - q)) / (1 - q)  # eq.87 as printed
    np.testing.assert_allclose(gd.window_constant_as_printed(D, eps), Cj, rtol=1e-14)
    printed = gd.window_width_as_printed(D, n, eps)
    np.testing.assert_allclose(printed, np.log(Cj) / (2 * D * np.log(n)), rtol=1e-14)
    ratio = np.asarray(measured) / printed
    np.testing.assert_allclose(ratio, 4 * np.log(C) / np.log(Cj) * np.log(n) / np.log(n * p), rtol=1e-8)
    assert np.all(np.abs(ratio - 4) > 1.0)  # not the plain factor 4 of docs/math.md §1.5
    # with C^j replaced by C, only the prefactor remains: 4 log n / log(np) -> 4
    np.testing.assert_allclose(np.asarray(measured) / (np.log(C) / (2 * D * np.log(n))),
                               4 * np.log(n) / np.log(n * p), rtol=1e-8)


def test_group_problem_from_network_reads_the_setting():
    rng = np.random.default_rng(2)
    n, p = 12, 3
    X = np.linalg.qr(rng.normal(size=(n, n)))[0].T
    y = np.repeat([1.0, -1.0, 1.0], 4) * rng.uniform(0.5, 2, n)
    U = rng.uniform(0.1, 1, n).reshape(p, 4)
    W = np.einsum("jk,jkd->jd", U, X.reshape(p, 4, n))
    a = np.array([1.0, -1.0, 1.0]) * np.linalg.norm(W, axis=1)
    prob = gd.GroupProblem.from_network(X, y, a, W)
    Y = y.reshape(p, 4)
    np.testing.assert_allclose(prob.D_norm, np.sqrt(np.mean(Y**2, axis=1)))
    np.testing.assert_allclose(prob.N0, np.sum(U**2, axis=1))
    np.testing.assert_allclose(prob.c0, np.sum(np.abs(Y) * U, axis=1)
                               / np.linalg.norm(Y, axis=1) / np.linalg.norm(U, axis=1))
    with pytest.raises(ValueError, match="balanced"):
        gd.GroupProblem.from_network(X, y, 2 * a, W)
    with pytest.raises(ValueError, match="sign"):
        gd.GroupProblem.from_network(X, -y, a, W)
    # a float32 network is balanced to its rounding only: accepted; the same imbalance in
    # float64 is a real one: refused
    f32 = [v.astype(np.float32) for v in (X, y, a, W)]
    assert gd.GroupProblem.from_network(*f32).p == p
    with pytest.raises(ValueError, match="balanced"):
        gd.GroupProblem.from_network(X, y, a * (1 + 3e-7), W)


# -------------------------------------------------------------------------------------- demo
def test_demo_refuses_an_existing_folder(tmp_path):
    """Without overwrite the demo stops before any training and leaves the folder alone."""
    from shallowflow.output import OutputExistsError

    out = tmp_path / "demo"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(OutputExistsError, match="already exists"):
        demo.run_demo(out, sizes=(16,), runs=1, show_progress=False)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_demo_tiny(tmp_path):
    """The demo's folder, and its printed fractions read back from the saved runs."""
    import xarray as xr

    sizes = (16, 32)
    summary = demo.run_demo(tmp_path / "demo", sizes=sizes, runs=2, show_progress=False)
    folder = tmp_path / "demo"
    assert {p.name for p in folder.iterdir()} == {
        ".shallowflow", "pl_curvature.png", "summary.txt", "provenance.json",
        *(f"results_n{n}.nc" for n in sizes)}
    assert (folder / "summary.txt").read_text() == summary + "\n"
    for n in sizes:
        with xr.open_dataset(folder / f"results_n{n}.nc") as ds:
            converged = float((ds.loss.isel(time=-1) < 1 / (2 * n)).mean())
            assert ds.sizes["run"] == 2 and ds.sizes["neuron"] == gi.neurons_for(n)
        assert f"n={n}: {converged:.2f}" in summary
