"""``shallowflow example``: the repository's examples/, shipped in the package, listed, printed and
written with the files they read beside them, so a user with only the wheel can run them (the
installed wheel itself: tests/test_wheel.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shallowflow.cli.commands import app
from shallowflow.config import load_experiment
from shallowflow.sweep import load_sweep

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted(p.stem for p in (ROOT / "examples").glob("*.toml"))


def invoke(*args: str):
    return CliRunner().invoke(app, ["example", *args])


def without_paths(value):
    """A dumped experiment without its file paths (the one thing writing an example changes)."""
    if isinstance(value, dict):
        return {k: without_paths(v) for k, v in value.items() if k != "path"}
    return value


def test_the_list_names_every_example_of_the_repository():
    result = invoke()
    assert result.exit_code == 0, result.output
    listed = re.findall(r"^  (\S+) ", result.stdout, re.M)
    assert listed == EXAMPLES and len(EXAMPLES) > 10
    assert "tiny_init" in CliRunner().invoke(app, ["list"]).stdout


def test_an_example_is_printed_as_it_is(tmp_path):
    result = invoke("dpb_sphere.toml")
    assert result.exit_code == 0, result.output
    assert result.stdout == (ROOT / "examples/dpb_sphere.toml").read_text()
    noted = invoke("tiny_init")
    assert "hand_vector.csv" in noted.stderr and "--out" in noted.stderr


@pytest.mark.parametrize("name", EXAMPLES)
def test_a_written_example_reads_the_files_written_beside_it(name, tmp_path, monkeypatch):
    """Written into a subfolder and loaded from the folder the command ran in (where paths are
    relative to), the example is the repository's, its files byte for byte the same."""
    monkeypatch.chdir(tmp_path)
    result = invoke(name, "--out", "sub/mine.toml")
    assert result.exit_code == 0, result.output
    text = (ROOT / "examples" / f"{name}.toml").read_text()
    written = {p.name for p in (tmp_path / "sub").iterdir()}
    reads = {Path(r).name for r in re.findall(r'"examples/(data/[^"]+)"', text)}
    bases = set(re.findall(r'^base = "([^"]+)"', text, re.M))
    assert written == {"mine.toml"} | reads | bases
    for file in reads:
        assert (tmp_path / "sub" / file).read_bytes() == (ROOT / "examples/data" / file).read_bytes()
    if bases:
        mine, theirs = load_sweep("sub/mine.toml"), load_sweep(ROOT / "examples" / f"{name}.toml")
        assert [p.experiment for p in mine.points] == [p.experiment for p in theirs.points]
        return
    mine = load_experiment("sub/mine.toml").model_dump()
    monkeypatch.chdir(ROOT)
    theirs = load_experiment(f"examples/{name}.toml").model_dump()
    assert without_paths(mine) == without_paths(theirs)
    assert mine != theirs if reads else mine == theirs


def test_refusals_are_one_error_line_and_change_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke("tiny_init", "--out", "t.toml").exit_code == 0
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    cases = [
        (["tiny_init", "--out", "t.toml"], "already exists; pass --overwrite"),
        (["tiny_init", "--out", "t.yaml"], "must name a .toml file"),
        (["tiny_iint"], "closest: tiny_init"),
        (["sweep_width", "--out", "tblel_orthonormal.toml"], "the name of a file the example reads"),
    ]
    for args, fragment in cases:
        result = invoke(*args)
        assert result.exit_code == 2 and result.stdout == "", (args, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], lines
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
