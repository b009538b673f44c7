"""The closed-form population gradient and Hessian (docs/math.md §11.2, §11.3) against autodiff of an
independent formula, central differences and the Gauss-Newton form at a global minimum; the
log-norm path (docs/math.md §11.5) against the plain one and at lambda = 1e-300."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from shallowflow.model.population import (
    Teacher,
    population_gradient,
    population_gradient_lognorm,
    population_hessian,
    population_loss,
)

D, P, K = 4, 3, 2

# --------------------------------------------------------------------------------------------
# Independent reference: the population loss typed again from docs/math.md §11.1, §11.4, §11.6,
# one pair at a time, for autodiff:
#   K(u, v) = |u||v| (sin t + (pi - t) cos t) / (2 pi),  K_a = a <u, v> + (1 - a)^2 K,
#   K_a(u, u) = (1 + a^2) |u|^2 / 2,  inner products in Sigma = L L^T.
# --------------------------------------------------------------------------------------------


def ref_pair(u, v, leak, S):
    nu, nv = jnp.sqrt(u @ S @ u), jnp.sqrt(v @ S @ v)
    c = (u @ S @ v) / (nu * nv)
    t = jnp.arccos(c)
    return leak * (u @ S @ v) + (1 - leak) ** 2 * nu * nv * (jnp.sin(t) + (math.pi - t) * c) / (2 * math.pi)


def ref_loss(a, W, b, V, kappa, leak, S):
    coef = jnp.concatenate([kappa * a, -b])
    units = jnp.concatenate([W, V])
    I, J = np.nonzero(~np.eye(len(coef), dtype=bool))  # the pairs i != j
    cross = jax.vmap(lambda u, v: ref_pair(u, v, leak, S))(units[I], units[J])
    own = (1 + leak**2) * jnp.einsum("id,de,ie->i", units, S, units) / 2
    return (jnp.sum(coef[I] * coef[J] * cross) + jnp.sum(coef**2 * own)) / 2


def network(seed: int, runs: int | None = None):
    rng = np.random.default_rng(seed)
    shape = () if runs is None else (runs,)
    a, W = rng.normal(size=(*shape, P)), rng.normal(size=(*shape, P, D))
    b, V = rng.normal(size=K), rng.normal(size=(K, D))
    L = np.tril(0.3 * rng.normal(size=(D, D)), -1) + np.diag(rng.uniform(0.5, 1.5, D))
    return jnp.asarray(a), jnp.asarray(W), Teacher(jnp.asarray(b), jnp.asarray(V)), jnp.asarray(L)


VARIANTS = [(1.0, 0.0, False), (0.5, 0.0, True), (1.0, 0.25, False), (0.3, 0.1, True)]
"""(kappa, leaky slope alpha, covariance L L^T instead of I)."""


@pytest.mark.parametrize("kappa,leak,cov", VARIANTS)
def test_closed_form_gradient_equals_autodiff_of_an_independent_formula(kappa, leak, cov):
    a, W, teacher, L = network(1)
    chol = L if cov else None
    S = L @ L.T if cov else jnp.eye(D)
    ga, gW = jax.jit(jax.grad(ref_loss, argnums=(0, 1)), static_argnums=(4, 5))(
        a, W, teacher.b, teacher.V, kappa, leak, S)
    pg = population_gradient(a, W, teacher, kappa, leak, chol)
    assert float(pg.loss) == pytest.approx(float(ref_loss(a, W, teacher.b, teacher.V, kappa, leak, S)),
                                           rel=1e-13)
    assert np.allclose(pg.grad_a, ga, rtol=1e-12, atol=1e-14)
    assert np.allclose(pg.grad_W, gW, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kappa,leak,cov", VARIANTS[::3])
def test_closed_form_gradient_equals_central_differences_of_the_loss(kappa, leak, cov):
    a, W, teacher, L = network(2)
    chol = L if cov else None
    theta = np.concatenate([np.asarray(a), np.asarray(W).ravel()])

    def loss(t):
        return float(population_loss(jnp.asarray(t[:P]), jnp.asarray(t[P:].reshape(P, D)), teacher,
                                     kappa, leak, chol))

    h = 1e-6
    fd = np.array([(loss(theta + h * e) - loss(theta - h * e)) / (2 * h) for e in np.eye(theta.size)])
    pg = population_gradient(a, W, teacher, kappa, leak, chol)
    closed = np.concatenate([np.asarray(pg.grad_a), np.asarray(pg.grad_W).ravel()])
    assert np.allclose(closed, fd, rtol=1e-7, atol=1e-8)


def test_the_run_axis_is_a_batch_of_independent_networks():
    a, W, teacher, L = network(3, runs=5)
    batch = population_gradient(a, W, teacher, 0.5, 0.1, L)
    for r in range(5):
        one = population_gradient(a[r], W[r], teacher, 0.5, 0.1, L)
        assert np.allclose(batch.loss[r], one.loss, rtol=1e-14)
        assert np.allclose(batch.grad_W[r], one.grad_W, rtol=1e-13, atol=1e-15)
        assert np.allclose(batch.grad_a[r], one.grad_a, rtol=1e-13, atol=1e-15)


def test_a_zero_neuron_has_zero_gradient_and_adds_nothing():
    a, W, teacher, _ = network(4)
    Wz = W.at[1].set(0.0)
    pg = population_gradient(a, Wz, teacher)
    assert np.all(np.asarray(pg.grad_W[1]) == 0) and float(pg.grad_a[1]) == 0.0  # sigma'(0) = 0
    keep = jnp.array([0, 2])
    assert float(pg.loss) == pytest.approx(float(population_loss(a[keep], W[keep], teacher)), rel=1e-14)


@pytest.mark.parametrize("leak,cov", [(0.0, False), (0.2, True)])
def test_hessian_equals_differences_of_the_closed_form_gradient(leak, cov):
    a, W, teacher, L = network(5)
    chol = L if cov else None
    H = np.asarray(population_hessian(a, W, teacher, 0.7, leak, chol))

    def grad(t):
        pg = population_gradient(jnp.asarray(t[:P]), jnp.asarray(t[P:].reshape(P, D)), teacher, 0.7,
                                 leak, chol)
        return np.concatenate([np.asarray(pg.grad_a), np.asarray(pg.grad_W).ravel()])

    theta = np.concatenate([np.asarray(a), np.asarray(W).ravel()])
    h = 1e-5
    fd = np.stack([(grad(theta + h * e) - grad(theta - h * e)) / (2 * h)
                   for e in np.eye(theta.size)], 1)
    assert np.allclose(H, H.T, atol=1e-13)
    assert np.allclose(H, fd, rtol=1e-7, atol=1e-8)


def gauss_newton_at_identity(k: int) -> np.ndarray:
    """E[grad h grad h^T] at W = I (outputs fixed to 1): block (i, j) = E[1{x_i > 0} 1{x_j > 0} x x^T],
    I / 2 for i = j and I / 4 + (e_i e_j^T + e_j e_i^T) / (2 pi) otherwise (E[x 1{x > 0}] =
    1 / sqrt(2 pi))."""
    H = np.zeros((k, k, k, k))
    for i in range(k):
        for j in range(k):
            H[i, :, j, :] = np.eye(k) / 2 if i == j else np.eye(k) / 4
            if i != j:
                H[i, i, j, j] += 1 / (2 * math.pi)
                H[i, j, j, i] += 1 / (2 * math.pi)
    return H.reshape(k * k, k * k)


@pytest.mark.parametrize("offset", [0.0, 1e-12, 1e-9])
def test_hessian_at_parallel_pairs_is_finite_and_the_gauss_newton_matrix(offset):
    """At W = I the student neurons are parallel to the teacher's (theta = 0), the residual is 0 and
    the Hessian is E[grad h grad h^T]; K is twice differentiable there (docs/math.md §11.3)."""
    k = 4
    W = jnp.eye(k) + offset * jnp.asarray(np.random.default_rng(6).normal(size=(k, k)))
    H = np.asarray(population_hessian(jnp.ones(k), W, Teacher(jnp.ones(k), jnp.eye(k)), train_a=False))
    assert np.isfinite(H).all()
    # the Hessian is Lipschitz: it moves by O(offset), with no rounding floor at theta = 0
    assert np.allclose(H, gauss_newton_at_identity(k), rtol=0, atol=1e-14 + 10 * offset)


def test_lognorm_path_equals_the_plain_one_at_lambda_1e_3():
    a, W, teacher, L = network(7)
    lam, kappa = 1e-3, 0.5
    norms = jnp.linalg.norm(W, axis=-1)
    s, alpha, rho = jnp.sign(a), jnp.log(jnp.abs(a)) + math.log(lam), jnp.log(norms) + math.log(lam)
    U = W / norms[:, None]
    for leak, chol in [(0.0, None), (0.2, L)]:
        plain = population_gradient(lam * a, lam * W, teacher, kappa, leak, chol)
        logn = population_gradient_lognorm(s, alpha, rho, U, teacher, kappa, leak, chol)
        assert float(logn.loss) == pytest.approx(float(plain.loss), rel=1e-14)
        assert np.allclose(logn.M, plain.M, rtol=1e-12, atol=1e-15)
        # plain gradients from the log-norm quantities: dL/dw = kappa a M, dL/da = |w| kappa <u, M>
        assert np.allclose(kappa * (s * jnp.exp(alpha))[:, None] * logn.M, plain.grad_W, rtol=1e-12)
        assert np.allclose(jnp.exp(rho) * logn.grad_a, plain.grad_a, rtol=1e-12)


def np_teacher_pullback(U, b, V):
    """-sum_k b_k grad_u K(u_j, v_k) in numpy (docs/math.md §11.2), for unit rows u_j."""
    out = np.zeros_like(U)
    for j, u in enumerate(U):
        for bk, v in zip(b, V, strict=True):
            nv = np.linalg.norm(v)
            t = np.arccos(np.clip(u @ v / nv, -1, 1))
            out[j] -= bk * (nv * np.sin(t) * u + (np.pi - t) * v) / (2 * np.pi)
    return out


def test_lognorm_path_is_exact_at_lambda_1e_300():
    """At lambda = 1e-300 the student is negligible: L = |h*|^2 / 2 and M is the teacher's pull
    alone, both finite and O(1), computed from directions and log-norms only."""
    a, W, teacher, _ = network(8)
    norms = jnp.linalg.norm(W, axis=-1)
    log_lam = math.log(1e-300)
    pg = population_gradient_lognorm(jnp.sign(a), jnp.log(jnp.abs(a)) + log_lam,
                                     jnp.log(norms) + log_lam, W / norms[:, None], teacher)
    for x in pg:
        assert np.isfinite(np.asarray(x)).all()
    b, V = np.asarray(teacher.b), np.asarray(teacher.V)
    teacher_sq = sum(b[k] * b[m] * (V[k] @ V[k] / 2 if k == m
                                    else float(ref_pair(V[k], V[m], 0.0, np.eye(D))))
                     for k in range(K) for m in range(K))
    assert float(pg.loss) == pytest.approx(teacher_sq / 2, rel=1e-13)
    assert np.allclose(pg.M, np_teacher_pullback(np.asarray(W / norms[:, None]), b, V), rtol=1e-12,
                       atol=1e-15)
