"""The repository is self-contained: every docs/math.md section the code cites exists, and
nothing points outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CITED = re.compile(r"(?:docs/)?math\.md §(\d+(?:\.\d+)?(?:\(\d+\))?)")
SCANNED = ("src", "tests", "bench", "examples", "README.md", "docs/architecture.md")


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
