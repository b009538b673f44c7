"""The gallery (docs/_ext/gallery.py): every reproduction of the catalogue has a committed folder
``gallery/NAME/`` with what its page needs, the folders are small and name no path of a machine,
a kept ``results.nc`` judges again to the committed claims, and the built site shows, for every
folder, a page with all its figures and a claims table that matches its ``claims.json``, and a
thumbnail on the index under its paper."""

from __future__ import annotations

import html
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

import shallowflow
from conftest import assert_drawn, check_reproduction_folder
from shallowflow.citations import ENTRIES, PAPERS

ROOT = Path(__file__).resolve().parent.parent
GALLERY = ROOT / "gallery"
MAX_BYTES = 8 * 2**20
MACHINE_PATH = re.compile(r"/work/|/tmp/|/home/|/root/|[A-Z]:\\\\")


def hook():
    """docs/_ext/gallery.py, loaded from its file (it is not a package module)."""
    spec = importlib.util.spec_from_file_location("docs_gallery_hook", ROOT / "docs/_ext/gallery.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def folders() -> list[Path]:
    return sorted(p.parent for p in GALLERY.glob("*/claims.json"))


def test_every_reproduction_has_a_gallery_folder():
    """Each name of ``shallowflow list`` has gallery/NAME/ (the failure lists the missing ones
    and the command that makes them), and no folder is left for a name the catalogue lacks."""
    names = set(shallowflow.catalogue())
    have = {p.name for p in folders()}
    missing, stale = sorted(names - have), sorted(have - names)
    assert not missing, (f"no gallery folder for {len(missing)} reproduction(s): "
                         f"{', '.join(missing)}; make them with "
                         f"`python docs/_ext/gallery.py {' '.join(missing)}` and commit gallery/")
    assert not stale, f"gallery folders of no reproduction: {', '.join(stale)}"


def test_the_index_names_the_reproductions_without_a_folder():
    """A reproduction without a folder is listed on the index, not silently left out."""
    g = hook()
    text = g.index([g.read(p.name) for p in folders()[:2]], ["safran-nowhere"])
    assert "Not in the gallery yet" in text and "`safran-nowhere`" in text


@pytest.mark.parametrize("folder", folders(), ids=lambda p: p.name)
def test_gallery_folder_is_whole(folder):
    """A reproduction folder (the checks every one passes), the record of how it was made
    (command, a 40-hex commit, a positive wall time), and no path of a machine in any text."""
    check_reproduction_folder(folder)
    record = json.loads((folder / "gallery.json").read_text())
    assert record["command"].startswith(f"shallowflow reproduce {folder.name} ")
    assert re.fullmatch(r"[0-9a-f]{40}", record["commit"])
    assert record["wall_s"] > 0 and record["machine"]
    for p in folder.iterdir():
        if p.suffix in (".md", ".json") or p.name == ".shallowflow":
            assert not MACHINE_PATH.search(p.read_text()), p


def test_the_gallery_is_small():
    total = sum(p.stat().st_size for p in GALLERY.rglob("*") if p.is_file())
    assert total < MAX_BYTES, f"gallery/ holds {total / 2**20:.1f} MiB"


def _smallest_kept() -> Path:
    kept = [p for p in folders() if (p / "results.nc").is_file()]
    return min(kept, key=lambda p: (p / "results.nc").stat().st_size)


@pytest.mark.slow
def test_a_kept_folder_judges_again_to_its_claims(tmp_path):
    """``reproduce NAME --from gallery/NAME`` (the smallest kept results.nc) gives the
    committed claims: same ids, verdicts and measured values."""
    from shallowflow.reproductions import rejudge

    folder = _smallest_kept()
    rejudge(folder.name, folder, tmp_path / "again", show_progress=False)
    committed = {c["id"]: c for c in json.loads((folder / "claims.json").read_text())}
    again = {c["id"]: c for c in json.loads((tmp_path / "again/claims.json").read_text())}
    assert set(again) == set(committed)
    for cid, c in committed.items():
        assert again[cid]["verdict"] == c["verdict"], cid
        assert again[cid]["measured"] == c["measured"], cid


# --- the built pages ---------------------------------------------------------------------------

ROW = re.compile(r"<tr>(.*?)</tr>", re.S)
VERDICT = re.compile(r'<span class="verdict verdict-(\w+)">([^<]+)</span>')
CLASSES = {"reproduced": "ok", "partly": "partly", "not reproduced": "no",
           "inconclusive": "unknown"}


def table_rows(page: str) -> dict[str, str]:
    """claim id -> verdict text, from the claims tables of a built gallery page (the id is the
    bold text that starts the row's first cell)."""
    rows = {}
    for row in ROW.findall(page):
        cid = re.search(r"<td><strong>([^<]+)</strong>", row)
        verdict = VERDICT.search(row)
        if cid and verdict:
            assert CLASSES[html.unescape(verdict.group(2))] == verdict.group(1), row
            rows[cid.group(1)] = html.unescape(verdict.group(2))
    return rows


def report_figures(folder: Path) -> list[str]:
    return re.findall(r"^!\[[^\]]*\]\(([^)]+\.png)\)", (folder / "report.md").read_text(), re.M)


@pytest.mark.slow
def test_every_gallery_page_shows_its_figures_and_claims(built_site):
    for folder in folders():
        page = (built_site / "gallery" / f"{folder.name}.html").read_text()
        for png in report_figures(folder):
            assert f'src="{folder.name}/{png}"' in page, (folder.name, png)
            built = built_site / "gallery" / folder.name / png
            assert_drawn(built)
        claims = json.loads((folder / "claims.json").read_text())
        assert table_rows(page) == {c["id"]: c["verdict"] for c in claims}, folder.name
        record = json.loads((folder / "gallery.json").read_text())
        text = html.unescape(re.sub(r"<[^>]+>", "", page))  # the code block is highlighted
        assert record["command"] in text and f"{record['wall_s']:.1f} s" in text


def first_author(key: str) -> str:
    author = dict(ENTRIES[key].fields)["author"].split(" and ")[0]
    return author.split(",")[0].strip()


@pytest.mark.slow
def test_the_index_shows_a_thumbnail_per_reproduction_under_its_paper(built_site):
    page = (built_site / "gallery" / "index.html").read_text()
    content = page[page.index("<article"):page.index("</article>")]  # not the nav's links
    sections = re.split(r"<h2 ", content)
    for folder in folders():
        card = f'class="gallery-card" href="{folder.name}.html"'
        holding = [s for s in sections if card in s]
        assert len(holding) == 1, folder.name
        assert f'src="{folder.name}/{report_figures(folder)[0]}"' in holding[0], folder.name
        heading = holding[0].split("</h2>")[0]
        for key in PAPERS.get(folder.name.split("-")[0], ()):
            assert first_author(key) in heading, (folder.name, heading)
