"""The finite-sample kind ``gaussian_teacher_samples`` (docs/math.md §11.9): n Gaussian inputs
labelled by the population's teacher (the same teacher from the same data key, the same start);
its empirical loss of a fixed network approaches the closed-form population loss within the
Monte Carlo standard error; bad input refused naming the field."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from shallowflow.config import ConfigError, experiment_from_mapping
from shallowflow.model.population import Teacher, population_loss
from shallowflow.precision import float64


def spec(**data):
    return experiment_from_mapping({
        "name": "s", "seed": 2, "data": {"d": 5, "k": 3, **data},
        "model": {"width": 4}, "init": {"scheme": "gaussian", "scale": 0.5},
        "train": {"lr": 0.1, "steps": 3}}).data


def test_samples_share_the_populations_teacher_and_match_its_loss():
    sigma = np.diag([1.0, 2.0, 0.5, 1.0, 1.5])
    samples = spec(kind="gaussian_teacher_samples", n=400_000, teacher="gaussian",
                   covariance="full", sigma=sigma.tolist())
    population = spec(kind="gaussian_teacher", teacher="gaussian", covariance="full",
                      sigma=sigma.tolist())
    with float64():
        key = jax.random.PRNGKey(11)
        X, y = (np.asarray(v) for v in samples.generate(key))
        b, V, chol = population.population_inputs(key)
    assert X.shape == (400_000, 5) == samples.shape
    assert np.allclose(y, np.maximum(X @ V.T, 0) @ b, rtol=1e-13, atol=1e-13)  # same teacher
    assert np.allclose(np.cov(X.T), sigma, atol=0.02)
    rng = np.random.default_rng(0)
    a, W = rng.normal(size=4), rng.normal(size=(4, 5)) * 0.5
    ell = 0.5 * (np.maximum(X @ W.T, 0) @ a - y) ** 2
    closed = float(population_loss(a, W, Teacher(b, V), 1.0, 0.0, chol))
    assert abs(ell.mean() - closed) < 5 * ell.std() / np.sqrt(len(ell))


def test_same_start_as_the_population():
    from shallowflow.training.entry import train

    common = {"seed": 4, "runs": 2, "model": {"width": 3},
              "init": {"scheme": "gaussian", "scale": 0.4}, "train": {"lr": 0.1, "steps": 2}}
    pop = experiment_from_mapping({"name": "p", "data": {"kind": "gaussian_teacher", "d": 4,
                                                         "k": 2}, **common})
    smp = experiment_from_mapping({"name": "q", "data": {"kind": "gaussian_teacher_samples",
                                                         "d": 4, "k": 2, "n": 50}, **common})
    dp, ds = train([pop, smp], show_progress=False)
    assert np.array_equal(dp.W_init.values, ds.W_init.values)
    assert np.array_equal(dp.a_init.values, ds.a_init.values)


@pytest.mark.parametrize("data, field", [
    ({"n": 0}, "data.n"),
    ({"n": 10, "teacher": "gaussian", "per_run": True}, "data.per_run"),
    ({"n": 10, "k": 9}, "data.k"),
])
def test_bad_input_names_the_field(data, field):
    with pytest.raises(ConfigError, match=field):
        spec(kind="gaussian_teacher_samples", **data)
