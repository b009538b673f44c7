"""Exact gradients of the two-layer network against an independent numpy implementation and
central finite differences (docs/math.md §0.3), and the sigma'(0) = 0 convention."""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np
import pytest

from shallowflow.model.activations import Activation
from shallowflow.model.losses import Loss
from shallowflow.model.network import Network, add_bias_column, forward, loss_and_gradient

# --------------------------------------------------------------------------------------------
# Independent numpy reference, written from the formulas of docs/math.md §0.3:
#   h(x) = kappa sum_j a_j sigma(<w_j, x>),  L = c sum_i ell(h(x_i), y_i),  c = 1/n or 1,
#   dL/da_j = kappa sum_i g_i sigma(<w_j, x_i>),  dL/dw_j = kappa a_j sum_i g_i sigma'(.) x_i,
#   g_i = c ell'(h(x_i), y_i).
# --------------------------------------------------------------------------------------------


def np_sigma(z, leak):
    return np.where(z > 0, z, leak * z)


def np_dsigma(z, leak, at_zero=0.0):
    return np.where(z > 0, 1.0, np.where(z < 0, leak, at_zero))


def np_ell(name, out, y):
    if name == "square":
        return 0.5 * (out - y) ** 2
    if name == "mse":
        return (out - y) ** 2
    if name == "exponential":
        return np.exp(-y * out)
    return np.log1p(np.exp(-y * out))


def np_dell(name, out, y):
    if name == "square":
        return out - y
    if name == "mse":
        return 2.0 * (out - y)
    if name == "exponential":
        return -y * np.exp(-y * out)
    return -y / (1.0 + np.exp(y * out))


def np_forward(a, W, X, kappa, leak):
    p, n = W.shape[0], X.shape[0]
    out = np.zeros(n)
    for i in range(n):
        for j in range(p):
            out[i] += a[j] * float(np_sigma(np.dot(W[j], X[i]), leak))
    return kappa * out


def np_loss(a, W, X, y, kappa, leak, name, reduction):
    c = 1.0 / len(y) if reduction == "mean" else 1.0
    return c * np.sum(np_ell(name, np_forward(a, W, X, kappa, leak), y))


def np_grad(a, W, X, y, kappa, leak, name, reduction, at_zero=0.0):
    c = 1.0 / len(y) if reduction == "mean" else 1.0
    g = c * np_dell(name, np_forward(a, W, X, kappa, leak), y)
    ga, gW = np.zeros_like(a), np.zeros_like(W)
    for j in range(W.shape[0]):
        for i in range(X.shape[0]):
            z = np.dot(W[j], X[i])
            ga[j] += kappa * g[i] * np_sigma(z, leak)
            gW[j] += kappa * a[j] * g[i] * np_dsigma(z, leak, at_zero) * X[i]
    return ga, gW


def central_fd(f, theta, h=1e-6):
    theta = np.array(theta, dtype=np.float64)
    grad = np.zeros_like(theta)
    for k in range(theta.size):
        e = np.zeros_like(theta)
        e.flat[k] = h
        grad.flat[k] = (f(theta + e) - f(theta - e)) / (2 * h)
    return grad


# --------------------------------------------------------------------------------------------

P, N, D = 4, 7, 3
LOSSES = ("square", "mse", "exponential", "logistic")
CASES = list(
    itertools.product(LOSSES, ("mean", "sum"), ("one", "inv_p"), (False, True), (0.0, 0.1))
)


def _point(seed, name, bias):
    """A random (a, W, X0, X, y) with every |<w_j, x_i>| >= 1e-3 (far from the ReLU kink); X is X0
    with a constant-1 column appended when ``bias``."""
    rng = np.random.default_rng(seed)
    while True:
        X0 = rng.normal(size=(N, D))
        X = np.concatenate([X0, np.ones((N, 1))], axis=1) if bias else X0
        W = rng.normal(size=(P, X.shape[1])) / np.sqrt(X.shape[1])
        a = rng.normal(size=P)
        if np.min(np.abs(X @ W.T)) >= 1e-3:
            break
    if name in ("exponential", "logistic"):
        y = rng.choice([-1.0, 1.0], size=N)
    else:
        y = rng.normal(size=N)
    return a, W, X0, X, y


@pytest.mark.parametrize(("name", "reduction", "kappa_kind", "bias", "leak"), CASES)
def test_gradient_matches_numpy_and_finite_differences(name, reduction, kappa_kind, bias, leak):
    seed = CASES.index((name, reduction, kappa_kind, bias, leak))
    a, W, X0, X_ref, y = _point(seed, name, bias)
    X = np.asarray(add_bias_column(jnp.asarray(X0))) if bias else X0
    np.testing.assert_array_equal(X, X_ref)
    kappa = 1.0 if kappa_kind == "one" else 1.0 / P
    act, loss = Activation(leak=leak), Loss(name, reduction)

    L, grad, Z = loss_and_gradient(
        Network(jnp.asarray(a), jnp.asarray(W)), jnp.asarray(X), jnp.asarray(y), kappa, act, loss
    )
    L, ga, gW, Z = float(L), np.asarray(grad.a), np.asarray(grad.W), np.asarray(Z)

    # value, pre-activations and forward pass against numpy
    L_ref = np_loss(a, W, X, y, kappa, leak, name, reduction)
    np.testing.assert_allclose(L, L_ref, rtol=1e-12)
    np.testing.assert_allclose(Z, X @ W.T, rtol=1e-12, atol=1e-14)
    out = np.asarray(forward(Network(jnp.asarray(a), jnp.asarray(W)), jnp.asarray(X), kappa, act))
    np.testing.assert_allclose(out, np_forward(a, W, X, kappa, leak), rtol=1e-12, atol=1e-14)

    # analytic numpy gradient
    ga_ref, gW_ref = np_grad(a, W, X, y, kappa, leak, name, reduction)
    scale = np.linalg.norm(np.concatenate([ga_ref, gW_ref.ravel()]))
    assert scale > 1e-3
    np.testing.assert_allclose(ga, ga_ref, rtol=1e-10, atol=1e-12 * scale)
    np.testing.assert_allclose(gW, gW_ref, rtol=1e-10, atol=1e-12 * scale)

    # central finite differences of the numpy loss (independent of both gradient formulas)
    fa = central_fd(lambda t: np_loss(t, W, X, y, kappa, leak, name, reduction), a)
    fW = central_fd(lambda t: np_loss(a, t, X, y, kappa, leak, name, reduction), W)
    np.testing.assert_allclose(ga, fa, rtol=1e-6, atol=1e-8 * scale)
    np.testing.assert_allclose(gW, fW, rtol=1e-6, atol=1e-8 * scale)
    fd = np.concatenate([fa, fW.ravel()])
    g = np.concatenate([ga, gW.ravel()])
    assert np.linalg.norm(g - fd) <= 1e-6 * np.linalg.norm(fd)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_finite_differences_of_library_loss(reduction):
    """FD of shallowflow's own loss value agrees with its gradient (logistic, leaky, bias)."""
    a, W, _, X, y = _point(7, "logistic", True)
    act, loss, kappa = Activation(0.1), Loss("logistic", reduction), 1.0 / P
    Xj, yj = jnp.asarray(X), jnp.asarray(y)

    def value(theta):
        net = Network(jnp.asarray(theta[:P]), jnp.asarray(theta[P:].reshape(W.shape)))
        return float(loss_and_gradient(net, Xj, yj, kappa, act, loss)[0])

    theta = np.concatenate([a, W.ravel()])
    _, grad, _ = loss_and_gradient(Network(jnp.asarray(a), jnp.asarray(W)), Xj, yj, kappa, act,
                                   loss)
    g = np.concatenate([np.asarray(grad.a), np.asarray(grad.W).ravel()])
    fd = central_fd(value, theta)
    assert np.linalg.norm(g - fd) <= 1e-6 * np.linalg.norm(fd)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_sample_weights_equal_repeated_samples(reduction):
    """Integer sample weights act like repeating each sample that many times (mean: c = 1/sum w)."""
    a, W, _, X, y = _point(11, "square", False)
    w = np.array([1.0, 2.0, 3.0, 1.0, 0.0, 2.0, 1.0])
    rep = np.repeat(np.arange(N), w.astype(int))
    act, loss = Activation(), Loss("square", reduction)
    net = Network(jnp.asarray(a), jnp.asarray(W))
    L1, g1, _ = loss_and_gradient(net, jnp.asarray(X), jnp.asarray(y), 1.0, act, loss,
                                  jnp.asarray(w))
    L2, g2, _ = loss_and_gradient(net, jnp.asarray(X[rep]), jnp.asarray(y[rep]), 1.0, act, loss)
    np.testing.assert_allclose(float(L1), float(L2), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g1.a), np.asarray(g2.a), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.asarray(g1.W), np.asarray(g2.W), rtol=1e-12, atol=1e-14)
    ga_ref, gW_ref = np_grad(a, W, X[rep], y[rep], 1.0, 0.0, "square", reduction)
    np.testing.assert_allclose(np.asarray(g1.a), ga_ref, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(np.asarray(g1.W), gW_ref, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize(("name", "reduction"), list(itertools.product(LOSSES, ("mean", "sum"))))
def test_loss_value_and_output_derivative(name, reduction):
    """Loss.value / Loss.derivative on a batch of output vectors (R, n) against numpy, and the
    derivative against finite differences of the value."""
    rng = np.random.default_rng(21)
    out = rng.normal(size=(3, N))
    y = rng.choice([-1.0, 1.0], size=(3, N)) if name in ("exponential", "logistic") else \
        rng.normal(size=(3, N))
    loss = Loss(name, reduction)
    c = 1.0 / N if reduction == "mean" else 1.0
    value = np.asarray(loss.value(jnp.asarray(out), jnp.asarray(y)))
    np.testing.assert_allclose(value, c * np.sum(np_ell(name, out, y), axis=-1), rtol=1e-13)
    der = np.asarray(loss.derivative(jnp.asarray(out), jnp.asarray(y)))
    np.testing.assert_allclose(der, c * np_dell(name, out, y), rtol=1e-13, atol=1e-16)
    fd = central_fd(lambda o: c * np.sum(np_ell(name, o, y[0])), out[0])
    np.testing.assert_allclose(der[0], fd, rtol=1e-6, atol=1e-10)


def test_loss_rejects_unknown_names():
    with pytest.raises(ValueError):
        Loss("hinge")
    with pytest.raises(ValueError):
        Loss("square", "median")
    with pytest.raises(ValueError):
        Activation(leak=1.0)


# --------------------------------------------------------------------------------------------
# sigma'(0) = 0
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("leak", [0.0, 0.1])
def test_activation_derivative_at_zero_is_zero(leak):
    act = Activation(leak=leak)
    assert float(act.derivative(jnp.asarray(0.0))) == 0.0
    assert float(act.derivative(jnp.asarray(-0.0))) == 0.0
    assert float(act.derivative(jnp.asarray(1e-300))) == 1.0
    assert float(act.derivative(jnp.asarray(-1e-300))) == leak
    assert float(act(jnp.asarray(0.0))) == 0.0
    z = np.array([-2.0, -1e-3, 0.0, 1e-3, 3.0])
    np.testing.assert_array_equal(np.asarray(act.derivative(jnp.asarray(z))),
                                  np_dsigma(z, leak))
    np.testing.assert_array_equal(np.asarray(act(jnp.asarray(z))), np_sigma(z, leak))


@pytest.mark.parametrize("leak", [0.0, 0.1])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_zero_preactivation_pair_contributes_nothing(leak, reduction):
    """<w_0, x_0> = 0 exactly: row 0 of grad W receives nothing from x_0."""
    rng = np.random.default_rng(3)
    n, d, p = 6, 3, 3
    X = rng.normal(size=(n, d))
    X[0] = [1.0, 0.0, 0.0]  # x_0 = e_1
    W = rng.normal(size=(p, d))
    W[0] = [0.0, 0.7, -0.4]  # w_0 orthogonal to e_1
    a = np.array([1.3, -0.8, 0.6])
    y = rng.normal(size=n) + 3.0  # residual at x_0 far from 0
    assert np.dot(W[0], X[0]) == 0.0
    assert np.min(np.abs((X @ W.T)[1:, 0])) > 1e-3
    act, loss = Activation(leak), Loss("square", reduction)
    net = Network(jnp.asarray(a), jnp.asarray(W))

    _, g_full, Z = loss_and_gradient(net, jnp.asarray(X), jnp.asarray(y), 1.0, act, loss)
    assert float(Z[0, 0]) == 0.0
    _, g_drop, _ = loss_and_gradient(net, jnp.asarray(X[1:]), jnp.asarray(y[1:]), 1.0, act, loss)
    # removing x_0 changes the normaliser c from 1/n to 1/(n-1) under "mean": undo it
    factor = (n - 1) / n if reduction == "mean" else 1.0
    np.testing.assert_allclose(np.asarray(g_full.W)[0], factor * np.asarray(g_drop.W)[0],
                               rtol=1e-12, atol=1e-15)

    # analytic: the numpy formula with sigma'(0) = 0 matches, sigma'(0) = 1/2 would not
    _, gW_ref = np_grad(a, W, X, y, 1.0, leak, "square", reduction, at_zero=0.0)
    _, gW_half = np_grad(a, W, X, y, 1.0, leak, "square", reduction, at_zero=0.5)
    np.testing.assert_allclose(np.asarray(g_full.W), gW_ref, rtol=1e-12, atol=1e-15)
    assert np.linalg.norm(gW_half[0] - gW_ref[0]) > 1e-2


# --------------------------------------------------------------------------------------------
# The batched gradient in each data layout (shared data, a dataset per run) with sample weights
# and a persistent activity mask, against a loop-based numpy reference per run; the sample-space
# arrays it returns (Z, activity, output) must come back in the canonical (n, R, ...) order.
# --------------------------------------------------------------------------------------------


def np_masked_run(a, W, X, y, w, m, kappa, name, reduction):
    """One run with sample weights w (n,) and activity mask m (n, p): ReLU pairs outside m are
    inactive. Returns (L, dL/da, dL/dW, Z, active, output)."""
    n, p = X.shape[0], W.shape[0]
    Z = np.array([[np.dot(W[j], X[i]) for j in range(p)] for i in range(n)])
    active = (Z > 0) & m
    out = np.array([kappa * sum(a[j] * Z[i, j] for j in range(p) if active[i, j]) for i in range(n)])
    c = 1.0 / w.sum() if reduction == "mean" else 1.0
    L = c * np.sum(w * np_ell(name, out, y))
    g = c * w * np_dell(name, out, y)
    ga, gW = np.zeros(p), np.zeros_like(W)
    for i in range(n):
        for j in range(p):
            if active[i, j]:
                ga[j] += kappa * g[i] * Z[i, j]
                gW[j] += kappa * a[j] * g[i] * X[i]
    return L, ga, gW, Z, active, out


@pytest.mark.parametrize(("layout", "runs"), [("shared", 1), ("shared", 3), ("per_run", 1),
                                              ("per_run", 3), ("run", 1)])
def test_batched_layouts_match_numpy_with_weights_and_mask(layout, runs):
    from shallowflow.model.activations import RELU
    from shallowflow.model.inputs import PerRunInputs, RunInputs, SharedInputs
    from shallowflow.model.network import batch_loss_and_gradient

    rng = np.random.default_rng(11 + runs)
    Xs = rng.normal(size=(runs, N, D)) if layout != "shared" else np.repeat(
        rng.normal(size=(1, N, D)), runs, axis=0)
    ys = rng.normal(size=(runs, N)) if layout != "shared" else np.repeat(
        rng.normal(size=(1, N)), runs, axis=0)
    a, W = rng.normal(size=(runs, P)), rng.normal(size=(runs, P, D))
    w = rng.uniform(0.5, 2.0, size=(N, runs))
    m = rng.random((N, runs, P)) < 0.8
    kappa, loss = 1.0 / P, Loss("square", "mean")
    if layout == "run":  # X^T given as its own array, as the blocked path holds it
        inputs = RunInputs(jnp.asarray(Xs[0]), jnp.asarray(np.ascontiguousarray(Xs[0].T)))
        y = jnp.asarray(ys)
    elif layout == "per_run":
        inputs, y = PerRunInputs(jnp.asarray(Xs)), jnp.asarray(ys)
    else:
        inputs, y = SharedInputs.of(jnp.asarray(Xs[0])), jnp.asarray(ys[0])
    bg = batch_loss_and_gradient(jnp.asarray(a), jnp.asarray(np.transpose(W, (2, 0, 1))), inputs,
                                 y, kappa, RELU, loss, jnp.asarray(w), jnp.asarray(m))
    assert bg.Z.shape == bg.active.shape == (N, runs, P) and bg.output.shape == (N, runs)
    for r in range(runs):
        L, ga, gW, Z, active, out = np_masked_run(a[r], W[r], Xs[r], ys[r], w[:, r], m[:, r],
                                                  kappa, "square", "mean")
        np.testing.assert_allclose(float(bg.loss[r]), L, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(bg.grad_a[r]), ga, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(np.asarray(bg.grad_Wt[:, r, :]).T, gW, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(np.asarray(bg.Z[:, r, :]), Z, rtol=1e-12, atol=1e-14)
        np.testing.assert_array_equal(np.asarray(bg.active[:, r, :]), active)
        np.testing.assert_allclose(np.asarray(bg.output[:, r]), out, rtol=1e-12, atol=1e-14)
