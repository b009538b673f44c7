"""stationary.spectrum: symmetry modes, the projected dense spectrum and Lanczos (docs/math.md §9.2).
References: a numpy Hessian written in the test, numpy/scipy eigensolvers on an explicitly built
orthonormal complement, and scipy's ARPACK (eigsh)."""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse.linalg

from shallowflow.model.network import Network
from shallowflow.stationary.derivatives import hessian, hvp_operator, problem
from shallowflow.stationary.spectrum import (
    dense_spectrum,
    lanczos_spectrum,
    projector,
    smooth_spectrum,
    symmetry_modes,
)


def _np_hessian_square(a, W, X, y, kappa):
    """The Hessian of (1/2n) sum (h - y)^2 in (a, vec W) order, from J^T J + sum r d^2 h."""
    n, d = X.shape
    p = a.size
    Z = X @ W.T
    act = (Z > 0).astype(float)
    S = Z * act
    r = kappa * S @ a - y
    J = np.concatenate([kappa * S] + [kappa * a[j] * act[:, j:j + 1] * X for j in range(p)], axis=1)
    H = J.T @ J / n
    for j in range(p):
        blk = kappa * (act[:, j] * r) @ X / n
        H[j, p + j * d: p + (j + 1) * d] += blk
        H[p + j * d: p + (j + 1) * d, j] += blk
    return H


def _complement_eigs(H, V):
    """Eigenvalues of H on the orthogonal complement of span(V) via a full QR (independent of the
    code's shift-and-drop)."""
    Q = scipy.linalg.qr(V, mode="full")[0][:, V.shape[1]:]
    return np.linalg.eigvalsh(Q.T @ H @ Q)


def _one_neuron_fit(d=3, seed=0):
    """One neuron fitting d independent points exactly (a stationary point, g = 0 on the data)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    X = rng.standard_normal((d, d))
    X = X * np.sign(X @ w)[:, None]  # all active
    a = 1.3
    return np.array([a]), w[None, :], X, a * (X @ w)


def test_symmetry_modes_are_zero_modes_at_a_stationary_point():
    a, W, X, y = _one_neuron_fit()
    H = _np_hessian_square(a, W, X, y, 1.0)
    s = np.concatenate([a, -W[0]])
    np.testing.assert_allclose(H @ s, 0.0, atol=1e-13)
    V = symmetry_modes(Network(a, W), np.array([True]))
    np.testing.assert_allclose(V[:, 0], s / np.linalg.norm(s))
    spec = dense_spectrum(H, V)
    assert spec.symmetry_modes == 1 and spec.eigenvalues.size == 3
    np.testing.assert_allclose(spec.eigenvalues, _complement_eigs(H, V), atol=1e-13)
    assert spec.eig_min > 1e-3  # d points determine the neuron up to the symmetry


def test_projector_equals_the_dense_projection():
    rng = np.random.default_rng(1)
    net = Network(rng.standard_normal(4), rng.standard_normal((4, 3)))
    mask = np.array([True, True, False, True])
    V = symmetry_modes(net, mask)
    v = rng.standard_normal(V.shape[0])
    np.testing.assert_allclose(projector(net, mask)(v), v - V @ (V.T @ v), atol=1e-14)
    np.testing.assert_allclose(V.T @ V, np.eye(3), atol=1e-14)


def _mid_network(seed, n=40, p=24, d=6):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.standard_normal(n)
    return Network(rng.standard_normal(p), rng.standard_normal((p, d))), X, y


def test_lanczos_extremes_equal_the_dense_spectrum_on_mid_size_networks():
    for seed in (0, 1):
        net, X, y = _mid_network(seed)
        p = net.a.size
        prob = problem(X, y, "square", 1.0 / p)
        mask = np.ones(p, bool)
        mask[3] = False  # a neuron left out of the smooth part
        dense = smooth_spectrum(net, prob, mask, "dense")
        lan = smooth_spectrum(net, prob, mask, "lanczos", rtol=1e-10)
        assert lan.converged and lan.method == "lanczos"
        scale = max(abs(dense.eig_min), abs(dense.eig_max))
        assert abs(lan.eig_min - dense.eig_min) <= 1e-8 * scale
        assert abs(lan.eig_max - dense.eig_max) <= 1e-8 * scale
        # independent reference: numpy Hessian, explicit complement, ARPACK
        idx = np.concatenate([np.flatnonzero(mask),
                              p + (np.flatnonzero(mask)[:, None] * X.shape[1]
                                   + np.arange(X.shape[1])).ravel()])
        H = _np_hessian_square(net.a, net.W, X, y, 1.0 / p)[np.ix_(idx, idx)]
        ref = _complement_eigs(H, symmetry_modes(net, mask))
        np.testing.assert_allclose([dense.eig_min, dense.eig_max], [ref[0], ref[-1]],
                                   atol=1e-10 * scale)
        Q = scipy.linalg.qr(symmetry_modes(net, mask), mode="full")[0][:, p - 1:]
        ends = scipy.sparse.linalg.eigsh(Q.T @ H @ Q, k=2, which="BE", return_eigenvectors=False)
        np.testing.assert_allclose(sorted(ends), [lan.eig_min, lan.eig_max], atol=1e-8 * scale)
        # the Ritz vector of eig_min is a direction of that curvature
        v = lan.vector_min
        np.testing.assert_allclose(v @ H @ v, lan.eig_min, atol=1e-8 * scale)


def test_lanczos_without_projection_and_invariant_subspace():
    """A diagonal operator with 5 distinct values: Lanczos is exact after at most 5 steps."""
    diag = np.repeat([-2.0, -0.5, 0.0, 1.0, 3.0], 20)
    spec = lanczos_spectrum(lambda v: diag * v, diag.size, max_iter=50)
    assert spec.converged and spec.iterations <= 5
    np.testing.assert_allclose([spec.eig_min, spec.eig_max], [-2.0, 3.0], atol=1e-12)


def test_hvp_route_and_dense_route_agree_through_smooth_spectrum():
    net, X, y = _mid_network(5, n=30, p=10, d=4)
    prob = problem(X, y, "mse", 1.0)
    H = hessian(net, prob)
    v = np.random.default_rng(0).standard_normal(H.shape[0])
    np.testing.assert_allclose(hvp_operator(net, prob)(v), H @ v, rtol=1e-12, atol=1e-12)
