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


def assert_drawn(png: Path) -> None:
    """``png`` is a drawn figure: a readable PNG of at least 200 x 150 pixels in more than 8
    colours (an empty or failed render is one or two colours; a small matrix image compresses
    well, so its size in bytes says nothing)."""
    from PIL import Image

    assert png.is_file(), png
    with Image.open(png) as im:
        assert im.width >= 200 and im.height >= 150, (png, im.size)
        colours = im.convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 8, (png, len(colours))


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
        assert_drawn(folder / png)
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


# --- the documentation site (tests/test_site.py, test_gallery.py, test_tutorials.py,
# test_site_browser.py) -------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent
SITE_TOOLS = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python", "pymdownx")
SITE_BUILD_TIMEOUT = 1200


def missing_site_tools() -> list[str]:
    """The docs tools (the ``docs`` extra) that are not installed."""
    import importlib.util

    return [name for name in SITE_TOOLS if importlib.util.find_spec(name.split(".")[0]) is None
            or importlib.util.find_spec(name) is None]


@pytest.fixture(scope="session")
def tutorial_cache(tmp_path_factory) -> Path:
    """One folder of executed small tutorials for the whole test run (shared by the xdist
    workers: each tutorial runs once, for tests/test_tutorials.py and the site build alike;
    docs/_ext/tutorials.py, ``executed``)."""
    base = tmp_path_factory.getbasetemp()  # under xdist: this run's folder of one worker
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "tutorial-cache"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def built_site(tmp_path_factory, tutorial_cache) -> Path:
    """The site, built once per test process with ``mkdocs build --strict`` (no warning, no
    error), the tutorials in their small versions; skipped where the docs tools are missing."""
    if missing_site_tools():
        pytest.skip(f"the docs tools are not installed ({', '.join(missing_site_tools())}); "
                    "`pip install -e '.[docs]'` or `make docs` installs them")
    site = tmp_path_factory.mktemp("site") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "SHALLOWFLOW_TUTORIAL_SMALL": "1",
           "SHALLOWFLOW_TUTORIAL_CACHE": str(tutorial_cache)}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(site)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=SITE_BUILD_TIMEOUT)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-6000:]
    assert "WARNING" not in log, log[-6000:]
    return site
