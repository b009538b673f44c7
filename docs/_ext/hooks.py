"""mkdocs hooks (mkdocs.yml ``hooks``): a page line ``<!-- api: PACKAGE -->`` becomes one
``::: PACKAGE.MODULE`` block per module of that package (its own ``.py`` files, sorted, no
private ones), so the API reference lists a new module without anyone editing a page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

SRC = Path(__file__).resolve().parents[2] / "src"
MARKER = re.compile(r"^<!-- api: ([\w.]+) -->$", re.M)


def modules(package: str) -> list[str]:
    """The public modules directly inside ``package`` (a folder under src/), sorted."""
    folder = SRC.joinpath(*package.split("."))
    return [f"{package}.{p.stem}" for p in sorted(folder.glob("*.py")) if not p.stem.startswith("_")]


def expand(markdown: str) -> str:
    """``markdown`` with every api marker replaced by its ``:::`` blocks."""
    return MARKER.sub(lambda m: "\n\n".join(f"::: {name}" for name in modules(m.group(1))),
                      markdown)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    return expand(markdown)
