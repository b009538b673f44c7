"""stationary.derivatives: the gradient (network.loss_and_gradient), the Hessian (jax.hessian of the
forward pass) and Hessian-vector products against central finite differences and an independent
plain-numpy implementation, on random small networks away from kinks (docs/math.md §9.1)."""

from __future__ import annotations

import numpy as np
import pytest

from shallowflow.model.activations import Activation
from shallowflow.model.losses import Loss
from shallowflow.stationary.derivatives import (
    flat_gradient,
    flatten,
    hessian,
    hvp_operator,
    loss_value,
    neuron_index,
    problem,
    unflatten,
)

# --- an independent numpy implementation of L, grad L and the Hessian (away from kinks) ---------


def _ell(name: str, h: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ell, ell', ell'' in the output, written from the formulas of docs/math.md §0.3."""
    if name == "square":
        return 0.5 * (h - y) ** 2, h - y, np.ones_like(h)
    if name == "mse":
        return (h - y) ** 2, 2 * (h - y), 2 * np.ones_like(h)
    s = 1.0 / (1.0 + np.exp(y * h))  # logistic: sigmoid(-y h)
    return np.log1p(np.exp(-y * h)), -y * s, y**2 * s * (1 - s)


def np_reference(a, W, X, y, kappa, leak, name, reduction="mean"):
    """(L, grad (flat), Hessian) in the flat order (a_1..a_p, w_1..w_p)."""
    p, d = W.shape
    n = X.shape[0]
    c = 1.0 / n if reduction == "mean" else 1.0
    Z = X @ W.T  # (n, p)
    S = np.where(Z > 0, Z, leak * Z)
    Sp = np.where(Z > 0, 1.0, leak)
    h = kappa * S @ a
    ell, d1, d2 = _ell(name, h, y)
    N = p * (d + 1)
    J = np.zeros((n, N))  # dh_k / dtheta
    J[:, :p] = kappa * S
    for j in range(p):
        J[:, p + j * d: p + (j + 1) * d] = kappa * a[j] * Sp[:, j:j + 1] * X
    grad = c * J.T @ d1
    H = c * (J.T * d2) @ J
    for k in range(n):  # + c ell'_k d^2 h_k: only the (a_j, w_j) cross blocks
        for j in range(p):
            block = c * d1[k] * kappa * Sp[k, j] * X[k]
            H[j, p + j * d: p + (j + 1) * d] += block
            H[p + j * d: p + (j + 1) * d, j] += block
    return c * ell.sum(), grad, H


def random_case(seed: int, n: int = 7, p: int = 4, d: int = 3, margin: float = 0.05):
    """A random network whose pre-activations are all at least ``margin`` away from 0."""
    rng = np.random.default_rng(seed)
    while True:
        X = rng.standard_normal((n, d))
        W = rng.standard_normal((p, d))
        if np.min(np.abs(X @ W.T)) > margin:
            return rng.standard_normal(p), W, X, rng.standard_normal(n)


CASES = [("square", 0.0, 1.0, "mean"), ("mse", 0.0, 0.25, "sum"), ("logistic", 0.0, 1.0, "mean"),
         ("square", 0.2, 0.5, "mean")]


@pytest.mark.parametrize("seed,name,leak,kappa,reduction",
                         [(i, *case) for i, case in enumerate(CASES)])
def test_gradient_and_hessian_match_numpy_and_finite_differences(seed, name, leak, kappa, reduction):
    a, W, X, y = random_case(seed)
    if name == "logistic":
        y = np.sign(y)
    p, d = W.shape
    prob = problem(X, y, Loss(name, reduction), kappa, Activation(leak))
    L_ref, g_ref, H_ref = np_reference(a, W, X, y, kappa, leak, name, reduction)
    theta = flatten(unflatten(np.concatenate([a, W.ravel()]), p, d))
    L, g = flat_gradient(theta, prob, p, d)
    H = hessian(unflatten(theta, p, d), prob)
    np.testing.assert_allclose(L, L_ref, rtol=1e-13)
    np.testing.assert_allclose(loss_value(unflatten(theta, p, d), prob), L_ref, rtol=1e-13)
    np.testing.assert_allclose(g, g_ref, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(H, H_ref, rtol=1e-11, atol=1e-13)
    # central differences: of the numpy loss for the gradient, of the gradient for the Hessian
    eps = 1e-6
    E = np.eye(theta.size) * eps
    fd_g = np.array([(np_reference(*_split(theta + e, p, d), X, y, kappa, leak, name, reduction)[0]
                      - np_reference(*_split(theta - e, p, d), X, y, kappa, leak, name,
                                     reduction)[0]) / (2 * eps) for e in E])
    np.testing.assert_allclose(g, fd_g, rtol=1e-6, atol=1e-8)
    fd_H = np.array([(flat_gradient(theta + e, prob, p, d)[1]
                      - flat_gradient(theta - e, prob, p, d)[1]) / (2 * eps) for e in E])
    np.testing.assert_allclose(H, fd_H, rtol=1e-6, atol=1e-7)


def _split(theta, p, d):
    return theta[:p], theta[p:].reshape(p, d)


def test_hvp_and_restriction_match_the_numpy_hessian():
    a, W, X, y = random_case(3, n=9, p=5, d=4)
    p, d = W.shape
    prob = problem(X, y, "square", 1.0)
    net = unflatten(np.concatenate([a, W.ravel()]), p, d)
    _, _, H_ref = np_reference(a, W, X, y, 1.0, 0.0, "square")
    rng = np.random.default_rng(0)
    v = rng.standard_normal(H_ref.shape[0])
    np.testing.assert_allclose(hvp_operator(net, prob)(v), H_ref @ v, rtol=1e-11, atol=1e-13)
    mask = np.array([True, False, True, True, False])
    idx = neuron_index(p, d, mask)
    assert list(idx[:3]) == [0, 2, 3] and list(idx[3:3 + d]) == list(range(p + 0, p + d))
    sub = H_ref[np.ix_(idx, idx)]
    np.testing.assert_allclose(hessian(net, prob, mask), sub, rtol=1e-11, atol=1e-13)
    u = rng.standard_normal(idx.size)
    np.testing.assert_allclose(hvp_operator(net, prob, mask)(u), sub @ u, rtol=1e-11, atol=1e-13)


def test_hessian_at_a_kink_is_that_of_the_inactive_piece():
    """sigma'(0) = 0 and sigma'' = 0: a pair exactly at <w, x> = 0 counts as inactive."""
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    a, W = np.array([1.5]), np.array([[0.7, 0.0]])  # pair (0, 1) at the kink
    prob = problem(X, np.array([1.0, 2.0]), "square", 1.0)
    H = hessian(unflatten(np.concatenate([a, W.ravel()]), 1, 2), prob)
    _, _, H_piece = np_reference(a, W, X[:1], np.array([1.0]), 1.0, 0.0, "square")
    np.testing.assert_allclose(H, H_piece / 2, rtol=1e-13, atol=1e-15)  # c = 1/2 vs 1/1
