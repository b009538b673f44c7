"""The population kernel, loss and gradient of Gaussian inputs (docs/math.md §11) against Monte
Carlo: 10^7 Gaussian samples drawn with numpy, in chunks, each estimate compared with the closed
form to a few of its standard errors; and against the finite-data engine on a large sample."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

from shallowflow.model.activations import Activation
from shallowflow.model.arccos_kernel import (
    angle_profile,
    kernel_matrix,
    kernel_pullback,
    self_kernel,
)
from shallowflow.model.losses import Loss
from shallowflow.model.network import Network, loss_and_gradient
from shallowflow.model.population import Teacher, population_gradient, whiten

D, P, K = 5, 4, 3
SAMPLES, CHUNK = 10_000_000, 500_000
Z_MAX = 5.0  # standard errors allowed (a fixed seed: the draw is the same every time)
KAPPA = 0.7


def sigma(z: np.ndarray, leak: float) -> np.ndarray:
    """max(z, alpha z), alpha in [0, 1)."""
    return np.maximum(z, leak * z)


def dsigma(z: np.ndarray, leak: float) -> np.ndarray:
    """1 on z > 0, alpha on z < 0, 0 at z = 0."""
    return (z > 0) + leak * (z < 0) if leak else (z > 0).astype(z.dtype)


def problem() -> tuple[np.ndarray, ...]:
    """A student of 4 neurons against a teacher of 3 in d = 5, with one student neuron 1e-3 rad
    from a teacher neuron and one nearly antiparallel to another; a covariance factor L."""
    rng = np.random.default_rng(11)
    a, W = rng.normal(size=P), rng.normal(size=(P, D))
    b, V = rng.normal(size=K), rng.normal(size=(K, D))
    t = rng.normal(size=D)
    t -= (t @ V[0]) / (V[0] @ V[0]) * V[0]
    W[0] = 1.3 * (math.cos(1e-3) * V[0] / np.linalg.norm(V[0]) + math.sin(1e-3) * t / np.linalg.norm(t))
    W[1] = -0.8 * V[1] + 0.05 * rng.normal(size=D)
    L = np.tril(0.3 * rng.normal(size=(D, D)), -1) + np.diag(rng.uniform(0.5, 1.5, D))
    return a, W, b, V, L


CASES = {"relu": (0.0, False), "covariance_leaky": (0.3, True)}
"""Each case: (leaky slope alpha, inputs N(0, L L^T) instead of N(0, I))."""


SPREAD_CHUNKS = 4
"""The sample variance (for the standard error of the mean of all samples) is taken from the first
2 * 10^6 samples: accurate to about 0.1 %, at a fraction of the cost."""


class Moments:
    """Running sums of samples (all chunks) and of their squares (the first chunks): the mean and
    its standard error."""

    def __init__(self) -> None:
        self.n, self.n2, self.s, self.s2 = 0, 0, 0.0, 0.0

    def add(self, total: np.ndarray, n: int) -> None:
        self.n, self.s = self.n + n, self.s + total

    def add_squares(self, total_sq: np.ndarray, n: int) -> None:
        self.n2, self.s2 = self.n2 + n, self.s2 + total_sq

    def mean_se(self) -> tuple[np.ndarray, np.ndarray]:
        m = self.s / self.n
        return m, np.sqrt(np.maximum(self.s2 / self.n2 - m**2, 0.0) / self.n)


@pytest.fixture(scope="module")
def monte_carlo() -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Per case: the mean and standard error of the loss, dL/da, dL/dW and K(w_j, v_k). Samples
    are columns (d, n): numpy's products with a long last axis are the fast ones."""
    a, W, b, V, L = problem()
    rng = np.random.default_rng(2024)
    moments = {c: {q: Moments() for q in ("loss", "grad_a", "grad_W", "K_st")} for c in CASES}
    for chunk in range(SAMPLES // CHUNK):
        Zs = rng.standard_normal((D, CHUNK))
        for case, (leak, cov) in CASES.items():
            X = L @ Zs if cov else Zs
            S, T = W @ X, V @ X
            act, teach = sigma(S, leak), sigma(T, leak)
            r = KAPPA * a @ act - b @ teach
            rd = r * dsigma(S, leak)
            scale = KAPPA * a[:, None]
            m = moments[case]
            m["loss"].add(np.sum(r**2 / 2), CHUNK)
            m["grad_a"].add(KAPPA * (act @ r), CHUNK)
            m["grad_W"].add(scale * (rd @ X.T), CHUNK)
            m["K_st"].add(act @ teach.T, CHUNK)
            if chunk < SPREAD_CHUNKS:
                m["loss"].add_squares(np.sum(r**4 / 4), CHUNK)
                m["grad_a"].add_squares(KAPPA**2 * (act**2 @ r**2), CHUNK)
                m["grad_W"].add_squares(scale**2 * ((rd**2) @ (X**2).T), CHUNK)
                m["K_st"].add_squares((act**2) @ (teach**2).T, CHUNK)
    return {c: {q: v.mean_se() for q, v in m.items()} for c, m in moments.items()}


def assert_within(closed: np.ndarray, estimate: tuple[np.ndarray, np.ndarray], what: str) -> None:
    mean, se = estimate
    z = np.abs(np.asarray(closed) - mean) / (se + 1e-300)
    assert np.all(z <= Z_MAX), f"{what}: {np.max(z):.2f} standard errors (closed {closed}, MC {mean})"


@pytest.mark.parametrize("case", list(CASES))
def test_kernel_loss_and_gradient_agree_with_monte_carlo(monte_carlo, case):
    leak, cov = CASES[case]
    a, W, b, V, L = problem()
    chol = jnp.asarray(L) if cov else None
    Ws, Vs = whiten(jnp.asarray(W), chol), whiten(jnp.asarray(V), chol)
    est = monte_carlo[case]
    assert_within(kernel_matrix(Ws, Vs, leak), est["K_st"], "K(w, v)")
    pg = population_gradient(jnp.asarray(a), jnp.asarray(W), Teacher(jnp.asarray(b), jnp.asarray(V)),
                             KAPPA, leak, chol)
    assert_within(pg.loss, est["loss"], "loss")
    assert_within(pg.grad_a, est["grad_a"], "dL/da")
    assert_within(pg.grad_W, est["grad_W"], "dL/dW")
    # the standard errors are small enough to mean something
    assert est["loss"][1] < 2e-3 * est["loss"][0]


def test_population_loss_agrees_with_the_finite_data_engine_on_a_large_sample():
    """The engine's loss and gradient (docs/math.md §0.3) on 10^6 Gaussian samples labelled by the
    teacher are Monte Carlo estimates of the population ones: equal to a few standard errors."""
    a, W, b, V, _ = problem()
    n = 1_000_000
    Xt = np.random.default_rng(5).standard_normal((D, n))  # samples as columns
    y = b @ sigma(V @ Xt, 0.0)
    loss, grad, _ = loss_and_gradient(Network(jnp.asarray(a), jnp.asarray(W)), jnp.asarray(Xt.T),
                                      jnp.asarray(y), KAPPA, Activation(0.0), Loss("square"))
    pg = population_gradient(jnp.asarray(a), jnp.asarray(W), Teacher(jnp.asarray(b), jnp.asarray(V)),
                             KAPPA)
    S = W @ Xt
    r = KAPPA * a @ sigma(S, 0.0) - y

    def se(total_sq: np.ndarray, mean: np.ndarray) -> np.ndarray:
        return np.sqrt(np.maximum(total_sq / n - mean**2, 0.0) / n)

    assert abs(float(pg.loss) - float(loss)) <= Z_MAX * se(np.sum(r**4 / 4), float(loss))
    ga = KAPPA * r * sigma(S, 0.0)
    assert np.all(np.abs(pg.grad_a - grad.a) <= Z_MAX * se((ga**2).sum(1), np.asarray(grad.a)))
    rd = r * dsigma(S, 0.0)
    gw_sq = (KAPPA * a[:, None]) ** 2 * ((rd**2) @ (Xt**2).T)
    assert np.all(np.abs(pg.grad_W - grad.W) <= Z_MAX * se(gw_sq, np.asarray(grad.W)))


def test_angle_profile_ends_and_its_finite_derivative():
    import jax

    c = jnp.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    theta = np.arccos(np.asarray(c))
    assert np.allclose(angle_profile(c), np.sin(theta) + (np.pi - theta) * np.cos(theta), atol=1e-15)
    assert float(angle_profile(jnp.array(1.0))) == pytest.approx(math.pi, abs=1e-15)
    assert abs(float(angle_profile(jnp.array(-1.0)))) < 1e-15
    grad = jax.vmap(jax.grad(angle_profile))(c)
    assert np.allclose(grad, np.pi - theta, atol=1e-15)  # dJ/dc = pi - theta, finite at c = +-1
    # a cosine rounded just outside [-1, 1] is clipped, not nan
    assert np.isfinite(angle_profile(jnp.array([1.0 + 1e-15, -1.0 - 1e-15]))).all()


def test_self_kernel_zero_vectors_and_homogeneity():
    rng = np.random.default_rng(3)
    U = jnp.asarray(rng.normal(size=(3, D)))
    assert np.allclose(np.diag(kernel_matrix(U, U)), np.sum(np.asarray(U) ** 2, 1) / 2, rtol=1e-14)
    # leaky: K_a(u, u) = a |u|^2 + (1 - a)^2 |u|^2 / 2 = (1 + a^2) |u|^2 / 2
    assert np.allclose(np.diag(kernel_matrix(U, U, 0.3)), self_kernel(U, 0.3), rtol=1e-14)
    Z = U.at[1].set(0.0)
    assert np.all(np.asarray(kernel_matrix(Z, U))[1] == 0.0)
    M = kernel_pullback(Z, U, jnp.ones((3, 3)), 0.2)
    assert np.all(np.asarray(M)[1] == 0.0)  # sigma'(0) = 0: a zero neuron's M is 0
    # K(s u, t v) = s t K(u, v) for s, t > 0; grad_u K does not depend on |u|
    assert np.allclose(kernel_matrix(3.0 * U, 0.5 * U), 1.5 * kernel_matrix(U, U), rtol=1e-14)
    w = jnp.ones((3, 3))
    assert np.allclose(kernel_pullback(7.0 * U, U, w), kernel_pullback(U, U, w), rtol=1e-14)
