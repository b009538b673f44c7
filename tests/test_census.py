"""End points up to symmetry on the population loss (docs/math.md §11.8): the canonical form is
invariant under random permutations of the neurons (and of the orthonormal teacher's
coordinates), the census counts a hand-made set of end points, and the k = 7 spurious minimum
published with the COLT 2021 code is judged a strict local minimum with the exact population
Hessian, the identity a global minimum."""

from __future__ import annotations

import numpy as np
import pytest

from shallowflow.model.network import Network
from shallowflow.stationary.census import CLASS_TOL, canonical_form, census, classes
from shallowflow.stationary.population_state import population_end_state, population_problem

K = 7
A, E, F_, C, G = -0.6327039049, 0.1859910463, 0.2616910758, 0.9969227988, -0.0350801559


def oracle() -> np.ndarray:
    W = np.full((K, K), G)
    W[0] = [A] + [E] * (K - 1)
    for i in range(1, K):
        W[i, 0], W[i, i] = F_, C
    return W


@pytest.mark.parametrize("rows", [7, 8, 6])
def test_canonical_form_is_invariant_under_permutations(rows):
    rng = np.random.default_rng(rows)
    for W in (rng.normal(size=(rows, K)), oracle()[:rows] if rows <= K else
              np.vstack([oracle(), rng.normal(size=(rows - K, K))])):
        both = canonical_form(W, symmetry="neurons and coordinates")
        alone = canonical_form(W, rng.normal(size=rows), "neurons")
        a = rng.normal(size=rows)
        alone = canonical_form(W, a, "neurons")
        for _ in range(20):
            P, Q = rng.permutation(rows), rng.permutation(K)
            assert np.array_equal(canonical_form(W[P][:, Q], symmetry="neurons and coordinates"),
                                  both)
            assert np.array_equal(canonical_form(W[P], a[P], "neurons"), alone)
        # the form is a permutation of the rows and columns: the same multiset of entries
        assert np.array_equal(np.sort(both.ravel()), np.sort(W.ravel()))


def test_the_census_counts_a_hand_made_set():
    """Three copies of the oracle (rows and coordinates permuted, noise 1e-9), two of a second
    spurious point, two global minima (permutation matrices), one run that did not converge and
    two that did not converge but sit at a global minimum by their loss (stopped by a loss
    threshold, or nearing a degenerate global minimum): a row of their own."""
    rng = np.random.default_rng(0)
    other = oracle()
    other[0, 1:] += 0.05  # a different point

    def shuffled(W):
        P, Q = rng.permutation(K), rng.permutation(K)
        return W[P][:, Q] + 1e-9 * rng.normal(size=W.shape)

    points = [shuffled(oracle()) for _ in range(3)] + [shuffled(other) for _ in range(2)] + \
        [np.eye(K)[rng.permutation(K)] for _ in range(2)] + [rng.normal(size=(K, K))] + \
        [np.eye(K) + 1e-6 * rng.normal(size=(K, K)) for _ in range(2)]
    forms = np.stack([canonical_form(W, symmetry="neurons and coordinates") for W in points])
    loss = np.array([0.0232] * 3 + [0.05] * 2 + [0.0, 0.0, 0.3, 1e-11, 2e-11])
    conv = np.array([True] * 7 + [False] * 3)
    glob = loss < 1e-10
    table, row_of = census(forms, loss, np.full(10, 0.01), conv, glob)
    # global, then by loss, then the non-converged at a global minimum, then the others
    assert table["multiplicity"].tolist() == [2, 3, 2, 2, 1]
    assert table["global"].tolist() == [True, False, False, True, False]
    assert table["converged"].tolist() == [True, True, True, False, False]
    assert (table["runs"] == 10).all() and table["multiplicity"].sum() == 10
    assert row_of.tolist() == [1, 1, 1, 2, 2, 0, 0, 4, 3, 3]
    # a perturbation above the tolerance makes a new class
    assert classes(np.stack([forms[0], forms[0] + 10 * CLASS_TOL])).tolist() == [0, 1]


def test_the_k7_oracle_is_a_strict_local_minimum_and_the_identity_global():
    prob = population_problem(np.ones(K), np.eye(K), train_a=False)
    v = population_end_state(Network(np.ones(K), oracle()), prob)
    assert v.label == "strict local minimum"
    assert v.loss == pytest.approx(0.0232027, abs=5e-8)
    assert v.eig_min == pytest.approx(0.014059, abs=5e-7) and v.eig_min > 0
    assert v.symmetry_modes == 0 and v.smooth_params == K * K  # frozen a: the W block
    assert population_end_state(Network(np.ones(K), np.eye(K)), prob).label == "global minimum"


def test_a_zero_neuron_gets_the_population_escape_test():
    """W = I with neuron 3 zeroed: F = E[relu(x_4)^2]/2 = 1/4, not stationary, and the best
    escape of the zero neuron is first order with slope -1/2 along e_4 (docs/math.md §11.3:
    G(u) = -E[relu(x_4) relu(<u, x>)], at u = e_4: -1/2)."""
    W = np.eye(K)
    W[3] = 0.0
    prob = population_problem(np.ones(K), np.eye(K), train_a=False)
    v = population_end_state(Network(np.ones(K), W), prob)
    assert v.loss == pytest.approx(0.25, rel=1e-12)
    assert v.label == "not stationary" and v.zero_neurons == 1
    assert v.escape.order == 1 and v.escape.value == pytest.approx(-0.5, abs=1e-6)
    assert abs(v.escape.direction[3]) == pytest.approx(1.0, abs=1e-3)


@pytest.mark.parametrize("leak,cov,kappa,parallel", [(0.0, False, 1.0, False),
                                                     (0.2, False, 0.7, False),
                                                     (0.0, True, 1.3, False),
                                                     (0.0, False, 1.0, True)])
def test_closed_form_hessian_blocks_equal_autodiff(leak, cov, kappa, parallel):
    """The blocks of docs/math.md §11.3 against jax.hessian of the closed-form loss, with a
    parallel student pair and a student parallel to a teacher neuron in the last case."""
    import jax.numpy as jnp

    from shallowflow.model.population import Teacher, population_hessian
    from shallowflow.model.population_hessian import hessian_in_weights
    from shallowflow.precision import float64

    rng = np.random.default_rng(3)
    k, p, d = 3, 5, 4
    b, V = rng.uniform(0.5, 1.5, k), rng.normal(size=(k, d))
    a, W = rng.normal(size=p), rng.normal(size=(p, d))
    if parallel:
        W[1], W[2] = 2.0 * W[0], 1.5 * V[0]
    chol = np.tril(0.2 * np.ones((d, d)), -1) + np.eye(d) if cov else None
    with float64():
        args = (Teacher(jnp.asarray(b), jnp.asarray(V)), kappa, leak,
                None if chol is None else jnp.asarray(chol))
        auto = np.asarray(population_hessian(jnp.asarray(a), jnp.asarray(W), *args,
                                             train_a=False))
        blocks = np.asarray(hessian_in_weights(jnp.asarray(a), jnp.asarray(W), *args))
    assert np.allclose(blocks, auto, rtol=1e-10, atol=1e-12)
