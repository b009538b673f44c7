"""Dead neurons leave the step loop (dynamics.live, docs/math.md §0.3): the narrowed step gives
the full step's trajectory to rounding, dead neurons never move, and the choice of neurons is
what a brute-force search says."""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

from shallowflow.data import orthogonal
from shallowflow.dynamics import (
    EngineConfig,
    EngineOptions,
    SaveAt,
    StopWhen,
    live,
    record_schedule,
    solve,
)
from shallowflow.model.activations import Activation
from shallowflow.model.losses import Loss
from shallowflow.model.network import Network

THREE_X = np.array([[-0.75, 1.0], [-0.5, 1.0], [0.125, 1.0]])  # BF's 3 points with a bias
THREE_Y = np.array([1.1, 0.1, 0.8])


def balanced(R: int, p: int, d: int, scale: float, seed: int) -> Network:
    """Gaussian w_j, a_j = +-||w_j||: on the 3-point data about 38 % start dead and most of the
    negative neurons die during the alignment phase (docs/math.md §2)."""
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(R, p, d)) * scale
    a = np.linalg.norm(W, axis=2) * np.where(rng.random((R, p)) < 0.5, 1.0, -1.0)
    return Network(a, W)


def half_dead(R: int, p: int, X: np.ndarray, seed: int) -> Network:
    """Random networks on data with positive entries whose even neurons point into the negative
    orthant: those are dead on every sample from the start."""
    assert (X > 0).all()
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(R, p, X.shape[-1]))
    W[:, ::2] = -np.abs(W[:, ::2])
    return Network(rng.normal(size=(R, p)), W)


def dead_at(W: np.ndarray, X: np.ndarray) -> np.ndarray:
    """(R, p): neurons inactive on every sample (X (n, d) or (R, n, d))."""
    Z = np.einsum("rpd,nd->rpn", W, X) if X.ndim == 2 else np.einsum("rpd,rnd->rpn", W, X)
    return (Z <= 0).all(axis=2)


def numpy_gd(a: np.ndarray, W: np.ndarray, X: np.ndarray, y: np.ndarray, lr: float,
             steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Plain GD on L = (1/2n) sum_i (sum_j a_j relu(<w_j, x_i>) - y_i)^2, one network."""
    a, W = a.copy(), W.copy()
    n = len(y)
    for _ in range(steps):
        Z = X @ W.T  # (n, p)
        g = (np.maximum(Z, 0) @ a - y) / n
        grad_a = np.maximum(Z, 0).T @ g
        grad_W = a[:, None] * (((Z > 0) * g[:, None]).T @ X)
        a, W = a - lr * grad_a, W - lr * grad_W
    return a, W


def test_widths_are_a_short_decreasing_ladder():
    for p in (1, 2, 6, 7, 100, 20_000):
        w = live.widths(p)
        assert w[0] == p and w[-1] == 1 and all(u > v for u, v in itertools.pairwise(w))
        assert len(w) <= 2 * np.log2(p) + 2
    w = [v for v in live.widths(2**14) if v >= 16]
    assert max(u / v for u, v in itertools.pairwise(w)) <= 1.5  # steps of 4/3 and 3/2


def test_choose_against_brute_force():
    rng = np.random.default_rng(0)
    R, p, n = 4, 37, 5
    for _ in range(30):
        alive = rng.random((R, p)) < rng.uniform(0.02, 0.9)
        need = alive.sum(axis=1).max()
        best = min(w for w in live.widths(p) if w >= max(need, 1))
        idx = live.choose(alive, p, 10**9, n, "on")
        if best == p:
            assert idx is None
            continue
        assert idx.shape == (R, best)
        for r in range(R):
            assert len(set(idx[r])) == best and (np.diff(idx[r]) > 0).all()
            assert set(np.flatnonzero(alive[r])) <= set(idx[r])
        assert live.choose(alive, best, 10**9, n, "on") is None  # no narrower width holds them
        assert live.choose(alive, p, 10**9, n, "off") is None
    alive = np.zeros((1, 1000), bool)
    alive[0, :10] = True
    saving = 1 * n * (1000 - live.widths(1000)[-1])  # sample-neuron steps saved per step at w = 10
    few = int(live.MIN_PAIR_STEPS / saving / 2)
    assert live.choose(alive, 1000, few, n, "auto") is None  # not worth a recompilation
    assert live.choose(alive, 1000, 4 * few, n, "auto") is not None


def three_point(R: int, p: int) -> tuple[Network, np.ndarray, np.ndarray]:
    return balanced(R, p, 2, 1e-3, seed=1), THREE_X, THREE_Y


def per_run(R: int, p: int):
    rng = np.random.default_rng(2)
    X = np.abs(rng.normal(size=(R, 6, 4)))
    return half_dead(R, p, X[0], 3), X, rng.normal(size=(R, 6))


def shared_sgd(R: int, p: int):
    rng = np.random.default_rng(4)
    X = np.abs(rng.normal(size=(8, 5)))
    return half_dead(R, p, X, 5), X, rng.normal(size=8)


def diagonal(R: int, p: int):
    X, y = (np.asarray(v) for v in orthogonal(jax.random.PRNGKey(6), 4, 10))
    rng = np.random.default_rng(7)
    W = rng.normal(size=(R, p, 10))
    W[:, ::2] = -np.abs(rng.normal(size=(R, p // 2, 4))) @ X  # <w_j, x_i> = -c ||x_i||^2 < 0
    return Network(rng.normal(size=(R, p)), W), X, y


LAYOUTS = {
    "shared": (three_point, {}, {}),
    "onedim": (three_point, {"onedim": True}, {}),
    "per_run": (per_run, {}, {}),
    "sgd": (shared_sgd, {"batch_size": 4}, {}),
    "diagonal_mask": (diagonal, {"activity_mask": True}, {"span": True}),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_narrowed_step_equals_full_step_to_rounding(layout):
    """Records, statuses and final parameters with the dead neurons skipped ("on") equal those
    of the full step ("off") to rounding; the dead neurons never moved, in both."""
    make, cfg_kw, sim_kw = LAYOUTS[layout]
    R, p = 3, 40
    net0, X, y = make(R, p)
    cfg = EngineConfig(lr=0.01, probes=("loss", "a", "W", "pl_curvature"), **cfg_kw)
    sched = record_schedule(3000, points=40)
    on = solve(cfg, net0, X, y, saveat=SaveAt(sched),
                  options=EngineOptions(records_per_call=4, skip_dead="on", **sim_kw))
    off = solve(cfg, net0, X, y, saveat=SaveAt(sched),
                   options=EngineOptions(records_per_call=4, skip_dead="off", **sim_kw))
    assert set(off.widths) == {p} and min(on.widths) < p, on.widths
    loss0 = off.records["loss"][:, :1]
    for name in ("loss", "a", "W"):
        ref = off.records[name]
        np.testing.assert_allclose(on.records[name], ref, rtol=1e-12,
                                   atol=1e-13 * np.abs(ref).max(), err_msg=name)
    # mu = T ||grad L||^2 / L: a ratio of rounding-size numbers once L is near 0
    big = off.records["loss"] > 1e-6 * loss0
    np.testing.assert_allclose(on.records["pl_curvature"][big], off.records["pl_curvature"][big],
                               rtol=1e-9)
    for name in off.status:
        np.testing.assert_array_equal(on.status[name], off.status[name], err_msg=name)
    np.testing.assert_allclose(on.final.W, off.final.W, rtol=1e-12, atol=1e-14)
    if not sim_kw.get("span"):  # (in the span basis W is rebuilt from its coordinates)
        dead = dead_at(np.asarray(net0.W), X)
        assert dead.any()
        for res in (on, off):
            np.testing.assert_array_equal(res.final.W[dead], np.asarray(net0.W)[dead])
            np.testing.assert_array_equal(res.final.a[dead], np.asarray(net0.a)[dead])


def test_narrowed_step_against_numpy_gd():
    """Two runs on the 3-point data, most neurons dead by the end: the engine with the dead
    neurons skipped follows a plain numpy GD loop to 1e-10."""
    R, p, steps, lr = 2, 60, 4000, 0.05
    net0 = balanced(R, p, 2, 0.3, seed=8)
    cfg = EngineConfig(lr=lr, probes=("loss",))
    res = solve(cfg, net0, THREE_X, THREE_Y, saveat=SaveAt(record_schedule(steps, points=30)),
                   options=EngineOptions(records_per_call=3, skip_dead="on"))
    assert min(res.widths) < p, res.widths
    for r in range(R):
        a, W = numpy_gd(net0.a[r], net0.W[r], THREE_X, THREE_Y, lr, steps)
        np.testing.assert_allclose(res.final.a[r], a, rtol=0, atol=1e-10)
        np.testing.assert_allclose(res.final.W[r], W, rtol=0, atol=1e-10)


def test_stopping_and_rebatching_with_narrowed_steps():
    """Runs that stop at different times leave the batch (re-batching) while the dead neurons
    are skipped: statuses equal those of the full step, records agree to rounding."""
    R, p = 6, 30
    net0 = balanced(R, p, 2, 0.3, seed=9)
    cfg = EngineConfig(lr=0.05, probes=("loss", "a"))
    sched = record_schedule(3000, every=50)
    free = solve(cfg, net0, THREE_X, THREE_Y, saveat=SaveAt(sched),
                    options=EngineOptions(skip_dead="off")).records["loss"]
    at = np.linspace(5, len(sched) - 5, R - 1).astype(int)
    stop = np.array([free[r, k] * (1 + 1e-6) for r, k in enumerate(at)] + [-np.inf])
    kw = {"saveat": SaveAt(sched), "stop": StopWhen(loss=stop)}
    on = solve(cfg, net0, THREE_X, THREE_Y,
                  options=EngineOptions(records_per_call=3, skip_dead="on"), **kw)
    off = solve(cfg, net0, THREE_X, THREE_Y,
                   options=EngineOptions(records_per_call=3, skip_dead="off"), **kw)
    assert min(on.widths) < p
    np.testing.assert_array_equal(on.status["stop_step"], off.status["stop_step"])
    np.testing.assert_allclose(on.records["loss"], off.records["loss"], rtol=1e-12,
                               atol=1e-14 * off.records["loss"][:, 0].max())
    np.testing.assert_allclose(on.final.W, off.final.W, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kind", ["lognorm", "leaky"])
def test_never_narrowed_where_dead_neurons_move(kind):
    """The log-norm step renormalises u_j (a dead neuron moves by rounding) and a leaky ReLU
    neuron is never dead: the step keeps every neuron even with skip_dead = "on"."""
    net0 = balanced(2, 20, 2, 1e-3, seed=10)
    kw = ({"parametrisation": "lognorm"} if kind == "lognorm"
          else {"activation": Activation(0.1)})
    cfg = EngineConfig(lr=0.05, probes=("loss",), loss=Loss(), **kw)
    res = solve(cfg, net0, THREE_X, THREE_Y, saveat=SaveAt(record_schedule(200, points=10)),
                   options=EngineOptions(skip_dead="on"),
                   log_lambda=np.zeros(2) if kind == "lognorm" else None)
    assert set(res.widths) == {20}


def test_check_steps():
    """Powers of two below the budget, or every k steps below it; never 0 or the budget."""
    np.testing.assert_array_equal(live.check_steps(100), [1, 2, 4, 8, 16, 32, 64])
    np.testing.assert_array_equal(live.check_steps(64), [1, 2, 4, 8, 16, 32])
    np.testing.assert_array_equal(live.check_steps(1000, 300), [300, 600, 900])
    np.testing.assert_array_equal(live.check_steps(900, 300), [300, 600])
    for total in (0, 1):
        assert live.check_steps(total).size == 0 and live.check_steps(total, 5).size == 0
    with pytest.raises(ValueError, match="dead_check_every"):
        EngineOptions(dead_check_every=0)


@pytest.mark.parametrize("every", [None, 700])
def test_run_recorded_at_start_and_end_narrows_later(every):
    """Records at steps 0 and T only: the driver still looks for dead neurons on its own
    schedule, so the step narrows after step 0 as neurons die in the alignment phase; the end
    state and both records equal the full step's to rounding, the dead neurons never moved,
    and the statuses (a gradient stop tested at record points only) are the same."""
    R, p, steps = 2, 60, 4000
    net0 = balanced(R, p, 2, 1e-3, seed=8)  # about 45 % live at first, 25 % after the alignment
    cfg = EngineConfig(lr=0.05, probes=("loss", "a", "W"))
    kw = {"saveat": SaveAt(np.array([0, steps])), "stop": StopWhen(grad=np.full(R, 1e-3))}
    on = solve(cfg, net0, THREE_X, THREE_Y, **kw,
               options=EngineOptions(skip_dead="on", dead_check_every=every))
    off = solve(cfg, net0, THREE_X, THREE_Y, **kw, options=EngineOptions(skip_dead="off"))
    assert set(off.widths) == {p} and len(off.widths) == 1  # one segment: no check steps
    assert len(on.widths) > 2 and min(on.widths[1:]) < on.widths[0], on.widths
    dead_end = dead_at(np.asarray(off.final.W), THREE_X)
    assert dead_end.sum(axis=1).min() > dead_at(np.asarray(net0.W), THREE_X).sum(axis=1).max()
    for name in ("loss", "a", "W"):
        ref = off.records[name]
        np.testing.assert_allclose(on.records[name], ref, rtol=1e-12,
                                   atol=1e-14 * np.abs(ref).max(), err_msg=name)
    np.testing.assert_allclose(on.final.W, off.final.W, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(on.final.a, off.final.a, rtol=1e-12, atol=1e-14)
    for name in off.status:
        np.testing.assert_array_equal(on.status[name], off.status[name], err_msg=name)
    dead0 = dead_at(np.asarray(net0.W), THREE_X)
    for res in (on, off):  # dead for good: the neurons dead at the start never moved
        np.testing.assert_array_equal(res.final.W[dead0], np.asarray(net0.W)[dead0])
        np.testing.assert_array_equal(res.final.a[dead0], np.asarray(net0.a)[dead0])
    for r in range(R):  # and both follow a plain numpy GD loop
        a, W = numpy_gd(net0.a[r], net0.W[r], THREE_X, THREE_Y, 0.05, steps)
        np.testing.assert_allclose(on.final.a[r], a, rtol=0, atol=1e-10)
        np.testing.assert_allclose(on.final.W[r], W, rtol=0, atol=1e-10)


def test_check_steps_are_no_record_points():
    """Check steps change no step and test no stop rule: with dead neurons skipped (skip_dead
    "on", checks every 50th step) or not (no check steps at all), records and ends agree to
    rounding, and a gradient stop whose threshold the runs pass before the first check step ends
    them at the first record point after step 0 (1000) in both, not at a check step."""
    R, p, steps = 2, 40, 3000
    net0 = balanced(R, p, 2, 0.3, seed=11)
    cfg = EngineConfig(lr=0.05, probes=("loss",))
    sched = record_schedule(steps, every=1000)
    stop = StopWhen(grad=np.full(R, 1.0))  # passed long before the first record after 0
    runs = [solve(cfg, net0, THREE_X, THREE_Y, saveat=SaveAt(sched), stop=stop,
                  options=EngineOptions(skip_dead=s, dead_check_every=e))
            for s, e in (("on", 50), ("off", None))]
    np.testing.assert_array_equal(runs[0].status["end_step"], [1000] * R)
    np.testing.assert_array_equal(runs[0].status["stop_reason"], ["gradient"] * R)
    for name in runs[1].status:
        np.testing.assert_array_equal(runs[0].status[name], runs[1].status[name], err_msg=name)
    np.testing.assert_allclose(runs[0].records["loss"], runs[1].records["loss"], rtol=1e-12)
    # segments end at each check step 50, 100, ..., 950 and at the record 1000, where every
    # run has stopped: 20 segments, against 1 without checks (0..1000; then all are frozen)
    assert len(runs[0].widths) == 20 and len(runs[1].widths) == 1
