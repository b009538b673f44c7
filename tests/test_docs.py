"""The documentation is self-contained and its code runs.

Self-contained: every docs/math.md section the code and the pages cite exists, and nothing points
outside the repository.

Runs: every fenced ``python`` and ``bash`` block of README.md and of the pages under docs/ is run,
page by page, in a fresh temporary folder holding a link to ``examples/`` and a ``.venv/bin/``
with ``shallowflow`` and ``python`` of the interpreter running the tests, so the blocks run as
written (``.venv/bin/shallowflow run ...``). A page's blocks run in their order: its ``python``
blocks in one interpreter that keeps its names from block to block, its ``bash`` blocks in bash
(``-e``, ``-o pipefail``); a later block sees the files an earlier one wrote. Every ``toml`` block
must parse, and one that is a whole experiment (a ``[data]`` table, no ``base``) must validate.
The Python blocks keep compiled programs in the tests' cache folder, as the command line does.

The marker convention (docs/architecture.md, "How to add ...", a documentation page): a block that is
slow (more than a few seconds), needs what the tests lack (a GPU, a cluster, the network) or only
illustrates is skipped by the line right above its fence::

    <!-- docs-test: skip REASON -->

REASON is required and says why (and, where there is one, which test covers the block instead).
Any other ``docs-test:`` comment, or a marker not directly above a fence, is an error.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CITED = re.compile(r"(?:docs/)?math\.md §(\d+(?:\.\d+)?(?:\(\d+\))?)")
SCANNED = ("src", "tests", "bench", "examples", "README.md", "docs")
RUN = ("python", "bash")
MARKER = re.compile(r"^<!-- docs-test: (.*?) -->$", re.M)
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
PAGE_TIMEOUT = 300


def files():
    for name in SCANNED:
        path = ROOT / name
        yield from ([path] if path.is_file() else
                    (p for p in path.rglob("*") if p.suffix in (".py", ".md", ".toml")
                     and "egg-info" not in str(p)))


def test_every_cited_math_section_exists():
    headings = set(re.findall(r"^#+ §(\S+)", (ROOT / "docs/math.md").read_text(), re.M))
    missing = {(p.relative_to(ROOT).as_posix(), sec) for p in files()
               for sec in CITED.findall(p.read_text()) if sec not in headings}
    assert not missing, sorted(missing)


def test_nothing_points_outside_the_repository():
    bad = re.compile(r"shared/|MATH\.md|DESIGN\.md")
    hits = [p.relative_to(ROOT).as_posix() for p in files() if p.name != "test_docs.py"
            and bad.search(p.read_text())]
    assert not hits, hits


# --- the code blocks ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    page: str        # path relative to the repository
    line: int        # line of the opening fence
    lang: str
    code: str
    skip: str | None  # the marker's reason, None when the block runs


def pages() -> list[Path]:
    """README.md and every Markdown page of the site (docs/, without the build helpers)."""
    return [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md")
                                       if "_ext" not in p.parts)]


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` with their skip markers."""
    text = page.read_text()
    found = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.fullmatch(before)
        skip = marker.group(1).removeprefix("skip").strip() if marker else None
        found.append(Block(page.relative_to(ROOT).as_posix(), line, m.group(1), m.group(2), skip))
    return found


def test_markers_follow_the_convention():
    """Every marker reads ``skip REASON`` (a reason of three words or more) and stands right
    above a fence; a skipped block is one that would otherwise run or be parsed."""
    problems = []
    for page in pages():
        text = page.read_text()
        for m in MARKER.finditer(text):
            where = f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
            words = m.group(1).split()
            if not words or words[0] != "skip" or len(words) < 4:
                problems.append(f"{where}: {m.group(0)!r} is not 'skip' and a reason")
            if not text[m.end():].startswith("\n```"):
                problems.append(f"{where}: the marker is not directly above a fence")
        for b in blocks(page):
            if b.skip is not None and b.lang not in (*RUN, "toml"):
                problems.append(f"{b.page}:{b.line}: a skip marker on a {b.lang or 'plain'} block")
    assert not problems, problems


DRIVER = r'''
import json, resource, subprocess, sys, time, traceback
from shallowflow.config import experiment_from_mapping
from shallowflow.config.spec_types import tomllib
from shallowflow.runtime import compile_cache

compile_cache.enable()  # as the command line does: the blocks share compiled programs

def cpu():
    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF,
               resource.RUSAGE_CHILDREN) for f in ("ru_utime", "ru_stime"))

names = {"__name__": "__docs__"}
for b in json.load(open(sys.argv[1])):
    where = f"{b['page']}:{b['line']} ({b['lang']})"
    start, wall = cpu(), time.time()
    try:
        if b["lang"] == "python":
            exec(compile(b["code"], where, "exec"), names)
        elif b["lang"] == "bash":
            subprocess.run(["bash", "-e", "-o", "pipefail", "-c", b["code"]], check=True)
        else:
            mapping = tomllib.loads(b["code"])
            if "data" in mapping and "base" not in mapping:
                experiment_from_mapping(mapping)
    except BaseException:
        traceback.print_exc()
        print(f"FAILED: the block at {where}", flush=True)
        sys.exit(1)
    print(f"{where}: {cpu() - start:.1f} s CPU, {time.time() - wall:.1f} s", flush=True)
'''


def workspace(tmp: Path) -> None:
    """``tmp`` as the blocks expect the repository's root: ``examples/`` and ``.venv/bin/``."""
    (tmp / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    bin_ = tmp / ".venv" / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "python").symlink_to(sys.executable)
    cli = bin_ / "shallowflow"
    cli.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c '
                   '"import sys; from shallowflow.cli import main; sys.argv[0] = \'shallowflow\'; '
                   'main()" "$@"\n')
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)


def runnable() -> list[Path]:
    return [p for p in pages() if any(b.skip is None and b.lang in (*RUN, "toml")
                                      for b in blocks(p))]


@pytest.mark.slow
@pytest.mark.parametrize("page", runnable(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_page_code_runs(page, tmp_path):
    todo = [b.__dict__ for b in blocks(page) if b.skip is None and b.lang in (*RUN, "toml")]
    workspace(tmp_path)
    (tmp_path / ".blocks.json").write_text(json.dumps(todo))
    (tmp_path / ".driver.py").write_text(DRIVER)
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"),
                                                      os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, ".driver.py", ".blocks.json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=PAGE_TIMEOUT)
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]


HELD = re.compile(r"^(\S+\.md) holds and runs these lines\b")


def test_blocks_skipped_as_held_elsewhere_are_there():
    """A block skipped with "PAGE holds and runs these lines" (README's quickstart) has every
    line in a block that PAGE runs, so the lines a reader copies are tested all the same."""
    missing = []
    for page in pages():
        for b in blocks(page):
            held = HELD.match(b.skip or "")
            if held:
                there = {line.strip() for o in blocks(ROOT / held.group(1)) if o.skip is None
                         for line in o.code.splitlines()}
                missing += [f"{b.page}:{b.line}: {line!r}" for line in b.code.splitlines()
                            if line.strip() and line.strip() not in there]
    assert not missing, missing
