"""Bad inputs are refused before any work with a message naming field, value and what is allowed,
and leave the output folder absent or intact."""

from __future__ import annotations

import re

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import changed
from shallowflow.cli.commands import app
from shallowflow.config import RENAMED, ConfigError, experiment_from_mapping, load_experiment
from shallowflow.data import DataError, load_file, validate_dataset


def base(**changes):
    m = {
        "data": {"kind": "orthogonal", "n": 8, "d": 16},
        "model": {"width": 4},
        "init": {"scheme": "dpb"},
        "train": {"lr": 0.1, "steps": 5},
    }
    return changed(m, **changes)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"model__width": 0}, ["model.width", "greater than 0", "0"]),
        ({"model__width": -3}, ["model.width", "-3"]),
        ({"data__n": 40}, ["n <= d", "n=40", "d=16"]),
        ({"data__kind": "spheer"}, ["spheer", "sphere", "orthogonal"]),
        ({"init__scheme": "glorot"}, ["glorot", "balanced", "dpb"]),
        ({"train__loss": "hinge"}, ["train.loss", "hinge", "square"]),
        ({"train__lr": -0.1}, ["train.lr", "greater than 0", "-0.1"]),
        ({"train__steps": -5}, ["train.steps", "-5"]),
        ({"model__widht": 3}, ["model.widht", "unknown field"]),
        ({"train__optimizer": "sgd"}, ["batch_size", "sgd"]),
        ({"record__probes": ["loss", "curvature"]}, ["curvature", "pl_curvature"]),
        ({"model__activation": "leaky_relu"}, ["leak"]),
    ],
)
def test_bad_field_is_named_with_value_and_allowed(changes, expected):
    with pytest.raises(ConfigError) as err:
        experiment_from_mapping(base(**changes))
    text = str(err.value)
    for piece in expected:
        assert piece in text, f"{piece!r} missing from:\n{text}"


def test_group_init_needs_width_dividing_n():
    m = base(init={"scheme": "group"}, model__width=3)
    with pytest.raises(ConfigError, match="width dividing n = 8"):
        experiment_from_mapping(m)


def test_nan_data_is_refused(tmp_path):
    X = np.ones((5, 3))
    X[2, 1] = np.nan
    np.savez(tmp_path / "bad.npz", X=X, y=np.ones(5))
    with pytest.raises(DataError, match=r"non-finite.*index \[2, 1\]"):
        load_file(tmp_path / "bad.npz")
    with pytest.raises(ConfigError, match="non-finite"):
        experiment_from_mapping(base(data={"kind": "file", "path": str(tmp_path / "bad.npz")}))


def test_mismatched_shapes_are_refused(tmp_path):
    np.savez(tmp_path / "mis.npz", X=np.ones((5, 3)), y=np.ones(4))
    with pytest.raises(DataError, match="5 rows but y has 4"):
        load_file(tmp_path / "mis.npz")
    with pytest.raises(DataError, match="1-D"):
        validate_dataset(np.ones((3, 2)), np.ones((3, 1)))


def test_csv_with_header_loads_and_missing_file_is_named(tmp_path):
    (tmp_path / "d.csv").write_text("a,b,label\n1,2,1\n3,4,-1\n")
    X, y = load_file(tmp_path / "d.csv")
    np.testing.assert_array_equal(X, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(y, [1, -1])
    with pytest.raises(DataError, match="no such file"):
        load_file(tmp_path / "absent.npz")


def test_set_override_is_validated(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[data]\nkind = "sphere"\nn = 10\nd = 3\n[model]\nwidth = 2\n'
                   '[init]\nscheme = "dpb"\n[train]\nlr = 0.1\nsteps = 3\n')
    assert load_experiment(cfg, ["model.width=7"]).model.width == 7
    with pytest.raises(ConfigError, match=r"model\.width"):
        load_experiment(cfg, ["model.width=-1"])


def test_cli_bad_config_leaves_no_output(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[data]\nkind = "orthogonal"\nn = 20\nd = 3\n[model]\nwidth = 2\n'
                   '[init]\nscheme = "dpb"\n[train]\nlr = 0.1\nsteps = 3\n')
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(cfg), "--out", str(out)])
    assert result.exit_code == 2
    assert "n <= d" in result.output
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [cfg]  # no temporary folder left behind


def test_cli_existing_output_is_left_intact(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[data]\nkind = "sphere"\nn = 6\nd = 3\n[model]\nwidth = 2\n'
                   '[init]\nscheme = "dpb"\n[train]\nlr = 0.1\nsteps = 3\n')
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("precious")
    result = CliRunner().invoke(app, ["run", str(cfg), "--out", str(out)])
    assert result.exit_code == 2
    assert "already exists" in result.output
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    # a bad override with --overwrite must not touch it either
    result = CliRunner().invoke(app, ["run", str(cfg), "--out", str(out), "--overwrite",
                                      "--set", "train.lr=-1"])
    assert result.exit_code == 2
    assert (out / "keep.txt").read_text() == "precious"


OLD_KEYS = {  # each renamed key (config.RENAMED): a value, and what its new key needs beside it
    "train.engine": ("lognorm", {}),
    "train.reduce": ("on", {}),
    "train.certify": (1, {}),
    "train.certify_tol": (0.1, {"train__step_certificate": 1}),
    "train.certify_precision": (1, {"train__dtype": "float32"}),
    "train.certify_precision_tol": (0.1, {"train__dtype": "float32",
                                          "train__precision_certificate": 1}),
    "train.certify_end": (True, {}),
}


def toml_value(value):
    return repr(value).lower() if isinstance(value, bool) else (
        f'"{value}"' if isinstance(value, str) else repr(value))


def test_every_renamed_key_is_tested():
    assert set(OLD_KEYS) == set(RENAMED)


@pytest.mark.parametrize("old", sorted(OLD_KEYS))
def test_old_keys_are_refused_with_the_new_name(tmp_path, old):
    new, (value, needs) = RENAMED[old], OLD_KEYS[old]
    table, key = old.split(".")
    with pytest.raises(ConfigError) as err:
        experiment_from_mapping(base(**{f"{table}__{key}": value}))
    assert f"{old}: renamed to {new} (got {value!r})" in str(err.value).splitlines()
    cfg = tmp_path / "c.toml"
    tables = {"data": 'kind = "sphere"\nn = 6\nd = 3\n', "model": "width = 2\n",
              "init": 'scheme = "dpb"\n', "train": "lr = 0.1\nsteps = 3\n"}
    tables[table] += f"{key} = {toml_value(value)}\n"
    cfg.write_text("".join(f"[{name}]\n{body}" for name, body in tables.items()))
    with pytest.raises(ConfigError, match=rf"{re.escape(old)}: renamed to {re.escape(new)}"):
        load_experiment(cfg)
    new_table, new_key = new.split(".")
    exp = experiment_from_mapping(base(**{f"{new_table}__{new_key}": value}, **needs))
    assert getattr(exp, new_table).model_dump()[new_key] == value


@pytest.mark.parametrize("value", ["first", "both"])
def test_the_removed_layers_key_names_second_layer_rate(value):
    with pytest.raises(ConfigError) as err:
        experiment_from_mapping(base(train__layers=value))
    assert str(err.value).splitlines() == ["train.layers: removed; use train.second_layer_rate = 0"]


BAD = "non-finite"  # placeholder for the value under test


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
@pytest.mark.parametrize(("changes", "field"), [
    ({"train__lr": BAD}, "train.lr"),
    ({"train__stop_loss": BAD}, "train.stop_loss"),
    ({"train": {"lr": 0.1, "duration": BAD}}, "train.duration"),
    ({"init": {"scheme": "balanced", "scale": BAD}}, "init.scale"),
    ({"init": {"scheme": "gaussian", "log_scale": BAD}}, "init.log_scale"),
    ({"data": {"kind": "sphere", "n": 4, "d": 2, "radius": [1.0, BAD]}}, "data.radius.1"),
    ({"record__at_times": [1.0, BAD]}, "record.at_times.1"),
])
def test_non_finite_floats_are_refused(changes, field, bad):
    """Every float of a config must be finite; the message names the field and the value."""
    def fill(v):
        if isinstance(v, dict):
            return {k: fill(x) for k, x in v.items()}
        if isinstance(v, list):
            return [fill(x) for x in v]
        return bad if v == BAD else v

    with pytest.raises(ConfigError) as err:
        experiment_from_mapping(base(**fill(changes)))
    assert f"{field}: Input should be a finite number (got {bad!r})" in str(err.value)


def test_non_finite_values_from_a_file_and_set(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[data]\nkind = "sphere"\nn = 6\nd = 3\n[model]\nwidth = 2\n'
                   '[init]\nscheme = "balanced"\nscale = inf\n[train]\nlr = 0.1\nsteps = 3\n')
    with pytest.raises(ConfigError, match=r"init\.scale: Input should be a finite"):
        load_experiment(cfg)
    with pytest.raises(ConfigError, match=r"train\.lr: Input should be a finite number \(got nan\)"):
        load_experiment(cfg, ["init.scale=0.1", "train.lr=nan"])
