"""stationary.escape: extrema of G(u) = sum_k g_k sigma(<u, x_k>) on the sphere (docs/math.md §9.3).
References: a dense grid of angles (d = 2), dense random sampling of the sphere (d > 2), closed
forms, and Algorithm 1 of Town et al. (theory.saddle_process, docs/math.md §3.4)."""

from __future__ import annotations

import numpy as np
import pytest

from shallowflow.model.activations import Activation
from shallowflow.stationary.escape import correlation, extrema
from shallowflow.theory.saddle_process import limit_process


def _grid_extrema(X, g, leak=0.0, m=100_001):
    """max and min of G over a grid of angles, zoomed three times around the best angle."""
    def values(phi):
        Z = np.stack([np.cos(phi), np.sin(phi)], 1) @ X.T
        return np.where(Z > 0, Z, leak * Z) @ g

    out = []
    for sign in (1.0, -1.0):
        lo, hi = -np.pi, np.pi
        for _ in range(4):
            phi = np.linspace(lo, hi, m)
            k = int(np.argmax(sign * values(phi)))
            step = phi[1] - phi[0]
            lo, hi = phi[k] - step, phi[k] + step
        out.append(values(np.array([phi[k]]))[0])
    return out[0], out[1]


@pytest.mark.parametrize("seed,leak", [(0, 0.0), (1, 0.0), (2, 0.3)])
def test_circle_extrema_are_exact(seed, leak):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, 15)
    X = np.stack([x, np.ones_like(x)], 1)  # 1-D data with a bias
    g = rng.standard_normal(15)
    ext = extrema(X, g, Activation(leak))
    assert ext.exact and ext.method == "circle"
    gmax, gmin = _grid_extrema(X, g, leak)
    # the grid is inside the sphere's values: exact >= grid, and within the grid's resolution
    assert gmax - 1e-12 <= ext.maximum <= gmax + 1e-10
    assert gmin - 1e-10 <= ext.minimum <= gmin + 1e-12
    np.testing.assert_allclose(np.linalg.norm(ext.argmax), 1.0)
    np.testing.assert_allclose(correlation(ext.argmax, X, g, Activation(leak)), ext.maximum)
    np.testing.assert_allclose(correlation(ext.argmin, X, g, Activation(leak)), ext.minimum)


def test_single_point_closed_form_in_every_dimension():
    """One point x with g < 0: min G = g ||x|| at u = x/||x||, max G = 0."""
    for d in (1, 2, 3, 6):
        x = np.arange(1.0, d + 1.0)
        ext = extrema(x[None, :], np.array([-0.5]))
        np.testing.assert_allclose(ext.minimum, -0.5 * np.linalg.norm(x), rtol=1e-12)
        np.testing.assert_allclose(ext.argmin, x / np.linalg.norm(x), atol=1e-8)
        assert abs(ext.maximum) <= 1e-12
        assert ext.exact == (d <= 2)


def test_search_beats_dense_sampling_in_higher_dimension():
    rng = np.random.default_rng(4)
    n, d = 25, 4
    X = rng.standard_normal((n, d))
    g = rng.standard_normal(n)
    ext = extrema(X, g)
    assert not ext.exact and ext.method == "search"
    U = rng.standard_normal((200_000, d))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    G = correlation(U, X, g)
    assert ext.maximum >= G.max() - 1e-12 and ext.minimum <= G.min() + 1e-12
    # and it is a value of G at its direction (a true value, a bound from inside)
    np.testing.assert_allclose(correlation(ext.argmax, X, g), ext.maximum, rtol=1e-12)


def test_town_saddle_rate_is_the_escape_value():
    """docs/math.md §3.6: after jump 1 neuron 2 (zero in the limit) grows at rate c_L ||D_2^(1)||
    = sqrt(5)/4 with c_L = 1/n (square loss, T = 1). At the saddle theta^(1), g = -r/n and
    -min G equals ||D|| / n = sqrt(5)/4, attained along D = (0, 0, 1, 2)."""
    X = np.eye(4)
    y = np.array([3.0, 4.0, 1.0, 2.0])
    W0 = np.array([[1.0, 1.0, -1.0, -1.0], [-1.0, 1.0, 1.0, 1.0]])
    proc = limit_process(X, y, np.array([1.0, 1.0]), W0, 0.25)
    j1 = int(proc.sequence[0])
    a = np.zeros(2)
    W = np.zeros((2, 4))
    a[j1], W[j1] = proc.a_final[j1], proc.W_final[j1]  # the saddle theta^(1)
    out = np.maximum(W @ X.T, 0).T @ a
    np.testing.assert_allclose(out, [3.0, 4.0, 0.0, 0.0], atol=1e-12)
    g = (out - y) / 4.0  # dL/dh for (1/(2n)) sum (h - y)^2
    ext = extrema(X, g)
    np.testing.assert_allclose(-ext.minimum, proc.slopes[1, 1 - j1], rtol=1e-10)
    np.testing.assert_allclose(-ext.minimum, np.sqrt(5) / 4, rtol=1e-10)
    np.testing.assert_allclose(ext.argmin, np.array([0, 0, 1, 2]) / np.sqrt(5), atol=1e-8)
