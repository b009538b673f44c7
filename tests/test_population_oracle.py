"""A published spurious minimum of the Safran-Shamir objective as an oracle (docs/math.md §11.7).

F(W) = 1/2 E[(sum_i relu(<w_i, x>) - sum_i relu(<e_i, x>))^2], x ~ N(0, I_k), W in R^{k x k}:
the student's output weights fixed to 1, kappa = 1, the teacher the identity. For k = 7 the
minimum printed with the code of Safran, Yehudai and Shamir (COLT 2021) is w_1 = (a, e, ..., e)
and, for i = 2..7, w_i with first coordinate f, i-th coordinate c and all others g. There
F = 0.0232027 (6 digits), ||grad F|| is about 3e-10 (the printed digits' rounding) and the
smallest Hessian eigenvalue (in W, 49 x 49) is 0.014059; the identity is the global minimum."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from shallowflow.model.population import (
    Teacher,
    population_gradient,
    population_hessian,
)

K = 7
A, E, F_, C, G = -0.6327039049, 0.1859910463, 0.2616910758, 0.9969227988, -0.0350801559
IDENTITY = Teacher(jnp.ones(K), jnp.eye(K))


def spurious_minimum() -> jnp.ndarray:
    W = np.full((K, K), G)
    W[0] = [A] + [E] * (K - 1)
    for i in range(1, K):
        W[i, 0], W[i, i] = F_, C
    return jnp.asarray(W)


def test_published_spurious_minimum_k7():
    W = spurious_minimum()
    pg = population_gradient(jnp.ones(K), W, IDENTITY)
    assert float(pg.loss) == pytest.approx(0.0232027, abs=5e-8)
    assert float(jnp.linalg.norm(pg.grad_W)) < 1e-9
    H = np.asarray(population_hessian(jnp.ones(K), W, IDENTITY, train_a=False))
    eig = np.linalg.eigvalsh(H)
    assert eig[0] == pytest.approx(0.014059, abs=5e-7)
    assert eig[0] > 0  # a strict local minimum (no symmetry mode: the output weights are fixed)


def test_identity_is_the_global_minimum():
    pg = population_gradient(jnp.ones(K), jnp.eye(K), IDENTITY)
    assert abs(float(pg.loss)) < 1e-15
    assert float(jnp.max(jnp.abs(pg.grad_W))) < 1e-15
    # a permutation of the neurons is the same minimum
    perm = jnp.eye(K)[jnp.array([3, 0, 6, 1, 5, 2, 4])]
    assert abs(float(population_gradient(jnp.ones(K), perm, IDENTITY).loss)) < 1e-15
