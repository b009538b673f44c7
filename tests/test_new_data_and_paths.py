"""The config keys that expose the newer engine paths and data: ``train.onedim`` (the exact step
for one input coordinate plus a bias, docs/math.md §10) and ``data.kind = "mnist"`` (a centred
digit pair, docs/math.md §4.3), each checked against an independent computation."""

from __future__ import annotations

import numpy as np
import pytest

from shallowflow.config import ConfigError, experiment_from_mapping
from shallowflow.training.entry import simulate


def one_dim(onedim: str, n: int = 40, width: int = 64, steps: int = 300, **train):
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(-1, 1, n))
    x[5] = x[6]  # a repeated input
    return experiment_from_mapping({
        "runs": 2,
        "data": {"kind": "arrays", "X": x[:, None].tolist(), "y": np.sin(3 * x).tolist()},
        "model": {"width": width, "bias": True},
        "init": {"scheme": "gaussian", "scale": 0.5},
        "train": {"lr": 0.05, "steps": steps, "onedim": onedim, **train},
        "record": {"points": 10, "probes": ["loss", "neuron_norm"]},
    })


def test_onedim_on_equals_the_dense_engine():
    on, off = simulate(one_dim("on")), simulate(one_dim("off"))
    for name in ("loss", "neuron_norm", "a_final", "W_final"):
        np.testing.assert_allclose(on[name].values, off[name].values, rtol=1e-12, atol=1e-14,
                                   err_msg=name)


def test_onedim_auto_is_chosen_with_a_note_when_it_pays():
    settings, notes = one_dim("auto", n=40, width=2000).resolved()
    assert settings["onedim"] and any(note.startswith("onedim") for note in notes)
    settings, notes = one_dim("auto", n=40, width=8).resolved()
    assert not settings["onedim"] and not any(note.startswith("onedim") for note in notes)


@pytest.mark.parametrize(("change", "fragment"), [
    ({"model": {"width": 4, "bias": False}}, "train.onedim"),
    ({"train": {"lr": 0.1, "steps": 3, "onedim": "on", "optimizer": "sgd", "batch_size": 2}},
     "onedim"),
    ({"train": {"lr": 0.1, "steps": 3, "onedim": "sometimes"}}, "train.onedim"),
])
def test_onedim_refusals(change, fragment):
    spec = {"data": {"kind": "arrays", "X": [[0.1], [0.5], [0.9]], "y": [1.0, 0.0, 1.0]},
            "model": {"width": 4, "bias": True}, "init": {"scheme": "gaussian", "scale": 0.5},
            "train": {"lr": 0.1, "steps": 3, "onedim": "on"}}
    with pytest.raises(ConfigError, match=fragment):
        experiment_from_mapping({**spec, **change})


def test_mnist_pair_run_equals_a_numpy_gd_loop():
    """A short GD run on 20 + 20 embedded MNIST images (exponential loss, sum, no output scale,
    MMV's set-up) against plain numpy GD written here."""
    steps, lr, width = 40, 2e-3, 6
    exp = experiment_from_mapping({
        "data": {"kind": "mnist", "digits": [3, 8], "per_digit": 20},
        "model": {"width": width}, "init": {"scheme": "gaussian", "scale": 0.05},
        "train": {"lr": lr, "steps": steps, "loss": "exponential", "reduction": "sum"},
        "record": {"points": 5, "probes": ["loss"]},
    })
    X, y = exp.data.arrays()
    assert X.shape == (40, 784) and set(np.unique(y)) == {-1.0, 1.0}
    np.testing.assert_allclose(X.mean(axis=0), 0.0, atol=1e-12)  # centred over the pair
    ds = simulate(exp)
    a, W = ds.a_init.values[0].copy(), ds.W_init.values[0].copy()
    for _ in range(steps):
        Z = X @ W.T
        h = np.maximum(Z, 0) @ a
        g = -y * np.exp(-y * h)  # dL/dh for L = sum_i exp(-y_i h_i)
        grad_a = np.maximum(Z, 0).T @ g
        grad_W = ((Z > 0) * g[:, None] * a[None, :]).T @ X
        a, W = a - lr * grad_a, W - lr * grad_W
    np.testing.assert_allclose(ds.a_final.values[0], a, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(ds.W_final.values[0], W, rtol=1e-10, atol=1e-14)
    loss = np.sum(np.exp(-y * (np.maximum(X @ W.T, 0) @ a)))
    np.testing.assert_allclose(ds.loss.values[0, -1], loss, rtol=1e-10)


@pytest.mark.parametrize(("data", "fragment"), [
    ({"kind": "mnist", "digits": [3, 3]}, "digits"),
    ({"kind": "mnist", "digits": [3, 10]}, "data.digits"),
    ({"kind": "mnist", "per_run": True}, "per_run"),
    ({"kind": "mnist", "path": "no-such-mnist.idx"}, "no-such-mnist.idx"),
])
def test_mnist_refusals(data, fragment):
    with pytest.raises(ConfigError, match=fragment):
        experiment_from_mapping({"data": data, "model": {"width": 3},
                                 "init": {"scheme": "gaussian", "scale": 1e-3},
                                 "train": {"lr": 0.1, "steps": 2, "loss": "logistic"}})


def test_two_point_angle_zero_is_the_orthogonal_pair():
    """MMV A.3 (docs/math.md §4.3): angle 0 gives x_1 = (1, 0), x_2 = (0, 1), mu = sin 0 = 0."""
    import jax

    from shallowflow.config import TwoPointData

    X, y = TwoPointData(kind="two_point", angle=0.0).generate(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(np.asarray(X), [[1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_array_equal(np.asarray(y), [1.0, 1.0])
