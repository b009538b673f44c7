"""The population data kind ``gaussian_teacher`` (docs/math.md §11): bad input refused with one
error line naming the field (exit 2); the example config runs through the unchanged training path
(the results equal the engine on the closed form, the teacher stored in data.nc); float32 with its
precision certificate; certify judges it with the exact population derivatives (docs/math.md
§11.3) and refuses the polish in one line."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from typer.testing import CliRunner

from conftest import changed
from shallowflow.cli.commands import app
from shallowflow.config import ConfigError, experiment_from_mapping
from shallowflow.model.population import Teacher, population_gradient

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "teacher_student_population.toml"


def base(**changes):
    m = {
        "data": {"kind": "gaussian_teacher", "d": 4, "k": 2},
        "model": {"width": 3},
        "init": {"scheme": "gaussian", "scale": 0.5},
        "train": {"lr": 0.1, "steps": 5},
    }
    return changed(m, **changes)


NAN = float("nan")
BAD = [
    ({"train__loss": "mse"}, ["train.loss", "'square'", "'mse'"]),
    ({"train__reduction": "sum"}, ["train.loss", "'sum'"]),
    ({"data__d": 0}, ["data.d", "greater than 0"]),
    ({"data__d": 10**6}, ["data.d", "less than or equal to 65536"]),
    ({"data__k": 0}, ["data.k", "greater than 0"]),
    ({"data__k": 5}, ["data.k", "k <= d", "k=5 > d=4"]),
    ({"data__covariance": "full", "data__sigma": [[1, 2, 0, 0], [2, 1, 0, 0], [0, 0, 1, 0],
                                                  [0, 0, 0, 1]]}, ["data.sigma", "positive definite"]),
    ({"data__covariance": "full", "data__sigma": [[1, 0.5, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0],
                                                  [0, 0, 0, 1]]}, ["data.sigma", "symmetric"]),
    ({"data__covariance": "full", "data__sigma": [[1, 0], [0, 1]]}, ["data.sigma", "(4, 4)"]),
    ({"data__covariance": "diagonal", "data__variances": [1, 1, 0, 1]}, ["data.variances", "> 0"]),
    ({"data__covariance": "diagonal", "data__variances": [1, NAN, 1, 1]}, ["data.variances",
                                                                         "finite"]),
    ({"data__covariance": "diagonal"}, ["data.variances", "needs"]),
    ({"data__teacher": "given", "data__k": None, "data__b": [1.0, 2.0], "data__V": [[1, 0, 0]]},
     ["data.V", "(2, 4)", "(1, 3)"]),
    ({"data__teacher": "given", "data__k": None, "data__b": [1.0], "data__V": [[1, 0, NAN, 0]]},
     ["data.V", "finite"]),
    ({"data__teacher": "given", "data__k": None}, ["data.b", "needs"]),
    ({"data__teacher": "file", "data__path": "no/such/teacher.npz"}, ["data.path", "no such file"]),
    ({"data__per_run": True}, ["data.per_run", "one teacher"]),
    ({"train__optimizer": "sgd", "train__batch_size": 2}, ["batch_size"]),
    ({"model__bias": True}, ["model.bias", "false"]),
    ({"train__span": "on"}, ["train.span", "samples"]),
    ({"train__polish": "newton"}, ["train.polish", "samples"]),
    ({"record__probes": ["loss", "active_count"]}, ["record.probes", "active_count"]),
    ({"init": {"scheme": "group"}}, ["init.scheme", "'group'"]),
]


@pytest.mark.parametrize(("changes", "expected"), BAD)
def test_bad_population_input_is_named(changes, expected):
    m = base(**changes)
    if m["data"].get("k", 0) is None:
        del m["data"]["k"]
    with pytest.raises(ConfigError) as err:
        experiment_from_mapping(m)
    text = str(err.value)
    for piece in expected:
        assert piece in text, f"{piece!r} missing from:\n{text}"


def test_a_bad_population_config_is_one_error_line_and_exit_2(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text(EXAMPLE.read_text().replace('loss = "square"', 'loss = "logistic"'))
    result = CliRunner().invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "train.loss" in lines[0], result.output
    assert not (tmp_path / "out").exists()


def test_the_example_runs_and_matches_the_closed_form(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(EXAMPLE), "--out", str(out), "--set",
                                      "train.steps=300", "--set", "runs=3", "--quiet"])
    assert result.exit_code == 0, result.output
    data = xr.load_dataset(out / "data.nc")  # loaded and closed: certify opens the files again
    assert np.array_equal(data.teacher_V.values, np.eye(10)[:3])
    assert np.array_equal(data.teacher_b.values, np.ones(3))
    loss = xr.load_dataset(out / "results.nc").loss.values
    params = xr.load_dataset(out / "params.nc")
    assert np.all(loss[:, -1] < loss[:, 0])
    # the recorded end loss is the closed form at the final networks
    pg = population_gradient(params.a_final.values, params.W_final.values,
                             Teacher(data.teacher_b.values, data.teacher_V.values))
    assert np.allclose(loss[:, -1], np.asarray(pg.loss), rtol=1e-12, atol=1e-15)
    # certify judges the population with its closed-form loss and gradient; the polish is refused
    result = CliRunner().invoke(app, ["certify", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    end = xr.load_dataset(out / "end_state.nc")
    assert np.allclose(end.end_loss.values, np.asarray(pg.loss), rtol=1e-12, atol=1e-15)
    grad = np.sqrt(np.sum(np.asarray(pg.grad_a) ** 2, axis=1)
                   + np.sum(np.asarray(pg.grad_W) ** 2, axis=(1, 2)))
    assert np.allclose(end.end_grad_norm.values, grad, rtol=1e-10)
    assert set(end.end_label.values) <= {"not stationary", "global minimum"}
    result = CliRunner().invoke(app, ["certify", str(out), "--polish", "newton", "--overwrite"])
    errors = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1 and "gaussian_teacher" in errors[0]


def test_float32_with_the_precision_certificate_on_the_population():
    from shallowflow.training.entry import train

    exp = experiment_from_mapping(base(**{"data__covariance": "diagonal",
                                          "data__variances": [1.0, 2.0, 0.5, 1.0],
                                          "data__teacher": "gaussian", "runs": 3,
                                          "train__steps": 200, "train__dtype": "float32",
                                          "train__precision_certificate": 2}))
    (ds,) = train(exp, show_progress=False)
    rel = ds.precision_rel.values
    assert np.all(np.isfinite(rel[:2])) and np.all(np.isnan(rel[2:]))
    assert np.max(rel[:2]) < 1e-4
    assert math.isfinite(float(ds.loss.values[0, -1]))
