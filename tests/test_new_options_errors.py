"""Bad inputs to the options added by the redesign (reproduce --from, typed reproduction --set,
bench names, demo --overwrite, explicit record points, first-layer scale, in-memory inputs,
renamed keys): one error line naming the field, exit code 2, no traceback, nothing written."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from conftest import TINY_EXPERIMENT
from shallowflow.cli.commands import app

EXPERIMENT = TINY_EXPERIMENT


def refused(args: list[str], *fragments: str) -> str:
    result = CliRunner().invoke(app, args)
    text = " ".join(result.output.split())  # rich wraps long lines
    assert result.exit_code == 2, text
    assert "Traceback" not in text
    for fragment in fragments:
        assert fragment in text, (fragment, text)
    return text


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(EXPERIMENT)
    return path


@pytest.mark.parametrize(("override", "fragments"), [
    ("record.at_steps=[-1]", ["record.at_steps"]),
    ("record.at_times=[inf]", ["record.at_times"]),
    ("record.at_times=[-0.5]", ["record.at_times"]),
    ("init.first_layer_scale=0", ["first_layer_scale"]),
    ("init.first_layer_scale=inf", ["first_layer_scale", "finite"]),
    ("train.engine=\"lognorm\"", ["train.engine", "train.parametrisation"]),
    ("train.reduce=\"on\"", ["train.reduce", "train.span"]),
    ("train.span=\"maybe\"", ["train.span"]),
    ("train.parametrisation=\"polar\"", ["train.parametrisation"]),
    ("train.precision_certificate=2", ["precision_certificate", "float32", "float64"]),
    ("train.precision_certificate=-1", ["precision_certificate"]),
    ("train.precision_certificate_tol=0.01", ["precision_certificate_tol"]),
])
def test_run_refuses_bad_new_fields(tmp_path, config, override, fragments):
    out = tmp_path / "out"
    refused(["run", str(config), "--out", str(out), "--set", override], *fragments)
    assert not out.exists()


@pytest.mark.parametrize(("table", "fragments"), [
    ('[data]\nkind = "arrays"\nX = [[1.0, 0.0], [0.0, 1.0]]\ny = [1.0]\n', ["data", "rows"]),
    ('[data]\nkind = "arrays"\nX = [[1.0, "a"]]\ny = [1.0]\n', ["data"]),
    ('[data]\nkind = "arrays"\nX = [[1.0, nan]]\ny = [1.0]\n', ["data", "non-finite"]),
])
def test_run_refuses_bad_in_memory_data(tmp_path, table, fragments):
    cfg = tmp_path / "exp.toml"
    cfg.write_text(table + '[model]\nwidth = 2\n[init]\nscheme = "dpb"\n'
                   '[train]\nlr = 0.1\nsteps = 5\n')
    out = tmp_path / "out"
    refused(["run", str(cfg), "--out", str(out)], *fragments)
    assert not out.exists()


@pytest.mark.parametrize(("init", "fragments"), [
    ('scheme = "given"\n', ["init", "path"]),
    ('scheme = "given"\na = [1.0, 1.0, 1.0, 1.0]\n', ["init", "W"]),
    ('scheme = "given"\na = [1.0, 1.0, 1.0, 1.0]\nW = [[1.0, 0.0, 0.0]]\n', ["init"]),
])
def test_run_refuses_bad_given_network(tmp_path, init, fragments):
    cfg = tmp_path / "exp.toml"
    cfg.write_text(EXPERIMENT.replace('scheme = "dpb"\n', init))
    out = tmp_path / "out"
    refused(["run", str(cfg), "--out", str(out)], *fragments)
    assert not out.exists()


def test_reproduce_from_refuses_bad_sources(tmp_path):
    out = tmp_path / "new"
    refused(["reproduce", "town-fig5", "--from", str(tmp_path / "missing"), "--out", str(out)],
            "--from")
    other = tmp_path / "other"
    other.mkdir()
    (other / "params.json").write_text(json.dumps({"reproduction": "town-fig4", "params": {}}))
    (other / "results.nc").write_bytes(b"")
    refused(["reproduce", "town-fig5", "--from", str(other), "--out", str(out)],
            "--from", "town-fig4")
    (other / "params.json").write_text("{not json")
    refused(["reproduce", "town-fig5", "--from", str(other), "--out", str(out)],
            "--from", "JSON")
    refused(["reproduce", "all", "--from", str(other), "--out", str(out)], "--from")
    refused(["reproduce", "town-fig5", "--from", str(other), "--out", str(out),
             "--set", "runs=2"], "--from")
    assert not out.exists()


@pytest.mark.parametrize(("override", "fragments"), [
    ("runs=abc", ["runs"]),
    ("runs=0", ["runs"]),
    ("n_values=[]", ["n_values"]),
    ("lr=inf", ["lr"]),
    ("nope=1", ["nope", "allowed"]),
    ("runs", ["key.path=value", "runs"]),
])
def test_reproduce_refuses_bad_typed_parameters(tmp_path, override, fragments):
    out = tmp_path / "new"
    refused(["reproduce", "town-fig5", "--out", str(out), "--set", override], *fragments)
    assert not out.exists()


def test_reproduce_refuses_unknown_preset_and_name(tmp_path):
    refused(["reproduce", "town-fig5", "--preset", "huge", "--out", str(tmp_path / "a")],
            "preset", "quick")
    refused(["reproduce", "town-fig99", "--out", str(tmp_path / "b")], "town-fig99")


def test_bench_refuses_unknown_names():
    refused(["bench", "warp"], "warp", "throughput")


def test_demo_refuses_an_existing_folder(tmp_path):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    refused(["demo", "--out", str(out)], "--overwrite")
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
