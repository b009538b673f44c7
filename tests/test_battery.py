"""The bad-input battery: more than 120 bad or edge inputs across every command, each refused
before any work with one error line per problem that names the field or file and the value,
exit code 2, no traceback, nothing left on disk and an existing output folder untouched.

Every case runs the real command line in-process (typer's runner): the refusal must come from
validation, never from training (no case trains). Placeholders: ``{d}`` is the case's folder
(holding the files :func:`world` writes), ``{out}`` a fresh output path in it.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import TINY_EXPERIMENT
from shallowflow.cli.commands import app

EXP = 'name = "exp"\n' + TINY_EXPERIMENT

SWEEP = """name = "sw"
base = "exp.toml"
[grid]
"model.width" = [2, 3]
"""


def world(d: Path) -> None:
    """The files the cases point at: a valid experiment and sweep, and bad ones of every kind."""
    (d / "exp.toml").write_text(EXP)
    (d / "exp.yaml").write_text("data: {kind: sphere, n: 6, d: 3}\nmodel: {width: 4}\n"
                                "init: {scheme: dpb}\ntrain: {lr: 0.1, steps: 5}\n")
    (d / "sweep.toml").write_text(SWEEP)
    X, y = np.arange(12.0).reshape(6, 2), np.ones(6)
    np.savez(d / "good.npz", X=X, y=y)
    np.save(d / "single.npy", X)
    os.replace(d / "single.npy", d / "fake.npz")
    np.savez(d / "complex.npz", X=X + 1j, y=y)
    np.savez(d / "object.npz", X=np.array([[1, "a"]], dtype=object), y=np.ones(1))
    np.savez(d / "noy.npz", X=X)
    np.savez(d / "x3d.npz", X=np.ones((2, 2, 2)), y=np.ones(2))
    np.savez(d / "rows.npz", X=X, y=np.ones(5))
    np.savez(d / "bool.npz", X=X > 3, y=y)
    np.savez(d / "inf.npz", X=np.where(X > 5, np.inf, X), y=y)
    np.savez(d / "empty.npz", X=np.ones((0, 2)), y=np.ones(0))
    (d / "trunc.npz").write_bytes((d / "good.npz").read_bytes()[:120])
    (d / "typo.csv").write_text("1,2,3x\n4,5,6\n7,8,9\n")
    (d / "ragged.csv").write_text("x1,x2,y\n1,2,3\n4,5\n")
    (d / "empty.csv").write_text("")
    (d / "header.csv").write_text("x1,x2,y\n")
    (d / "nan.csv").write_text("1,2,3\nnan,5,6\n")
    (d / "onecol.csv").write_text("1\n2\n3\n")
    (d / "latin1.csv").write_bytes("1,2,3\n4,5,\xe96\n".encode("latin-1"))
    (d / "data.txt").write_text("1,2,3\n")
    np.savez(d / "given_shape.npz", a=np.ones(4), W=np.ones((4, 7)))
    np.savez(d / "given_inf.npz", a=np.ones(4), W=np.full((4, 3), np.inf))
    np.savez(d / "given_complex.npz", a=np.ones(4) + 1j, W=np.ones((4, 3)))
    np.savez(d / "given_noW.npz", a=np.ones(4))
    np.save(d / "given.npy", np.ones(4))
    (d / "binary.toml").write_bytes(bytes(range(256)))
    (d / "bad.toml").write_text("[data\nkind = 'sphere'\n")
    (d / "list.yaml").write_text("- 1\n- 2\n")
    (d / "tag.yaml").write_text("data: !!python/object/apply:os.system ['true']\n")
    (d / "exp.json").write_text("{}")
    (d / "longdur.toml").write_text(EXP.replace("steps = 5", "duration = 1e12"))
    (d / "dup.yaml").write_text("runs: 2\nruns: 3\n" + (d / "exp.yaml").read_text())
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"] + [  # 9^10 strings once expanded
        f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]" for p, n in zip("abcdefghi", "bcdefghij",
                                                                 strict=True)]
    (d / "bomb.yaml").write_text("\n".join(levels) + "\n")
    (d / "alias_sweep.yaml").write_text("base: exp.toml\ngrid: {model.width: &w [2, 3]}\n"
                                        "other: *w\n")
    (d / "empty.toml").write_text("")
    (d / "sw_grid_text.toml").write_text(SWEEP.replace("[2, 3]", '[2, "3"]'))
    (d / "sw_name_number.toml").write_text(SWEEP.replace('name = "sw"', "name = 3"))
    (d / "sw_name_long.toml").write_text(SWEEP.replace('name = "sw"', f'name = "{"s" * 10_000}"'))
    (d / "folder.toml").mkdir()
    (d / "loop.toml").symlink_to(d / "loop.toml")
    (d / "dangling.toml").symlink_to(d / "nowhere.toml")
    os.mkfifo(d / "fifo.toml")
    os.mkfifo(d / "fifo.csv")
    (d / "loop.csv").symlink_to(d / "loop.csv")
    (d / "afile").write_text("not a folder")
    (d / "afile.png").write_bytes(b"precious")
    (d / "afile.gif").write_bytes(b"precious")
    np.savez(d / "mnist_one.npz", images=np.zeros((4, 28, 28), np.uint8),
             labels=np.array([0, 1, 0, 1], np.uint8))
    (d / "existing").mkdir()
    (d / "existing" / "keep.txt").write_text("precious")
    run_like(d / "runlike")
    run_like(d / "certified")
    (d / "certified" / "end_state.csv").write_text("precious")
    run_like(d / "certdir")
    (d / "certdir" / "end_state.csv").mkdir()
    (d / "certdir" / "end_state.csv" / "mine.txt").write_text("precious")
    run_like(d / "nodata")
    for name, text in {"plan_list": "[1]", "plan_null": "null"}.items():
        (d / name).mkdir()
        (d / name / "plan.json").write_text(text)
    (d / "repro_foreign").mkdir()
    from shallowflow.reproductions import lookup
    from shallowflow.reproductions.base import resolve_params

    quick = resolve_params(lookup("town-fig5"), "quick").model_dump(mode="json")
    (d / "repro_foreign" / "params.json").write_text(json.dumps(
        {"reproduction": "town-fig5", "preset": "quick", "params": quick}))
    (d / "repro_foreign" / "results.nc").write_bytes((d / "runlike" / "results.nc").read_bytes())
    (d / "repro_list").mkdir()
    (d / "repro_list" / "params.json").write_text("[]")
    (d / "repro_list" / "results.nc").write_bytes((d / "runlike" / "results.nc").read_bytes())
    (d / "nodata" / "data.nc").unlink()
    for name, text in {
        "grid_scalar": 'base = "exp.toml"\n[grid]\n"model.width" = 3\n',
        "grid_empty": 'base = "exp.toml"\n[grid]\n"model.width" = []\n',
        "grid_bad": 'base = "exp.toml"\n[grid]\n"model.width" = [2, 0]\n',
        "grid_typo": 'base = "exp.toml"\n[grid]\n"model.widht" = [2]\n',
        "extra": 'base = "exp.toml"\ncolour = "red"\n[grid]\n"model.width" = [2]\n',
        "batch_bool": 'base = "exp.toml"\nmax_batch = true\n[grid]\n"model.width" = [2]\n',
        "batch_zero": 'base = "exp.toml"\nmax_batch = 0\n[grid]\n"model.width" = [2]\n',
        "batch_float": 'base = "exp.toml"\nmax_batch = 2.5\n[grid]\n"model.width" = [2]\n',
        "base_missing": 'base = "nope.toml"\n[grid]\n"model.width" = [2]\n',
        "base_number": 'base = 3\n[grid]\n"model.width" = [2]\n',
        "grid_table": 'base = "exp.toml"\ngrid = 3\n',
        "grid_bool": 'base = "exp.toml"\n[grid]\n"model.width" = [2, true]\n',
    }.items():
        (d / f"sw_{name}.toml").write_text(text)


def run_like(folder: Path) -> None:
    """A run folder's files (results, data, config), written here without training."""
    import xarray as xr

    folder.mkdir()
    xr.Dataset({"loss": (("run", "time"), np.ones((1, 3))),
                "a_final": (("run", "neuron"), np.ones((1, 2))),
                "W_final": (("run", "neuron", "dim"), np.ones((1, 2, 3)))},
               attrs={"kappa": 1.0, "loss_name": "square", "reduction": "mean",
                      "leak": 0.0}).to_netcdf(folder / "results.nc")
    xr.Dataset({"X": (("sample", "dim"), np.ones((4, 3))),
                "y": (("sample",), np.ones(4))}).to_netcdf(folder / "data.nc")
    (folder / "config.toml").write_text(EXP)


RUN = ["run", "{d}/exp.toml", "--out", "{out}"]


def run_set(*overrides: str) -> list[str]:
    return [*RUN, *[x for o in overrides for x in ("--set", o)]]


def data_file(name: str) -> list[str]:
    return run_set(f'data={{kind="file", path="{{d}}/{name}"}}')


def given(name: str) -> list[str]:
    return run_set(f'init={{scheme="given", path="{{d}}/{name}"}}')


CASES: list[tuple[str, list[str], list[str]]] = [
    # ---- run: train fields
    ("lr-inf", run_set("train.lr=inf"), ["train.lr", "inf"]),
    ("lr-nan", run_set("train.lr=nan"), ["train.lr", "nan"]),
    ("lr-zero", run_set("train.lr=0"), ["train.lr", "got 0"]),
    ("lr-negative", run_set("train.lr=-1"), ["train.lr", "got -1"]),
    ("lr-text", run_set('train.lr="fast"'), ["train.lr", "fast"]),
    ("steps-negative", run_set("train.steps=-1"), ["train.steps", "got -1"]),
    ("steps-fraction", run_set("train.steps=1.5"), ["train.steps", "1.5"]),
    ("duration-inf", run_set("train.duration=inf"), ["train.duration", "inf"]),
    ("time-scale-inf", run_set("train.time_scale=inf"), ["train.time_scale", "inf"]),
    ("time-scale-word", run_set('train.time_scale="depth"'), ["train.time_scale", "depth"]),
    ("time-scale-zero", run_set("train.time_scale=0"), ["train.time_scale", "got 0"]),
    ("loss-unknown", run_set('train.loss="hinge"'), ["train.loss", "hinge"]),
    ("loss-logistic-real-labels", run_set('train.loss="logistic"'),
     ["train.loss", "logistic", "+1 or -1"]),
    ("loss-exponential-real-labels", run_set('train.loss="exponential"'),
     ["train.loss", "exponential", "+1 or -1"]),
    ("optimizer-unknown", run_set('train.optimizer="adam"'), ["train.optimizer", "adam"]),
    ("batch-size-too-big", run_set('train.optimizer="sgd"', "train.batch_size=100"),
     ["train.batch_size", "100"]),
    ("batch-size-with-gd", run_set("train.batch_size=2"), ["batch_size", "sgd"]),
    ("stop-loss-negative", run_set("train.stop_loss=-1"), ["train.stop_loss", "got -1"]),
    ("stop-loss-inf", run_set("train.stop_loss=inf"), ["train.stop_loss", "inf"]),
    ("dtype-unknown", run_set('train.dtype="float16"'), ["train.dtype", "float16"]),
    ("stop-grad-zero", run_set("train.stop_grad=0"), ["train.stop_grad", "got 0"]),
    ("max-seconds-negative", run_set("train.max_seconds=-5"), ["train.max_seconds", "got -5"]),
    ("max-seconds-nan", run_set("train.max_seconds=nan"), ["train.max_seconds", "nan"]),
    ("polish-unknown", run_set('train.polish="adam"'), ["train.polish", "adam"]),
    ("second-layer-rate-negative", run_set("train.second_layer_rate=-1"),
     ["train.second_layer_rate", "got -1"]),
    ("layers-removed", run_set('train.layers="first"'),
     ["train.layers: removed", "train.second_layer_rate = 0"]),
    ("end-state-text", run_set('train.end_state="maybe"'), ["train.end_state", "maybe"]),
    ("step-certificate-3", run_set("train.step_certificate=3"), ["train.step_certificate", "got 3"]),
    ("step-certificate-tol-alone", run_set("train.step_certificate_tol=0.1"),
     ["step_certificate_tol", "step_certificate"]),
    ("precision-certificate-float64", run_set("train.precision_certificate=2"),
     ["train.precision_certificate", "float32", "'float64'"]),
    ("precision-certificate-negative", run_set("train.precision_certificate=-1"),
     ["train.precision_certificate", "-1"]),
    ("precision-certificate-tol-alone", run_set("train.precision_certificate_tol=0.1"),
     ["precision_certificate_tol", "precision_certificate"]),
    ("parametrisation-unknown", run_set('train.parametrisation="polar"'),
     ["train.parametrisation", "polar"]),
    ("span-unknown", run_set('train.span="maybe"'), ["train.span", "maybe"]),
    ("skip-dead-unknown", run_set('train.skip_dead="sometimes"'), ["train.skip_dead", "sometimes"]),
    ("balance-unknown", run_set('train.balance="weird"'), ["train.balance", "weird"]),
    ("balance-tied-plain", run_set('train.balance="tied"'), ["train.balance", "tied"]),
    ("renamed-engine", run_set('train.engine="lognorm"'), ["train.engine", "train.parametrisation"]),
    ("renamed-reduce", run_set('train.reduce="on"'), ["train.reduce", "train.span"]),
    ("train-unknown-field", run_set("train.speed=1"), ["train.speed", "unknown field"]),
    ("mask-with-sgd", run_set('train.optimizer="sgd"', "train.batch_size=2",
                              'train.activity_mask="on"'), ["activity_mask", "sgd"]),
    # ---- run: model fields
    ("width-zero", run_set("model.width=0"), ["model.width", "got 0"]),
    ("width-negative", run_set("model.width=-3"), ["model.width", "got -3"]),
    ("width-fraction", run_set("model.width=1.5"), ["model.width", "1.5"]),
    ("width-huge", run_set("model.width=1000000000"), ["memory", "--force"]),
    ("kappa-unknown", run_set('model.kappa="2/p"'), ["model.kappa", "2/p"]),
    ("activation-unknown", run_set('model.activation="tanh"'), ["model.activation", "tanh"]),
    ("bias-text", run_set('model.bias="perhaps"'), ["model.bias", "perhaps"]),
    ("model-unknown-field", run_set("model.depth=2"), ["model.depth", "unknown field"]),
    # ---- run: init fields
    ("scheme-unknown", run_set('init.scheme="magic"'), ["init", "magic"]),
    ("dpb-has-no-scale", run_set("init.scale=inf"), ["init.scale", "dpb", "inf"]),
    ("gaussian-scale-inf", run_set('init={scheme="gaussian", scale=inf}'), ["init.scale", "inf"]),
    ("gaussian-scale-zero", run_set('init={scheme="gaussian", scale=0}'), ["init.scale", "got 0"]),
    ("gaussian-scale-negative", run_set('init={scheme="gaussian", scale=-1}'),
     ["init.scale", "got -1"]),
    ("balanced-log-scale-minus-inf", run_set('init={scheme="balanced", log_scale=-inf}'),
     ["init.log_scale", "-inf"]),
    ("first-layer-scale-zero", run_set("init.first_layer_scale=0"),
     ["init.first_layer_scale", "got 0"]),
    ("first-layer-scale-inf", run_set("init.first_layer_scale=inf"),
     ["init.first_layer_scale", "inf"]),
    ("group-init-sphere-data", run_set('init={scheme="group"}'), ["init.scheme", "group"]),
    # ---- run: data fields
    ("data-kind-unknown", run_set('data.kind="moon"'), ["data", "moon"]),
    ("data-n-zero", run_set("data.n=0"), ["data.n", "got 0"]),
    ("data-d-zero", run_set("data.d=0"), ["data.d", "got 0"]),
    ("data-n-negative", run_set("data.n=-1"), ["data.n", "got -1"]),
    ("data-label-range-reversed", run_set("data.label_range=[2.0, 1.0]"),
     ["label_range", "[2.0, 1.0]"]),
    ("data-label-range-zero", run_set("data.label_range=[0.0, 1.0]"),
     ["label_range", "[0.0, 1.0]"]),
    ("data-seed-negative", run_set("data.seed=-1"), ["data.seed", "got -1"]),
    ("data-seed-huge", run_set("data.seed=9223372036854775808"),
     ["data.seed", "9223372036854775808"]),
    ("orthogonal-n-above-d", run_set('data={kind="orthogonal", n=5, d=3}'), ["n", "n=5", "d=3"]),
    ("two-point-angle-negative", run_set('data={kind="two_point", angle=-0.1}'),
     ["data.angle", "got -0.1"]),
    ("arrays-rows", run_set('data={kind="arrays", X=[[1.0, 0.0], [0.0, 1.0]], y=[1.0]}'),
     ["data", "rows"]),
    ("arrays-nan", run_set('data={kind="arrays", X=[[1.0, nan]], y=[1.0]}'), ["data", "non-finite"]),
    ("arrays-text", run_set('data={kind="arrays", X=[[1.0, "a"]], y=[1.0]}'), ["data"]),
    # ---- run: top-level fields
    ("seed-negative", run_set("seed=-1"), ["seed", "got -1"]),
    ("seed-2-63", run_set("seed=9223372036854775808"), ["seed", "9223372036854775808"]),
    ("runs-zero", run_set("runs=0"), ["runs", "got 0"]),
    ("runs-billion", run_set("runs=1000000000"), ["memory", "--force"]),
    ("runs-fraction", run_set("runs=1.5"), ["runs", "1.5"]),
    ("name-list", run_set("name=[1]"), ["name", "[1]"]),
    ("top-unknown-field", run_set("colour=1"), ["colour", "unknown field"]),
    # ---- run: record fields
    ("every-zero", run_set("record.every=0"), ["record.every", "got 0"]),
    ("points-negative", run_set("record.points=-1"), ["record.points", "got -1"]),
    ("at-steps-negative", run_set("record.at_steps=[-1]"), ["record.at_steps", "-1"]),
    ("at-times-inf", run_set("record.at_times=[inf]"), ["record.at_times", "inf"]),
    ("at-times-negative", run_set("record.at_times=[-0.5]"), ["record.at_times", "-0.5"]),
    ("probe-unknown", run_set('record.probes=["nope"]'), ["probes", "nope"]),
    ("probes-empty", run_set("record.probes=[]"), ["record.probes", "'loss'", "got []"]),
    ("probes-no-loss", run_set('record.probes=["a"]'), ["record.probes", "'loss'", "['a']"]),
    ("sweep-probes-no-loss", ["sweep", "{d}/sweep.toml", "--out", "{out}", "--set",
                              'record.probes=["a"]'], ["record.probes", "'loss'"]),
    ("snapshots-text", run_set('record.snapshots="x"'), ["record.snapshots", "x"]),
    ("record-steps-billion", run_set("train.steps=1000000000", "record.every=1"),
     ["memory", "--force"]),
    # ---- --set syntax
    ("set-no-key", run_set("=5"), ["--set", "=5"]),
    ("set-no-equals", run_set("train.lr"), ["--set", "train.lr"]),
    ("set-leading-dot", run_set(".lr=1"), ["--set", ".lr=1"]),
    ("set-double-dot", run_set("train..lr=1"), ["--set", "train..lr=1"]),
    ("set-through-scalar", run_set("train.lr.x=1"), ["--set", "train.lr.x", "'lr'"]),
    # ---- data files
    ("file-missing", data_file("nope.csv"), ["data.path", "nope.csv"]),
    ("file-is-folder", run_set('data={kind="file", path="{d}/existing"}'),
     ["data.path", "existing", "folder"]),
    ("npy-named-npz", data_file("fake.npz"), ["data.path", "fake.npz", ".npy"]),
    ("npz-complex", data_file("complex.npz"), ["complex.npz", "complex"]),
    ("npz-object", data_file("object.npz"), ["object.npz", "pickled"]),
    ("npz-truncated", data_file("trunc.npz"), ["data.path", "trunc.npz"]),
    ("npz-no-y", data_file("noy.npz"), ["noy.npz", "'y'"]),
    ("npz-3d", data_file("x3d.npz"), ["x3d.npz", "2-D", "(2, 2, 2)"]),
    ("npz-rows", data_file("rows.npz"), ["rows.npz", "6 rows", "5 entries"]),
    ("npz-bool", data_file("bool.npz"), ["bool.npz", "bool"]),
    ("npz-inf", data_file("inf.npz"), ["inf.npz", "non-finite"]),
    ("npz-empty", data_file("empty.npz"), ["empty.npz", "(0, 2)"]),
    ("csv-typo", data_file("typo.csv"), ["typo.csv", "line 1", "3x"]),
    ("csv-ragged", data_file("ragged.csv"), ["ragged.csv", "line 3"]),
    ("csv-empty", data_file("empty.csv"), ["empty.csv", "empty"]),
    ("csv-header-only", data_file("header.csv"), ["header.csv", "no data rows"]),
    ("csv-nan", data_file("nan.csv"), ["nan.csv", "non-finite"]),
    ("csv-one-column", data_file("onecol.csv"), ["onecol.csv", "2 columns"]),
    ("csv-not-utf8", data_file("latin1.csv"), ["latin1.csv", "UTF-8"]),
    ("data-txt", data_file("data.txt"), ["data.path", ".txt"]),
    # ---- given initial networks
    ("given-missing", given("nope.npz"), ["init.path", "nope.npz"]),
    ("given-npy", given("given.npy"), ["init.path", "given.npy"]),
    ("given-shape", given("given_shape.npz"), ["init.path", "(4, 7)"]),
    ("given-inf", given("given_inf.npz"), ["init.path", "non-finite"]),
    ("given-complex", given("given_complex.npz"), ["init.path", "complex"]),
    ("given-no-W", given("given_noW.npz"), ["init.path", "'W'"]),
    ("given-nothing", run_set('init={scheme="given"}'), ["init", "path"]),
    # ---- config files
    ("config-missing", ["run", "{d}/nope.toml", "--out", "{out}"], ["config", "nope.toml"]),
    ("config-link-loop", ["run", "{d}/loop.toml", "--out", "{out}"],
     ["config", "loop.toml", "broken symbolic link"]),
    ("config-dangling-link", ["run", "{d}/dangling.toml", "--out", "{out}"],
     ["config", "dangling.toml", "broken symbolic link"]),
    ("config-fifo", ["run", "{d}/fifo.toml", "--out", "{out}"],
     ["config", "fifo.toml", "not a regular file"]),
    ("config-device", ["run", "/dev/null", "--out", "{out}"],
     ["config", "/dev/null", "not a regular file"]),
    ("data-fifo", data_file("fifo.csv"), ["data.path", "fifo.csv", "not a regular file"]),
    ("data-link-loop", data_file("loop.csv"), ["data.path", "loop.csv", "broken symbolic link"]),
    ("config-folder", ["run", "{d}/folder.toml", "--out", "{out}"], ["config", "folder"]),
    ("config-binary", ["run", "{d}/binary.toml", "--out", "{out}"], ["config", "binary.toml",
                                                                     "UTF-8"]),
    ("config-bad-toml", ["run", "{d}/bad.toml", "--out", "{out}"], ["config", "bad.toml"]),
    ("config-yaml-list", ["run", "{d}/list.yaml", "--out", "{out}"], ["config", "list.yaml",
                                                                      "mapping"]),
    ("config-yaml-tag", ["run", "{d}/tag.yaml", "--out", "{out}"], ["config", "tag.yaml"]),
    ("config-json", ["run", "{d}/exp.json", "--out", "{out}"], ["config", ".json"]),
    ("config-empty", ["run", "{d}/empty.toml", "--out", "{out}"], ["data", "required"]),
    # ---- booleans are not numbers (issue 32: runs=true trained one run)
    ("text-width", run_set("model.width='3'"), ["model.width", "not the text '3'"]),
    ("text-lr", run_set("train.lr='0.1'"), ["train.lr", "not the text '0.1'"]),
    ("text-time-scale", run_set("train.time_scale='2'"), ["train.time_scale", "'2'"]),
    ("text-seed", run_set("seed='7'"), ["seed", "not the text '7'"]),
    ("text-stop-loss", run_set("train.stop_loss='1e-3'"), ["train.stop_loss", "'1e-3'"]),
    ("text-repro-param", ["reproduce", "town-fig1", "--out", "{out}", "--set", "m='3'"],
     ["town-fig1.m", "not the text '3'"]),
    ("text-sweep-grid", ["sweep", "{d}/sw_grid_text.toml", "--out", "{out}"],
     ["model.width", "not the text '3'"]),
    ("bool-runs", run_set("runs=true"), ["runs", "true/false", "got true"]),
    ("bool-width", run_set("model.width=true"), ["model.width", "true/false"]),
    ("bool-seed", run_set("seed=false"), ["seed", "true/false", "got false"]),
    # ---- names: they prefix every progress line (bounded, printable, text)
    ("name-megabyte", run_set(f"name='{'n' * 1_000_000}'"), ["name", "1 to 120 characters"]),
    ("name-empty", run_set("name=''"), ["name", "1 to 120 characters"]),
    ("name-line-break", run_set('name="a\\nb"'), ["name", "printable"]),
    ("name-number", run_set("name=3"), ["name", "3"]),
    ("sweep-name-number", ["sweep", "{d}/sw_name_number.toml", "--out", "{out}"],
     ["sweep.name", "must be text", "got 3"]),
    ("sweep-name-long", ["sweep", "{d}/sw_name_long.toml", "--out", "{out}"],
     ["sweep.name", "1 to 120 characters"]),
    ("bool-record-every", run_set("record.every=true"), ["record.every", "true/false"]),
    ("bool-lr", run_set("train.lr=true"), ["train.lr", "true/false"]),
    ("bool-sweep-grid", ["sweep", "{d}/sw_grid_bool.toml", "--out", "{out}"],
     ["model.width", "true/false"]),
    ("yaml-duplicate-key", ["run", "{d}/dup.yaml", "--out", "{out}"],
     ["config", "dup.yaml", "duplicate key 'runs'", "line 2"]),
    ("yaml-alias-bomb", ["run", "{d}/bomb.yaml", "--out", "{out}"],
     ["config", "bomb.yaml", "aliases", "not allowed"]),
    ("yaml-alias-sweep", ["sweep", "{d}/alias_sweep.yaml", "--out", "{out}"],
     ["sweep", "alias_sweep.yaml", "aliases"]),
    ("steps-beyond-finishing", run_set("train.steps=9223372036854775807"),
     ["train.steps", "at most 1e+11", "9223372036854775807"]),
    ("duration-beyond-finishing", ["run", "{d}/longdur.toml", "--out", "{out}"],
     ["train.duration", "at most 1e+11", "1e+13"]),
    ("yaml-bad-set", ["run", "{d}/exp.yaml", "--out", "{out}", "--set", "model.width=0"],
     ["model.width", "got 0"]),
    # ---- output locations
    ("out-exists", ["run", "{d}/exp.toml", "--out", "{d}/existing"], ["out", "existing",
                                                                       "--overwrite"]),
    ("out-is-file", ["run", "{d}/exp.toml", "--out", "{d}/afile", "--overwrite"],
     ["out", "afile", "not a folder"]),
    ("out-below-file", ["run", "{d}/exp.toml", "--out", "{d}/afile/sub"], ["out", "afile",
                                                                           "is a file"]),
    ("out-unwritable", ["run", "{d}/exp.toml", "--out", "/proc/shallowflow-out"],
     ["out", "/proc"]),
    ("demo-out-exists", ["demo", "--out", "{d}/existing"], ["out", "existing", "--overwrite"]),
    ("demo-out-below-file", ["demo", "--out", "{d}/afile/demo"], ["out", "afile", "is a file"]),
    ("reproduce-out-exists", ["reproduce", "town-fig5", "--out", "{d}/existing"],
     ["out", "existing", "--overwrite"]),
    ("reproduce-out-below-file", ["reproduce", "town-fig5", "--out", "{d}/afile/x"],
     ["out", "afile"]),
    ("sweep-out-exists", ["sweep", "{d}/sweep.toml", "--out", "{d}/existing"],
     ["out", "existing", "--resume"]),
    ("sweep-resume-not-sweep", ["sweep", "{d}/sweep.toml", "--out", "{d}/existing", "--resume"],
     ["out", "existing", "plan.json"]),
    ("sweep-out-below-file", ["sweep", "{d}/sweep.toml", "--out", "{d}/afile/sw"],
     ["out", "afile"]),
    # ---- sweeps
    ("sweep-missing", ["sweep", "{d}/nope.toml", "--out", "{out}"], ["sweep", "nope.toml"]),
    ("sweep-grid-scalar", ["sweep", "{d}/sw_grid_scalar.toml", "--out", "{out}"],
     ["sweep.grid.model.width", "got 3"]),
    ("sweep-grid-empty", ["sweep", "{d}/sw_grid_empty.toml", "--out", "{out}"],
     ["sweep.grid.model.width", "[]"]),
    ("sweep-grid-bad-value", ["sweep", "{d}/sw_grid_bad.toml", "--out", "{out}"],
     ["model.width", "got 0", "grid point 1"]),
    ("sweep-grid-typo", ["sweep", "{d}/sw_grid_typo.toml", "--out", "{out}"],
     ["model.widht", "unknown field"]),
    ("sweep-extra-field", ["sweep", "{d}/sw_extra.toml", "--out", "{out}"], ["sweep", "colour"]),
    ("sweep-max-batch-bool", ["sweep", "{d}/sw_batch_bool.toml", "--out", "{out}"],
     ["sweep.max_batch", "True"]),
    ("sweep-max-batch-zero", ["sweep", "{d}/sw_batch_zero.toml", "--out", "{out}"],
     ["sweep.max_batch", "got 0"]),
    ("sweep-max-batch-float", ["sweep", "{d}/sw_batch_float.toml", "--out", "{out}"],
     ["sweep.max_batch", "2.5"]),
    ("sweep-base-missing", ["sweep", "{d}/sw_base_missing.toml", "--out", "{out}"],
     ["sweep.base", "nope.toml"]),
    ("sweep-base-number", ["sweep", "{d}/sw_base_number.toml", "--out", "{out}"],
     ["sweep.base", "got 3"]),
    ("sweep-grid-not-table", ["sweep", "{d}/sw_grid_table.toml", "--out", "{out}"],
     ["sweep.grid", "got 3"]),
    ("sweep-set-typo", ["sweep", "{d}/sweep.toml", "--out", "{out}", "--set", "train.lrr=1"],
     ["train.lrr", "unknown field", "--set"]),
    ("sweep-set-bad-value", ["sweep", "{d}/sweep.toml", "--out", "{out}", "--set",
                             "train.lr=-1"], ["train.lr", "got -1", "--set"]),
    ("sweep-executor-unknown", ["sweep", "{d}/sweep.toml", "--out", "{out}", "--executor", "ray"],
     ["--executor", "ray"]),
    ("sweep-address-local", ["sweep", "{d}/sweep.toml", "--out", "{out}", "--address",
                             "tcp://127.0.0.1:8786"], ["--address", "local"]),
    ("sweep-workers-zero", ["sweep", "{d}/sweep.toml", "--out", "{out}", "--executor", "dask",
                            "--workers", "0"], ["--workers", "got 0"]),
    ("sweep-workers-local", ["sweep", "{d}/sweep.toml", "--out", "{out}", "--workers", "2"],
     ["--workers", "local"]),
    ("sweep-workers-and-address", ["sweep", "{d}/sweep.toml", "--out", "{out}", "--executor",
                                   "dask", "--workers", "2", "--address", "tcp://127.0.0.1:8786"],
     ["--workers", "--address"]),
    ("reproduce-executor-unknown", ["reproduce", "town-fig5", "--out", "{out}", "--executor",
                                    "ray"], ["--executor", "ray"]),
    ("reproduce-workers-local", ["reproduce", "town-fig5", "--out", "{out}", "--workers", "2"],
     ["--workers", "local"]),
    ("sweep-runs-billion", ["sweep", "{d}/sweep.toml", "--out", "{out}", "--set",
                            "runs=1000000000"], ["memory", "--force"]),
    # ---- reproduce
    ("reproduce-unknown", ["reproduce", "nope-fig1", "--out", "{out}"], ["nope-fig1"]),
    ("reproduce-preset", ["reproduce", "town-fig5", "--out", "{out}", "--preset", "huge"],
     ["preset", "huge"]),
    ("reproduce-absurd-size", ["reproduce", "town-fig1", "--out", "{out}", "--set",
                               "m=10000000000"], ["memory", "TiB"]),
    ("reproduce-set-range", ["reproduce", "town-fig1", "--out", "{out}", "--set", "m=0"],
     ["town-fig1.m", "got 0"]),
    ("reproduce-set-unknown", ["reproduce", "town-fig1", "--out", "{out}", "--set", "width=3"],
     ["--set", "width", "town-fig1"]),
    ("reproduce-set-yaml", ["reproduce", "town-fig1", "--out", "{out}", "--set", "m: [1"],
     ["--set", "m: [1"]),
    ("reproduce-set-tag", ["reproduce", "town-fig1", "--out", "{out}", "--set",
                           "m=!!python/object:os.system 1"], ["town-fig1.m", "!!python"]),
    ("reproduce-set-no-key", ["reproduce", "town-fig1", "--out", "{out}", "--set", "=1"],
     ["--set", "=1"]),
    ("reproduce-from-missing", ["reproduce", "town-fig5", "--out", "{out}", "--from",
                                "{d}/nope"], ["--from", "nope"]),
    ("reproduce-from-not-repro", ["reproduce", "town-fig5", "--out", "{out}", "--from",
                                  "{d}/existing"], ["--from", "existing"]),
    ("reproduce-from-with-set", ["reproduce", "town-fig5", "--out", "{out}", "--from",
                                 "{d}/existing", "--set", "m=2"], ["--from", "--set"]),
    ("reproduce-dtype", ["reproduce", "town-fig1", "--out", "{out}", "--dtype", "float16"],
     ["--dtype", "float16", "float32"]),
    ("reproduce-certify-float64", ["reproduce", "town-fig1", "--out", "{out}",
                                   "--precision-certificate", "2"],
     ["--precision-certificate", "--dtype float32", "float64"]),
    ("reproduce-certify-negative", ["reproduce", "town-fig1", "--out", "{out}", "--dtype",
                                    "float32", "--precision-certificate", "-1"],
     ["--precision-certificate", "-1"]),
    ("reproduce-certify-tol-alone", ["reproduce", "town-fig1", "--out", "{out}", "--dtype",
                                     "float32", "--precision-certificate-tol", "0.1"],
     ["--precision-certificate-tol", "0.1"]),
    ("reproduce-certify-old-spelling", ["reproduce", "town-fig1", "--out", "{out}",
                                        "--certify-precision", "2"],
     ["--precision-certificate", "--dtype float32"]),
    ("run-resume-existing", [*RUN[:3], "{d}/existing", "--resume"], ["out", "existing"]),
    ("run-resume-overwrite-foreign", [*RUN[:3], "{d}/existing", "--resume", "--overwrite"],
     ["out", "existing", "not made by shallowflow"]),
    ("certify-quiet-not-run", ["certify", "{d}/existing", "--quiet"], ["RUN_DIR", "existing"]),
    ("animate-quiet-not-run", ["animate", "{d}/existing", "--quiet"], ["RUN_DIR", "existing"]),
    ("reproduce-from-with-dtype", ["reproduce", "town-fig5", "--out", "{out}", "--from",
                                   "{d}/existing", "--dtype", "float32"], ["--from", "--dtype"]),
    ("mnist-test-split-embedded", run_set('data={kind="mnist", split="test", per_digit=5}'),
     ["data.split", "training images only", "'test'"]),
    ("mnist-test-split-one-set", run_set('data={kind="mnist", split="test", '
                                         'path="{d}/mnist_one.npz"}'),
     ["data.split", "mnist_one.npz", "one set"]),
    ("reproduce-mnist-per-digit", ["reproduce", "mmv-fig5", "--out", "{out}", "--set",
                                   "per_digit=600"], ["mmv-fig5.per_digit", "600", "mnist_path"]),
    ("reproduce-mnist-path-missing", ["reproduce", "mmv-fig5", "--out", "{out}", "--set",
                                      'mnist_path="{d}/nope.npz"'], ["path", "nope.npz"]),
    # ---- certify
    ("certify-not-run", ["certify", "{d}/existing"], ["existing", "results.nc"]),
    ("certify-missing", ["certify", "{d}/nope"], ["nope", "results.nc"]),
    ("certify-no-data", ["certify", "{d}/nodata"], ["nodata", "data.nc"]),
    ("certify-polish-unknown", ["certify", "{d}/runlike", "--polish", "magic"],
     ["--polish", "magic", "newton"]),
    ("certify-at-text", ["certify", "{d}/runlike", "--at", "middle"], ["--at", "middle"]),
    ("certify-at-range", ["certify", "{d}/runlike", "--at", "99"], ["--at", "99", "-3..2"]),
    ("certify-at-no-snapshots", ["certify", "{d}/runlike", "--at", "1"],
     ["--at", "snapshots", "final"]),
    ("certify-existing", ["certify", "{d}/certified"], ["end_state", "--overwrite"]),
    # ---- animate
    ("animate-not-run", ["animate", "{d}/existing"], ["existing", "results.nc"]),
    ("animate-no-snapshots", ["animate", "{d}/runlike", "--out", "{out}.gif"],
     ["snapshots", "record.snapshots"]),
    ("animate-suffix", ["animate", "{d}/runlike", "--out", "{out}.avi"], [".avi", ".gif"]),
    ("animate-run-range", ["animate", "{d}/runlike", "--run", "3"], ["--run", "got 3"]),
    ("animate-existing", ["animate", "{d}/runlike", "--out", "{d}/afile.gif"],
     ["afile.gif", "--overwrite"]),
    # ---- plot, bench
    ("plot-out-exists", ["plot", "{d}/runlike", "--out", "{d}/afile.png"],
     ["--out", "afile.png", "--overwrite"]),
    ("animate-fps-too-high", ["animate", "{d}/runlike", "--fps", "1e9"],
     ["fps", "50", "1000000000"]),
    ("sweep-resume-plan-list", ["sweep", "{d}/sweep.toml", "--out", "{d}/plan_list",
                                "--resume"], ["out", "plan.json", "damaged", "list [1]"]),
    ("sweep-resume-plan-null", ["sweep", "{d}/sweep.toml", "--out", "{d}/plan_null",
                                "--resume"], ["out", "plan.json", "damaged", "NoneType"]),
    ("rejudge-params-list", ["reproduce", "town-fig5", "--from", "{d}/repro_list", "--out",
                             "{out}"], ["--from", "params.json", "damaged", "list []"]),
    ("sweep-set-gridded-key", ["sweep", "{d}/sweep.toml", "--out", "{out}", "--set",
                               "model.width=7"], ["--set", "model.width", "grid key"]),
    ("sweep-set-gridded-table", ["sweep", "{d}/sweep.toml", "--out", "{out}", "--set",
                                 "model={width=7}"], ["--set", "'model'", "grid key"]),
    ("certify-overwrite-folder", ["certify", "{d}/certdir", "--overwrite"],
     ["end_state.csv", "not a file"]),
    ("rejudge-foreign-results", ["reproduce", "town-fig5", "--from", "{d}/repro_foreign",
                                 "--out", "{out}"], ["--from", "results.nc", "town-fig5 judges"]),
    ("plot-not-run", ["plot", "{d}/existing"], ["run", "existing", "results.nc"]),
    ("plot-missing", ["plot", "{d}/nope"], ["run", "nope"]),
    ("bench-unknown", ["bench", "nope"], ["nope"]),
    # ---- run: the population and its probes
    ("xavier-output-unknown", run_set('init={scheme="xavier", output="half"}'),
     ["init.output", "half"]),
    ("xavier-scale-not-a-field", run_set('init={scheme="xavier", scale=true}'),
     ["init.scale", "xavier"]),
    ("teacher-probe-on-finite-data", run_set('record.probes=["loss", "overlap_cos"]'),
     ["record.probes", "overlap_cos", "gaussian_teacher"]),
    ("teacher-samples-n-zero", run_set('data={kind="gaussian_teacher_samples", d=4, k=2, n=0}'),
     ["data.n", "got 0"]),
    ("teacher-samples-n-bool", run_set('data={kind="gaussian_teacher_samples", d=4, k=2, n=true}'),
     ["data.n", "true"]),
    ("population-k-above-d", run_set('data={kind="gaussian_teacher", d=4, k=9}'),
     ["data.k", "k=9", "d=4"]),
    ("population-sigma-indefinite",
     run_set('data={kind="gaussian_teacher", d=2, covariance="full", sigma=[[1.0, 2.0], [2.0, 1.0]]}'),
     ["data.sigma", "positive definite"]),
    ("population-teacher-shape",
     run_set('data={kind="gaussian_teacher", d=2, teacher="given", b=[1.0], V=[[1.0, 0.0, 0.0]]}'),
     ["data.V", "(1, 2)", "(1, 3)"]),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("battery")
    world(d)
    return d


def listing(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): (p.read_bytes() if p.is_file() else b"<dir>")
            for p in sorted(d.rglob("*"))}


def test_the_battery_is_large_and_names_are_unique():
    assert len(CASES) > 120
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize(("args", "fragments"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused_before_work(files, args, fragments, monkeypatch):
    monkeypatch.chdir(files)
    before = listing(files)
    out = files / "out-never"
    argv = [a.replace("{d}", str(files)).replace("{out}", str(out)) for a in args]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    err = result.stderr
    assert "Traceback" not in result.output and "internal error" not in err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert errors, err
    text = " ".join(errors)
    for fragment in fragments:
        assert fragment.replace("{d}", str(files)) in text, (fragment, text)
    assert result.stdout == ""  # nothing reported as a result
    assert not out.exists()
    assert listing(files) == before  # nothing written, nothing changed (existing/keep.txt too)


def test_full_disk_is_refused_before_training(files, monkeypatch, tmp_path):
    """A file system without room for the estimated results refuses before training (the free
    space is what shutil reports: here made 1 KiB)."""
    import shutil
    from collections import namedtuple

    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10**6, 10**6 - 1024, 1024))
    out = tmp_path / "o"
    result = CliRunner().invoke(app, ["run", str(files / "exp.toml"), "--out", str(out)])
    assert result.exit_code == 2 and "free" in result.stderr and "--force" in result.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_full_tmpfs_is_refused_before_training(files, tmpfs):
    """The same on a real 64 KiB tmpfs, where the machine lets the test mount one."""
    mnt = tmpfs("64k")
    out = mnt / "o"
    argv = ["run", str(files / "exp.toml"), "--out", str(out), "--set", "runs=2000"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2 and "free" in result.stderr, result.output
    assert list(mnt.iterdir()) == []


def test_changed_input_file_is_refused_on_resume(tmp_path, monkeypatch):
    """--resume checks the content of every file the sweep read, not only its path."""
    monkeypatch.chdir(tmp_path)
    np.savez(tmp_path / "data.npz", X=np.eye(4), y=np.arange(1.0, 5.0))
    (tmp_path / "base.toml").write_text(
        'runs = 1\n[data]\nkind = "file"\npath = "data.npz"\n[model]\nwidth = 2\n'
        '[init]\nscheme = "dpb"\n[train]\nlr = 0.1\nsteps = 3\n[record]\npoints = 2\n')
    (tmp_path / "sw.toml").write_text('base = "base.toml"\n[grid]\n"model.width" = [2, 3]\n')
    argv = ["sweep", "sw.toml", "--out", "sw", "--quiet"]
    assert CliRunner().invoke(app, argv).exit_code == 0
    np.savez(tmp_path / "data.npz", X=np.eye(4), y=np.arange(2.0, 6.0))  # same path, new labels
    before = listing(tmp_path / "sw")
    result = CliRunner().invoke(app, [*argv, "--resume"])
    assert result.exit_code == 2 and "data.npz" in result.stderr and "changed" in result.stderr
    assert listing(tmp_path / "sw") == before


def test_damaged_batch_file_is_named_on_resume(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp.toml").write_text(EXP)
    (tmp_path / "sw.toml").write_text(SWEEP)
    argv = ["sweep", "sw.toml", "--out", "sw", "--quiet"]
    assert CliRunner().invoke(app, argv).exit_code == 0
    batch = sorted((tmp_path / "sw" / "batches").glob("*.nc"))[0]
    batch.write_bytes(batch.read_bytes()[:200])
    result = CliRunner().invoke(app, [*argv, "--resume"])
    assert result.exit_code == 2 and batch.name in result.stderr and "delete" in result.stderr


def test_results_go_to_stdout_and_progress_lines_to_stderr(tmp_path):
    """Without a terminal: the summary on stdout, plain progress lines (not a bar) on stderr,
    no line wrapped at 80 columns."""
    (tmp_path / "exp.toml").write_text(EXP)
    deep = tmp_path / ("a-long-folder-name-" * 6) / "run"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "exp.toml"), "--out", str(deep)])
    assert result.exit_code == 0, result.output
    assert str(deep) in result.stdout and "Written to" in result.stdout
    assert any("runs: 1/1" in line for line in result.stderr.splitlines())
    listing_ = CliRunner().invoke(app, ["list"])
    assert "data kinds" in listing_.stdout and listing_.stderr == ""


def test_gzip_is_not_mistaken_for_npz(tmp_path, monkeypatch):
    """An .npz that is really gzip: one line naming the file, nothing written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "exp.toml").write_text(EXP)
    (tmp_path / "g.npz").write_bytes(gzip.compress(json.dumps([1, 2]).encode()))
    result = CliRunner().invoke(app, ["run", "exp.toml", "--out", "o", "--set",
                                      'data={kind="file", path="g.npz"}'])
    assert result.exit_code == 2 and "g.npz" in result.stderr
    assert not (tmp_path / "o").exists()


def test_long_jobs_are_announced_with_their_estimate(files, monkeypatch):
    """A job estimated to take minutes gets a note with the arithmetic, memory and results before
    any work (here it is then refused: its output folder exists)."""
    monkeypatch.chdir(files)
    result = CliRunner().invoke(app, ["run", "exp.toml", "--out", "existing", "--set",
                                      "train.steps=10000000000", "--set", "record.points=10"])
    assert result.exit_code == 2
    note = [line for line in result.stderr.splitlines() if line.startswith("note: estimated")]
    assert note and "flop" in note[0] and "min at" in note[0]
    # 4 n d p steps = 4 * 6 * 3 * 4 * 1e10
    assert f"{4 * 6 * 3 * 4 * 1e10:.3g}" in note[0]


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_dask_address_is_refused_before_any_folder(files, monkeypatch):
    pytest.importorskip("dask.distributed")
    from shallowflow.runtime import executors

    monkeypatch.setattr(executors.DaskExecutor, "connect_timeout", 2.0)
    monkeypatch.chdir(files)
    address = f"tcp://127.0.0.1:{_closed_port()}"
    before = listing(files)
    result = CliRunner().invoke(app, ["sweep", "sweep.toml", "--out", "sw-dask", "--executor",
                                      "dask", "--address", address])
    assert result.exit_code == 2 and "--address" in result.stderr and address in result.stderr
    assert "Traceback" not in result.output and listing(files) == before


def test_a_scheduler_without_workers_is_refused_in_bounded_time(files, monkeypatch):
    """A Dask scheduler no worker joined: the command says what it waits for, waits a stated
    time, then refuses in one line (it hung forever, leaving a half-made folder)."""
    distributed = pytest.importorskip("dask.distributed")
    import time

    from shallowflow.runtime import executors

    monkeypatch.setattr(executors.DaskExecutor, "worker_timeout", 2.0)
    monkeypatch.chdir(files)
    with distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp",
                                  dashboard_address=None) as cluster:
        before, start = listing(files), time.perf_counter()
        result = CliRunner().invoke(app, ["sweep", "sweep.toml", "--out", "sw-idle",
                                          "--executor", "dask", "--address",
                                          cluster.scheduler_address])
        took = time.perf_counter() - start
    assert result.exit_code == 2, result.output
    assert "waiting up to 2 s" in result.stderr and "no Dask worker joined" in result.stderr
    assert took < 30 and "Traceback" not in result.output and listing(files) == before


def test_a_port_speaking_another_protocol_is_refused(files, monkeypatch):
    """A server that answers with bytes Dask cannot read (here an HTTP error) is named, without
    a traceback or a huge allocation, and nothing is written."""
    import socket
    import threading

    pytest.importorskip("dask.distributed")
    from shallowflow.runtime import executors

    monkeypatch.setattr(executors.DaskExecutor, "connect_timeout", 3.0)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]

    def answer() -> None:
        server.settimeout(10)
        try:
            while True:
                conn, _ = server.accept()
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 4)
                conn.close()
        except OSError:
            return

    threading.Thread(target=answer, daemon=True).start()
    monkeypatch.chdir(files)
    before = listing(files)
    try:
        result = CliRunner().invoke(app, ["sweep", "sweep.toml", "--out", "sw-http", "--executor",
                                          "dask", "--address", f"tcp://127.0.0.1:{port}"])
    finally:
        server.close()
    assert result.exit_code == 2 and f"127.0.0.1:{port}" in result.stderr, result.output
    assert "Traceback" not in result.output and listing(files) == before


def test_a_command_run_in_process_restores_the_signal_handlers(files, monkeypatch):
    """The CLI installs its SIGINT/SIGTERM/SIGALRM handlers for the command only: called
    in-process (a notebook, a test), it leaves the caller's handlers as they were."""
    import signal
    import sys

    monkeypatch.chdir(files)
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)}
    hook = sys.unraisablehook
    for argv in (["list"], ["run", "exp.toml", "--out", "never", "--set", "train.lr=0"]):
        CliRunner().invoke(app, argv)
        assert {s: signal.getsignal(s) for s in before} == before
        assert sys.unraisablehook is hook
