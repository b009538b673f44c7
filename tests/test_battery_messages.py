"""The error messages' own battery: long values, values holding newlines or terminal controls,
keys given twice and input files that are not regular readable files, across the commands. Each
is refused before any work with exactly one ``error:`` line, shorter than 300 characters, that
names the field or file and says what is wrong, exit code 2, no traceback and nothing written
(issue 32, defects 5 and 9).

As in tests/test_battery.py every case runs the real command line in-process; ``{d}`` is the
case's folder (holding the files :func:`world` writes), ``{out}`` a fresh output path in it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import TINY_EXPERIMENT
from shallowflow.cli.commands import app
from shallowflow.errors import error_lines, shown

MB = "x" * 1_000_000
LONG_NAME = "n" * 240  # a file name a file system accepts, longer than a message shows
TOO_LONG = "t" * 300  # longer than a file system's name limit (255 bytes)
FORGED = "a\nerror: forged line"
EXP = 'name = "exp"\n' + TINY_EXPERIMENT
YAML = "data: {kind: sphere, n: 6, d: 3}\ninit: {scheme: dpb}\ntrain: {lr: 0.1, steps: 5}\n"


def world(d: Path) -> None:
    """The files the cases point at."""
    (d / "exp.toml").write_text(EXP)
    (d / "sweep.toml").write_text('base = "exp.toml"\n[grid]\n"model.width" = [2, 3]\n')
    (d / "mb_field.toml").write_text(EXP.replace('loss', 'x') + f'loss = "{MB}"\n')
    (d / "mb_kind.toml").write_text(EXP.replace('kind = "sphere"', f'kind = "{MB}"'))
    (d / "long.csv").write_text("1,2,3\n4,5," + "9x" * 100_000 + "\n")
    (d / "newline\nname.csv").write_text("1,2,3x\n")
    (d / "sw_mb_grid.toml").write_text(f'base = "exp.toml"\n[grid]\n"model.width" = "{MB}"\n')
    (d / "sw_long_key.toml").write_text(f'base = "exp.toml"\n[grid]\n"{"k" * 5000}" = [1]\n')
    (d / "sw_many.toml").write_text('base = "exp.toml"\n[grid]\n"model.width" = [0'
                                    + ", 1" * 100_000 + "]\n")
    (d / f"{LONG_NAME}.toml").write_text("[data\n")
    model = "[model]\nwidth = 4\n"
    (d / "dup_inline.toml").write_text(EXP.replace(model, "") .replace(
        "[data]", "model = {width = 2, width = 3}\n[data]"))
    (d / "dup_key.toml").write_text(EXP.replace(model, model + "width = 5\n"))
    (d / "dup_top.toml").write_text("runs = 1\nruns = 2\n" + EXP)
    (d / "dup_table.toml").write_text(EXP + "[model]\nbias = true\n")
    (d / "dup_nested.toml").write_text(EXP.replace(model, "").replace(
        "[data]", 'model = {width = 2, bias = {on = true, on = false}}\n[data]'))
    (d / "dup_closed.toml").write_text(EXP.replace(model, "").replace(
        "[data]", "model = {width = 2}\nmodel.bias = true\n[data]"))
    (d / "dup_flow.yaml").write_text(YAML + "model: {width: 2, width: 3}\n")
    (d / "dup_block.yaml").write_text(YAML + "model:\n  width: 2\n  bias: false\n  width: 3\n")
    (d / "sw_dup.toml").write_text('base = "exp.toml"\n[grid]\n"model.width" = [2]\n'
                                   '"model.width" = [3]\n')
    (d / "sw_dup.yaml").write_text("base: exp.toml\ngrid: {model.width: [2], model.width: [3]}\n")
    os.mkfifo(d / "fifo.toml")
    os.mkfifo(d / "fifo.npz")
    (d / "folder.toml").mkdir()
    (d / "sw_base_folder.toml").write_text('base = "folder.toml"\n[grid]\n"model.width" = [2]\n')
    (d / "dangling.csv").symlink_to(d / "nowhere.csv")
    (d / "afile").write_text("not a folder")
    (d / "existing\nfolder").mkdir()
    np.savez(d / "good.npz", X=np.eye(3), y=np.ones(3))


def listing(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): (p.read_bytes() if p.is_file() and not p.is_symlink()
                                    else b"<other>")
            for p in sorted(d.rglob("*")) if not p.is_fifo()}


def run_set(*overrides: str) -> list[str]:
    return ["run", "{d}/exp.toml", "--out", "{out}", *[x for o in overrides for x in ("--set", o)]]


def data(path: str) -> list[str]:
    return run_set(f'data={{kind="file", path="{path}"}}')


REPRO = ["reproduce", "town-fig1", "--out", "{out}"]
SWEEP = ["sweep", "{d}/sweep.toml", "--out", "{out}"]

CASES: list[tuple[str, list[str], list[str]]] = [
    # ---- what the argument parser refuses: one line pointing at --help, not its usage box
    ("unknown-option", ["run", "{d}/exp.toml", "--bogus"],
     ["No such option: --bogus", " run --help'"]),
    ("unknown-app-option", ["--bogus"], ["No such option: --bogus", "--help'"]),
    ("unknown-command", ["frobnicate"], ["No such command 'frobnicate'", "--help'"]),
    ("missing-argument", ["reproduce"], ["Missing argument 'name'",
                                         " reproduce --help'"]),
    ("option-without-value", ["run", "{d}/exp.toml", "--out"],
     ["'--out' requires an argument", " run --help'"]),
    ("unknown-option-mb", ["certify", "{d}", f"--{MB}"],
     ["No such option", " characters);", " certify --help'"]),
    # ---- long values: echoed cut, with their size
    ("set-mb-string", run_set(f'train.lr="{MB}"'), ["train.lr", "(1000000 characters)"]),
    ("set-huge-list", run_set(f"train.lr=[{', '.join(['1'] * 100_000)}]"),
     ["train.lr", "(100000 items)"]),
    ("set-long-key", run_set(f"{'k' * 5000}=1"), ["(5000 characters)", "unknown field"]),
    ("set-mb-no-equals", run_set(MB), ["--set", "key.path=value", "(1000000 characters)"]),
    ("set-through-long-scalar", run_set(f"train.lr.{'z' * 3000}=1"), ["--set", "not a table"]),
    ("config-long-name", ["run", f"{{d}}/{LONG_NAME}.toml", "--out", "{out}"],
     ["config", "cannot parse", "nnnn…nnnn"]),
    ("config-name-too-long", ["run", f"{{d}}/{TOO_LONG}.toml", "--out", "{out}"],
     ["config", "too long a name", "(3"]),
    ("toml-mb-field", ["run", "{d}/mb_field.toml", "--out", "{out}"],
     ["train.loss", "(1000000 characters)"]),
    ("toml-mb-kind", ["run", "{d}/mb_kind.toml", "--out", "{out}"],
     ["data", "(1000000 characters)"]),
    ("csv-long-line", data("{d}/long.csv"), ["data.path", "long.csv", "line 2",
                                              "(200000 characters)"]),
    ("data-long-missing", data(f"{{d}}/{LONG_NAME}.csv"), ["data.path", "no such file", "…"]),
    ("sweep-grid-mb-string", ["sweep", "{d}/sw_mb_grid.toml", "--out", "{out}"],
     ["sweep.grid.model.width", "(1000000 characters)"]),
    ("sweep-grid-long-key", ["sweep", "{d}/sw_long_key.toml", "--out", "{out}"],
     ["(5000 characters)", "unknown field"]),
    ("sweep-grid-many-values", ["sweep", "{d}/sw_many.toml", "--out", "{out}"],
     ["model.width", "got 0", "grid point 0"]),
    ("sweep-executor-long", [*SWEEP, "--executor", MB], ["--executor", "(1000000 characters)"]),
    ("reproduce-set-mb", [*REPRO, "--set", f'm="{MB}"'], ["town-fig1.m", "(1000000 characters)"]),
    ("reproduce-set-long-key", [*REPRO, "--set", f"{'q' * 5000}=1"],
     ["--set", "(5000 characters)", "town-fig1"]),
    ("reproduce-preset-long", [*REPRO, "--preset", MB], ["preset", "(1000000 characters)"]),
    ("reproduce-name-long", ["reproduce", MB, "--out", "{out}"],
     ["unknown reproduction", "(1000000 characters)"]),
    ("certify-long-folder", ["certify", f"{{d}}/{LONG_NAME}"], ["run", "results.nc", "…"]),
    ("plot-long-folder", ["plot", f"{{d}}/{LONG_NAME}"], ["run", "results.nc", "…"]),
    ("animate-long-folder", ["animate", f"{{d}}/{LONG_NAME}"], ["results.nc", "…"]),
    ("animate-run-not-a-number", ["animate", "{d}/nope", "--run", MB], ["--run", "integer"]),
    ("bench-long-name", ["bench", MB], ["(1000000 characters)"]),
    # ---- newlines and terminal controls: escaped, one line
    ("set-newline-value", run_set(f'train.loss="{FORGED}"'.replace("\n", "\\n")),
     ["train.loss", "'a\\nerror: forged line'"]),
    ("set-raw-newline-key", run_set("tr\nain.lr=1"), ["tr\\nain", "unknown field"]),
    ("set-raw-newline-no-equals", run_set(FORGED), ["--set", "a\\nerror: forged"]),
    ("config-newline-name", ["run", "{d}/a\nb.toml", "--out", "{out}"],
     ["config", "no such file", "a\\nb.toml"]),
    ("data-newline-name", data("{d}/newline\\nname.csv"), ["newline\\nname.csv", "3x"]),
    ("out-newline-exists", ["run", "{d}/exp.toml", "--out", "{d}/existing\nfolder"],
     ["out", "existing\\nfolder", "--overwrite"]),
    ("set-escape-sequence", run_set('train.loss="\\u001b[31mred"'), ["train.loss", "\\x1b[31mred"]),
    ("set-direction-override", run_set('train.loss="abc\\u202edef"'), ["train.loss", "\\u202e"]),
    ("set-zero-width-key", run_set("train.l\u200br=1"), ["train.l\\u200br", "unknown field"]),
    ("set-line-separator", run_set('train.loss="a\\u2028b"'), ["train.loss", "\\u2028"]),
    ("set-accents-kept", run_set('train.loss="pérte"'), ["train.loss", "'pérte'"]),
    ("bench-newline-name", ["bench", FORGED], ["a\\nerror: forged"]),
    ("reproduce-newline-name", ["reproduce", FORGED, "--out", "{out}"],
     ["unknown reproduction", "a\\nerror: forged"]),
    # ---- keys given twice: the key, its table and the line
    ("toml-dup-inline", ["run", "{d}/dup_inline.toml", "--out", "{out}"],
     ["dup_inline.toml", "duplicate key 'width' in model", "line"]),
    ("toml-dup-table-key", ["run", "{d}/dup_key.toml", "--out", "{out}"],
     ["dup_key.toml", "duplicate key 'width' in model", "line 8"]),
    ("toml-dup-top", ["run", "{d}/dup_top.toml", "--out", "{out}"],
     ["duplicate key 'runs' at the top level", "line 2"]),
    ("toml-dup-table", ["run", "{d}/dup_table.toml", "--out", "{out}"],
     ["table [model]", "declared twice", "line 13"]),
    ("toml-dup-nested-inline", ["run", "{d}/dup_nested.toml", "--out", "{out}"],
     ["duplicate key 'on' in model.bias", "line 2"]),
    ("toml-inline-extended", ["run", "{d}/dup_closed.toml", "--out", "{out}"],
     ["'model'", "given whole", "line 3"]),
    ("yaml-dup-flow", ["run", "{d}/dup_flow.yaml", "--out", "{out}"],
     ["dup_flow.yaml", "duplicate key 'width' in model", "line 4"]),
    ("yaml-dup-block", ["run", "{d}/dup_block.yaml", "--out", "{out}"],
     ["duplicate key 'width' in model", "line 7"]),
    ("set-dup-inline", run_set("model={width=2, width=3}"),
     ["--set", "duplicate key 'width' in model", "model={width=2, width=3}"]),
    ("set-dup-nested", run_set("init={scheme='dpb', x={a=1, a=2}}"),
     ["--set", "duplicate key 'a' in init.x"]),
    ("sweep-dup-grid-toml", ["sweep", "{d}/sw_dup.toml", "--out", "{out}"],
     ["sweep", "duplicate key 'model.width' in grid", "line 4"]),
    ("sweep-dup-grid-yaml", ["sweep", "{d}/sw_dup.yaml", "--out", "{out}"],
     ["sweep", "duplicate key 'model.width' in grid", "line 2"]),
    ("sweep-set-dup", [*SWEEP, "--set", "train={lr=0.1, lr=0.2}"],
     ["--set", "duplicate key 'lr' in train"]),
    ("reproduce-set-dup", [*REPRO, "--set", "m={a=1, a=2}"], ["--set", "duplicate key 'a' in m"]),
    # ---- input files that are not regular readable files
    ("sweep-fifo", ["sweep", "{d}/fifo.toml", "--out", "{out}"],
     ["sweep", "fifo.toml", "not a regular file"]),
    ("sweep-base-folder", ["sweep", "{d}/sw_base_folder.toml", "--out", "{out}"],
     ["sweep.base", "folder.toml", "folder"]),
    ("given-fifo", run_set('init={scheme="given", path="{d}/fifo.npz"}'),
     ["init.path", "fifo.npz", "not a regular file"]),
    ("given-folder", run_set('init={scheme="given", path="{d}/folder.toml"}'),
     ["init.path", "folder"]),
    ("mnist-fifo", run_set('data={kind="mnist", path="{d}/fifo.npz"}'),
     ["data.path", "fifo.npz", "not a regular file"]),
    ("config-below-file", ["run", "{d}/afile/exp.toml", "--out", "{out}"],
     ["config", "afile", "a part of its path is a file"]),
    ("data-dangling-link", data("{d}/dangling.csv"), ["data.path", "dangling.csv",
                                                       "broken symbolic link"]),
    ("data-below-file", data("{d}/afile/x.csv"), ["data.path", "a part of its path is a file"]),
    ("plot-run-is-file", ["plot", "{d}/afile"], ["RUN_DIR", "afile", "is a file"]),
    ("reproduce-from-fifo", ["reproduce", "town-fig5", "--out", "{out}", "--from",
                             "{d}/fifo.toml"], ["--from", "fifo.toml"]),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("messages")
    world(d)
    return d


def test_the_battery_is_large_and_names_are_unique():
    assert len(CASES) >= 30
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize(("args", "fragments"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_short_error_line(files, args, fragments, monkeypatch):
    monkeypatch.chdir(files)
    before = listing(files)
    out = files / "out-never"
    argv = [a.replace("{d}", str(files)).replace("{out}", str(out)) for a in args]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 2, (result.exit_code, result.output[:2000], result.exception)
    err = result.stderr
    assert "Traceback" not in result.output and "internal error" not in err
    assert "╭" not in err and "Usage:" not in err  # not the argument parser's box
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, err[:2000]
    assert len(errors[0]) < 300, errors[0]
    assert len(err) < 1000, err[:2000]  # nothing else echoes the value either
    assert all(ch.isprintable() for ch in errors[0])
    assert "forged line" not in err or "\\nerror: forged" in err  # never a line of its own
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
    assert result.stdout == ""
    assert not out.exists()
    assert listing(files) == before


SHOWN_VALUES = {"mb": MB, "controls": "a\nb\rc\x1b[0m\u2028d", "list": list(range(10**5)),
                "int": 10**5000, "path": Path("/x") / ("y" * 500), "array": np.ones((50, 50)),
                "bytes": b"\x00" * 10**4}


@pytest.mark.parametrize("name", list(SHOWN_VALUES))
def test_shown_is_short_printable_and_says_the_size(name):
    value = SHOWN_VALUES[name]
    text = shown(value)
    assert len(text) <= 260 and text.isprintable()
    assert "\n" not in text and "\r" not in text
    if name == "int":
        assert text == "an integer of about 5001 digits"
    elif name != "controls":
        assert "…" in text and text.endswith(("characters)", "items)", "bytes)")), text


def test_every_error_line_is_bounded_and_printable():
    """The last guard: whatever a message holds, each printed line is printable and bounded,
    its start (the field) and end (what is allowed) kept."""
    lines = error_lines(ValueError(f"field: {MB}\x1b[2J; allowed: this\nsecond: problem"))
    assert len(lines) == 2 and all(len(line) <= 1000 and line.isprintable() for line in lines)
    assert lines[0].startswith("field: ") and lines[0].endswith("; allowed: this")
