"""MMV's in-loop probes and the per-layer rate (docs/math.md §4.5): the alignment cosines, cone
counts, stable rank and ||W||_2^2 against theory/alignment.py on the recorded weights, the A.5
"changes" against an explicit numpy gradient, on every data layout (shared, per run, span basis
dense and diagonal, one-dimensional) and both parametrisations; train.second_layer_rate against a
numpy GD loop, 1 = default exactly; the default probes untouched."""

from __future__ import annotations

import numpy as np
import pytest

from shallowflow.config import ConfigError, experiment_from_mapping
from shallowflow.dynamics import EngineConfig, EngineOptions, SaveAt, solve
from shallowflow.dynamics.probes import DEFAULT_PROBES, PROBES
from shallowflow.model.losses import Loss
from shallowflow.model.network import Network
from shallowflow.theory import alignment as al
from shallowflow.theory import alignment_measures as measures
from shallowflow.training.batches import engine_config
from shallowflow.training.entry import train
from shallowflow.training.preflight import record_size

MMV = ("mmv_cos_plus", "mmv_cos_minus", "mmv_cone_counts", "stable_rank", "spectral_norm_sq",
       "mmv_norm_change", "mmv_direction_change")
SCHEDULE = np.array([0, 3, 40, 150])
LR = 0.02


def _separated(rng, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """mu-separated data: x_i = y_i (e_1 + 0.4 noise), labels +-1 (both classes present)."""
    y = np.where(np.arange(n) % 3 == 0, -1.0, 1.0)
    X = y[:, None] * (np.eye(d)[0] + 0.4 * rng.normal(size=(n, d)))
    return X, y


def _numpy_gradient(W: np.ndarray, a: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """grad_W of the logistic sum loss, written out: a_j sum_i g_i 1{<w_j, x_i> > 0} x_i with
    g_i = -y_i / (1 + exp(y_i h(x_i))); W (..., p, d), a (..., p)."""
    Z = W @ X.T  # (..., p, n)
    h = np.sum(a[..., None] * np.maximum(Z, 0.0), axis=-2)  # (..., n)
    g = -y / (1.0 + np.exp(y * h))
    return a[..., None] * (((Z > 0) * g[..., None, :]) @ X)


def _check(rec: dict, X: np.ndarray, y: np.ndarray, T: float = 1.0) -> None:
    """Every MMV probe of ``rec`` against theory/alignment.py on the recorded W and a; one
    run's data X (n, d), y (n,) per entry of the leading run axis when X is (R, n, d)."""
    W, a = rec["W"], rec["a"]
    per_run = X.ndim == 3
    for r in range(W.shape[0]):
        Xr, yr = (X[r], y[r]) if per_run else (X, y)
        xp, xm = al.class_directions(Xr, yr)
        cos = measures.alignment_cosines(W[r], a[r], xp, xm)
        for key, probe in (("plus", "mmv_cos_plus"), ("minus", "mmv_cos_minus")):
            want = np.stack([cos[f"{key}_min"], cos[key], cos[f"{key}_max"]], axis=-1)
            np.testing.assert_allclose(rec[probe][r], want, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(rec["mmv_cone_counts"][r], al.cone_counts(W[r], Xr, yr))
        np.testing.assert_allclose(rec["spectral_norm_sq"][r], measures.spectral_norm_sq(W[r]),
                                   rtol=1e-11)
        np.testing.assert_allclose(rec["stable_rank"][r], measures.stable_rank(W[r]), rtol=1e-11)
        grad = _numpy_gradient(W[r], a[r], Xr, yr)
        norms, directions = measures.changes_from_gradient(W[r], T * grad)
        np.testing.assert_allclose(rec["mmv_norm_change"][r], norms, rtol=1e-10)
        np.testing.assert_allclose(rec["mmv_direction_change"][r], directions, rtol=1e-10)


def _run(X, y, R: int = 2, p: int = 6, scale: float = 0.05, seed: int = 0, **kw) -> dict:
    rng = np.random.default_rng(seed)
    d = X.shape[-1]
    net = Network(scale * rng.normal(size=(R, p)), scale * rng.normal(size=(R, p, d)))
    engine = {k: v for k, v in kw.items() if k != "span"}
    cfg = EngineConfig(loss=Loss("logistic", "sum"), lr=LR, probes=(*MMV, "a", "W"), **engine)
    return solve(cfg, net, X, y, saveat=SaveAt(SCHEDULE),
                    options=EngineOptions(span=kw.get("span", False))).records


@pytest.mark.parametrize("parametrisation", ["plain", "lognorm"])
def test_probes_match_theory_on_shared_data(parametrisation):
    X, y = _separated(np.random.default_rng(1), 9, 4)
    rec = _run(X, y, parametrisation=parametrisation, time_scale=2.0)
    _check(rec, X, y, T=2.0)
    counts = rec["mmv_cone_counts"][:, -1]  # the neurons have aligned: cones, not "other"
    assert np.all(counts.sum(axis=-1) == 6) and counts[:, 1:].sum() > counts[:, 0].sum()
    band = rec["mmv_cos_plus"][:, -1]
    assert np.all(band[:, 0] <= band[:, 2]) and np.nanmax(band[:, 1]) > 0.9


def test_probes_in_the_span_basis_dense_and_diagonal():
    """n < d: dense span basis with a constant out-of-span part (its Gram matrix enters w_bar and
    the p x p Gram matrix, its norm the tangential change); orthogonal rows: diagonal inputs."""
    rng = np.random.default_rng(2)
    X, y = _separated(rng, 4, 9)
    _check(_run(X, y, span=True), X, y)
    Xo = np.zeros((3, 5))
    Xo[[0, 1, 2], [0, 2, 3]] = [1.0, 2.0, 0.5]
    yo = np.array([1.0, -1.0, 1.0])
    _check(_run(Xo, yo, span=True, activity_mask=True, p=8, R=6), Xo, yo)  # blocked: 2 x 3 runs


def test_probes_with_per_run_data_and_on_the_onedim_path():
    rng = np.random.default_rng(3)
    data = [_separated(rng, 7, 3) for _ in range(2)]
    X, y = np.stack([d[0] for d in data]), np.stack([d[1] for d in data])
    _check(_run(X, y), X, y)
    x = np.sort(rng.uniform(-1, 1, 8))
    X1 = np.stack([x, np.ones(8)], axis=1)
    y1 = np.where(x > 0.1, 1.0, -1.0)
    _check(_run(X1, y1, onedim=True, p=5), X1, y1)


def test_changes_agree_with_one_step_finite_differences():
    """One GD step apart, the snapshot form of the A.5 changes matches the gradient form to
    first order in the step (docs/math.md §4.4)."""
    X, y = _separated(np.random.default_rng(4), 9, 4)
    rng = np.random.default_rng(5)
    net = Network(0.3 * rng.normal(size=(1, 6)), 0.3 * rng.normal(size=(1, 6, 4)))
    lr = 1e-6
    cfg = EngineConfig(loss=Loss("logistic", "sum"), lr=lr,
                       probes=("mmv_norm_change", "mmv_direction_change", "W"))
    rec = solve(cfg, net, X, y, saveat=SaveAt(np.array([0, 1]))).records
    norms, directions = measures.changes_from_snapshots(rec["W"], np.array([0.0, lr]))
    np.testing.assert_allclose(rec["mmv_norm_change"][:, 0], norms[:, 0], rtol=1e-4)
    np.testing.assert_allclose(rec["mmv_direction_change"][:, 0], directions[:, 0], rtol=1e-4)


# ------------------------------------------------------------------------- per-layer rate
def _numpy_gd(a, W, X, y, lr, rate, steps):
    """Plain GD on the 1/(2n) square loss, kappa = 1, T = 1: a <- a - lr r dL/da, W <- W - lr dL/dW."""
    a, W = a.copy(), W.copy()
    n = len(y)
    for _ in range(steps):
        Z = W @ X.T  # (p, n)
        g = (np.maximum(Z, 0.0).T @ a - y) / n  # dL/dh
        grad_W = a[:, None] * (((Z > 0) * g) @ X)
        grad_a = np.maximum(Z, 0.0) @ g
        a, W = a - lr * rate * grad_a, W - lr * grad_W
    return a, W


@pytest.mark.parametrize("parametrisation", ["plain", "lognorm"])
def test_second_layer_rate_against_a_numpy_gd_loop(parametrisation):
    rng = np.random.default_rng(6)
    X, y = rng.normal(size=(10, 3)), rng.normal(size=10)
    a0, W0 = 0.5 * rng.normal(size=(2, 5)), 0.5 * rng.normal(size=(2, 5, 3))
    steps = 60
    for rate in {"plain": (0.25,), "lognorm": (3.0,)}[parametrisation]:
        cfg = EngineConfig(lr=0.05, second_layer_rate=rate, parametrisation=parametrisation,
                           probes=("loss",))
        res = solve(cfg, Network(a0, W0), X, y, saveat=SaveAt(np.array([0, steps])))
        for r in range(2):
            a, W = _numpy_gd(a0[r], W0[r], X, y, 0.05, rate, steps)
            np.testing.assert_allclose(res.final.a[r], a, rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(res.final.W[r], W, rtol=1e-10, atol=1e-12)


def _spec(**train) -> dict:
    return {"runs": 2, "data": {"kind": "sphere", "n": 6, "d": 3}, "model": {"width": 4},
            "init": {"scheme": "gaussian", "scale": 0.3},
            "train": {"lr": 0.05, "steps": 30, **train},
            "record": {"points": 4, "probes": [*DEFAULT_PROBES, "log_norm", *PROBED]}}


PROBED = ("mmv_cos_plus", "mmv_cone_counts")


def test_rate_zero_freezes_the_second_layer_and_rate_one_is_default_exactly():
    zero, one, default = train(
        [experiment_from_mapping(_spec(**t)) for t in
         ({"second_layer_rate": 0.0}, {"second_layer_rate": 1.0}, {})],
        show_progress=False)
    for name in ("a_final", "W_final", *DEFAULT_PROBES, *PROBED):
        np.testing.assert_array_equal(one[name].values, default[name].values)
    assert not np.array_equal(zero.a_final.values, default.a_final.values)
    assert not engine_config(experiment_from_mapping(_spec(second_layer_rate=0.0))).train_second_layer
    assert [ds.attrs["second_layer_rate"] for ds in (zero, one)] == [0, 1]
    half = engine_config(experiment_from_mapping(_spec(second_layer_rate=0.5)))
    assert half.layer_rate == 0.5 and half.train_second_layer
    assert zero.mmv_cone_counts.cone.values.tolist() == list(al.CONE_NAMES)
    assert zero.mmv_cos_plus.band.values.tolist() == ["min", "mean", "max"]
    exp = experiment_from_mapping(_spec())
    sizes = {"neuron": 4, "band": 3, "cone": 4}
    assert record_size(exp) == sum(sizes[PROBES[p].dims[0]] if PROBES[p].dims else 1
                                   for p in exp.record.probes)


@pytest.mark.parametrize("train_, message", [
    ({"second_layer_rate": -1.0}, "second_layer_rate"),
    ({"layers": "first"}, r"train\.layers: removed; use train\.second_layer_rate = 0"),
    ({"second_layer_rate": 0.5, "balance": "tied"}, "second_layer_rate: balance 'tied'"),
])
def test_bad_second_layer_rate_is_refused_naming_the_field(train_, message):
    with pytest.raises(ConfigError, match=message):
        experiment_from_mapping(_spec(**train_))


def test_default_probes_and_engine_constants_unchanged():
    assert DEFAULT_PROBES == ("loss", "pl_curvature", "balance_drift", "neuron_norm", "a",
                              "active_count", "dead_neurons", "param_norm_sq")
    assert EngineConfig().needs == frozenset()  # no class directions or Gram matrices computed
    assert EngineConfig(probes=("stable_rank",)).needs == {"perp_gram"}
    assert EngineConfig().layer_rate == 1.0
    assert EngineConfig(train_second_layer=False, second_layer_rate=0.5).layer_rate == 0.0
    with pytest.raises(ValueError, match="second_layer_rate"):
        EngineConfig(second_layer_rate=float("nan"))
