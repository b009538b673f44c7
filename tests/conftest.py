"""Shared test setup: JAX in float64 before any test builds an array (importing shallowflow
changes no global state; the entry points and this file switch float64 on explicitly)."""

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import shallowflow
from shallowflow.reproductions.claims import ROLES, SOURCES, VERDICTS
from shallowflow.runtime.compile_cache import ENV

shallowflow.enable_full_precision()
# the development benchmarks (bench/bench_NAME.py, bench/dev_suite.py) are modules of the
# repository's bench/, not of the package: their tests import them from there
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
# the command line keeps compiled programs on disk: here in a folder of this test process, never
# in the user's cache (removed when the process ends)
_CACHE = tempfile.TemporaryDirectory(prefix="shallowflow-xla-")
os.environ.setdefault(ENV, _CACHE.name)

TINY_EXPERIMENT = """[data]
kind = "sphere"
n = 6
d = 3
[model]
width = 4
[init]
scheme = "dpb"
[train]
lr = 0.1
steps = 5
"""
"""A valid experiment that trains in a blink (the bad-input tests override one field of it)."""


def changed(mapping: dict, **changes) -> dict:
    """``mapping`` (a config as nested tables) with ``changes`` set: a key's tables are joined by
    a double underscore (``train__lr=0.5`` sets ``mapping["train"]["lr"]``)."""
    for dotted, value in changes.items():
        *head, last = dotted.split("__")
        node = mapping
        for h in head:
            node = node.setdefault(h, {})
        node[last] = value
    return mapping


def check_reproduction_folder(folder, ids=None):
    """Checks every reproduction folder must pass: claims.json is a non-empty list of claims
    with all fields, a known verdict, a source of a known kind that says where, and a known role
    (exactly the claim ids ``ids`` when given), and every PNG
    that report.md links exists and is not trivially small; params.json and provenance.json are
    there. Returns (claims by id, report text)."""
    fields = {"id", "statement", "reference", "measured", "verdict", "interval", "notes", "variants",
              "source", "role"}
    claims = json.loads((folder / "claims.json").read_text())
    assert isinstance(claims, list) and claims
    if ids is not None:
        assert {c["id"] for c in claims} == set(ids)
    for c in claims:
        assert set(c) == fields
        assert c["verdict"] in VERDICTS
        assert c["source"]["kind"] in SOURCES and c["source"]["where"].strip(), c["id"]
        assert c["role"] in ROLES, c["id"]
        if c["source"]["kind"] in ("derived", "threshold"):  # never called the paper's
            assert "paper's value" not in (c["statement"] + c["notes"]).lower(), c["id"]
    report = (folder / "report.md").read_text()
    pngs = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", report)
    assert pngs
    for png in pngs:
        assert (folder / png).is_file() and (folder / png).stat().st_size > 10_000
    for name in ("params.json", "provenance.json"):
        assert (folder / name).is_file()
    reproduction = json.loads((folder / "params.json").read_text())["reproduction"]
    assert "## Cite" in report and f"`shallowflow cite {reproduction}`" in report
    return {c["id"]: c for c in claims}, report


def assert_sourced(claims) -> None:
    """Every Claim names where its reference comes from: a kind of ``SOURCES`` with a non-empty
    ``where``, and a role of ``ROLES`` (issue 34)."""
    from shallowflow.reproductions.claims import ROLES, SOURCES

    for c in claims:
        assert c.source is not None, c.id
        assert c.source.kind in SOURCES and c.source.where.strip(), c.id
        assert c.role in ROLES, c.id


class RecordingExecutor:
    """The in-process executor, recording how many batches it knew of as each one finished (a
    caller may append batches while it runs: shallowflow.training.entry.train_chains)."""

    name = "recording"

    def __init__(self):
        from shallowflow.runtime.executors import LocalExecutor

        self.local = LocalExecutor(1)  # one batch at a time: results in the batches' order
        self.known: list[int] = []

    def check(self):
        pass

    def close(self):
        pass

    def run(self, task, batches, bar, describe):
        for batch, result in self.local.run(task, batches, bar, describe):
            self.known.append(len(batches))
            yield batch, result


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """``tmpfs(size)``: a fresh tmpfs of ``size`` (mount's syntax, e.g. "64k") under
    ``tmp_path``, unmounted after the test; the test is skipped where mounting fails."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        mnt = tmp_path / f"disk{len(mounted)}"
        mnt.mkdir()
        made = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt)],
                              capture_output=True, check=False)
        if made.returncode != 0:
            pytest.skip("cannot mount a tmpfs here (needs root in a mount namespace)")
        mounted.append(mnt)
        return mnt

    yield mount
    for mnt in mounted:
        subprocess.run(["umount", str(mnt)], check=False)
