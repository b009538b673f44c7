"""Initialisation schemes (docs/math.md §1.2, §2.2, §3.1, §3.7) and data generators (§1.3, §2.4, §2.5,
§4.3): distributional and geometric properties checked directly on the arrays."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from scipy import stats

from shallowflow.data import (
    orthogonal,
    orthonormal,
    orthonormal_rows,
    signed_uniform,
    sphere,
    stewart,
    teacher,
    three_point,
    two_point,
)
from shallowflow.model import initialisation as init

KEY = jax.random.PRNGKey(2024)
P, D = 20000, 5  # few distinct shapes: JAX compiles each eager op once per shape
NG, DG = 12, 16  # orthogonal data / group initialisation


def arrays(net):
    return np.asarray(net.a), np.asarray(net.W)


# --------------------------------------------------------------------------------------------
# initialisation schemes
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("first_layer", ["gaussian", "uniform"])
def test_dpb_gap_is_exponential(first_layer):
    """|a_j| - ||w_j|| ~ Exp(1) >= 0 (Assumption 1) and sign(a_j) Rademacher."""
    d = D
    a, W = arrays(init.dpb(KEY, P, d, first_layer=first_layer))
    assert a.shape == (P,) and W.shape == (P, d) and a.dtype == np.float64
    gap = np.abs(a) - np.linalg.norm(W, axis=1)
    assert np.all(gap >= 0.0)
    assert abs(gap.mean() - 1.0) < 0.04  # std of the mean: 1/sqrt(20000) = 0.007
    assert abs(gap.var() - 1.0) < 0.1
    assert stats.kstest(gap, "expon").pvalue > 1e-3
    assert abs(np.mean(a > 0) - 0.5) < 0.02
    if first_layer == "gaussian":  # w ~ N(0, I/d)
        assert abs(W.var() * d - 1.0) < 0.03
        assert abs(W.mean()) < 0.01
        assert stats.kstest(W.ravel() * np.sqrt(d), "norm").pvalue > 1e-3
    else:  # entries U(-1/sqrt d, 1/sqrt d): variance 1/(3d)
        bound = 1.0 / np.sqrt(d)
        assert np.all(np.abs(W) <= bound)
        assert np.max(np.abs(W)) > 0.99 * bound
        assert abs(W.var() * 3 * d - 1.0) < 0.03


def test_dpb_rejects_unknown_first_layer():
    with pytest.raises(ValueError):
        init.dpb(KEY, 3, 2, first_layer="laplace")


@pytest.mark.parametrize("width_scaling", [False, True])
def test_balanced_fixed(width_scaling):
    p, d, scale = P, D, 0.3
    a, W = arrays(init.balanced(KEY, p, d, scale, width_scaling=width_scaling))
    s = scale / np.sqrt(p) if width_scaling else scale
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), s, rtol=1e-13)
    np.testing.assert_allclose(np.abs(a), s, rtol=1e-13)
    assert set(np.sign(a)) == {-1.0, 1.0}
    # directions uniform on the sphere: E u = 0, E u u^T = I/d
    U = W / s
    assert np.max(np.abs(U.mean(axis=0))) < 4 / np.sqrt(p * d)
    np.testing.assert_allclose(U.T @ U / p, np.eye(d) / d, atol=0.01)


def test_balanced_gaussian():
    scale = 0.2
    a, W = arrays(init.balanced(KEY, P, D, scale, radial="gaussian"))
    np.testing.assert_allclose(np.abs(a), np.linalg.norm(W, axis=1), rtol=1e-13)
    assert abs(W.var() / scale**2 - 1.0) < 0.03
    a2, W2 = arrays(init.balanced(KEY, P, D, scale, width_scaling=True, radial="gaussian"))
    np.testing.assert_allclose(np.abs(a2), np.linalg.norm(W2, axis=1), rtol=1e-13)
    assert abs(W2.var() * P / scale**2 - 1.0) < 0.03
    with pytest.raises(ValueError):
        init.balanced(KEY, 3, 2, 1.0, radial="cauchy")


@pytest.mark.parametrize("width_scaling", [False, True])
def test_gaussian_unbalanced(width_scaling):
    p, d, scale = P, D, 0.5
    a, W = arrays(init.gaussian(KEY, p, d, scale, width_scaling=width_scaling))
    s = scale / np.sqrt(p) if width_scaling else scale
    assert abs(a.var() / s**2 - 1.0) < 0.04
    assert abs(W.var() / s**2 - 1.0) < 0.03
    # a and W independent: |a_j| - ||w_j|| takes both signs, correlation ~ 0
    gap = np.abs(a) - np.linalg.norm(W, axis=1)
    assert np.any(gap > 0) and np.any(gap < 0)
    assert abs(np.corrcoef(a, W[:, 0])[0, 1]) < 0.03


@pytest.mark.parametrize("width_scaling", [False, True])
def test_dominated(width_scaling):
    p, d, scale = P, D, 0.4
    a, W = arrays(init.dominated(KEY, p, d, scale, width_scaling=width_scaling))
    s = scale / np.sqrt(p) if width_scaling else scale
    assert np.all(np.abs(W) <= s)
    np.testing.assert_allclose(np.abs(a), s * np.sqrt(d), rtol=1e-13)
    assert np.all(np.abs(a) >= np.linalg.norm(W, axis=1))
    assert set(np.sign(a)) == {-1.0, 1.0}


def test_pytorch_bounds():
    p, d = P, D
    a, W = arrays(init.pytorch(KEY, p, d))
    ba, bw = 1 / np.sqrt(p), 1 / np.sqrt(d)
    assert np.all(np.abs(a) <= ba) and np.all(np.abs(W) <= bw)
    assert np.max(np.abs(a)) > 0.99 * ba and np.max(np.abs(W)) > 0.99 * bw
    assert abs(a.var() / (ba**2 / 3) - 1.0) < 0.04
    assert abs(W.var() / (bw**2 / 3) - 1.0) < 0.03


def _group_labels(key, n, p):
    """Positive magnitudes with one sign per group of n/p consecutive points (+, -, +, ...)."""
    k = n // p
    mag = np.abs(np.asarray(signed_uniform(key, n)))
    signs = np.repeat(np.where(np.arange(p) % 2 == 0, 1.0, -1.0), k)
    return mag * signs, signs


@pytest.mark.parametrize("direction", ["random", "aligned"])
def test_group_init_canonical(direction):
    n, d, p, scale = NG, DG, 4, 0.7
    k = n // p
    X, _ = orthogonal(jax.random.PRNGKey(1), n, d, basis="canonical")
    X = np.asarray(X)
    y, signs = _group_labels(jax.random.PRNGKey(2), n, p)
    a, W = arrays(init.group(jax.random.PRNGKey(3), X, y, p, scale=scale, direction=direction))
    Z = X @ W.T  # (n, p)
    own = np.repeat(np.arange(p), k)
    for j in range(p):
        assert np.all(Z[own == j, j] > 0)
        assert np.all(Z[own != j, j] == 0.0)  # exactly inactive elsewhere
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), scale, rtol=1e-13)
    np.testing.assert_allclose(a, signs[::k] * scale, rtol=1e-13)
    if direction == "aligned":
        # <w_j, x_i> = c_j |y_i| on the group (u_ij = |y_i|)
        for j in range(p):
            ratio = Z[own == j, j] / np.abs(y[own == j])
            np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)


def test_group_init_aligned_is_parallel_to_group_label_vector():
    """Orthonormal inputs (random basis): w_j is parallel to D_j = sum_{i in group} y_i x_i with
    a_j w_j pointing along D_j (docs/math.md §1.2, §1.5 with c_0 = 1)."""
    n, d, p, scale = NG, DG, 3, 1.3
    k = n // p
    X, _ = orthonormal(jax.random.PRNGKey(4), n, d, basis="random")
    X = np.asarray(X)
    y, _ = _group_labels(jax.random.PRNGKey(5), n, p)
    a, W = arrays(init.group(jax.random.PRNGKey(6), X, y, p, scale=scale, direction="aligned"))
    Z = X @ W.T
    own = np.repeat(np.arange(p), k)
    for j in range(p):
        D = (y[own == j, None] * X[own == j]).sum(axis=0)
        cos = W[j] @ D / (np.linalg.norm(W[j]) * np.linalg.norm(D))
        assert abs(abs(cos) - 1.0) < 1e-12
        assert a[j] * (W[j] @ D) > 0
        assert np.all(Z[own == j, j] > 0)
        assert np.max(np.abs(Z[own != j, j])) < 1e-12 * scale  # zero up to rounding
    np.testing.assert_allclose(np.linalg.norm(W, axis=1), scale, rtol=1e-13)
    np.testing.assert_allclose(np.abs(a), scale, rtol=1e-13)


# --------------------------------------------------------------------------------------------
# data generators
# --------------------------------------------------------------------------------------------


def test_signed_uniform():
    y = np.asarray(signed_uniform(KEY, P, 0.5, 3.0))
    assert np.all((np.abs(y) >= 0.5) & (np.abs(y) <= 3.0))
    assert abs(np.mean(y > 0) - 0.5) < 0.02
    assert abs(np.mean(np.abs(y)) - 1.75) < 0.02


def test_sphere():
    n, d = P, D
    X, y = sphere(KEY, n, d)
    X, y = np.asarray(X), np.asarray(y)
    assert X.shape == (n, d) and y.shape == (n,) and X.dtype == np.float64
    r = np.linalg.norm(X, axis=1)
    assert np.all((r >= 1.0) & (r <= 2.0)) and abs(r.mean() - 1.5) < 0.01
    assert np.all((np.abs(y) >= 1.0) & (np.abs(y) <= 2.0))
    assert np.any(y > 0) and np.any(y < 0)
    U = X / r[:, None]  # directions uniform: E u = 0, E u u^T = I/d
    assert np.max(np.abs(U.mean(axis=0))) < 0.02
    np.testing.assert_allclose(U.T @ U / n, np.eye(d) / d, atol=0.01)


@pytest.mark.parametrize("basis", ["canonical", "random"])
def test_orthogonal_gram_is_diagonal(basis):
    n, d = NG, DG
    X, y = orthogonal(KEY, n, d, basis=basis)
    X, y = np.asarray(X), np.asarray(y)
    G = X @ X.T
    off = G - np.diag(np.diag(G))
    assert np.max(np.abs(off)) < 1e-12
    assert np.all((np.diag(G) >= 1.0 - 1e-12) & (np.diag(G) <= 4.0 + 1e-12))
    assert np.all((np.abs(y) >= 1.0) & (np.abs(y) <= 2.0))
    if basis == "canonical":
        np.testing.assert_array_equal(X != 0, np.eye(n, d, dtype=bool))
    else:
        assert np.sum(X != 0) > n * d // 2


@pytest.mark.parametrize("basis", ["canonical", "random"])
def test_orthonormal_rows(basis):
    n, d = NG, DG
    Q = np.asarray(orthonormal_rows(KEY, n, d, basis))
    np.testing.assert_allclose(Q @ Q.T, np.eye(n), atol=1e-12)
    X, y = orthonormal(KEY, n, d, basis=basis)
    np.testing.assert_allclose(np.asarray(X) @ np.asarray(X).T, np.eye(n), atol=1e-12)
    assert np.all(np.asarray(y) >= 0)
    _, y2 = orthonormal(KEY, n, d, basis=basis, labels="normal")
    assert np.any(np.asarray(y2) < 0) and np.any(np.asarray(y2) > 0)
    np.testing.assert_array_equal(np.abs(np.asarray(y2)), np.asarray(y))
    with pytest.raises(ValueError):
        orthonormal(KEY, n, d, labels="cauchy")


def test_orthonormal_rows_needs_n_le_d():
    with pytest.raises(ValueError):
        orthonormal_rows(KEY, 5, 4, "canonical")
    with pytest.raises(ValueError):
        orthonormal_rows(KEY, 5, 4, "random")
    with pytest.raises(ValueError):
        orthonormal_rows(KEY, 2, 4, "hadamard")
    Q = np.asarray(orthonormal_rows(KEY, 4, 4, "canonical"))  # n == d is fine
    np.testing.assert_array_equal(Q, np.eye(4))


def test_three_point_values():
    X, y = three_point()
    np.testing.assert_array_equal(np.asarray(X), [[-0.75], [-0.5], [0.125]])
    np.testing.assert_array_equal(np.asarray(y), [1.1, 0.1, 0.8])


def test_stewart_is_the_piecewise_linear_teacher():
    knots = [-1.0, -0.7, -0.55, -0.4, 0.0, 0.5, 0.6, 0.7, 1.0]  # docs/math.md §2.5
    values = [0.0, 0.7, 0.5, 1.0, 0.0, 1.0, 0.6, 0.7, 0.0]
    X, y = stewart(KEY, 40)
    X, y = np.asarray(X), np.asarray(y)
    assert X.shape == (40, 1) and y.shape == (40,)
    assert np.all((X >= -1.0) & (X <= 1.0))
    np.testing.assert_allclose(y, np.interp(X[:, 0], knots, values), rtol=1e-14, atol=1e-15)
    X2, _ = stewart(jax.random.PRNGKey(7), 40)
    assert not np.array_equal(X, np.asarray(X2))


@pytest.mark.parametrize("angle", [0.1, 0.001, np.pi / 2])
def test_two_point_geometry(angle):
    X, y = two_point(angle)
    X, y = np.asarray(X), np.asarray(y)
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=1e-15)
    np.testing.assert_allclose(X[0], [1.0, 0.0])
    np.testing.assert_allclose(X[0] @ X[1], np.sin(angle), rtol=1e-14)
    np.testing.assert_array_equal(y, [1.0, 1.0])


@pytest.mark.parametrize("inputs", ["gaussian", "sphere"])
def test_teacher(inputs):
    n, d, width = P, D, 3
    X, y = teacher(KEY, n, d, width=width, inputs=inputs)
    X, y = np.asarray(X), np.asarray(y)
    assert X.shape == (n, d) and y.shape == (n,)
    assert np.all(np.isfinite(X)) and np.all(np.isfinite(y))
    X2, y2 = teacher(KEY, n, d, width=width, inputs=inputs)
    np.testing.assert_array_equal(X, np.asarray(X2))
    np.testing.assert_array_equal(y, np.asarray(y2))
    _, y3 = teacher(jax.random.PRNGKey(1), n, d, width=width, inputs=inputs)
    assert not np.allclose(y, np.asarray(y3))
    if inputs == "sphere":
        np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1.0, rtol=1e-14)
        assert np.all(np.abs(y) <= width)  # |b_k| = 1, |<v_k, x>| <= 1
    # label noise is additive and linear in its level, inputs unchanged
    Xa, ya = teacher(KEY, n, d, width=width, inputs=inputs, noise=0.1)
    _, yb = teacher(KEY, n, d, width=width, inputs=inputs, noise=0.3)
    np.testing.assert_array_equal(np.asarray(Xa), X)
    np.testing.assert_allclose((np.asarray(yb) - y) / 0.3, (np.asarray(ya) - y) / 0.1,
                               rtol=1e-10, atol=1e-12)
    assert np.std((np.asarray(ya) - y) / 0.1) > 0.5
    with pytest.raises(ValueError):
        teacher(KEY, n, d, inputs="cube")


def test_random_group_directions_are_independent_of_the_labels():
    """Data and initialisation use separate key streams: with random group directions on
    orthonormal data, no run's first-layer weights reproduce its labels (c_0 = 1 would mean
    w_j parallel to D_j, i.e. u = |y|, which happened when the two streams coincided)."""
    from shallowflow.config import experiment_from_mapping
    from shallowflow.training.batches import RunRef, dataset_of, prepare_batch

    exp = experiment_from_mapping({
        "name": "t", "seed": 3, "runs": 3,
        "data": {"kind": "orthonormal", "n": 16, "d": 16, "labels": "abs_normal", "per_run": True},
        "model": {"width": 4}, "init": {"scheme": "group", "direction": "random"},
        "train": {"lr": 0.1, "steps": 1}})
    batch = prepare_batch([RunRef(exp, r) for r in range(3)])
    for r in range(3):
        X, y = dataset_of(RunRef(exp, r))
        u = np.asarray(batch.net0.W[r]) @ X.T  # (p, n): <w_j, x_i>
        for j in range(4):
            block = u[j, 4 * j: 4 * j + 4]
            labels = y[4 * j: 4 * j + 4]
            cos = block @ labels / (np.linalg.norm(block) * np.linalg.norm(labels))
            assert cos < 1 - 1e-6


def test_run_keys_are_the_documented_fold_ins():
    """A run's keys, made for a whole batch in one compiled call, are the module docstring's
    eager formula: init = fold_in(fold_in(K(seed), r), 1), SGD = ..., 2, and the data key from
    the data seed and r (per-run data) or 0 (shared), stream 0; int64 seeds up to 2^63 - 1."""
    from shallowflow.config import MAX_SEED, experiment_from_mapping
    from shallowflow.training.batches import RunRef, _data_keys, dataset_of, prepare_batch

    def eager(seed, index, stream):
        return np.asarray(jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(seed), index),
                                             stream))

    for seed, data_seed, per_run in [(3, None, True), (2**40 + 5, 7, False), (MAX_SEED, None, False)]:
        exp = experiment_from_mapping({
            "name": "t", "seed": seed, "runs": 3,
            "data": {"kind": "sphere", "n": 4, "d": 3, "per_run": per_run, "seed": data_seed},
            "model": {"width": 2}, "init": {"scheme": "balanced", "scale": 0.5},
            "train": {"lr": 0.1, "steps": 1}})
        refs = [RunRef(exp, r) for r in (0, 2)]
        batch = prepare_batch(refs)
        data = np.asarray(_data_keys(refs))
        for i, ref in enumerate(refs):
            assert np.array_equal(np.asarray(batch.keys[i]), eager(seed, ref.index, 2))
            ds = seed if data_seed is None else data_seed
            assert np.array_equal(data[i], eager(ds, ref.index if per_run else 0, 0))
            X, y = (np.asarray(v) for v in dataset_of(ref))
            a, W = exp.init.draw(jax.numpy.asarray(eager(seed, ref.index, 1)), 2, X, y)
            np.testing.assert_allclose(batch.net0.a[i], np.asarray(a), rtol=1e-12, atol=0)
            np.testing.assert_allclose(batch.net0.W[i], np.asarray(W), rtol=1e-12, atol=0)


# --------------------------------------------------------------------------------------------
# the registries: each data kind knows its shape, each scheme draws its network
# --------------------------------------------------------------------------------------------
def _data_examples(tmp_path):
    np.savez(tmp_path / "d.npz", X=np.arange(12.0).reshape(4, 3), y=np.ones(4))
    return {
        "sphere": {"kind": "sphere", "n": 7, "d": 3},
        "orthogonal": {"kind": "orthogonal", "n": 4, "d": 6},
        "orthonormal": {"kind": "orthonormal", "n": 5, "d": 5, "basis": "random"},
        "three_point": {"kind": "three_point"},
        "stewart": {"kind": "stewart", "n": 9},
        "two_point": {"kind": "two_point"},
        "teacher": {"kind": "teacher", "n": 6, "d": 4},
        "file": {"kind": "file", "path": str(tmp_path / "d.npz")},
        "arrays": {"kind": "arrays", "X": [[1.0, 2.0], [3.0, 5.0]], "y": [1.0, -1.0]},
        "mnist": {"kind": "mnist", "digits": [4, 9], "per_digit": 3},
        "gaussian_teacher": {"kind": "gaussian_teacher", "d": 5, "k": 3},
        "gaussian_teacher_samples": {"kind": "gaussian_teacher_samples", "d": 5, "k": 3, "n": 7},
    }


def test_every_data_kind_knows_its_shape(tmp_path):
    """spec.n_samples and spec.input_dim, computed without generating, equal the shapes of the
    generated arrays; the network sees one more input dimension with a hidden bias. The
    population (no samples, no bias) has n = 0 and its teacher's input dimension."""
    from shallowflow.config import DATA_KINDS, experiment_from_mapping

    examples = _data_examples(tmp_path)
    assert set(examples) == set(DATA_KINDS)
    for data in examples.values():
        population = DATA_KINDS[data["kind"]].population
        exp = experiment_from_mapping({"data": data, "model": {"width": 2, "bias": not population},
                                       "init": {"scheme": "dpb"}, "train": {"lr": 0.1, "steps": 1}})
        spec = exp.data
        if population:
            _, V, _ = spec.population_inputs(KEY)
            assert (spec.n_samples, spec.input_dim) == (0, V.shape[1]) == (0, exp.input_dim)
            continue
        X, y = jax.eval_shape(spec.generate, KEY)  # the shapes generate gives, without running it
        assert np.shape(X) == (spec.n_samples, spec.input_dim), spec.kind
        assert np.shape(y) == (spec.n_samples,), spec.kind
        assert exp.input_dim == spec.input_dim + 1


def test_data_file_is_read_once(tmp_path, monkeypatch):
    """A data file is read when its spec is validated, and never again: not for the shape checks,
    the automatic choices of every run, nor the batch's data."""
    from shallowflow.config import experiment_from_mapping
    from shallowflow.training.batches import RunRef, dataset_of, prepare_batch, static_signature

    np.savez(tmp_path / "d.npz", X=np.eye(4, 6), y=np.arange(1.0, 5.0))
    reads = []
    load = np.load
    monkeypatch.setattr(np, "load", lambda *a, **k: reads.append(a[0]) or load(*a, **k))
    exp = experiment_from_mapping({
        "runs": 3, "data": {"kind": "file", "path": str(tmp_path / "d.npz"), "per_run": True},
        "model": {"width": 2}, "init": {"scheme": "dpb"}, "train": {"lr": 0.1, "steps": 1}})
    refs = [RunRef(exp, r) for r in range(3)]
    batch = prepare_batch(refs)
    for r in refs:
        static_signature(r.experiment)
        dataset_of(r)
    assert len(reads) == 1
    assert exp.data.shape == (4, 6) and exp.resolved()[0]["span"]
    np.testing.assert_array_equal(batch.X[0] if batch.X.ndim == 3 else batch.X, np.eye(4, 6))


@pytest.mark.parametrize("first_layer", ["gaussian", "uniform"])
def test_dpb_first_layer_scale_multiplies_W_after_drawing_a(first_layer):
    a1, W1 = arrays(init.dpb(KEY, 6, 3, first_layer))
    a2, W2 = arrays(init.dpb(KEY, 6, 3, first_layer, first_layer_scale=0.01))
    np.testing.assert_array_equal(a2, a1)  # a drawn from the unscaled first layer
    np.testing.assert_array_equal(W2, np.multiply(0.01, W1))
    a0, W0 = arrays(init.dpb(KEY, 6, 3, first_layer, first_layer_scale=1.0))
    np.testing.assert_array_equal(a0, a1)
    np.testing.assert_array_equal(W0, W1)


def test_first_layer_scale_through_a_config():
    from shallowflow.config import ConfigError, experiment_from_mapping
    from shallowflow.training.batches import RunRef, prepare_batch

    def net0(**init_fields):
        exp = experiment_from_mapping({
            "runs": 2, "data": {"kind": "sphere", "n": 5, "d": 3}, "model": {"width": 4},
            "init": {"scheme": "dpb", **init_fields}, "train": {"lr": 0.1, "steps": 1}})
        return arrays(prepare_batch([RunRef(exp, 0), RunRef(exp, 1)]).net0)

    a1, W1 = net0()
    a2, W2 = net0(first_layer_scale=0.01)
    np.testing.assert_array_equal(a2, a1)
    # compiled, the two roundings of (G / sqrt d) * 0.01 may fuse into one: equal to 1 ulp
    np.testing.assert_allclose(W2, np.multiply(0.01, W1), rtol=5e-16, atol=0)
    for bad in (0.0, -1.0):
        with pytest.raises(ConfigError, match=r"init\.first_layer_scale: .*got (0|-1)"):
            net0(first_layer_scale=bad)


def test_given_network_is_the_same_for_every_run(tmp_path):
    from shallowflow.config import experiment_from_mapping
    from shallowflow.training.batches import RunRef, prepare_batch

    a, W = np.array([1.0, -2.0]), np.arange(6.0).reshape(2, 3)
    exp = experiment_from_mapping({
        "runs": 3, "data": {"kind": "sphere", "n": 5, "d": 3, "per_run": True},
        "model": {"width": 2}, "init": {"scheme": "given", "a": a, "W": W},
        "train": {"lr": 0.1, "steps": 1}})
    net = prepare_batch([RunRef(exp, r) for r in range(3)]).net0
    np.testing.assert_array_equal(np.asarray(net.a), np.broadcast_to(a, (3, 2)))
    np.testing.assert_array_equal(np.asarray(net.W), np.broadcast_to(W, (3, 2, 3)))


@pytest.mark.parametrize("scheme", [{"scheme": "dpb"}, {"scheme": "gaussian", "scale": 0.5}])
def test_a_draw_that_reads_no_sample_compiles_once_for_every_sample_count(scheme):
    """Schemes that read only d get data with no samples: their networks do not depend on n,
    and one compiled draw serves batches of every n (each n compiled its own before)."""
    from shallowflow.config import experiment_from_mapping
    from shallowflow.training.batches import _COMPILED, RunRef, prepare_batch

    def net0(n):
        exp = experiment_from_mapping({
            "runs": 2, "data": {"kind": "sphere", "n": n, "d": 3, "per_run": True},
            "model": {"width": 7}, "init": scheme, "train": {"lr": 0.1, "steps": 1}})
        return arrays(prepare_batch([RunRef(exp, 0), RunRef(exp, 1)]).net0)

    first = net0(5)
    for n in (6, 9):
        for got, want in zip(net0(n), first, strict=True):
            np.testing.assert_array_equal(got, want)
    draws = [fn for key, fn in _COMPILED.items()
             if key.startswith("init") and f'"scheme":"{scheme["scheme"]}"' in key
             and '"width":7' in key]
    assert len(draws) == 1 and draws[0]._cache_size() == 1
