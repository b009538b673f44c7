"""Limit saddle-to-saddle process (Algorithm 1, docs/math.md §3.3-3.6): hand vector, an independent
loop-based reference, invariances, convergence of tiny-initialisation gradient descent, Assumption 4
and Proposition 2(i), and a large instance."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from shallowflow.model.losses import Loss
from shallowflow.theory.activation_mask import (
    activation_mask,
    assumption4_probability_bound,
    check_assumption4,
    check_orthonormal,
    minority_count,
)
from shallowflow.theory.interpolator_norms import (
    learned_norm_sq,
    min_norm_interpolator,
    min_norm_sq,
    norm_ratio,
)
from shallowflow.theory.saddle_process import (
    from_run,
    limit_process,
    loss_constant,
    loss_normaliser,
)
from shallowflow.training.overlays import saddle_process_from_experiment as from_experiment

ROOT = Path(__file__).resolve().parents[1]

# docs/math.md §3.6: X = I_4, y = (3, 4, 1, 2), s = (+1, +1), c_L = 1/4, A_1 = {1, 2}, A_2 = {2, 3, 4}
HAND_X = np.eye(4)
HAND_Y = np.array([3.0, 4.0, 1.0, 2.0])
HAND_S = np.array([1.0, 1.0])
HAND_DIR = np.array([[1.0, 1.0, -1.0, -1.0], [-1.0, 1.0, 1.0, 1.0]]) / 2.0


def hand_values() -> dict[str, float]:
    """The §3.6 numbers, derived by hand from eqs.9-14 (0-based neurons: 0 fits {0, 1} first)."""
    beta1, beta2 = 0.25 * 5.0, 0.25 * math.sqrt(16 + 1 + 4)  # c_L ||D||: ||(3,4)|| = 5, ||(4,1,2)||
    tau1 = 1.0 / beta1  # exponent -1 + beta1 t reaches 0
    e2 = -1.0 + beta2 * tau1  # = -1 + sqrt(21)/5
    beta2b = 0.25 * math.sqrt(1 + 4)  # after {0, 1} is fitted neuron 1 keeps {2, 3}
    return {"beta1": beta1, "beta2": beta2, "tau1": tau1, "e2": e2, "beta2b": beta2b,
            "tau2": tau1 + (-e2) / beta2b}


# --------------------------------------------------------------------------- hand vector §3.6
@pytest.mark.parametrize("X", [HAND_X, None], ids=["X=I", "X=None"])
def test_hand_vector_of_math_md(X):
    h = hand_values()
    # the closed forms agree with docs/math.md's printed decimals
    assert h["beta2"] == pytest.approx(math.sqrt(21) / 4) == pytest.approx(1.14564, abs=1e-5)
    assert h["e2"] == pytest.approx(-0.0834849, abs=1e-7)
    assert h["beta2b"] == pytest.approx(math.sqrt(5) / 4)
    assert h["tau2"] == pytest.approx(0.8 + 0.0834849 / (math.sqrt(5) / 4), abs=1e-6)
    assert h["tau2"] == pytest.approx(0.949342, abs=1e-6)

    p = limit_process(X, HAND_Y, HAND_S, HAND_DIR, c_L=0.25)
    np.testing.assert_array_equal(p.mask, [[1, 0], [1, 1], [0, 1], [0, 1]])
    assert p.K == 2
    np.testing.assert_array_equal(p.sequence, [0, 1])
    np.testing.assert_allclose(p.tau, [h["tau1"], h["tau2"]], rtol=1e-14)
    np.testing.assert_allclose(p.slopes, [[h["beta1"], h["beta2"]], [0.0, h["beta2b"]], [0, 0]],
                               rtol=1e-14)
    np.testing.assert_allclose(p.exponents, [[-1, -1], [0, h["e2"]], [0, 0]], rtol=1e-13)
    # c_L = 1/4 with n = 4 is the 1/(2n) convention: plateaus 30/8 -> 5/8 -> 0
    np.testing.assert_allclose(p.losses, [3.75, 0.625, 0.0], rtol=1e-14, atol=1e-15)
    assert p.loss_normaliser == 1 / 8 == loss_normaliser("square", 4)
    np.testing.assert_allclose(p.a_final, [math.sqrt(5), 5**0.25], rtol=1e-14)
    np.testing.assert_allclose(p.W_final, [[3 / math.sqrt(5), 4 / math.sqrt(5), 0, 0],
                                           [0, 0, 1 / 5**0.25, 2 / 5**0.25]], rtol=1e-14)
    np.testing.assert_allclose(p.a[1], [math.sqrt(5), 0.0])  # saddle theta^(1)
    np.testing.assert_allclose(p.W[1, 1], 0.0)
    np.testing.assert_array_equal(p.fitted_by, [0, 0, 1, 1])
    assert [s.tolist() for s in p.fitted_sets()] == [[0, 1], [2, 3]]
    np.testing.assert_allclose(p.output, HAND_Y, rtol=1e-14)
    assert learned_norm_sq(p) == pytest.approx(2 * (5 + math.sqrt(5)), rel=1e-14)
    assert learned_norm_sq(p) == pytest.approx(np.sum(p.a_final**2) + np.sum(p.W_final**2), rel=1e-14)
    assert learned_norm_sq(p) == pytest.approx(14.4721, abs=1e-4)
    assert min_norm_sq(HAND_Y) == pytest.approx(2 * math.sqrt(30), rel=1e-14)
    assert min_norm_sq(HAND_Y) == pytest.approx(10.9545, abs=1e-4)
    assert norm_ratio(p) == pytest.approx((5 + math.sqrt(5)) / math.sqrt(30), rel=1e-14)
    assert p.report.ok and p.report.argmin_unique


def test_hand_vector_curves_and_dataset():
    h = hand_values()
    p = limit_process(HAND_X, HAND_Y, HAND_S, HAND_DIR, c_L=0.25)
    t = np.array([0.0, 0.5, h["tau1"], 0.9, 2.0])
    c = p.curves(t)
    np.testing.assert_allclose(c.loss, [3.75, 3.75, 0.625, 0.625, 0.0], atol=1e-15)
    expected = [[-1, -1], [-1 + 0.5 * h["beta1"], -1 + 0.5 * h["beta2"]], [0, h["e2"]],
                [0, h["e2"] + 0.1 * h["beta2b"]], [0, 0]]
    np.testing.assert_allclose(c.log_norm_exponent, expected, rtol=1e-13, atol=1e-15)
    assert "time" not in c.coords and "log_norm" not in c
    np.testing.assert_array_equal(c.time_accelerated, t)
    log_lam = math.log(1e-100)
    c = p.curves(t, log_lambda=log_lam)
    np.testing.assert_allclose(c.time, t * 100 * math.log(10), rtol=1e-15)
    # unfitted: log||w|| = e log(1/lambda); fitted: log ||D||^{1/2}
    np.testing.assert_allclose(c.log_norm[1], np.array(expected[1]) * -log_lam, rtol=1e-13)
    np.testing.assert_allclose(c.log_norm[3], [0.5 * math.log(5), (h["e2"] + 0.1 * h["beta2b"])
                                               * -log_lam], rtol=1e-13)
    np.testing.assert_allclose(c.log_norm[4], [0.5 * math.log(5), 0.5 * math.log(math.sqrt(5))])
    ds = p.to_dataset()
    assert dict(ds.sizes) == {"jump": 3, "neuron": 2, "dim": 4, "sample": 4}
    np.testing.assert_allclose(ds.jump_time, [0, h["tau1"], h["tau2"]], rtol=1e-14)
    np.testing.assert_array_equal(ds.jump_neuron, [-1, 0, 1])
    np.testing.assert_allclose(ds.loss_after, [3.75, 0.625, 0], atol=1e-15)
    np.testing.assert_allclose(ds.W.isel(jump=-1), p.W_final)
    assert ds.attrs["assumption4_ok"] == 1


def test_loss_conventions_scale_times_and_plateaus():
    """c_L = 2 c T (docs/math.md §3.1): 'mse' halves every time and doubles every plateau."""
    assert loss_constant("square", 4) == 0.25
    assert loss_constant("mse", 4) == 0.5
    assert loss_constant("square", 4, time_scale=3.0) == 0.75
    assert loss_constant("mse", 4, reduction="sum") == 2.0
    assert loss_normaliser("square", 4) == Loss("square").quadratic_coefficient(4) == 1 / 8
    assert Loss("mse", "sum").quadratic_coefficient(4) == 1.0
    with pytest.raises(ValueError, match="loss: 'logistic' is not a square loss"):
        Loss("logistic").quadratic_coefficient(4)
    sq = limit_process(HAND_X, HAND_Y, HAND_S, HAND_DIR, loss_constant("square", 4),
                       loss_normaliser("square", 4))
    mse = limit_process(HAND_X, HAND_Y, HAND_S, HAND_DIR, loss_constant("mse", 4),
                        loss_normaliser("mse", 4))
    np.testing.assert_allclose(mse.tau, sq.tau / 2, rtol=1e-14)
    np.testing.assert_allclose(mse.losses, 2 * sq.losses, rtol=1e-14)
    np.testing.assert_allclose(mse.W_final, sq.W_final, rtol=1e-14)
    with pytest.raises(ValueError, match="square loss"):
        loss_constant("logistic", 4)
    with pytest.raises(ValueError, match="time_scale"):
        loss_constant("square", 4, time_scale=0.0)


# --------------------------------------------------------------------- independent reference
def reference_process(X, y, s, directions, c_L):
    """Algorithm 1 written plainly from docs/math.md §3.4 with Python sets and loops."""
    n, m = len(y), len(s)
    A = [{i for i in range(n) if X[i] @ directions[j] > 0 and s[j] * y[i] > 0} for j in range(m)]
    U, F = set(range(n)), set()
    e, t = [-1.0] * m, 0.0
    taus, seq, exps, slopes = [], [], [list(e)], []
    a, W = np.zeros(m), np.zeros((m, X.shape[1]))
    fitted_by = [-1] * n
    losses = [sum(y[i] ** 2 for i in U) / 2 * c_L]
    while True:
        beta = [0.0] * m
        for j in range(m):
            if j not in F:
                D = sum((abs(y[i]) * X[i] for i in A[j] & U), np.zeros(X.shape[1]))
                beta[j] = c_L * np.linalg.norm(D)
        slopes.append(beta)
        cand = {j: t + (-e[j]) / beta[j] for j in range(m) if j not in F and beta[j] > 0}
        if not cand:
            break
        j = min(cand, key=lambda k: (cand[k], k))
        t_new = cand[j]
        for k in range(m):
            if k not in F:
                e[k] += beta[k] * (t_new - t)
        e[j] = 0.0
        S = A[j] & U
        D = sum((abs(y[i]) * X[i] for i in S), np.zeros(X.shape[1]))
        W[j] = D / np.linalg.norm(D) ** 0.5
        a[j] = s[j] * np.linalg.norm(D) ** 0.5
        for i in S:
            fitted_by[i] = j
        U -= S
        F.add(j)
        t = t_new
        taus.append(t)
        seq.append(j)
        exps.append(list(e))
        losses.append(sum(y[i] ** 2 for i in U) / 2 * c_L)
    return dict(tau=taus, sequence=seq, exponents=exps, slopes=slopes, a=a, W=W,
                fitted_by=fitted_by, losses=losses)


def random_problem(seed, n, d, m):
    rng = np.random.default_rng(seed)
    X = np.linalg.qr(rng.standard_normal((d, n)))[0].T  # n orthonormal rows in R^d
    y = rng.standard_normal(n)
    s = rng.choice([-1.0, 1.0], m)
    directions = rng.standard_normal((m, d)) * rng.uniform(0.1, 10.0, (m, 1))
    return X, y, s, directions, rng.uniform(0.01, 2.0)


@pytest.mark.parametrize(("seed", "n", "d", "m"),
                         [(7, 10, 10, 5), (1, 30, 40, 6), (2, 60, 60, 12), (3, 200, 200, 20),
                          (4, 150, 220, 17), (5, 5, 9, 20)])
def test_agrees_with_loop_reference(seed, n, d, m):
    X, y, s, directions, c_L = random_problem(seed, n, d, m)
    p = limit_process(X, y, s, directions, c_L)
    ref = reference_process(X, y, s, directions, c_L)
    assert p.K == len(ref["tau"]) > 0
    np.testing.assert_array_equal(p.sequence, ref["sequence"])
    np.testing.assert_allclose(p.tau, ref["tau"], rtol=1e-11)
    np.testing.assert_allclose(p.exponents, ref["exponents"], rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(p.slopes, ref["slopes"], rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(p.losses, ref["losses"], rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(p.a_final, ref["a"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(p.W_final, ref["W"], rtol=1e-11, atol=1e-12)
    np.testing.assert_array_equal(p.fitted_by, ref["fitted_by"])
    assert learned_norm_sq(p) == pytest.approx(np.sum(ref["a"] ** 2) + np.sum(ref["W"] ** 2), rel=1e-12)
    # invariants: the final saddle fits exactly its fitted points; saddles are balanced
    out = np.sum(p.a_final[None] * np.maximum(X @ p.W_final.T, 0.0), axis=1)
    np.testing.assert_allclose(out, p.output, atol=1e-12)
    np.testing.assert_allclose(p.a_final**2, np.sum(p.W_final**2, axis=1), rtol=1e-12)
    assert np.all(np.diff(p.tau) > 0) and np.all(np.diff(p.losses) < 0)
    assert learned_norm_sq(p) >= min_norm_sq(y[p.fitted_by >= 0]) * (1 - 1e-12)


def test_identity_shortcut_equals_explicit_identity():
    rng = np.random.default_rng(9)
    n, m = 40, 9
    y, s, W = rng.standard_normal(n), rng.choice([-1.0, 1.0], m), rng.standard_normal((m, n))
    p, q = limit_process(np.eye(n), y, s, W, 0.3), limit_process(None, y, s, W, 0.3)
    for name in ("tau", "sequence", "exponents", "slopes", "losses", "a_final", "W_final",
                 "fitted_by", "mask"):
        np.testing.assert_array_equal(getattr(p, name), getattr(q, name), err_msg=name)


# ------------------------------------------------------------------------------- invariances
def test_permutation_and_rotation_invariance():
    X, y, s, directions, c_L = random_problem(11, 50, 64, 10)
    base = limit_process(X, y, s, directions, c_L)
    rng = np.random.default_rng(12)
    # samples
    P = rng.permutation(50)
    q = limit_process(X[P], y[P], s, directions, c_L)
    np.testing.assert_allclose(q.tau, base.tau, rtol=1e-12)
    np.testing.assert_array_equal(q.sequence, base.sequence)
    np.testing.assert_array_equal(q.fitted_by, base.fitted_by[P])
    np.testing.assert_allclose(q.W_final, base.W_final, rtol=1e-12, atol=1e-14)
    # neurons
    pi = rng.permutation(10)
    q = limit_process(X, y, s[pi], directions[pi], c_L)
    inv = np.argsort(pi)
    np.testing.assert_allclose(q.tau, base.tau, rtol=1e-12)
    np.testing.assert_array_equal(q.sequence, inv[base.sequence])
    np.testing.assert_allclose(q.a_final, base.a_final[pi], rtol=1e-12)
    np.testing.assert_allclose(q.exponents, base.exponents[:, pi], rtol=1e-12)
    np.testing.assert_array_equal(q.fitted_by, np.where(base.fitted_by < 0, -1,
                                                        inv[base.fitted_by]))
    # rotation of the ambient space
    Q = np.linalg.qr(rng.standard_normal((64, 64)))[0]
    q = limit_process(X @ Q, y, s, directions @ Q, c_L)
    np.testing.assert_allclose(q.tau, base.tau, rtol=1e-12)
    np.testing.assert_array_equal(q.sequence, base.sequence)
    np.testing.assert_allclose(q.W_final, base.W_final @ Q, atol=1e-12)
    np.testing.assert_allclose(q.a_final, base.a_final, rtol=1e-12)


# ------------------------------------------------------------- convergence of gradient descent
def crossing_times(loss, t_acc, plateaus):
    """Accelerated time at which the simulated loss first falls below the midpoint of each pair
    of consecutive limit plateaus (linear interpolation between records)."""
    out = []
    for hi, lo in itertools.pairwise(plateaus):
        mid = 0.5 * (hi + lo)
        k = int(np.argmax(loss < mid))
        assert k > 0 and loss[k] < mid
        out.append(t_acc[k - 1] + (t_acc[k] - t_acc[k - 1]) * (loss[k - 1] - mid)
                   / (loss[k - 1] - loss[k]))
    return np.array(out)


LAMBDAS = (1e-50, 1e-100, 1e-200)
# Gradient descent is the Euler scheme of the flow: it moves each jump by about lr beta / 2
# relative (beta the exponent slope), i.e. by ~ tau lr beta log(1/lambda) / 2 in |error| log(1/lambda).
# lr = 1e-3 keeps that part below ~0.25 at lambda = 1e-200; the rest is the O(1/log(1/lambda)) error
# of the flow itself (docs/math.md §3.4: about 0.42 for the first hand-vector jump).
GD_LR = 1e-3
PRODUCT_BOUND = 1.0


def check_convergence(p, runs, label):
    """runs: [(lambda, loss (T,), t_acc (T,), W_final, a_final)]; returns the products."""
    products = []
    for lam, loss, t_acc, W, a in runs:
        L = -math.log(lam)
        err = crossing_times(loss, t_acc, p.losses) - p.tau
        products.append(np.abs(err) * L)
        print(f"{label} lambda={lam:.0e}: |error| log(1/lambda) per jump = "
              f"{np.array2string(np.abs(err) * L, precision=3)}, relative {np.abs(err / p.tau).max():.2e}")
        assert np.all(np.abs(err) * L < PRODUCT_BOUND)
        if lam == LAMBDAS[-1]:
            assert np.all(np.abs(err) < 0.01 * p.tau)
            np.testing.assert_allclose(W, p.W_final, atol=1e-6)
            np.testing.assert_allclose(a, p.a_final, atol=1e-6)
    return products


def test_gradient_descent_converges_to_the_hand_vector_process():
    from shallowflow.dynamics import EngineConfig, EngineOptions, SaveAt, record_schedule, solve
    from shallowflow.model.network import Network

    p = limit_process(HAND_X, HAND_Y, HAND_S, HAND_DIR, c_L=0.25)
    log_lambda = np.log(np.array(LAMBDAS))
    steps = int(1.2 * p.tau[-1] * -log_lambda.min() / GD_LR)
    sched = record_schedule(steps, every=200)
    net = Network(np.tile(HAND_S, (3, 1)), np.tile(HAND_DIR, (3, 1, 1)))
    cfg = EngineConfig(lr=GD_LR, parametrisation="lognorm", tied_balance=True, activity_mask=True,
                       probes=("loss",))
    r = solve(cfg, net, HAND_X, HAND_Y, saveat=SaveAt(sched), options=EngineOptions(span=True),
                 log_lambda=log_lambda)
    runs = [(lam, r.records["loss"][i], sched * GD_LR / -log_lambda[i], r.final.W[i], r.final.a[i])
            for i, lam in enumerate(LAMBDAS)]
    check_convergence(p, runs, "hand vector")


def test_gradient_descent_converges_to_the_process_on_random_orthonormal_data():
    """n = d = 16 (random basis, N(0,1) labels), m = 6, T = 16 (c_L = 1), through the experiment
    pipeline, from_experiment and from_run. Seed 243 satisfies Assumption 4 with all jumps well
    separated (checked below), so the limit interpolates."""
    from shallowflow.config import experiment_from_mapping
    from shallowflow.training.batches import RunRef, dataset_of
    from shallowflow.training.entry import train

    def spec(lam):
        return experiment_from_mapping({
            "name": "tblel", "seed": 243, "runs": 1,
            "data": {"kind": "orthonormal", "n": 16, "d": 16, "labels": "normal", "basis": "random"},
            "model": {"width": 6},
            "init": {"scheme": "balanced", "log_scale": math.log(lam)},
            "train": {"loss": "square", "lr": GD_LR, "duration": 0.51 * 200 * math.log(10),
                      "time_scale": 16.0, "balance": "tied"},
            "record": {"every": 250, "points": 0, "probes": ["loss", "log_norm"]}})

    exps = [spec(lam) for lam in LAMBDAS]
    p = from_experiment(exps[0])
    # preconditions of a clean comparison: Assumption 4 holds, jumps are well separated
    assert p.report.ok and p.losses[-1] == 0.0
    assert p.c_L == 1.0 and p.K == 4 and p.tau[-1] < 0.49
    assert np.min(np.diff(p.jump_starts)) > 0.03
    ds = xr.concat(train(exps, show_progress=False), dim="run")  # one batch, as before
    ds = ds.assign_coords(run=np.arange(ds.sizes["run"]))
    X, y = dataset_of(RunRef(exps[0], 0))
    runs = []
    for i, lam in enumerate(LAMBDAS):
        q = from_run(ds, X, y, run=i)
        np.testing.assert_array_equal(q.sequence, p.sequence)
        np.testing.assert_allclose(q.tau, p.tau, rtol=1e-12)
        t_acc = ds.time_accelerated.values[i]
        runs.append((lam, ds.loss.values[i], t_acc, ds.W_final.values[i], ds.a_final.values[i]))
        # the curves overlay the run: same flow-time coordinate, same plateaus between jumps
        c = p.curves(t_acc, log_lambda=math.log(lam))
        np.testing.assert_allclose(c.time, ds.time, rtol=1e-12)
        mids = 0.5 * (p.jump_starts[:-1] + p.jump_starts[1:])
        at = np.searchsorted(t_acc, np.concatenate([mids[1:], [p.tau[-1] * 1.04]]))
        np.testing.assert_allclose(ds.loss.values[i, at], c.loss.values[at], rtol=1e-4,
                                   atol=1e-4 * p.losses[0])
        if lam == LAMBDAS[-1]:
            # log-norms: O(1) apart, i.e. the exponents agree to O(1/log(1/lambda))
            gap = np.abs(ds.log_norm.values[i] - c.log_norm.values)
            near = np.min(np.abs(t_acc[:, None] - p.tau[None]), axis=1) < 0.02
            assert gap[~near].max() < 3.0
    check_convergence(p, runs, "random n=16, m=6")


# ------------------------------------------------------------------------ Assumption 4, Prop 2
def test_assumption4_report_flags_constructed_violations():
    # X = I_5; neuron columns chosen through the directions' signs
    y = np.array([1.0, 2.0, 0.0, -1.0, 3.0])
    s = np.array([1.0, 1.0, 1.0, -1.0, 1.0])
    D = np.array([[1, 1, 1, -1, -1],    # A = {0, 1}
                  [1, 1, -1, -1, -1],   # A = {0, 1}: duplicate of neuron 0
                  [-1, -1, -1, 1, -1],  # s = +1, only active on the negative point: zero column
                  [-1, -1, -1, 1, -1],  # A = {3}
                  [-1, 1, 1, -1, -1]],  # A = {1}
                 dtype=float)
    M = activation_mask(None, y, s, D)
    np.testing.assert_array_equal(M.sum(axis=0), [2, 2, 0, 1, 1])
    r = check_assumption4(M, y)
    np.testing.assert_array_equal(r.zero_rows, [2, 4])  # label 0, and point 4 nobody covers
    np.testing.assert_array_equal(r.zero_columns, [2])
    assert [g.tolist() for g in r.duplicate_groups] == [[0, 1]]
    np.testing.assert_array_equal(r.zero_labels, [2])
    assert r.argmin_unique is None and not r.ok
    text = str(r)
    assert "VIOLATED" in text and "{0, 1}" in text and "not checked" in text
    p = limit_process(None, y, s, D, 1.0)
    assert p.report.argmin_unique is False  # neurons 0 and 1 tie
    assert p.report.tied_jumps[0] == 1 and p.sequence[0] == 0
    assert p.losses[-1] == pytest.approx(0.5 * 9.0)  # the uncovered point 4 keeps its loss


def test_tie_between_distinct_columns_is_reported():
    y = np.ones(4)
    D = np.array([[1.0, 1.0, -1.0, -1.0], [-1.0, -1.0, 1.0, 1.0]])
    p = limit_process(None, y, [1.0, 1.0], D, 0.5)
    assert not p.report.duplicate_groups and p.report.argmin_unique is False
    assert p.report.tied_jumps == (1,) and "ties at jumps 1" in str(p.report)
    assert p.K == 2 and p.tau[1] == pytest.approx(p.tau[0], rel=1e-14)  # both reach 0 at once
    q = limit_process(None, y * [1, 1, 1, 1.01], [1.0, 1.0], D, 0.5)
    assert q.report.ok and q.report.argmin_unique


def test_proposition_2_bound_is_below_monte_carlo_frequency():
    n, m, draws = 30, 12, 3000
    rng = np.random.default_rng(5)
    y = np.where(np.arange(n) < 13, -1.0, 1.0) * rng.uniform(0.5, 2.0, n)
    assert minority_count(y) == 13
    bound = assumption4_probability_bound(n, m, 13)
    assert bound == pytest.approx(1 - 30 * 0.75**12 - 12 * 2.0**-13 - 33 * 2.0**-13, rel=1e-14)
    assert bound == pytest.approx(0.044, abs=5e-4)  # docs/math.md §3.5
    # Assumption 3 draws with X = I: only the coordinate signs of w̄_j(0) matter
    s = rng.choice([-1.0, 1.0], (draws, m))
    G = rng.standard_normal((draws, m, n))
    M = (np.swapaxes(G, 1, 2) > 0) & (y[None, :, None] * s[:, None, :] > 0)  # (draws, n, m)
    rows_ok = M.any(axis=2).all(axis=1)
    cols_ok = M.any(axis=1).all(axis=1)
    codes = np.packbits(M, axis=1).astype(np.uint64)  # (draws, 4, m): 30 bits in 4 bytes
    key = sum(codes[:, b] << np.uint64(8 * b) for b in range(codes.shape[1]))  # (draws, m)
    key = np.sort(key, axis=1)
    distinct = np.all(np.diff(key, axis=1) != 0, axis=1)
    holds = rows_ok & cols_ok & distinct
    freq = holds.mean()
    assert freq == pytest.approx(0.456, abs=0.04)  # docs/math.md §3.5 Monte Carlo
    assert bound < freq
    # a row is zero with probability exactly (3/4)^m (docs/math.md §3.3: this pins the sign factor)
    row_zero = 1 - M.any(axis=2).mean()
    assert row_zero == pytest.approx(0.75**m, rel=0.2)
    # the library's report agrees draw by draw
    for k in range(300):
        r = check_assumption4(activation_mask(None, y, s[k], G[k]), y)
        assert r.ok == holds[k]


# ------------------------------------------------------------------------------- large case
def test_ten_thousand_points_hundred_neurons():
    rng = np.random.default_rng(3)
    n, m = 10_000, 100
    y = rng.standard_normal(n)
    s = rng.choice([-1.0, 1.0], m)
    p = limit_process(None, y, s, rng.standard_normal((m, n)), loss_constant("square", n))
    assert p.K > 0 and np.all(np.diff(p.tau) > 0) and np.all(np.diff(p.losses) < 0)
    covered = np.flatnonzero(p.mask.any(axis=1))
    sets = p.fitted_sets()
    joined = np.concatenate(sets)
    assert joined.size == np.unique(joined).size  # disjoint
    assert set(joined.tolist()) <= set(covered.tolist())
    if p.slopes[-1].max() == 0 and p.report.zero_rows.size == 0:
        assert joined.size == n  # every covered point fitted
    for k, S in enumerate(sets):
        assert np.all(p.mask[S, p.sequence[k]])
    np.testing.assert_allclose(p.losses[-1], np.sum(y[p.fitted_by < 0] ** 2) / (2 * n),
                               rtol=1e-10, atol=1e-14)
    assert np.all(p.exponents <= 0) and np.all(p.exponents[np.arange(1, p.K + 1), p.sequence] == 0)
    assert learned_norm_sq(p) >= min_norm_sq(y[p.fitted_by >= 0]) * (1 - 1e-12)


# ------------------------------------------------------------------------- minimum norm, errors
def test_min_norm_interpolator_interpolates_with_the_stated_norm():
    X, y, *_ = random_problem(21, 12, 15, 2)
    a, W = min_norm_interpolator(X, y)
    out = np.sum(a[None] * np.maximum(X @ W.T, 0.0), axis=1)
    np.testing.assert_allclose(out, y, atol=1e-12)
    assert np.sum(a**2) + np.sum(W**2) == pytest.approx(min_norm_sq(y), rel=1e-12)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"X": np.ones((4, 4))}, "X: rows must be orthonormal"),
    ({"X": np.eye(5)}, "X: must have one row per label"),
    ({"X": np.eye(4)[:, :3]}, "X: .*n <= d"),
    ({"y": [3.0, np.nan, 1.0, 2.0]}, "y: entries must be finite"),
    ({"signs": [1.0, 0.5]}, "signs: entries must be \\+1 or -1"),
    ({"directions": np.zeros((2, 4))}, "directions: rows must be non-zero"),
    ({"directions": np.ones((3, 4))}, "directions: must have shape"),
    ({"c_L": -1.0}, "c_L: must be finite and > 0"),
    ({"loss_normaliser": 0.0}, "loss_normaliser"),
])
def test_bad_inputs_are_named(kwargs, message):
    args = {"X": HAND_X, "y": HAND_Y, "signs": HAND_S, "directions": HAND_DIR, "c_L": 0.25}
    with pytest.raises(ValueError, match=message):
        limit_process(**{**args, **kwargs})


def test_orthonormal_check_catches_small_deviations():
    X = np.linalg.qr(np.random.default_rng(0).standard_normal((20, 10)))[0].T
    assert check_orthonormal(X) is not None
    X[3, 4] += 1e-6
    with pytest.raises(ValueError, match="max \\|X X\\^T - I\\|"):
        check_orthonormal(X)


def test_from_run_refuses_underflowed_or_unbalanced_starts():

    ds = xr.Dataset({"a_init": (("run", "neuron"), np.array([[0.0, 1.0]])),
                     "W_init": (("run", "neuron", "dim"), HAND_DIR[None])},
                    attrs={"kappa": 1.0, "loss_name": "square", "time_scale": 1.0})
    with pytest.raises(ValueError, match="from_experiment"):
        from_run(ds, HAND_X, HAND_Y)
    ds["a_init"] = (("run", "neuron"), np.array([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="balanced"):
        from_run(ds, HAND_X, HAND_Y)
    ds["a_init"] = (("run", "neuron"), np.array([[1e-200, 1e-200]]))
    ds["W_init"] = (("run", "neuron", "dim"), 1e-200 * HAND_DIR[None])
    p = from_run(ds, HAND_X, HAND_Y)  # tiny but representable: the squares underflow, not we
    np.testing.assert_allclose(p.tau, [hand_values()["tau1"], hand_values()["tau2"]], rtol=1e-14)
    with pytest.raises(ValueError, match="run"):
        from_run(ds, HAND_X, HAND_Y, run=1)
