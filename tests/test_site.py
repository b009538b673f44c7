"""The documentation site: it builds with mkdocs in strict mode (warnings are errors) with no
network, every link and image of the built site resolves, and the pages list what the code has:
every public name, every reproduction, every command and every room. Also the README's length
and the citation metadata."""

from __future__ import annotations

import re
import sys
import zlib
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml

import shallowflow

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
LINK = re.compile(r"""(?:href|src)=["']([^"']+)["']""")
IDS = re.compile(r"""\bid=["']([^"']+)["']""")
NOT_ROOMS = {"cli": "the command line's page, docs/reference/cli.md, documents it",
             "benchmarks": "`shallowflow bench`: docs/guides/benchmarks.md"}


@pytest.mark.slow
def test_the_site_builds_offline_and_whole(built_site):
    """One build (the slow part: the ``built_site`` fixture, strict, no warning) and every
    check of the built site."""
    check_links(built_site)
    check_figures(built_site)
    check_api(built_site)


def check_links(site: Path) -> None:
    """A link checker over the whole built site: every relative href or src names a file of the
    site, and every #fragment an id of its page; nothing is loaded from the network (no
    http(s) src: scripts, styles, fonts and images are all local)."""
    ids: dict[Path, set[str]] = {}

    def ids_of(page: Path) -> set[str]:
        if page not in ids:
            ids[page] = set(IDS.findall(page.read_text(errors="replace")))
        return ids[page]

    broken, remote = [], []
    pages = sorted(p for p in site.rglob("*.html") if p.name != "404.html")  # a server's page
    assert len(pages) > 20
    for page in pages:
        text = page.read_text(errors="replace")
        for target in LINK.findall(text):
            parts = urlsplit(target)
            if parts.scheme in ("http", "https"):
                if f'src="{target}"' in text or f"src='{target}'" in text:
                    remote.append(f"{page.relative_to(site)}: {target}")
                continue
            if parts.scheme or target.startswith("//"):
                continue  # mailto:, data:, javascript:
            file = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if file.is_dir():
                file = file / "index.html"
            where = f"{page.relative_to(site)}: {target}"
            if not file.is_file():
                broken.append(where)
            elif parts.fragment and file.suffix == ".html" and \
                    unquote(parts.fragment) not in ids_of(file):
                broken.append(where + " (no such anchor)")
    assert not broken, (len(broken), broken[:40])
    assert not remote, remote[:20]


def check_figures(site: Path) -> None:
    """Every figure of the reproduction pages and the demo's is copied into the site and shown
    by the page that names it."""
    for png in [*(DOCS / "repro").glob("*.png"), DOCS / "demo_pl_curvature.png"]:
        assert (site / png.relative_to(DOCS)).is_file(), png
    shown = "".join(p.read_text() for p in (site / "reproductions").glob("*.html"))
    for png in (DOCS / "repro").glob("*.png"):
        assert f"../repro/{png.name}" in shown, png.name


def inventory(site: Path) -> set[str]:
    """The object names of the site's objects.inv (what the API reference documents)."""
    data = (site / "objects.inv").read_bytes()
    body = zlib.decompress(data.split(b"\n", 4)[4]).decode()
    return {line.split(" ", 1)[0] for line in body.splitlines()}


def public_targets() -> dict[str, str]:
    """Public name -> where it is defined (``module.qualname``)."""
    names = {"enable_full_precision": shallowflow.enable_full_precision}
    names |= {name: getattr(shallowflow, name) for name in shallowflow._PUBLIC}
    return {name: f"{obj.__module__}.{obj.__qualname__}" for name, obj in names.items()}


def check_api(site: Path) -> None:
    """The API reference documents every public name: docs/reference/public.md links each to
    where it is defined, and the built site's objects.inv holds that name."""
    documented = inventory(site)
    page = (DOCS / "reference/public.md").read_text()
    for name, target in public_targets().items():
        assert f"[`sf.{name}`][{target}]" in page, name
        assert target in documented, target
    assert set(public_targets()) | {"__version__"} == set(shallowflow.__all__)


def test_every_room_has_an_api_page():
    """Each subpackage of shallowflow is rendered by a page of docs/reference/ (a ``:::`` block
    or an ``api:`` line that lists its modules), except the rooms documented elsewhere."""
    pages = "".join(p.read_text() for p in (DOCS / "reference").glob("*.md"))
    rooms = [p.parent.name for p in (ROOT / "src/shallowflow").glob("*/__init__.py")]
    missing = [room for room in rooms if room not in NOT_ROOMS
               and f"<!-- api: shallowflow.{room} -->" not in pages
               and f"::: shallowflow.{room}\n" not in pages]
    assert not missing, missing
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import hooks
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    assert "shallowflow.theory.saddle_process" in hooks.modules("shallowflow.theory")
    assert "::: shallowflow.analysis.fits" in hooks.expand("<!-- api: shallowflow.analysis -->")


def test_every_reproduction_is_on_the_reproductions_pages():
    """The overview's table lists every reproduction of the catalogue, and each has a heading
    (its anchor) on its paper's page; no page lists one the catalogue lacks."""
    names = set(shallowflow.catalogue())
    table = (DOCS / "reproductions/index.md").read_text()
    listed = set(re.findall(r"\[`([a-z0-9-]+)`\]\(\w+\.md#", table))
    assert listed == names
    headings = {name for p in (DOCS / "reproductions").glob("*.md") if p.name != "index.md"
                for line in re.findall(r"^## (.*)$", p.read_text(), re.M)
                for name in re.findall(r"\b(?:dana|town|bf|mmv|safran|population)-[a-z0-9-]+", line)}
    assert headings == names


def test_every_command_is_in_the_command_line_reference():
    from shallowflow.cli.commands import app

    commands = {c.name or c.callback.__name__ for c in app.registered_commands}
    table = (DOCS / "reference/cli.md").read_text()
    assert commands and all(f"| `shallowflow {name}" in table for name in commands), commands


def test_the_readme_is_short_and_links_into_the_site():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 180
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / target).is_file(), target


def test_the_pages_have_no_tex_math():
    """The site has no TeX renderer: equations are written in Unicode, as in math.md, so a
    ``$...$`` or ``\\(...\\)`` outside code would show as raw TeX."""
    code = re.compile(r"```.*?```|`[^`\n]*`|^(?: {4}|\t).*$", re.S | re.M)
    tex = re.compile(r"\$[^$\s][^$\n]*\$|\\\(|\\\[\s*\\|\$\$")
    hits = [(p.relative_to(ROOT).as_posix(), m.group(0)) for p in [ROOT / "README.md",
                                                                    *DOCS.rglob("*.md")]
            for m in tex.finditer(code.sub("", p.read_text()))]
    assert not hits, hits


def test_citation_metadata():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["title"] == "shallowflow"
    assert cff["authors"] == [{"name": "shallowflow developers"}]
    assert cff["version"] == shallowflow.__version__  # pyproject reads the version from there
    assert len(cff["references"]) == 4
