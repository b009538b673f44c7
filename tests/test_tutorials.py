"""The tutorials (docs/tutorials/*.py, executed and rendered by docs/_ext/tutorials.py): the
percent-format reader splits cells as jupytext does, every tutorial runs whole in its small
version (``SHALLOWFLOW_TUTORIAL_SMALL=1``) and draws figures, the rendered page holds every
cell, output and figure, and the site's nav lists every tutorial."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import yaml
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = sorted((ROOT / "docs/tutorials").glob("*.py"))


def hook():
    spec = importlib.util.spec_from_file_location("docs_tutorials_hook",
                                                  ROOT / "docs/_ext/tutorials.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_percent_cells():
    """Markdown cells lose their comment marks, code cells keep their text, a leading comment
    header and empty cells are dropped (jupytext's percent format)."""
    text = ("# a header comment\n\n# %% [markdown]\n# # Title\n#\n# Some *text*.\n\n"
            "# %%\nx = 1\nprint(x)\n\n# %%\n\n# %% [markdown]\n# end\n")
    got = [(c.kind, c.source) for c in hook().cells(text)]
    assert got == [("markdown", "# Title\n\nSome *text*."), ("code", "x = 1\nprint(x)"),
                   ("markdown", "end")]


def test_there_are_five_tutorials_and_the_nav_lists_them():
    assert len(TUTORIALS) >= 5
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    section = next(item["Tutorials"] for item in config["nav"]
                   if isinstance(item, dict) and "Tutorials" in item)
    listed = {next(iter(entry.values())) for entry in section}
    assert listed == {f"tutorials/{p.stem}.md" for p in TUTORIALS}


@pytest.mark.slow
@pytest.mark.parametrize("script", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs_small_and_renders(script, tutorial_cache):
    t = hook()
    folder, done = t.executed(script, tutorial_cache, small=True)
    code = [c.source for c in t.cells(script.read_text()) if c.kind == "code"]
    assert [c["source"] for c in done if c["kind"] == "code"] == code  # every cell ran
    figures = [f for c in done for f in c["figures"]]
    assert figures, "a tutorial draws at least one figure"
    for f in figures:
        with Image.open(folder / f) as im:
            assert im.width > 100 and im.height > 100
    page = t.render(script.stem, done)
    for c in done:
        assert c["source"] in page
        assert c["output"].rstrip() in page
        for f in c["figures"]:
            assert f"]({script.stem}/{f})" in page
