"""Exact dynamics at tiny initialisation and on orthogonal data (docs/math.md §0.3, §3.2, §3.6):
log-norm engine, data-span reduction, persistent activity mask."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from shallowflow.data import orthogonal, orthonormal, sphere
from shallowflow.dynamics import EngineConfig, EngineOptions, SaveAt, StopWhen, record_schedule, solve
from shallowflow.model.initialisation import balanced, dpb
from shallowflow.model.network import Network


def batch(*nets: Network) -> Network:
    return Network(np.stack([n.a for n in nets]), np.stack([n.W for n in nets]))


def unit_balanced(key: int, p: int, d: int) -> Network:
    return balanced(jax.random.PRNGKey(key), p, d, 1.0)


# ------------------------------------------------------------------------- log-norm engine
def test_lognorm_equals_plain_gd_at_small_scale():
    """The log-norm engine is the plain GD map in other coordinates: 1e-9 relative at 1e-3."""
    X, y = sphere(jax.random.PRNGKey(0), 20, 8)
    nets = batch(unit_balanced(1, 6, 8), unit_balanced(2, 6, 8))
    log_lambda = np.log([1e-3, 1e-3])
    sched = record_schedule(3000, every=100)
    probes = ("loss", "neuron_norm", "log_norm", "a", "pl_curvature")
    out = {}
    for par in ("plain", "lognorm"):
        cfg = EngineConfig(lr=0.05, parametrisation=par, probes=probes)
        out[par] = solve(cfg, nets, X, y, saveat=SaveAt(sched), log_lambda=log_lambda)
    p, q = out["plain"], out["lognorm"]
    assert p.records["loss"][:, -1].max() < 0.5 * p.records["loss"][:, 0].min()  # it learned
    for name in probes:
        np.testing.assert_allclose(q.records[name], p.records[name], rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(q.final.W, p.final.W, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(q.final.a, p.final.a, rtol=1e-9, atol=1e-15)


HAND_X = np.eye(4)
HAND_Y = np.array([3.0, 4.0, 1.0, 2.0])
HAND_NET = Network(np.array([[1.0, 1.0]]),
                   np.array([[[1, 1, -1, -1], [-1, 1, 1, 1]]]) / 2.0)


def first_jump(loss: np.ndarray, t_acc: np.ndarray, low: float, high: float) -> float:
    """Accelerated time at which the loss crosses the midpoint of two plateaus (interpolated)."""
    mid = 0.5 * (low + high)
    k = int(np.argmax(loss < mid))
    assert k > 0
    return float(t_acc[k - 1] + (t_acc[k] - t_acc[k - 1]) * (loss[k - 1] - mid)
                 / (loss[k - 1] - loss[k]))


@pytest.mark.parametrize("tied", [False, True])
def test_lognorm_at_tiny_scales_is_finite_and_approaches_algorithm_1(tied):
    """docs/math.md §3.6: X = I_4, y = (3, 4, 1, 2), c_L = 1/4; the limit first jump is at 0.8
    (loss plateaus 3.75 -> 0.625). The simulated jump approaches it as lambda decreases."""
    lr = 0.004
    errors = []
    for lam_log10 in (-50, -150, -300):
        L = lam_log10 * np.log(10.0)
        steps = int(1.05 * -L / lr)
        sched = record_schedule(steps, every=10)
        cfg = EngineConfig(lr=lr, parametrisation="lognorm", tied_balance=tied,
                           probes=("loss", "log_norm", "balance_log_drift"))
        r = solve(cfg, HAND_NET, HAND_X, HAND_Y, saveat=SaveAt(sched), options=EngineOptions(span=True),
                     log_lambda=np.array([L]))
        for v in r.records.values():
            assert np.all(np.isfinite(v))
        np.testing.assert_allclose(r.records["log_norm"][0, 0], [L, L], rtol=1e-14)
        np.testing.assert_allclose(r.records["loss"][0, 0], 3.75, rtol=1e-14)
        if tied:  # a_j = s_j ||w_j|| exactly
            assert np.all(r.records["balance_log_drift"] == 0.0)
        else:  # plain GD: the relative imbalance is O(lr), independent of lambda
            assert r.records["balance_log_drift"].max() < 10 * lr
        t_acc = sched * lr / -L
        errors.append(abs(first_jump(r.records["loss"][0], t_acc, 3.75, 0.625) - 0.8))
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.005


# ------------------------------------------------------------------------- data-span reduction
@pytest.mark.parametrize("kind", ["sphere", "orthogonal"])
def test_reduced_engine_equals_dense_engine(kind):
    """d = 2000, n = 200: the span (QR, or the diagonal path for orthogonal rows) is lossless."""
    n, d, p = 200, 2000, 8
    key = jax.random.PRNGKey(7)
    if kind == "sphere":
        X, y = sphere(key, n, d)
    else:
        X, y = orthogonal(key, n, d, basis="random")
    nets = jax.vmap(lambda k: dpb(k, p, d))(jax.random.split(jax.random.PRNGKey(8), 2))
    cfg = EngineConfig(lr=1.0, kappa=1 / p, time_scale=p,
                       probes=("loss", "pl_curvature", "balance_drift", "neuron_norm",
                               "param_norm_sq", "active_count"))
    sched = record_schedule(150, every=10)
    dense = solve(cfg, nets, X, y, saveat=SaveAt(sched))
    red = solve(cfg, nets, X, y, saveat=SaveAt(sched), options=EngineOptions(span=True))
    assert dense.records["loss"][:, -1].max() < 0.5 * dense.records["loss"][:, 0].min()
    for name, v in dense.records.items():
        np.testing.assert_allclose(red.records[name], v, rtol=1e-10, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(red.final.W, dense.final.W, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(red.final.a, dense.final.a, rtol=1e-10, atol=1e-12)
    # the out-of-span part of every neuron is exactly what it was
    Q = np.linalg.qr(np.asarray(X).T)[0]
    perp = lambda W: W - W @ Q @ Q.T  # noqa: E731
    np.testing.assert_allclose(perp(red.final.W), perp(np.asarray(nets.W)), atol=1e-13)


def test_rotated_basis_gives_the_canonical_loss_curve():
    """Rotating data and weights by the same orthogonal map leaves the dynamics unchanged."""
    n, d, p = 12, 20, 5
    Xc, y = orthonormal(jax.random.PRNGKey(1), n, d, "canonical", "normal")
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((d, d)))[0]
    net = dpb(jax.random.PRNGKey(2), p, d)
    rotated = Network(np.asarray(net.a)[None], (np.asarray(net.W) @ Q)[None])
    cfg = EngineConfig(lr=0.1, probes=("loss", "neuron_norm"))
    sched = record_schedule(400, every=20)
    can = solve(cfg, batch(net), Xc, y, saveat=SaveAt(sched))
    for span in (False, True):
        rot = solve(cfg, rotated, np.asarray(Xc) @ Q, y, saveat=SaveAt(sched),
                       options=EngineOptions(span=span))
        np.testing.assert_allclose(rot.records["loss"], can.records["loss"], rtol=1e-10)
        np.testing.assert_allclose(rot.records["neuron_norm"], can.records["neuron_norm"],
                                   rtol=1e-10)


# ------------------------------------------------------------------------- activity mask
def revived_pairs(active: np.ndarray) -> int:
    """Pairs (i, j) inactive at some record and active at a later one; active (K, n, p)."""
    was_dead = np.cumsum(~active[:-1], axis=0) > 0
    return int(np.any(was_dead & active[1:], axis=0).sum())


def test_mask_stops_dead_pairs_reviving_at_lambda_1e_100():
    """docs/math.md §0.3: with a rotated orthonormal basis, rounding of X w flips the sign of dead
    pre-activations once neurons have grown, and dead pairs revive. The mask prevents it."""
    n = d = 16
    X, y = orthonormal(jax.random.PRNGKey(4), n, d, "random", "abs_normal")
    net = batch(unit_balanced(5, 6, d))
    sched = record_schedule(8000, every=50)
    res = {}
    for mask in (False, True):
        cfg = EngineConfig(lr=0.5, activity_mask=mask, probes=("loss", "active"))
        res[mask] = solve(cfg, net, X, y, saveat=SaveAt(sched), log_lambda=np.array([-100 * np.log(10.0)]))
    assert revived_pairs(res[False].records["active"][0]) > 0  # the failure is reproduced
    assert revived_pairs(res[True].records["active"][0]) == 0
    # under the mask a pair active at the end was active from the start (pairs only die)
    start_active = (np.asarray(X) @ np.asarray(net.W[0]).T) > 0
    end_active = res[True].records["active"][0, -1]
    assert np.all(start_active[end_active]) and end_active.sum() < start_active.sum()


def test_lognorm_keeps_the_out_of_span_norm_at_tiny_scale():
    """d > n: ||w_j||^2 = ||w_span||^2 + ||w_perp||^2 with w_perp constant; at lambda = 1e-200 the
    log-norm engine must keep log ||w_j|| exact although ||w_perp||^2 = 1e-400 underflows."""
    n, d = 3, 7
    X, y = orthonormal(jax.random.PRNGKey(3), n, d, "canonical", "abs_normal")
    net = batch(unit_balanced(4, 2, d))
    L = -200 * np.log(10.0)
    cfg = EngineConfig(lr=0.1, parametrisation="lognorm", probes=("log_norm",))
    r = solve(cfg, net, X, y, saveat=SaveAt(record_schedule(20, every=10)),
                 options=EngineOptions(span=True), log_lambda=np.array([L]))
    W = np.asarray(net.W[0])
    np.testing.assert_allclose(r.records["log_norm"][0, 0], np.log(np.linalg.norm(W, axis=1)) + L,
                               rtol=1e-14)
    # after a few steps the span part has moved but the perpendicular part is unchanged
    perp0 = np.linalg.norm(W[:, n:], axis=1)
    assert np.all(np.exp(r.records["log_norm"][0, -1] - L) >= perp0 * (1 - 1e-12))


@pytest.mark.parametrize(("runs", "per_run"), [(8, False), (6, True)])
def test_blocked_diagonal_path_equals_unblocked(monkeypatch, runs, per_run):
    """Runs are independent: advancing blocks of runs through the whole time loop (the cache-
    friendly diagonal path) gives exactly the batch-at-once result, with and without stops."""
    import shallowflow.dynamics.compilation as compilation

    n, d, p = 10, 14, 3
    keys = jax.random.split(jax.random.PRNGKey(0), runs)
    if per_run:
        data = [orthogonal(k, n, d, basis="random") for k in keys]
        X, y = np.stack([a for a, _ in data]), np.stack([b for _, b in data])
    else:
        X, y = orthogonal(keys[0], n, d, basis="random")
    nets = jax.vmap(lambda k: dpb(k, p, d))(jax.random.split(jax.random.PRNGKey(1), runs))
    cfg = EngineConfig(kappa=1 / p, lr=0.5, time_scale=p, activity_mask=True,
                       probes=("loss", "neuron_norm", "active_count"))
    sched = record_schedule(300, every=25)
    stop = np.where(np.arange(runs) % 2 == 0, 10.0, -np.inf)  # even runs are frozen at once
    if jax.default_backend() == "cpu":  # the policy blocks these runs (a GPU takes them at once)
        assert compilation._block_size(compilation.DiagonalInputs(np.ones((n, runs))), runs, 1) > 1
    monkeypatch.setattr(compilation, "_block_size", lambda inputs, R, p: 2)  # on any device
    blocked = solve(cfg, nets, X, y, saveat=SaveAt(sched), stop=StopWhen(loss=stop),
                       options=EngineOptions(span=True))
    monkeypatch.setattr(compilation, "_block_size", lambda inputs, R, p: 0)
    whole = solve(cfg, nets, X, y, saveat=SaveAt(sched), stop=StopWhen(loss=stop),
                     options=EngineOptions(span=True))
    for name in whole.records:
        np.testing.assert_array_equal(blocked.records[name], whole.records[name])
    for name in whole.status:
        np.testing.assert_array_equal(blocked.status[name], whole.status[name])
    np.testing.assert_array_equal(blocked.final.W, whole.final.W)
    assert 0 < blocked.status["stopped"].sum() < runs
