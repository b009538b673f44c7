"""bench/bench_population.py: its two numpy baselines compute the package's closed-form gradient
(so the speed-ups compare the same arithmetic), and the table states both ratios."""

from __future__ import annotations

import numpy as np

import bench_population as population
from shallowflow.model.population import Teacher, population_gradient
from shallowflow.precision import float64


def test_both_baselines_are_the_closed_form_gradient() -> None:
    """The COLT-style gradient (neurons as columns) and the lean one equal
    :func:`population_gradient` at random starts, to rounding."""
    k = 7
    W = population.start(4, k, seed=3)
    with float64():
        ref = np.asarray(population_gradient(np.ones((4, k)), W,
                                             Teacher(np.ones(k), np.eye(k))).grad_W)
    for r in range(4):
        lean = population.numpy_gradient(W[r], np.eye(k))
        colt = population.colt_gradient(W[r].T.copy()).T
        scale = np.max(np.abs(ref[r]))
        np.testing.assert_allclose(lean, ref[r], rtol=0, atol=1e-13 * scale)
        np.testing.assert_allclose(colt, ref[r], rtol=0, atol=1e-13 * scale)


def test_colt_steps_descend_the_loss() -> None:
    """A few COLT-style steps from a Xavier start lower F (an independent property: GD with a
    small step on a smooth loss)."""
    k = 6
    W = population.start(2, k, seed=1)
    after = population.colt_steps(W, 20)
    teacher = Teacher(np.ones(k), np.eye(k))
    with float64():
        before_loss = np.asarray(population_gradient(np.ones((2, k)), W, teacher).loss)
        after_loss = np.asarray(population_gradient(np.ones((2, k)), after, teacher).loss)
    assert np.all(after_loss < before_loss)


def test_table_states_both_ratios() -> None:
    b = {"colt_step_s": 0.06, "numpy_step_s": 0.03, "stepwise_step_s": 0.01,
         "fused_step_s": 0.006, "mapped_step_s": 0.003, "engine_step_s": 0.005, "threads": 2,
         "fused_vs_numpy_max_abs": 1e-15}
    f = {"d": 9, "k": 3, "p": 8, "runs": 8, "closed_step_s": 1e-6,
         "rows": [{"n": 1000, "step_s": 1e-5, "gradient_error": 0.1}], "error_constant": 3.0,
         "n_equal_accuracy": 1e31, "step_s_at_equal_accuracy": 1e23, "break_even_n": 100,
         "error_at_break_even": 0.3}
    md = population.table({"batched": b, "finite": f, "networks": 500, "k": 20,
                           "fused_steps": 200, "foreign_cpu_s": 0.0})
    d_row = next(line for line in md.splitlines() if line.startswith("| (d)"))
    assert "| 10.0x | 20.0x | >= 50x | no |" in d_row
