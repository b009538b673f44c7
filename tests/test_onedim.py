"""The exact bucketed step for one-dimensional inputs with a bias (docs/math.md §10) against the
dense engine: a plain numpy reference of the bucketed formulas on adversarial ties, exact activity
at ties and near-ties, the compiled engine over 10 000 steps for every loss and the three BF
starts, the engine's options (per-run data, log-norm coordinates at lambda = e^-300, first layer
only, early stop, divergence), the 3-point OLS limit of docs/math.md §2.4, and the refusals."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from shallowflow import enable_full_precision
from shallowflow.data import three_point
from shallowflow.dynamics import EngineConfig, EngineOptions, SaveAt, StopWhen, record_schedule, solve
from shallowflow.dynamics.gradient import batch_loss_and_gradient
from shallowflow.model import initialisation as init
from shallowflow.model import onedim
from shallowflow.model.activations import RELU, Activation
from shallowflow.model.inputs import OneDimInputs, PerRunInputs, SharedInputs, _window
from shallowflow.model.losses import LOSS_NAMES, Loss
from shallowflow.model.network import Network, add_bias_column

enable_full_precision()

# --------------------------------------------------------------------------------------------
# numpy references: the dense formula (docs/math.md §0.3) and the bucketed one (§10)
# --------------------------------------------------------------------------------------------


def _dloss(name: str, out: np.ndarray, y: np.ndarray) -> np.ndarray:
    c = 1.0 / len(y)
    if name == "square":
        return c * (out - y)
    if name == "mse":
        return c * 2.0 * (out - y)
    if name == "exponential":
        return -c * y * np.exp(-y * out)
    return -c * y / (1.0 + np.exp(y * out))


def np_dense(a, w, b, x, y, name):
    """Dense: active = (x w + b > 0), outputs, dL/da, dL/dw, dL/db (kappa = 1)."""
    Z = x[:, None] * w[None] + b[None]
    active = Z > 0
    out = np.where(active, Z, 0.0) @ a
    g = _dloss(name, out, y)
    S1 = (g * x) @ active
    S0 = g @ active
    return active, out, w * S1 + b * S0, a * S1, a * S0


def np_bucketed(a, w, b, x, y, name):
    """Bucketed (docs/math.md §10): sort, bucket each kink c = -b/w with searchsorted (side
    'right' for w > 0: x_k = c is inactive; 'left' for w < 0), per-bucket sums and cumulative
    sums for the outputs, prefix/suffix sums of g x and g read at the bucket for the gradients.
    Exact for dyadic data and weights (the division is then exact)."""
    n = len(x)
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], y[order]
    up, down = w > 0, w < 0
    with np.errstate(divide="ignore", invalid="ignore"):
        c = -b / w
    t = np.where(up, np.searchsorted(xs, c, side="right"), np.searchsorted(xs, c, side="left"))
    t = np.where(w == 0, np.where(b > 0, 0, n), t)  # up neurons (and w = 0) active on k >= t
    upish = ~down
    U = np.zeros((n + 1, 2))
    D = np.zeros((n + 1, 2))
    np.add.at(U, t[upish], np.stack([a * w, a * b], 1)[upish])
    np.add.at(D, t[down], np.stack([a * w, a * b], 1)[down])
    AB = np.cumsum(U, 0)[:n] + np.cumsum(D[::-1], 0)[::-1][1:]
    out_s = xs * AB[:, 0] + AB[:, 1]
    g = _dloss(name, out_s, ys)
    G = np.stack([g * xs, g], 1)
    prefix = np.concatenate([np.zeros((1, 2)), np.cumsum(G, 0)])
    suffix = np.concatenate([np.cumsum(G[::-1], 0)[::-1], np.zeros((1, 2))])
    S = np.where(upish[:, None], suffix[t], prefix[t])
    active_s = np.where(upish[None], np.arange(n)[:, None] >= t[None], np.arange(n)[:, None] < t[None])
    active = np.empty_like(active_s)
    active[order] = active_s
    out = np.empty(n)
    out[order] = out_s
    return active, out, w * S[:, 0] + b * S[:, 1], a * S[:, 0], a * S[:, 1]


def _adversarial(rng, n=16, p=64):
    """Dyadic data with repeated x values, and neurons with kinks exactly on data points, w = 0
    (b > 0, b < 0, b = 0), w = -0.0, kinks outside the data, random neurons."""
    x = rng.integers(-8, 9, n) / 8.0
    x[:3] = x[3]  # repeated values
    w = rng.integers(-8, 9, p) / 4.0
    b = rng.integers(-8, 9, p) / 8.0
    k = rng.integers(0, n, p)
    on_point = rng.random(p) < 0.4
    b = np.where(on_point & (w != 0), -w * x[k], b)  # kink exactly on a data point
    w[:4], b[:4] = 0.0, [1.0, -1.0, 0.0, -0.0]
    w[4], b[4] = -0.0, 0.5
    w[5], b[5] = 1.0, -5.0  # kink right of all data
    w[6], b[6] = -1.0, -5.0  # kink left of all data, pointing left: never active
    a = rng.standard_normal(p)
    y = rng.standard_normal(n)
    return a, w, b, x, y


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_numpy_bucketed_equals_dense_on_ties(name):
    rng = np.random.default_rng(0)
    for _ in range(5):
        a, w, b, x, y = _adversarial(rng)
        if name in ("exponential", "logistic"):
            y = np.sign(y)
        dense, buck = np_dense(a, w, b, x, y, name), np_bucketed(a, w, b, x, y, name)
        assert np.array_equal(dense[0], buck[0])  # the activity, exactly
        for u, v in zip(dense[1:], buck[1:], strict=True):
            np.testing.assert_allclose(v, u, rtol=1e-12, atol=1e-13 * np.max(np.abs(u)))


# --------------------------------------------------------------------------------------------
# the JAX path: exact activity, also at near-ties where the rounded kink -b/w would mislead
# --------------------------------------------------------------------------------------------


_gradient = jax.jit(batch_loss_and_gradient, static_argnums=(4, 5, 6))


def _compare_gradients(a, Wt, X, y, loss, kappa=1.0):
    dense = _gradient(a, Wt, SharedInputs.of(X), y, kappa, RELU, loss)
    one = _gradient(a, Wt, OneDimInputs.of(X), y, kappa, RELU, loss)
    assert np.array_equal(np.asarray(dense.active), np.asarray(one.active))
    for f in ("loss", "grad_a", "grad_Wt", "output", "M", "Z"):
        u, v = np.asarray(getattr(dense, f)), np.asarray(getattr(one, f))
        np.testing.assert_allclose(v, u, rtol=1e-12, atol=1e-13 * np.max(np.abs(u)), err_msg=f)
    return one


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_gradient_exact_activity_at_ties_and_near_ties(name):
    rng = np.random.default_rng(1)
    a, w, b, x, y = _adversarial(rng, n=24, p=256)
    x = x + rng.standard_normal(len(x)) * 1e-3 * (rng.random(len(x)) < 0.5)  # not all dyadic
    x[5:8] = x[8]
    # near-ties: kinks one or two ulps either side of a data point, found by the sign test
    k = rng.integers(0, len(x), 100)
    w[100:200] = rng.standard_normal(100)
    b[100:200] = -w[100:200] * x[k]
    b[100:150] = np.nextafter(b[100:150], np.inf)
    b[150:175] = np.nextafter(np.nextafter(b[150:175], -np.inf), -np.inf)
    if name in ("exponential", "logistic"):
        y = np.sign(y)
    X = np.stack([x, np.ones_like(x)], 1)
    Wt = jnp.asarray(np.stack([w, b])[:, None, :])
    one = _compare_gradients(jnp.asarray(a)[None], Wt, jnp.asarray(X), jnp.asarray(y), Loss(name))
    Z = np.asarray(one.Z)[:, 0]
    assert np.any(Z == 0)  # exact ties were present
    assert np.any((np.abs(Z) > 0) & (np.abs(Z) < 1e-15))  # and near-ties


def test_gradient_per_run_data_and_fallback_search():
    """Per-run data; and a window table spoiled on purpose, so that its verification fails and
    the full binary search of the step gives the same exact answer."""
    rng = np.random.default_rng(2)
    R, n, p = 3, 10, 40
    x = np.round(rng.uniform(-1, 1, (R, n)) * 4) / 4
    X = jnp.asarray(np.stack([x, np.ones_like(x)], -1))
    y = jnp.asarray(rng.standard_normal((R, n)))
    a = jnp.asarray(rng.standard_normal((R, p)))
    Wt = jnp.asarray(rng.integers(-4, 5, (2, R, p)) / 4.0)
    dense = _gradient(a, Wt, PerRunInputs(X), y, 1.0, RELU, Loss())
    good = OneDimInputs.of(X)
    size = 1 << good.levels
    shifted = [_window(np.asarray(row), np.minimum(np.asarray(w[:, 0], int) + 2, n), size)
               for row, w in zip(good.xs, good.window, strict=True)]  # consistent rows, wrong windows
    spoiled = good._replace(window=jnp.asarray(np.stack(shifted)))
    for inputs in (good, spoiled):
        one = _gradient(a, Wt, inputs, y, 1.0, RELU, Loss())
        assert np.array_equal(np.asarray(dense.active), np.asarray(one.active))
        for f in ("loss", "grad_a", "grad_Wt", "output"):
            np.testing.assert_allclose(np.asarray(getattr(one, f)), np.asarray(getattr(dense, f)),
                                       rtol=1e-12, atol=1e-14)
    t, _ = onedim.boundaries(spoiled, Wt[0], Wt[1])
    assert np.array_equal(np.asarray(t), np.asarray(onedim.full_search(good.xs, Wt[0], Wt[1])))


def test_any_hint_gives_the_exact_gradient():
    """The search start carried from step to step (``hint``, docs/math.md §10) only picks where
    the search begins: the right cells, cells of other weights, all zeros or all at the last row
    give the dense gradient exactly (a wrong start costs the fallback search, never accuracy)."""
    rng = np.random.default_rng(3)
    R, n, p = 2, 24, 300
    x = np.round(rng.uniform(-1, 1, n) * 8) / 8  # repeated values and exact ties
    X = jnp.asarray(np.stack([x, np.ones_like(x)], -1))
    y = jnp.asarray(rng.standard_normal(n))
    a = jnp.asarray(rng.standard_normal((R, p)))
    Wt = jnp.asarray(rng.integers(-8, 9, (2, R, p)) / 8.0)
    dense = _gradient(a, Wt, SharedInputs.of(X), y, 1.0, RELU, Loss())
    inputs = OneDimInputs.of(X)
    last = inputs.window.shape[1] - 1
    other = jnp.asarray(rng.standard_normal((2, R, p)))
    for hint in (onedim.cells(inputs, Wt), onedim.cells(inputs, other),
                 jnp.zeros((R, p), jnp.int32), jnp.full((R, p), last, jnp.int32)):
        one = jax.jit(batch_loss_and_gradient, static_argnums=(4, 5, 6))(
            a, Wt, inputs, y, 1.0, RELU, Loss(), hint=hint)
        assert np.array_equal(np.asarray(dense.active), np.asarray(one.active))
        for f in ("loss", "grad_a", "grad_Wt", "output"):
            np.testing.assert_allclose(np.asarray(getattr(one, f)), np.asarray(getattr(dense, f)),
                                       rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("count_max", [0, 1, 4, 1 << 10])
def test_window_search_counting_and_binary_agree(monkeypatch, count_max):
    """The cut inside a verified window, by counting (2^K <= COUNT_MAX) or by a binary search,
    equals the full binary search over all points, on clustered data with repeated values (a
    window of many points, K >= 3) and on spread data (K small), for kinks on, next to and
    between data points, w = 0 and kinks outside the data."""
    monkeypatch.setattr(onedim, "COUNT_MAX", count_max)
    rng = np.random.default_rng(6)
    spread = rng.uniform(-1, 1, 30)
    clustered = np.concatenate([np.full(9, 0.25), 0.25 + rng.uniform(-1, 1, 6) * 1e-9,
                                rng.uniform(-1, 1, 15)])
    for x in (spread, clustered):
        inputs = OneDimInputs.of(jnp.asarray(np.stack([x, np.ones_like(x)], 1)))
        p = 400
        w = rng.standard_normal(p)
        b = -w * rng.choice(x, p) + rng.choice([0.0, 1e-12, -1e-12, 1e-3], p) * np.abs(w)
        b[:100] = rng.standard_normal(100) * 3  # kinks anywhere, many outside the data
        w[:3], b[:3] = 0.0, [1.0, -1.0, 0.0]
        b[3:6] = np.nextafter(-w[3:6] * x[:3], np.inf)  # one ulp above a data point's tie
        Wt = jnp.asarray(np.stack([w, b])[:, None, :])
        t, down = onedim.boundaries(inputs, Wt[0], Wt[1])
        assert np.array_equal(np.asarray(t), np.asarray(onedim.full_search(inputs.xs, Wt[0],
                                                                           Wt[1])))
        assert np.array_equal(np.asarray(down), w[None] < 0)
    assert inputs.levels >= 3  # the clustered data needs a wide window


def test_window_search_matches_dense_on_clustered_data():
    """The bucketed gradient equals the dense one when the windows are wide (binary search)."""
    rng = np.random.default_rng(7)
    x = np.concatenate([np.full(7, -0.5), -0.5 + rng.uniform(0, 1e-10, 5), rng.uniform(-1, 1, 20)])
    y = rng.standard_normal(len(x))
    X = np.stack([x, np.ones_like(x)], 1)
    p = 300
    w = rng.standard_normal(p)
    b = -w * rng.choice(x, p)
    b[::3] += 1e-11
    assert OneDimInputs.of(jnp.asarray(X)).levels >= 3
    Wt = jnp.asarray(np.stack([w, b])[:, None, :])
    _compare_gradients(jnp.asarray(rng.standard_normal(p))[None], Wt, jnp.asarray(X),
                       jnp.asarray(y), Loss("square"))


# --------------------------------------------------------------------------------------------
# the engine: 10 000 steps, every loss, balanced / unbalanced / dominated starts with ties
# --------------------------------------------------------------------------------------------

STEPS = 10_000


def _problem(name: str, n: int = 12, p: int = 48, scale: float = 0.5):
    rng = np.random.default_rng(3)
    x = np.array([-1, -0.75, -0.5, -0.5, -0.25, 0, 0, 0.125, 0.25, 0.5, 0.75, 1.0])[:n]
    X = np.stack([x, np.ones(n)], 1)
    y = rng.standard_normal(n)
    if name in ("exponential", "logistic"):
        y = np.sign(y)
    key = jax.random.PRNGKey(0)
    nets = [init.balanced(key, p, 2, scale, radial="gaussian"), init.gaussian(key, p, 2, scale),
            init.dominated(key, p, 2, scale)]
    a = np.stack([np.asarray(m.a) for m in nets])
    W = np.stack([np.asarray(m.W) for m in nets])
    # exact ties at the start: w = 0 with b > 0, b < 0, b = 0; kinks on data points (x = -0.5
    # repeated, x = 0 repeated, x = 0.5)
    W[:, 0], W[:, 1], W[:, 2] = [0, 1], [0, -1], [0, 0]
    W[:, 3], W[:, 4], W[:, 5] = [1, 0.5], [-2, -1], [4, 0]
    return Network(jnp.asarray(a), jnp.asarray(W)), X, y


def _rel(u, v):
    """Largest difference relative to the largest entry; non-finite entries must agree."""
    u, v = np.asarray(u, float), np.asarray(v, float)
    fin = np.isfinite(u)
    assert np.array_equal(u[~fin], v[~fin], equal_nan=True)
    return float(np.max(np.abs(u[fin] - v[fin])) / np.max(np.abs(u[fin])))


def _both(cfg: EngineConfig, *args, **kw):
    return [solve(EngineConfig(**{**cfg.__dict__, "onedim": flag}), *args, **kw)
            for flag in (False, True)]


@pytest.mark.parametrize("name", LOSS_NAMES)
def test_engine_matches_dense_over_10000_steps(name):
    net, X, y = _problem(name)
    cfg = EngineConfig(loss=Loss(name), lr=0.05,
                       probes=("loss", "output", "active", "active_count", "a", "neuron_norm"))
    dense, one = _both(cfg, net, X, y, saveat=SaveAt(record_schedule(STEPS, every=STEPS // 4)))
    assert _rel(dense.final.a, one.final.a) < 1e-12
    assert _rel(dense.final.W, one.final.W) < 1e-12
    for k in ("loss", "output", "a", "neuron_norm"):
        assert _rel(dense.records[k], one.records[k]) < 1e-12, k
    for k in ("active", "active_count"):
        assert np.array_equal(dense.records[k], one.records[k]), k
    for k in dense.status:
        assert np.array_equal(dense.status[k], one.status[k]), k
    assert np.any(dense.records["loss"][:, -1] < 0.5 * dense.records["loss"][:, 0])  # it trained


def test_engine_options_per_run_lognorm_first_layer_stop():
    rng = np.random.default_rng(4)
    R, n, p = 3, 9, 32
    x = np.round(rng.uniform(-1, 1, (R, n)) * 8) / 8
    X = np.stack([x, np.ones((R, n))], -1)
    y = rng.standard_normal((R, n))
    net = Network(jnp.asarray(rng.standard_normal((R, p)) * 0.3),
                  jnp.asarray(rng.standard_normal((R, p, 2)) * 0.3))
    for kw in ({"parametrisation": "lognorm", "kappa": 1 / p, "time_scale": float(p)},
               {"train_second_layer": False}):
        cfg = EngineConfig(loss=Loss("square"), lr=0.02, **kw)
        a1, W1 = np.asarray(net.a[1]), np.asarray(net.W[1])
        out = cfg.kappa * np.maximum(X[1] @ W1.T, 0) @ a1
        stop = np.array([0.0, 0.99 * np.mean((out - y[1]) ** 2) / 2, 0.0])  # run 1 stops early
        # run 2 of the log-norm case starts at lambda = e^-300
        log_lambda = np.array([0.0, 0.0, -300.0]) if "parametrisation" in kw else None
        dense, one = _both(cfg, net, X, y, saveat=SaveAt(record_schedule(1000, every=500)),
                           stop=StopWhen(loss=stop), log_lambda=log_lambda)
        assert _rel(dense.final.a, one.final.a) < 1e-12 and _rel(dense.final.W, one.final.W) < 1e-12
        if log_lambda is not None:
            assert _rel(dense.log_final["log_norm"], one.log_final["log_norm"]) < 1e-12
            assert _rel(dense.log_final["log_abs_a"], one.log_final["log_abs_a"]) < 1e-12
        assert _rel(dense.records["loss"], one.records["loss"]) < 1e-12
        for k in dense.status:
            assert np.array_equal(dense.status[k], one.status[k]), k
        assert dense.status["stopped"].tolist() == [False, True, False]


def test_engine_divergence():
    net, X, y = _problem("square", p=16)
    cfg = EngineConfig(loss=Loss("square"), lr=1e150, probes=("loss",))  # overflow at step 1
    dense, one = _both(cfg, net, X, y, saveat=SaveAt(record_schedule(20, every=10)))
    assert dense.status["diverged"].all()
    for k in dense.status:
        assert np.array_equal(dense.status[k], one.status[k]), k
    assert _rel(dense.final.W, one.final.W) < 1e-12


def test_three_point_ols_limit():
    """docs/math.md §2.4: from a small balanced start (and a dominated one) both paths converge
    to the OLS line with bias, the spurious limit loss 0.175043."""
    X, y = three_point()
    X, y = np.asarray(add_bias_column(X)), np.asarray(y)
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    key = jax.random.PRNGKey(0)
    p = 50
    nets = [init.balanced(key, p, 2, 1e-3, width_scaling=True, radial="gaussian"),
            init.dominated(key, p, 2, 1e-3, width_scaling=True)]
    net = Network(jnp.stack([m.a for m in nets]), jnp.stack([m.W for m in nets]))
    cfg = EngineConfig(loss=Loss("mse"), lr=0.02, probes=("loss", "output"))
    for res in _both(cfg, net, X, y, saveat=SaveAt(record_schedule(20_000, every=10_000))):
        np.testing.assert_allclose(res.records["output"][:, -1], np.broadcast_to(X @ beta, (2, 3)),
                                   atol=1e-9)
        np.testing.assert_allclose(res.records["loss"][:, -1], np.mean((X @ beta - y) ** 2),
                                   rtol=1e-9)
        assert abs(res.records["loss"][0, -1] - 0.175043) < 1e-6


# --------------------------------------------------------------------------------------------
# refusals and the automatic choice
# --------------------------------------------------------------------------------------------


def test_refusals():
    with pytest.raises(ValueError, match="onedim"):
        EngineConfig(onedim=True, activation=Activation(0.1))
    with pytest.raises(ValueError, match="onedim"):
        EngineConfig(onedim=True, batch_size=2)
    with pytest.raises(ValueError, match="onedim"):
        EngineConfig(onedim=True, activity_mask=True)
    net, X, y = _problem("square", p=8)
    cfg = EngineConfig(onedim=True)
    sched = record_schedule(2, every=1)
    with pytest.raises(ValueError, match=r"onedim.*span"):
        solve(cfg, net, X, y, saveat=SaveAt(sched), options=EngineOptions(span=True))
    with pytest.raises(ValueError, match=r"onedim.*bias"):
        solve(cfg, net, X * 2.0, y, saveat=SaveAt(sched))
    with pytest.raises(ValueError, match=r"onedim.*shape"):
        solve(cfg, Network(net.a, jnp.concatenate([net.W, net.W[..., :1]], -1)),
                 np.concatenate([X, X[:, :1]], 1), y, saveat=SaveAt(sched))
    with pytest.raises(ValueError, match="onedim"):
        solve(EngineConfig(), net, OneDimInputs.of(X), y, saveat=SaveAt(sched))


def test_pays():
    assert onedim.pays(40, 200_000) and onedim.pays(400, 2_000)
    assert not onedim.pays(3, 20_000) and not onedim.pays(40, 10)
    auto = {"input_dim": 1, "bias": True, "n": 40, "width": 200_000, "gd": True, "relu": True}
    assert onedim.resolve("auto", **auto) == (True, onedim.NOTE)
    assert onedim.resolve("auto", **{**auto, "gd": False}) == (False, None)
    assert onedim.resolve("auto", **{**auto, "bias": False}) == (False, None)
    assert onedim.resolve("off", **auto) == (False, None)
    assert onedim.resolve("on", **{**auto, "n": 3}) == (True, None)


def test_rebatching_per_run_data(monkeypatch):
    """Runs that stop leave the batch (per-run sorted data taken along): nothing changes."""
    from shallowflow.dynamics import rebatch

    rng = np.random.default_rng(5)
    R, n, p = 5, 8, 16
    x = np.round(rng.uniform(-1, 1, (R, n)) * 8) / 8
    X = np.stack([x, np.ones((R, n))], -1)
    y = rng.standard_normal((R, n))
    net = Network(jnp.asarray(rng.standard_normal((R, p)) * 0.3),
                  jnp.asarray(rng.standard_normal((R, p, 2)) * 0.3))
    cfg = EngineConfig(loss=Loss("square"), lr=0.05, onedim=True, probes=("loss", "a"))
    sched = record_schedule(400, every=20)
    free = solve(cfg, net, X, y, saveat=SaveAt(sched)).records["loss"]
    stop = np.array([free[0, 3], free[1, 5], free[2, 7], -np.inf, -np.inf]) * (1 + 1e-9)
    original, sizes = rebatch.compaction, []

    def counting(code, current, multiple, saving=np.inf):
        keep = original(code, current, 1)  # always worth it here
        sizes.extend([] if keep is None else [len(keep)])
        return keep

    monkeypatch.setattr(rebatch, "compaction", counting)
    with_rb = solve(cfg, net, X, y, saveat=SaveAt(sched), stop=StopWhen(loss=stop),
                       options=EngineOptions(records_per_call=2))
    assert sizes and sizes[-1] < R  # the batch was compacted
    without = solve(cfg, net, X, y, saveat=SaveAt(sched), stop=StopWhen(loss=stop),
                       options=EngineOptions(records_per_call=2, rebatch=False))
    assert with_rb.status["stopped"][:3].all()
    for k in with_rb.records:
        np.testing.assert_array_equal(with_rb.records[k], without.records[k], err_msg=k)
    np.testing.assert_array_equal(with_rb.final.W, without.final.W)
