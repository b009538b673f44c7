"""The built site in a real browser: headless Chromium opens the home page, the gallery's index,
one gallery page and one tutorial, and every image on them has loaded (``complete`` and a
``naturalWidth`` above 0, read by a script the test adds to a copy of the page, from the DOM
Chromium prints after the page's load event). A page with a missing image is seen as broken, so
the check can fail. The link checker over the whole site is tests/test_site.py's, on the same
build.

Chromium comes from the system (Debian: ``apt-get install chromium``; .ci/run installs it where
it can); without it the test is skipped, saying so."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
PROBE = """<script>window.addEventListener("load", function () {
  var rows = Array.prototype.map.call(document.images, function (i) {
    return [i.getAttribute("src"), i.complete, i.naturalWidth]; });
  var out = document.createElement("pre"); out.id = "image-probe";
  out.textContent = JSON.stringify(rows); document.body.appendChild(out); });</script>"""
FOUND = re.compile(r'<pre id="image-probe">(.*?)</pre>', re.S)

pytestmark = pytest.mark.heavy


def browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no Chromium on this machine (apt-get install chromium); the browser check "
                "needs one")


def images(page: Path) -> list[tuple[str, bool, int]]:
    """(src, complete, naturalWidth) of every image of ``page`` after its load event, in
    headless Chromium (a copy of the page with the probe script, beside it)."""
    probe = page.with_name(f"_probe_{page.name}")
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    try:
        done = subprocess.run([browser(), "--headless", "--no-sandbox", "--disable-gpu",
                               "--allow-file-access-from-files", "--virtual-time-budget=15000",
                               "--dump-dom", probe.as_uri()],
                              capture_output=True, text=True, timeout=120)
    finally:
        probe.unlink()
    found = FOUND.search(done.stdout)
    assert found, f"no probe result from Chromium for {page.name}: {done.stderr[-2000:]}"
    return [tuple(row) for row in json.loads(found.group(1))]


def test_a_missing_image_is_seen_as_broken(tmp_path):
    """The negative control: the probe reports an image that does not load."""
    page = tmp_path / "broken.html"
    page.write_text('<html><body><img src="nowhere.png"></body></html>')
    assert [(src, width) for src, _, width in images(page)] == [("nowhere.png", 0)]


def test_the_images_load_in_a_browser(built_site):
    gallery_page = sorted((built_site / "gallery").glob("bf-fig2.html")
                          or (built_site / "gallery").glob("*-*.html"))[0]
    tutorial = sorted((built_site / "tutorials").glob("*.html"))[0]
    pages = {"index.html": 1, "gallery/index.html": len(list((built_site / "gallery").glob(
        "*-*.html"))), gallery_page.relative_to(built_site).as_posix(): 1,
        tutorial.relative_to(built_site).as_posix(): 1}
    broken = []
    for page, least in pages.items():
        seen = images(built_site / page)
        assert len(seen) >= least, (page, seen)
        broken += [(page, src) for src, complete, width in seen if not complete or width <= 0]
    assert not broken, broken
