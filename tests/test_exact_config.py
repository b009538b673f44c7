"""Issue-3 features through configs: automatic parametrisation/mask/span choices, lambda = exp(-1000),
accelerated time, given initialisations, and the step-size certificate."""

from __future__ import annotations

import numpy as np
import pytest

from shallowflow.config import ConfigError, experiment_from_mapping
from shallowflow.training.entry import simulate


def spec(**over):
    m = {
        "runs": 2,
        "data": {"kind": "orthonormal", "n": 6, "d": 6},
        "model": {"width": 4},
        "init": {"scheme": "balanced", "log_scale": -1000.0},
        "train": {"lr": 0.1, "duration": 8000.0},
        "record": {"points": 30, "probes": ["loss", "log_norm", "a", "balance_log_drift"]},
    }
    for k, v in over.items():
        head, _, tail = k.partition("__")
        m[head] = v if not tail else {**m[head], tail: v}
    return m


def test_lambda_exp_minus_1000_runs_in_log_coordinates():
    exp = experiment_from_mapping(spec())
    settings, notes = exp.resolved()
    assert settings == {"parametrisation": "lognorm", "activity_mask": True, "span": True,
                        "onedim": False}
    assert any("log-norm parametrisation" in n for n in notes)
    assert "span: training in the span of the data (lossless)" in notes
    ds = simulate(exp)
    assert ds.attrs["parametrisation"] == "lognorm"
    assert ds.attrs["span"] == 1
    for name in ("loss", "log_norm", "balance_log_drift"):
        assert np.all(np.isfinite(ds[name].values))
    np.testing.assert_array_equal(ds.log_norm.values[:, 0], -1000.0)
    # accelerated time t / log(1/lambda)
    assert ds.time_accelerated.dims == ("run", "time")
    np.testing.assert_allclose(ds.time_accelerated.values[1], ds.time.values / 1000.0)
    # a neuron escapes the saddle at 0 (log-norm O(1), not O(-1000)) when Algorithm 1 says:
    # before 0.9 tau_1 every log-norm is below -50, after 1.1 tau_1 one is above -5
    from shallowflow.training.overlays import saddle_process_from_experiment as from_experiment

    escaped = 0
    for r in range(2):
        tau = from_experiment(exp, r).tau
        t = ds.time_accelerated.values[r]
        top = ds.log_norm.values[r].max(axis=-1)
        assert np.all(top[t < 0.9 * tau[0]] < -50) if len(tau) else np.all(top < -50)
        if len(tau) and t[-1] > 1.1 * tau[0]:
            assert top[t > 1.1 * tau[0]].min() > -5.0
            escaped += 1
    assert escaped >= 1


def test_plain_parametrisation_when_lambda_squared_is_representable():
    exp = experiment_from_mapping(spec(init={"scheme": "balanced", "scale": 1e-100}))
    assert exp.resolved()[0]["parametrisation"] == "plain"
    exp = experiment_from_mapping(spec(init={"scheme": "balanced", "scale": 1e-160}))
    assert exp.resolved()[0]["parametrisation"] == "lognorm"


def test_plain_parametrisation_on_sphere_data_keeps_defaults_off():
    exp = experiment_from_mapping(spec(data={"kind": "sphere", "n": 20, "d": 5},
                                       init={"scheme": "dpb"}))
    settings, notes = exp.resolved()
    assert settings == {"parametrisation": "plain", "activity_mask": False, "span": False,
                        "onedim": False}
    assert notes == []


@pytest.mark.parametrize(("over", "message"), [
    ({"init": {"scheme": "balanced"}}, "exactly one of init.scale or init.log_scale"),
    ({"init": {"scheme": "balanced", "scale": 1.0, "log_scale": 0.0}}, "exactly one"),
    ({"train__balance": "tied", "init": {"scheme": "gaussian", "scale": 1e-3}}, "tied"),
    ({"train__activity_mask": "on", "model": {"width": 4, "activation": "leaky_relu",
                                              "leak": 0.1}}, "activity_mask"),
    ({"train__step_certificate_tol": 1e-3}, "step_certificate"),
    ({"init": {"scheme": "given", "path": "nowhere.npz", "scale": 1.0}}, "init.path"),
])
def test_bad_exact_dynamics_settings(over, message):
    with pytest.raises(ConfigError, match=message):
        experiment_from_mapping(spec(**over))


@pytest.mark.parametrize(("value", "skip", "message"), [
    (100, "off", "dead_check_every: looks for dead neurons to skip; needs train.skip_dead"),
    (0, "auto", "dead_check_every"),
    (True, "auto", "dead_check_every"),
    (10.5, "on", "dead_check_every"),
    ("100", "on", "dead_check_every"),
])
def test_dead_check_every_is_validated(value, skip, message):
    """train.dead_check_every: a positive whole number (strict: no bool, float or text), and
    only where dead neurons are skipped; each problem is one error line."""
    with pytest.raises(ConfigError, match=message) as err:
        experiment_from_mapping(spec(train__dead_check_every=value, train__skip_dead=skip))
    assert len(str(err.value).splitlines()) == 1, str(err.value)
    exp = experiment_from_mapping(spec(train__dead_check_every=100, train__skip_dead=skip
                                       if skip != "off" else "auto"))
    assert exp.train.dead_check_every == 100


def test_given_init_shape_is_checked(tmp_path):
    np.savez(tmp_path / "net.npz", a=np.ones(3), W=np.ones((3, 6)))
    with pytest.raises(ConfigError, match=r"\(width, d\) = \(4, 6\)"):
        experiment_from_mapping(spec(init={"scheme": "given", "path": str(tmp_path / "net.npz"),
                                           "scale": 1.0}))


def test_certificate_is_first_order():
    """GD is the Euler scheme of gradient flow: the lr-vs-lr/2 distance is about twice the
    lr/2-vs-lr/4 distance on a smooth stretch."""
    exp = experiment_from_mapping({
        "runs": 3,
        "data": {"kind": "sphere", "n": 30, "d": 5},
        "model": {"width": 8},
        "init": {"scheme": "dpb"},
        "train": {"lr": 0.005, "duration": 4.0, "step_certificate": 2, "step_certificate_tol": 1.0},
        "record": {"every": 40, "points": 0},
    })
    ds = simulate(exp)
    rel, absd = ds.step_certificate_rel.values, ds.step_certificate_abs.values
    assert rel.shape == (3, 2)
    np.testing.assert_allclose(rel[:, 0] / rel[:, 1], 2.0, rtol=0.15)
    np.testing.assert_allclose(absd[:, 0] / absd[:, 1], 2.0, rtol=0.15)
    assert np.all(ds.step_certified.values)
    assert "PASS" in ds.attrs["step_certificate"]
    # the certificate really compares the lr/2 rerun: an independent rerun at lr/2 agrees
    half = experiment_from_mapping({**exp.model_dump(mode="json"),
                                    "train": {**exp.train.model_dump(mode="json"),
                                              "lr": 0.0025, "step_certificate": 0,
                                              "step_certificate_tol": None}})
    ds2 = simulate(half)
    coarse = ds.loss.values
    fine = ds2.loss.values[:, ::2]
    expected = np.abs(coarse - fine).max(axis=1) / np.abs(fine).max(axis=1)
    np.testing.assert_allclose(ds.step_certificate_rel_by_probe.sel(certified_probe="loss").values[:, 0],
                               expected, rtol=1e-12)
