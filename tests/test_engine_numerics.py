"""The compiled engine (shallowflow.dynamics.solve) against an independent numpy GD loop,
batch invariance, gradient-flow consistency, early stop / divergence and SGD (docs/math.md §0.3, §1.1,
§1.4)."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from shallowflow.dynamics import (
    EngineConfig,
    EngineOptions,
    Progress,
    SaveAt,
    StopWhen,
    record_schedule,
    solve,
)
from shallowflow.dynamics.probes import DEFAULT_PROBES, PROBES, TEACHER
from shallowflow.model import initialisation as init
from shallowflow.model.losses import Loss
from shallowflow.model.network import Network

# --------------------------------------------------------------------------------------------
# Independent numpy reference (docs/math.md §0.3): h = kappa sigma(X W^T) a, L = c sum_i ell_i,
# theta <- theta - lr * T * grad L(theta).
# --------------------------------------------------------------------------------------------


def np_loss_grad(a, W, X, y, kappa, leak, name, reduction):
    c = 1.0 / len(y) if reduction == "mean" else 1.0
    Z = X @ W.T
    S = np.where(Z > 0, Z, leak * Z)
    dS = np.where(Z > 0, 1.0, np.where(Z < 0, leak, 0.0))
    out = kappa * S @ a
    if name == "square":
        ell, dell = 0.5 * (out - y) ** 2, out - y
    elif name == "mse":
        ell, dell = (out - y) ** 2, 2.0 * (out - y)
    elif name == "exponential":
        ell = np.exp(-y * out)
        dell = -y * ell
    else:
        ell, dell = np.logaddexp(0.0, -y * out), -y / (1.0 + np.exp(y * out))
    g = c * dell
    ga = kappa * S.T @ g
    gW = kappa * a[:, None] * ((dS * g[:, None]).T @ X)
    return c * np.sum(ell), ga, gW


def np_gd(a, W, X, y, steps, *, lr, T=1.0, kappa=1.0, leak=0.0, name="square",
          reduction="mean", train_a=True):
    """Losses L(theta_0..theta_steps) and the final parameters of plain GD."""
    a, W = np.array(a, dtype=np.float64), np.array(W, dtype=np.float64)
    losses = []
    for k in range(steps + 1):
        L, ga, gW = np_loss_grad(a, W, X, y, kappa, leak, name, reduction)
        losses.append(L)
        if k == steps:
            break
        if train_a:
            a = a - lr * T * ga
        W = W - lr * T * gW
    return np.array(losses), a, W


def stack(*nets):
    return Network(jnp.stack([jnp.asarray(n.a) for n in nets]),
                   jnp.stack([jnp.asarray(n.W) for n in nets]))


def take(net, i):
    """Run i of a batch, keeping a leading axis of 1."""
    return Network(net.a[i : i + 1], net.W[i : i + 1])


def problem(seed, n=8, d=4, p=5, labels="real"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.normal(size=n) if labels == "real" else rng.choice([-1.0, 1.0], size=n)
    net = Network(rng.normal(size=p), rng.normal(size=(p, d)) / np.sqrt(d))
    return X, y, net


def assert_same_run(res_a, i, res_b, j, rtol):
    """Records and final parameters of run i of res_a equal those of run j of res_b."""
    assert set(res_a.records) == set(res_b.records)
    for k in res_a.records:
        np.testing.assert_allclose(res_a.records[k][i], res_b.records[k][j], rtol=rtol,
                                   atol=rtol, err_msg=k)
    np.testing.assert_allclose(res_a.final.a[i], res_b.final.a[j], rtol=rtol, atol=rtol)
    np.testing.assert_allclose(res_a.final.W[i], res_b.final.W[j], rtol=rtol, atol=rtol)
    for k in res_a.status:
        assert res_a.status[k][i] == res_b.status[k][j], k


# --------------------------------------------------------------------------------------------
# 3. GD trajectory == numpy GD loop
# --------------------------------------------------------------------------------------------

GD_CASES = {
    # DPB convention: kappa = 1/p, T = p, square loss
    "square_dpb": dict(name="square", kappa=1 / 5, T=5.0, lr=0.1, train_a=True, labels="real"),
    "logistic": dict(name="logistic", kappa=1.0, T=1.0, lr=0.2, train_a=True, labels="sign"),
    "square_fixed_a": dict(name="square", kappa=1.0, T=1.0, lr=0.05, train_a=False,
                           labels="real"),
}


@pytest.mark.parametrize("case", list(GD_CASES))
def test_gd_trajectory_matches_numpy(case):
    c = GD_CASES[case]
    X, y, net = problem(1, labels=c["labels"])
    steps = 200
    probes = ("loss", "pl_curvature") if c["name"] == "logistic" else DEFAULT_PROBES
    cfg = EngineConfig(loss=Loss(c["name"]), kappa=c["kappa"], lr=c["lr"], time_scale=c["T"],
                       train_second_layer=c["train_a"], probes=probes)
    res = solve(cfg, stack(net), X, y, saveat=SaveAt(record_schedule(steps, every=1)))
    L_ref, a_ref, W_ref = np_gd(net.a, net.W, X, y, steps, lr=c["lr"], T=c["T"],
                                kappa=c["kappa"], name=c["name"], train_a=c["train_a"])
    np.testing.assert_array_equal(res.steps, np.arange(steps + 1))
    assert res.records["loss"].shape == (1, steps + 1)
    assert L_ref[-1] < 0.9 * L_ref[0]  # the run actually trains
    np.testing.assert_allclose(res.records["loss"][0], L_ref, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(res.final.a[0], a_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(res.final.W[0], W_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(res.initial.a[0], net.a)
    if not c["train_a"]:
        np.testing.assert_array_equal(res.final.a[0], net.a)
    L, ga, gW = np_loss_grad(a_ref, W_ref, X, y, c["kappa"], 0.0, c["name"], "mean")
    gn = np.sum(gW**2) + (np.sum(ga**2) if c["train_a"] else 0.0)
    np.testing.assert_allclose(res.records["pl_curvature"][0, -1], c["T"] * gn / L, rtol=1e-9)
    if c["name"] == "logistic":
        return
    # probes that have a direct numpy meaning at the final point
    np.testing.assert_allclose(res.records["neuron_norm"][0, -1], np.linalg.norm(W_ref, axis=1),
                               rtol=1e-10)
    np.testing.assert_allclose(res.records["param_norm_sq"][0, -1],
                               np.sum(a_ref**2) + np.sum(W_ref**2), rtol=1e-10)
    np.testing.assert_array_equal(res.records["active_count"][0, -1],
                                  np.sum(X @ W_ref.T > 0, axis=0))
    b0 = net.a**2 - np.sum(net.W**2, axis=1)
    b = a_ref**2 - np.sum(W_ref**2, axis=1)
    np.testing.assert_allclose(res.records["balance_drift"][0, -1], np.max(np.abs(b - b0)),
                               rtol=1e-8, atol=1e-13)


# --------------------------------------------------------------------------------------------
# 4. batch invariance
# --------------------------------------------------------------------------------------------

ALL_PROBES = tuple(p for p in PROBES if TEACHER not in PROBES[p].needs)  # finite data: no teacher
R, NB, DB, PB = 32, 10, 4, 5


def _batch_nets():
    # a Python loop over keys: cheaper to compile than vmap(init.dpb) and the same networks
    return stack(*[init.dpb(k, PB, DB) for k in jax.random.split(jax.random.PRNGKey(42), R)])


@pytest.mark.parametrize("per_run_data", [False, True])
def test_run_alone_equals_run_in_batch(per_run_data):
    nets = _batch_nets()
    assert nets.W.shape == (R, PB, DB)
    rng = np.random.default_rng(5)
    if per_run_data:
        X, y = rng.normal(size=(R, NB, DB)), rng.normal(size=(R, NB))
        X5, y5 = X[5:6], y[5:6]
    else:
        X, y = rng.normal(size=(NB, DB)), rng.normal(size=NB)
        X5, y5 = X, y
    probes = ALL_PROBES
    cfg = EngineConfig(kappa=1 / PB, time_scale=PB, lr=0.1, probes=probes)
    sched = record_schedule(60, every=3)
    res = solve(cfg, nets, X, y, saveat=SaveAt(sched))
    solo = solve(cfg, take(nets, 5), X5, y5, saveat=SaveAt(sched))
    assert res.records["loss"].shape == (R, len(sched))
    assert solo.records["W"].shape == (1, len(sched), PB, DB)
    assert_same_run(res, 5, solo, 0, rtol=1e-12)
    # and run 5 is the numpy GD loop on its own data
    L_ref, _, W_ref = np_gd(nets.a[5], nets.W[5], np.asarray(X5).reshape(NB, DB),
                            np.asarray(y5).reshape(NB), 60, lr=0.1, T=PB, kappa=1 / PB)
    np.testing.assert_allclose(res.records["loss"][5], L_ref[sched], rtol=1e-10)
    np.testing.assert_allclose(res.final.W[5], W_ref, rtol=1e-10, atol=1e-12)
    # runs are different from each other (the batch is not a copy of one run)
    assert np.ptp(res.records["loss"][:, -1]) > 1e-3


# --------------------------------------------------------------------------------------------
# 5. gradient-flow consistency
# --------------------------------------------------------------------------------------------


def test_balance_drift_is_first_order_in_the_step():
    """At fixed flow time t, max_j |Δ(a_j^2 - ||w_j||^2)| = O(lr): halving lr halves it."""
    X, y, _ = problem(2)
    net = init.dpb(jax.random.PRNGKey(3), 5, 4)
    t = 2.0
    drifts = []
    for lr in (0.02, 0.01, 0.005):
        steps = round(t / lr)
        cfg = EngineConfig(lr=lr, probes=("balance_drift",))
        res = solve(cfg, stack(net), X, y, saveat=SaveAt(record_schedule(steps)))
        drifts.append(res.records["balance_drift"][0, -1])
        assert res.records["balance_drift"][0, 0] == 0.0
        # the probe is its definition evaluated on the final parameters
        b0 = np.asarray(net.a) ** 2 - np.sum(np.asarray(net.W) ** 2, axis=1)
        b = res.final.a[0] ** 2 - np.sum(res.final.W[0] ** 2, axis=1)
        np.testing.assert_allclose(drifts[-1], np.max(np.abs(b - b0)), rtol=1e-8)
    assert drifts[-1] > 1e-6
    for coarse, fine in itertools.pairwise(drifts):
        assert 1.7 < coarse / fine < 2.3, drifts


@pytest.mark.parametrize("train_a", [True, False])
def test_pl_curvature_is_minus_relative_loss_rate(train_a):
    """mu = T ||grad L||^2 / L equals -(dL/dt)/L estimated from the recorded loss (one step is lr
    units of flow time; the gradient is over the trained parameters only)."""
    p = 5
    X, y, net = problem(4, p=p)
    t_end, t_mid = 0.2, 0.1
    errors = []
    for lr in (2e-3, 1e-3):
        cfg = EngineConfig(kappa=1 / p, time_scale=p, lr=lr, train_second_layer=train_a,
                           probes=("loss", "pl_curvature"))
        steps = round(t_end / lr)
        res = solve(cfg, stack(net), X, y, saveat=SaveAt(record_schedule(steps, every=1)))
        L, mu = res.records["loss"][0], res.records["pl_curvature"][0]
        k = round(t_mid / lr)
        rate = -(L[k + 1] - L[k - 1]) / (2 * lr) / L[k]
        errors.append(abs(mu[k] - rate) / abs(mu[k]))
        assert mu[k] > 0
    assert errors[-1] < 5e-3, errors
    assert errors[-1] < 0.7 * errors[0], errors


# --------------------------------------------------------------------------------------------
# 6. early stop and divergence (one config, so the solo run compiles once)
# --------------------------------------------------------------------------------------------

LR6, STEPS6 = 0.05, 120
CFG6 = EngineConfig(lr=LR6, probes=("loss",))
SCHED6 = record_schedule(STEPS6, every=1)


def test_early_stop():
    X, y, net = problem(6)
    _, _, other = problem(7)
    L_ref, _, _ = np_gd(net.a, net.W, X, y, STEPS6, lr=LR6)
    assert np.all(np.diff(L_ref) < 0)
    k_stop = 50
    threshold = 0.5 * (L_ref[k_stop - 1] + L_ref[k_stop])  # first k with L_k < threshold: 50
    nets = stack(net, net, other)
    stop = np.array([10.0 * L_ref[0], threshold, -np.inf])
    res = solve(CFG6, nets, X, y, saveat=SaveAt(SCHED6), stop=StopWhen(loss=stop))

    # run 0: stop_loss above its starting loss -> stops at step 0, parameters untouched
    assert bool(res.status["stopped"][0]) and res.status["stop_step"][0] == 0
    np.testing.assert_array_equal(res.final.a[0], net.a)
    np.testing.assert_array_equal(res.final.W[0], net.W)
    np.testing.assert_array_equal(res.records["loss"][0], np.full(STEPS6 + 1, res.records["loss"][0, 0]))
    np.testing.assert_allclose(res.records["loss"][0, 0], L_ref[0], rtol=1e-13)

    # run 1: stops at the first step whose loss is below the threshold; frozen afterwards
    assert bool(res.status["stopped"][1]) and res.status["stop_step"][1] == k_stop
    L50, a50, W50 = np_gd(net.a, net.W, X, y, k_stop, lr=LR6)
    np.testing.assert_allclose(res.final.a[1], a50, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(res.final.W[1], W50, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(res.records["loss"][1, : k_stop + 1], L50, rtol=1e-10)
    np.testing.assert_array_equal(res.records["loss"][1, k_stop:],
                                  np.full(STEPS6 + 1 - k_stop, res.records["loss"][1, k_stop]))

    # run 2: never stops and equals its solo run
    assert not res.status["stopped"][2] and res.status["stop_step"][2] == -1
    assert not res.status["diverged"].any()
    solo = solve(CFG6, take(nets, 2), X, y, saveat=SaveAt(SCHED6))
    assert_same_run(res, 2, solo, 0, rtol=1e-12)

    # a batch whose runs are all frozen at step 0: the remaining records are copies
    frozen = solve(CFG6, take(nets, 0), X, y, saveat=SaveAt(SCHED6), stop=StopWhen(loss=stop[:1]))
    assert frozen.status["stop_step"][0] == 0
    np.testing.assert_array_equal(frozen.steps, SCHED6)
    np.testing.assert_array_equal(frozen.records["loss"],
                                  np.full((1, STEPS6 + 1), frozen.records["loss"][0, 0]))
    np.testing.assert_allclose(frozen.records["loss"][0, 0], L_ref[0], rtol=1e-13)
    np.testing.assert_array_equal(frozen.final.W[0], net.W)


def test_per_run_blocks_equal_the_whole_batch(monkeypatch):
    """Large per-run data runs in blocks of runs, each block through the whole segment (on CPU),
    and a block whose runs have all stopped skips its remaining steps. Forced on small data
    (blocks of 1, 2 and 3 of 6 runs), the records, final parameters and stop steps equal the
    unblocked batch's to rounding, and a run that stops mid-segment is the numpy GD loop up to
    its stop step, frozen afterwards."""
    from shallowflow.dynamics import compilation
    from shallowflow.model.inputs import PerRunInputs

    nR, n, d, p = 6, 12, 6, 5  # d > inputs.SMALL: the GEMM path
    rng = np.random.default_rng(8)
    X, y = rng.normal(size=(nR, n, d)), rng.normal(size=(nR, n))
    nets = Network(rng.normal(size=(nR, p)), rng.normal(size=(nR, p, d)) / np.sqrt(d))
    refs = [np_gd(nets.a[r], nets.W[r], X[r], y[r], STEPS6, lr=LR6)[0] for r in range(nR)]
    stop = np.array([-np.inf, 0.5 * (refs[1][29] + refs[1][30]), -np.inf, 10 * refs[3][0],
                     0.5 * (refs[4][69] + refs[4][70]), 0.5 * (refs[5][9] + refs[5][10])])
    sched = record_schedule(STEPS6, every=20)
    monkeypatch.setattr(compilation, "PER_RUN_MIN_BYTES", 1 << 40)  # never blocked
    whole = solve(CFG6, nets, X, y, saveat=SaveAt(sched), stop=StopWhen(loss=stop))
    np.testing.assert_array_equal(whole.status["stop_step"], [-1, 30, -1, 0, 70, 10])
    calls = []
    blocked = compilation._segment_blocked_default
    monkeypatch.setattr(compilation, "_segment_blocked_default",
                        lambda *a, **k: calls.append(a[1]) or blocked(*a, **k))
    monkeypatch.setattr(compilation, "PER_RUN_MIN_BYTES", 0)
    assert compilation._block_size(PerRunInputs(X), nR, p) == (jax.default_backend() == "cpu")
    for block in (1, 2, 3):  # the policy's blocks of one (RunInputs), and the generic blocks
        monkeypatch.setattr(compilation, "_block_size", lambda inputs, R, p, b=block: b)
        res = solve(CFG6, nets, X, y, saveat=SaveAt(sched), stop=StopWhen(loss=stop),
                       options=EngineOptions(threads=1))  # blocks of 6 runs
        assert calls and calls[-1] == block
        for r in range(nR):
            assert_same_run(whole, r, res, r, rtol=1e-12)
    _, a4, W4 = np_gd(nets.a[4], nets.W[4], X[4], y[4], 70, lr=LR6)
    np.testing.assert_allclose(res.final.a[4], a4, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(res.final.W[4], W4, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(res.records["loss"][4, 4:], refs[4][70], rtol=1e-10)


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="blocks of runs are CPU-only")
def test_blocked_segments_copy_no_batch_data(monkeypatch):
    """A segment of per-run data in blocks of one run reads each run's X and X^T where they lie:
    X^T is made once per shard (``compilation.prepared``), and no instruction of the compiled
    segment produces an array the size of the batch's data (a transposition or a copy of all of
    it, per segment, once cost about two steps per run)."""
    import re

    from shallowflow.dynamics import compilation

    nR, n, d, p = 3, 40, 8, 5
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(nR, n, d)), rng.normal(size=(nR, n))
    nets = Network(rng.normal(size=(nR, p)), rng.normal(size=(nR, p, d)) / np.sqrt(d))
    monkeypatch.setattr(compilation, "PER_RUN_MIN_BYTES", 0)
    calls = []
    blocked = compilation._segment_blocked_default
    monkeypatch.setattr(compilation, "_segment_blocked_default",
                        lambda *a, **k: calls.append(a) or blocked(*a, **k))
    solve(CFG6, nets, X, y, saveat=SaveAt(record_schedule(20, every=5)),
             options=EngineOptions(threads=2))  # shards of 2 runs
    assert len(calls) >= 2
    for _, _, _, _, _, _, _, inputs, *_ in calls:  # every shard's segments get its runs' X^T
        assert inputs.X.shape == (2, n, d)
        np.testing.assert_array_equal(np.asarray(inputs.Xt),
                                      np.asarray(inputs.X).transpose(0, 2, 1))
    calls.clear()
    solve(CFG6, nets, X, y, saveat=SaveAt(record_schedule(20, every=5)), options=EngineOptions(threads=1))
    cfg, block, *args = calls[-1]
    inputs = args[5]  # (step0, state, targets, count, measured, inputs, ...)
    assert block == 1 and inputs.Xt is not None
    np.testing.assert_array_equal(np.asarray(inputs.Xt), X.transpose(0, 2, 1))
    hlo = blocked.lower(cfg, block, *args).compile().as_text()
    made = re.findall(r"= f64\[([\d,]*)\]\S* (\S+?)\(", hlo)  # (shape, operation) of each array
    whole = [(shape, op) for shape, op in made
             if np.prod([int(v) for v in shape.split(",") if v]) == nR * n * d
             and op not in ("parameter", "bitcast", "get-tuple-element")]
    assert len(made) > 50 and not whole, whole


@pytest.mark.parametrize("layout", ["per_run_blocked", "per_run_batched", "shared",
                                    "shared_blocked"])
def test_shards_change_nothing(monkeypatch, layout):
    """Shards of runs advanced side by side in threads (the default on a CPU with several
    cores) give each run the result it gets in the whole batch: exactly where runs are
    contracted in blocks of a size fixed by the shapes (per-run data, blocks of one run; shared
    data, blocks of ``_shared_block`` runs, here forced to 2 on small data), to rounding where
    the batched products change shape. Runs that stop mid-segment, and a padded last shard (7
    runs in shards of 3, or of two blocks of 2), included."""
    from shallowflow.dynamics import compilation

    nR, n, d, p = 7, 12, 6, 5
    rng = np.random.default_rng(11)
    shared = layout.startswith("shared")
    X = rng.normal(size=(n, d)) if shared else rng.normal(size=(nR, n, d))
    y = rng.normal(size=n) if shared else rng.normal(size=(nR, n))
    nets = Network(rng.normal(size=(nR, p)), rng.normal(size=(nR, p, d)) / np.sqrt(d))
    Xr = np.broadcast_to(X, (nR, n, d)) if shared else X
    yr = np.broadcast_to(y, (nR, n)) if shared else y
    refs = [np_gd(nets.a[r], nets.W[r], Xr[r], yr[r], STEPS6, lr=LR6)[0] for r in range(nR)]
    stop = np.full(nR, -np.inf)
    stop[[1, 4, 6]] = [0.5 * (refs[r][k] + refs[r][k + 1]) for r, k in ((1, 29), (4, 69), (6, 8))]
    monkeypatch.setattr(compilation, "PER_RUN_MIN_BYTES",
                        0 if layout == "per_run_blocked" else 1 << 40)
    monkeypatch.setattr(compilation, "SHARED_MIN_BYTES",
                        0 if layout == "shared_blocked" else 1 << 40)
    monkeypatch.setattr(compilation, "SHARED_BLOCK_NEURONS", 2 * p)  # blocks of 2 runs
    blocks: list[int] = []
    blocked = compilation._segment_blocked_default
    monkeypatch.setattr(compilation, "_segment_blocked_default",
                        lambda *a, **k: blocks.append(a[1]) or blocked(*a, **k))
    exact = layout in ("per_run_blocked", "shared_blocked") and jax.default_backend() == "cpu"
    sched = record_schedule(STEPS6, every=20)
    whole = solve(CFG6, nets, X, y, saveat=SaveAt(sched), stop=StopWhen(loss=stop),
                     options=EngineOptions(threads=1))
    if exact:
        assert set(blocks) == {1 if layout == "per_run_blocked" else 2}
    np.testing.assert_array_equal(whole.status["stop_step"], [-1, 30, -1, -1, 70, -1, 9])
    for threads in (2, 3):
        seen: list[tuple[int, int]] = []
        res = solve(CFG6, nets, X, y, saveat=SaveAt(sched), stop=StopWhen(loss=stop),
                       options=EngineOptions(threads=threads),
                       progress=Progress(report=lambda done, total, seen=seen: seen.append((done, total))))
        if exact:
            for k in whole.records:
                np.testing.assert_array_equal(res.records[k], whole.records[k], err_msg=k)
            np.testing.assert_array_equal(res.final.W, whole.final.W)
            np.testing.assert_array_equal(res.final.a, whole.final.a)
        for r in range(nR):
            assert_same_run(whole, r, res, r, rtol=1e-12)
        np.testing.assert_array_equal(res.initial.W, whole.initial.W)
        assert [s for s, _ in seen] == sorted(s for s, _ in seen) and seen[-1] == (STEPS6, STEPS6)
    _, a4, W4 = np_gd(nets.a[4], nets.W[4], Xr[4], yr[4], 70, lr=LR6)  # stopped at step 70
    np.testing.assert_allclose(res.final.a[4], a4, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(res.final.W[4], W4, rtol=1e-10, atol=1e-13)


def test_shard_split():
    """Shards: consecutive runs, equal sizes (the last padded with its first run), no more
    shards than runs, and no empty shard."""
    from shallowflow.dynamics.compilation import shards

    def sizes(R, count):
        parts = shards(None, R, count)
        flat = np.concatenate([np.unique(s) for s in parts])
        np.testing.assert_array_equal(flat, np.arange(R))  # every run once, in order
        assert len({len(s) for s in parts}) == 1  # one shape
        return [len(np.unique(s)) for s in parts]

    assert sizes(25, 2) == [13, 12]
    np.testing.assert_array_equal(shards(None, 25, 2)[1], [*range(13, 25), 13])
    assert sizes(4, 3) == [2, 2]
    assert sizes(7, 3) == [3, 3, 1]
    assert sizes(1, 8) == [1]
    assert sizes(6, 1) == [6]


def test_shard_policy(monkeypatch):
    """By default only runs contracted alone (large per-run data, blocks of one run, on CPU)
    are sharded, one shard per core this process may use; small per-run data stay one batch
    (their products would change shape); large shared data are sharded in whole blocks of a
    fixed size, and a batch of fewer than two blocks stays one shard."""
    from shallowflow.dynamics import compilation
    from shallowflow.model.inputs import PerRunInputs, SharedInputs

    monkeypatch.setattr(compilation, "available_cores", lambda: [0, 1, 2])
    large = PerRunInputs(np.zeros((25, 2000, 100)))
    cpu = jax.default_backend() == "cpu"
    assert len(compilation.shards(large, 25)) == (3 if cpu else 1)
    assert len(compilation.shards(PerRunInputs(np.zeros((2, 2000, 100))), 2)) == (2 if cpu else 1)
    assert len(compilation.shards(PerRunInputs(np.zeros((25, 64, 16))), 25)) == 1
    shared = SharedInputs(np.zeros((2000, 100)), np.zeros((100, 2000)))
    parts = compilation.shards(shared, 25, p=40)  # blocks of 4 runs
    assert [len(np.unique(s)) for s in parts] == ([12, 12, 1] if cpu else [25])
    assert {len(s) for s in parts} == ({12} if cpu else {25})
    np.testing.assert_array_equal(compilation.shards(shared, 7, p=40)[0], np.arange(7))
    small = SharedInputs(np.zeros((64, 16)), np.zeros((16, 64)))
    assert len(compilation.shards(small, 25, p=10)) == 1


def test_failing_shard_stops_the_others(monkeypatch):
    """A shard that raises ends the call with its error; the other shards stop at their next
    segment instead of finishing the batch."""
    from shallowflow.dynamics import driver

    nR, n, d, p = 4, 12, 6, 5
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(nR, n, d)), rng.normal(size=(nR, n))
    nets = Network(rng.normal(size=(nR, p)), rng.normal(size=(nR, p, d)) / np.sqrt(d))
    calls = []
    real = driver.segment

    def segment(*args, **kw):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("shard failed")
        return real(*args, **kw)

    monkeypatch.setattr(driver, "segment", segment)
    sched = record_schedule(200, every=1)  # dozens of segments a shard
    with pytest.raises(RuntimeError, match="shard failed"):
        solve(CFG6, nets, X, y, saveat=SaveAt(sched), options=EngineOptions(threads=2, records_per_call=8))
    assert len(calls) <= 6  # 2 x 26 segments without the stop


def test_block_sizes():
    """The blocking policy: per-run data of at least PER_RUN_MIN_BYTES per run in blocks of one
    run (a single run too); shared data in blocks of 4, 2 or 1 runs of at most
    SHARED_BLOCK_NEURONS neurons, whatever the batch size, where the block's sample-space array
    holds SHARED_MIN_BYTES and the block divides the batch; small data never."""
    from shallowflow.dynamics.compilation import (
        PER_RUN_MIN_BYTES,
        SHARED_BLOCK_NEURONS,
        SHARED_MIN_BYTES,
        _block_size,
    )
    from shallowflow.model.inputs import PerRunInputs, SharedInputs

    def per_run(R, n, d, dtype):
        return PerRunInputs(np.zeros((R, n, d), dtype))

    def shared(n, d, dtype=np.float64):
        return SharedInputs(np.zeros((n, d), dtype), np.zeros((d, n), dtype))

    if jax.default_backend() != "cpu":
        assert _block_size(per_run(25, 2000, 100, np.float64), 25, 39) == 0
        assert _block_size(shared(1000, 100), 64, 40) == 0
        return
    assert 2000 * 100 * 4 >= PER_RUN_MIN_BYTES  # the DPB Fig. 3 shape, in float32 too
    assert _block_size(per_run(25, 2000, 100, np.float64), 25, 39) == 1
    assert _block_size(per_run(24, 2000, 100, np.float32), 24, 39) == 1
    assert _block_size(per_run(1, 2000, 100, np.float64), 1, 39) == 1  # one run: one block of one
    assert _block_size(per_run(25, 64, 16, np.float64), 25, 10) == 0  # small: one batch
    # shared data: the throughput benchmark's shape, 64 networks of p = 40 on n = 1000, d = 100
    assert 4 * 40 <= SHARED_BLOCK_NEURONS < 8 * 40
    assert 1000 * 4 * 40 * 4 >= SHARED_MIN_BYTES  # in float32 too
    assert _block_size(shared(1000, 100), 64, 40) == 4
    assert _block_size(shared(1000, 100, np.float32), 64, 40) == 4
    assert _block_size(shared(1000, 100), 4, 40) == 4  # one block
    assert _block_size(shared(1000, 100), 25, 40) == 0  # 4 does not divide 25
    assert _block_size(shared(1000, 100), 64, SHARED_BLOCK_NEURONS // 2) == 2
    assert _block_size(shared(1000, 100), 64, SHARED_BLOCK_NEURONS + 1) == 1
    assert _block_size(shared(50, 10), 64, 10) == 0  # small


def test_divergence_is_per_run():
    X, y, net = problem(0)
    big = Network(15.0 * net.a, 15.0 * net.W)  # same lr, ~200x the curvature: GD blows up
    res = solve(CFG6, stack(net, big), X, y, saveat=SaveAt(SCHED6))
    assert list(res.status["diverged"]) == [False, True]
    # diverge_step: the first step whose loss or parameters are non-finite; with a record at
    # every step the run keeps the parameters of the step before, theta_k, k = diverge_step - 1
    k = int(res.status["diverge_step"][1]) - 1
    assert k >= 1 and res.status["diverge_step"][0] == -1
    assert not res.status["stopped"].any()
    assert np.all(np.isfinite(res.final.a)) and np.all(np.isfinite(res.final.W))

    # numpy: the run is finite up to theta_k (finite loss), and the next parameters theta_{k+1}
    # have a non-finite loss or are non-finite themselves
    with np.errstate(over="ignore", invalid="ignore"):
        L_ref, a_k, W_k = np_gd(big.a, big.W, X, y, k, lr=LR6)
        L_k, ga, gW = np_loss_grad(a_k, W_k, X, y, 1.0, 0.0, "square", "mean")
        a_n, W_n = a_k - LR6 * ga, W_k - LR6 * gW
        L_n = np_loss_grad(a_n, W_n, X, y, 1.0, 0.0, "square", "mean")[0]
    assert np.all(np.isfinite(L_ref)) and np.isfinite(L_k)
    assert not (np.isfinite(L_n) and np.all(np.isfinite(a_n)) and np.all(np.isfinite(W_n)))
    # the diverged run keeps its last finite parameters theta_k
    np.testing.assert_allclose(res.final.a[1], a_k, rtol=1e-6)
    np.testing.assert_allclose(res.final.W[1], W_k, rtol=1e-6)
    np.testing.assert_allclose(res.records["loss"][1, :k], L_ref[:k], rtol=1e-6)

    # the healthy run is unaffected by its diverging neighbour
    solo = solve(CFG6, stack(net), X, y, saveat=SaveAt(SCHED6))
    assert_same_run(res, 0, solo, 0, rtol=1e-12)
    L_ok, _, W_ok = np_gd(net.a, net.W, X, y, STEPS6, lr=LR6)
    np.testing.assert_allclose(res.records["loss"][0], L_ok, rtol=1e-10)
    np.testing.assert_allclose(res.final.W[0], W_ok, rtol=1e-10, atol=1e-13)


# --------------------------------------------------------------------------------------------
# 7. SGD (all runs: 2 networks, same schedule, so compilations are shared)
# --------------------------------------------------------------------------------------------

NS, LR7, SCHED7 = 8, 0.1, record_schedule(40, every=1)
SGD_PROBES = ("loss", "a", "W")


def _sgd(nets, X, y, keys, batch_size=3, reduction="mean"):
    cfg = EngineConfig(lr=LR7, batch_size=batch_size, loss=Loss("square", reduction),
                       probes=SGD_PROBES)
    return solve(cfg, nets, X, y, saveat=SaveAt(SCHED7), keys=keys)


def test_sgd_full_batch_equals_gd():
    X, y, net = problem(8, n=NS)
    nets = stack(net, Network(-net.a, net.W))
    keys = jax.random.split(jax.random.PRNGKey(9), 2)
    gd = solve(EngineConfig(lr=LR7, probes=SGD_PROBES), nets, X, y, saveat=SaveAt(SCHED7))
    sgd = _sgd(nets, X, y, keys, batch_size=NS)
    for r in range(2):
        assert_same_run(gd, r, sgd, r, rtol=1e-10)


def test_sgd_minibatch_is_deterministic_given_key():
    X, y, net = problem(10, n=NS)
    nets = stack(net, net)
    k0, k1 = jax.random.PRNGKey(0), jax.random.PRNGKey(1)
    first = _sgd(nets, X, y, jnp.stack([k0, k1]), reduction="sum")
    again = _sgd(nets, X, y, jnp.stack([k0, k1]), reduction="sum")
    for r in range(2):
        assert_same_run(first, r, again, r, rtol=0.0)
    # same initial network, different keys: different trajectories
    assert np.max(np.abs(first.records["loss"][0] - first.records["loss"][1])) > 1e-6
    assert np.max(np.abs(first.final.W[0] - first.final.W[1])) > 1e-6
    # a run's trajectory depends on its own key, not on its position in the batch
    swapped = _sgd(nets, X, y, jnp.stack([k1, k0]), reduction="sum")
    assert_same_run(first, 0, swapped, 1, rtol=1e-12)
    assert_same_run(first, 1, swapped, 0, rtol=1e-12)

    # SGD early stop uses the full loss at record points: a threshold above L(theta_0) stops
    # the run at step 0 with its initial parameters; the other run is unaffected
    L0 = np_loss_grad(np.asarray(net.a), np.asarray(net.W), X, y, 1.0, 0.0, "square", "sum")[0]
    cfg = EngineConfig(lr=LR7, batch_size=3, loss=Loss("square", "sum"), probes=SGD_PROBES)
    stopped = solve(cfg, nets, X, y, saveat=SaveAt(SCHED7),
                       stop=StopWhen(loss=np.array([2.0 * L0, -np.inf])), keys=jnp.stack([k0, k1]))
    assert list(stopped.status["stopped"]) == [True, False]
    assert stopped.status["stop_step"][0] == 0
    np.testing.assert_array_equal(stopped.final.W[0], net.W)
    np.testing.assert_allclose(stopped.records["loss"][0], L0, rtol=1e-13)
    assert_same_run(first, 1, stopped, 1, rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_sgd_step_is_an_unbiased_minibatch_gradient(reduction):
    """Every SGD step moves along -lr * g_S for exactly one B-subset S (without replacement),
    with the unbiased weighting: (1/B) sum_S ell' (mean) or (n/B) sum_S ell' (sum)."""
    B = 3
    X, y, net = problem(12, n=NS)
    res = _sgd(stack(net, net), X, y, jax.random.split(jax.random.PRNGKey(3), 2), B, reduction)
    a_rec, W_rec = res.records["a"][0], res.records["W"][0]
    np.testing.assert_array_equal(a_rec[0], net.a)
    subsets = [list(S) for S in itertools.combinations(range(NS), B)]
    for k in (0, 1, 17):
        a_k, W_k = a_rec[k], W_rec[k]
        da, dW = (a_k - a_rec[k + 1]) / LR7, (W_k - W_rec[k + 1]) / LR7
        matches = []
        for S in subsets:
            _, ga, gW = np_loss_grad(a_k, W_k, X[S], y[S], 1.0, 0.0, "square", reduction)
            if reduction == "sum":
                ga, gW = ga * NS / B, gW * NS / B
            if np.allclose(ga, da, rtol=1e-8, atol=1e-11) and np.allclose(gW, dW, rtol=1e-8,
                                                                           atol=1e-11):
                matches.append(S)
        assert len(matches) == 1, (k, matches)
        _, ga_full, _ = np_loss_grad(a_k, W_k, X, y, 1.0, 0.0, "square", reduction)
        assert not np.allclose(da, ga_full)  # a true minibatch, not the full gradient
