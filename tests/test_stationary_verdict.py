"""stationary.verdict and stationary.polish on known stationary points (docs/math.md §9.4-§9.6).
Each verdict is checked against something independent: a numpy loss evaluated along the reported
descent direction, random perturbations, closed forms, or Boursier-Flammarion's OLS point
(docs/math.md §2.4) built by hand."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from shallowflow.model.activations import Activation
from shallowflow.model.network import Network
from shallowflow.stationary.derivatives import problem
from shallowflow.stationary.polish import polish
from shallowflow.stationary.verdict import Tolerances, end_state, end_states


def np_loss(a, W, X, y, kappa=1.0, c=None):
    """(c) sum (h - y)^2 with c = 1/(2n) (the 'square' loss) unless given."""
    h = kappa * np.maximum(X @ np.asarray(W).T, 0.0) @ np.asarray(a)
    return (0.5 / len(y) if c is None else c) * np.sum((h - y) ** 2)


def _perturbations_increase(a, W, X, y, radius=1e-4, count=2000, seed=0, c=None):
    """min over random perturbations of size ``radius`` of L(theta + delta) - L(theta)."""
    rng = np.random.default_rng(seed)
    base = np_loss(a, W, X, y, c=c)
    worst = np.inf
    for _ in range(count):
        da = rng.standard_normal(a.shape)
        dW = rng.standard_normal(W.shape)
        s = radius / np.sqrt(np.sum(da**2) + np.sum(dW**2))
        worst = min(worst, np_loss(a + s * da, W + s * dW, X, y, c=c) - base)
    return worst


def test_one_neuron_fitting_one_point_is_a_global_minimum():
    x = np.array([[0.6, 0.8]])
    y = np.array([2.0])
    a = np.array([np.sqrt(2.0)])
    W = np.array([[0.6, 0.8]]) * np.sqrt(2.0)  # a <w, x> = 2
    assert np_loss(a, W, x, y) <= 1e-30
    v = end_state(Network(a, W), problem(x, y))
    assert v.label == "global minimum"
    assert v.grad_norm <= 1e-14 and v.zero_neurons == 0 and v.dead_neurons == 0


def test_loss_at_the_floor_is_a_global_minimum_whatever_the_gradient():
    """Near a minimiser ||grad L|| = O(sqrt(L - floor)): a point at L = 5e-13 with ||grad L|| of
    order 1e-6 > tol_grad is a global minimum to tolerance (docs/math.md §9.6, rule 1), while a
    point at L = 5e-9 > tol_loss with the same kind of gradient is not stationary."""
    x, y = np.array([[0.6, 0.8]]), np.array([2.0])
    W = np.array([[0.6, 0.8]]) * np.sqrt(2.0)
    for eps, label in ((1e-6, "global minimum"), (1e-4, "not stationary")):
        a = np.array([np.sqrt(2.0) * (1 + eps / 2)])  # h = 2 + eps, L = eps^2 / 2
        loss = np_loss(a, W, x, y)
        assert loss == pytest.approx(eps**2 / 2, rel=1e-6)
        grad_a = (2 + eps - 2.0) * np.sqrt(2.0)  # dL/da = r <w, x>, <w, x> = sqrt 2
        assert grad_a > Tolerances().grad
        assert end_state(Network(a, W), problem(x, y)).label == label


def test_zero_network_on_positive_labels_is_a_saddle_escaping_along_the_data():
    x = np.array([[3.0, 4.0, 0.0]])  # d = 3: the searched case
    for X in (x, x[:, :2]):  # and d = 2: the exact case
        y = np.array([1.5])
        v = end_state(Network(np.zeros(2), np.zeros((2, X.shape[1]))), problem(X, y))
        assert v.label == "saddle" and v.zero_neurons == 2 and v.escape is not None
        e = v.escape
        assert e.order == 2 and e.sign_b == 1.0
        np.testing.assert_allclose(e.direction, X[0] / 5.0, atol=1e-8)
        # G(u) = -(y/n) sigma(<u, x>): curvature -kappa max|G| = -1.5 * 5
        np.testing.assert_allclose(e.value, -7.5, rtol=1e-10)
        # the loss really falls along (a, w) = t (b, u)/sqrt 2, at rate value t^2 / 2
        t = 1e-3
        a = np.zeros(2)
        W = np.zeros((2, X.shape[1]))
        a[e.neuron], W[e.neuron] = t * e.sign_b / np.sqrt(2), t * e.direction / np.sqrt(2)
        drop = np_loss(a, W, X, y) - np_loss(np.zeros(2), np.zeros_like(W), X, y)
        np.testing.assert_allclose(drop, e.value * t**2 / 2, rtol=1e-3)


def _strict_local_min():
    """1-D data with a bias: one decreasing neuron fits x = -1, 1 exactly, x = 3 is inactive
    (<w, x> = -1) with an unfitted label: a strict local minimum (loss > 0 = the floor)."""
    x = np.array([-1.0, 1.0, 3.0])
    X = np.stack([x, np.ones(3)], 1)
    y = np.array([2.0, 0.5, 1.0])
    return np.array([1.0]), np.array([[-0.75, 1.25]]), X, y


def test_constructed_strict_local_minimum():
    a, W, X, y = _strict_local_min()
    assert np.allclose(np.maximum(X @ W[0], 0) * a[0], [2.0, 0.5, 0.0])
    v = end_state(Network(a, W), problem(X, y))
    assert v.label == "strict local minimum", v.reason
    assert v.local_minimum and v.symmetry_modes == 1 and v.smooth_params == 3
    assert v.eig_min > 0 and v.escape is None
    np.testing.assert_allclose(v.loss, 1.0 / 6.0)  # (1/(2n)) * 1^2
    # independent: every random perturbation raises the loss (to second order, strictly up to
    # the symmetry curve, which random directions miss)
    assert _perturbations_increase(a, W, X, y) > 0


def _bf_ols():
    """Boursier-Flammarion's 3-point data (docs/math.md §2.4), mse loss, with a bias."""
    x = np.array([-0.75, -0.5, 0.125])
    X = np.stack([x, np.ones(3)], 1)
    y = np.array([1.1, 0.1, 0.8])
    beta = np.linalg.solve(X.T @ X, X.T @ y)
    np.testing.assert_allclose(beta, [-0.0615385, 0.6435897], atol=1e-7)  # §2.4's test vector
    return X, y, beta


def test_bf_ols_point_with_a_zero_neuron_is_a_saddle():
    X, y, beta = _bf_ols()
    s = np.sqrt(np.linalg.norm(beta))
    a = np.array([s, 0.0, 0.0])  # one positive neuron = beta, two zero neurons
    W = np.stack([beta / s, np.zeros(2), np.zeros(2)])
    prob = problem(X, y, "mse")
    v = end_state(Network(a, W), prob)
    np.testing.assert_allclose(v.loss, 0.175043, atol=1e-6)  # §2.4's spurious limit loss
    assert v.label == "saddle" and v.zero_neurons == 2 and v.escape.order == 2, v.reason
    assert v.escape_exact  # d = 2: exact circle search
    e = v.escape
    t = 1e-3
    a2, W2 = a.copy(), W.copy()
    a2[e.neuron], W2[e.neuron] = t * e.sign_b / np.sqrt(2), t * e.direction / np.sqrt(2)
    drop = np_loss(a2, W2, X, y, c=1 / 3) - np_loss(a, W, X, y, c=1 / 3)
    np.testing.assert_allclose(drop, e.value * t**2 / 2, rtol=1e-3)
    assert drop < 0
    # the smooth part alone (the OLS neuron) is a local minimum: positive spectrum
    assert v.eig_min > 0


def test_bf_ols_point_with_only_dominated_neurons_is_a_local_minimum():
    X, y, beta = _bf_ols()
    prob = problem(X, y, "mse")
    s = np.sqrt(np.linalg.norm(beta))
    one = end_state(Network(np.array([1.5 * s]), (beta / (1.5 * s))[None, :]), prob)
    assert one.label == "strict local minimum" and one.local_minimum, one.reason
    # three aligned neurons with |a_j| > ||w_j|| and sum a_j w_j = beta: a local minimum, not
    # strict (the split between aligned neurons is free): degenerate with the local-minimum test
    shares = np.array([0.5, 0.3, 0.2])
    a = 1.5 * np.sqrt(shares * np.linalg.norm(beta))
    W = (shares * np.linalg.norm(beta) / a)[:, None] * (beta / np.linalg.norm(beta))[None, :]
    assert np.all(np.abs(a) > np.linalg.norm(W, axis=1))
    np.testing.assert_allclose(a @ W, beta)
    many = end_state(Network(a, W), prob)
    assert many.label == "degenerate" and many.local_minimum, many.reason
    assert _perturbations_increase(a, W, X, y, c=1 / 3) >= -1e-15


def test_smooth_saddle_found_by_negative_curvature():
    """a = 0, w active on two points with labels of opposite sign: grad = 0 but M != 0."""
    X = np.eye(2)
    y = np.array([1.0, -1.0])
    a, W = np.array([0.0]), np.array([[1.0, 1.0]]) / np.sqrt(2)
    v = end_state(Network(a, W), problem(X, y))
    assert v.label == "saddle" and v.negative_curvature, v.reason
    assert not v.local_minimum
    # closed form: H on (a, w) = [[|w|^2... ]]; check the direction instead: loss falls along it
    u = v.spectrum.vector_min
    t = 1e-3
    drop = np_loss(a + t * u[:1], W + t * u[1:][None, :], X, y) - np_loss(a, W, X, y)
    np.testing.assert_allclose(drop, v.eig_min * t**2 / 2, rtol=1e-2)
    assert drop < 0


def test_not_stationary_and_dead_neurons():
    a, W, X, y = _strict_local_min()
    a2 = np.array([1.0, 2.0])
    W2 = np.vstack([W, [[0.0, -1.0]]])  # a dead neuron: <w, x> = -1 on every point
    v = end_state(Network(a2, W2), problem(X, y))
    assert v.dead_neurons == 1 and v.local_minimum and v.label == "degenerate", v.reason
    # the dead neuron reaches w = 0 along a flat path of length ||w|| = 1; there, with residuals
    # (0, 0, -1) and g = r/3, G(u) = -(1/3) sigma(<u, (3, 1)>): escape -sqrt(10)/3
    np.testing.assert_allclose(v.dead_distance, 1.0)
    np.testing.assert_allclose(v.dead_escape, -np.sqrt(10) / 3, rtol=1e-10)
    # with a leaky ReLU no neuron is flat: the same neuron belongs to the smooth part
    leaky = end_state(Network(a2, W2), problem(X, y, activation=Activation(0.2)))
    assert leaky.dead_neurons == 0 and leaky.smooth_neurons == 2
    v = end_state(Network(a * 1.01, W), problem(X, y))
    assert v.label == "not stationary" and v.grad_norm > 1e-3


def test_polish_returns_to_the_minimum_and_reports_the_distance():
    a, W, X, y = _strict_local_min()
    prob = problem(X, y)
    rng = np.random.default_rng(0)
    da, dW = 1e-3 * rng.standard_normal(1), 1e-3 * rng.standard_normal((1, 2))
    start = Network(a + da, W + dW)
    for method in ("newton", "bfgs"):
        pol = polish(start, prob, method, grad_tol=1e-11, max_iter=200)
        assert pol.stop == "gradient tolerance", pol
        assert pol.grad_norm_after <= 1e-11 < pol.grad_norm_before
        # the minimum is the curve (c a, w / c): the end point is on it, loss 1/6
        np.testing.assert_allclose(pol.loss_after, 1.0 / 6.0, rtol=1e-10)
        end = pol.network
        np.testing.assert_allclose(end.a[0] * end.W[0], a[0] * W[0], atol=1e-9)
        moved = np.sqrt(np.sum((end.a - start.a) ** 2) + np.sum((end.W - start.W) ** 2))
        np.testing.assert_allclose(pol.distance, moved, rtol=1e-12)
        assert 1e-5 < pol.distance <= np.sqrt(np.sum(da**2) + np.sum(dW**2)) * 3
        assert end_state(end, prob).label == "strict local minimum"


def test_newton_polish_converges_to_a_saddle_too():
    X = np.eye(2)
    y = np.array([1.0, -1.0])
    a, W = np.array([0.0]), np.array([[1.0, 1.0]]) / np.sqrt(2)
    pol = polish(Network(a + 1e-4, W + 1e-4), problem(X, y), "newton")
    assert pol.stop == "gradient tolerance"
    assert end_state(pol.network, problem(X, y)).label == "saddle"


def test_end_states_on_a_results_layout():
    """A Dataset shaped like experiment.to_dataset (a_final, W_final, attrs) with X, y kept."""
    X, y, beta = _bf_ols()
    s = np.sqrt(np.linalg.norm(beta))
    a_final = np.array([[s, 0.0], [1.2 * s, 0.0], [0.0, 0.0]])
    W_final = np.stack([np.stack([beta / s, np.zeros(2)]),
                        np.stack([beta / (1.2 * s) * 1.001, np.zeros(2)]),  # off the OLS point
                        np.zeros((2, 2))])
    ds = xr.Dataset({"a_final": (("run", "neuron"), a_final),
                     "W_final": (("run", "neuron", "dim"), W_final),
                     "X": (("sample", "dim"), X), "y": (("sample",), y)},
                    coords={"run": np.arange(3)},
                    attrs={"kappa": 1.0, "loss_name": "mse", "reduction": "mean"})
    out = end_states(ds)
    assert list(out["end_label"].values) == ["saddle", "not stationary", "saddle"]
    assert out["end_zero_neurons"].values.tolist() == [1, 1, 2]
    assert out["end_escape_direction"].shape == (3, 2)
    assert out.attrs["tolerance_grad"] == Tolerances().grad
    polished = end_states(ds, polish_method="newton")
    assert list(polished["end_label"].values) == ["saddle", "saddle", "saddle"]
    assert polished["end_polish_stop"].values[1] == "gradient tolerance"
    assert 0 < polished["end_polish_distance"].values[1] < 1e-2
    assert polished["end_polish_distance"].values[0] < 1e-12


def test_newton_polish_through_minres_on_a_mid_size_network():
    """280 smooth parameters (above spectrum.DENSE_MAX): Newton steps by MINRES from
    Hessian-vector products; an over-parametrised square loss ends at an interpolating point."""
    rng = np.random.default_rng(1)
    n, p, d = 60, 40, 6
    X, y = rng.standard_normal((n, d)), rng.standard_normal(n)
    prob = problem(X, y, "square", 1.0 / p)
    start = polish(Network(rng.standard_normal(p), rng.standard_normal((p, d))), prob, "lbfgs",
                   grad_tol=1e-6, max_iter=3000).network
    pol = polish(start, prob, "newton", grad_tol=1e-11)
    assert pol.stop == "gradient tolerance" and pol.grad_norm_after <= 1e-11
    assert np_loss(pol.network.a, pol.network.W, X, y, kappa=1.0 / p) < 1e-20  # independent
    v = end_state(pol.network, prob)
    assert v.label == "global minimum" and v.spectrum_method == "lanczos"
