"""The tutorials (mkdocs hook, mkdocs.yml ``hooks``): every ``docs/tutorials/NAME.py``, a
jupytext percent-format script, is executed when the site is built and rendered as the page
``tutorials/NAME.md``: its Markdown cells as text, its code cells as code, each followed by what
it printed and the figures it drew.

The format (jupytext's "percent" format, so the file also opens as a notebook): a line
``# %% [markdown]`` starts a Markdown cell, whose lines are comments (``# text``); a line ``# %%``
starts a code cell. A script runs as a whole with ``python docs/tutorials/NAME.py`` too.

Each tutorial runs in a fresh interpreter (:func:`execute`), in a temporary folder holding a
link to the repository's ``examples/``, with matplotlib's Agg backend; every figure open at the end
of a cell is written as a PNG and closed. A cell that raises stops the build with its traceback.
With the environment variable ``SHALLOWFLOW_TUTORIAL_SMALL=1`` (``tests/test_tutorials.py`` and the
tests' site build set it) every tutorial runs its small version: the same steps on fewer runs.

Running one by hand, rendered into a folder::

    python docs/_ext/tutorials.py docs/tutorials/NAME.py OUT_DIR

With ``SHALLOWFLOW_TUTORIAL_CACHE=DIR`` the hook reuses the executions it finds in DIR (one folder
per tutorial, mode and text: :func:`executed`).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "docs" / "tutorials"
SMALL = "SHALLOWFLOW_TUTORIAL_SMALL"
"""The environment variable that selects every tutorial's small version (``1``)."""
CACHE = "SHALLOWFLOW_TUTORIAL_CACHE"
"""The environment variable naming a folder of executed tutorials to reuse (:func:`executed`):
the tests execute each small tutorial once and build the site from the same results."""
CELL = re.compile(r"^# %%(.*)$", re.M)
DPI = 80
TIMEOUT = 900


@dataclass(frozen=True)
class Cell:
    kind: str      # "markdown" or "code"
    source: str


def cells(text: str) -> list[Cell]:
    """The cells of a percent-format script: text before the first marker is a code cell
    (dropped when it is blank or only a docstring-free header comment)."""
    marks = list(CELL.finditer(text))
    out = []
    head = text[:marks[0].start()] if marks else text
    if head.strip() and not all(line.startswith("#") for line in head.strip().splitlines()):
        out.append(Cell("code", head.strip("\n")))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[m.end() + 1:end].strip("\n")
        if "[markdown]" in m.group(1):
            lines = [line[2:] if line.startswith("# ") else line.lstrip("#")
                     for line in body.splitlines()]
            out.append(Cell("markdown", "\n".join(lines)))
        elif body.strip():
            out.append(Cell("code", body))
    return out


# --- running (in a child interpreter) -----------------------------------------------------------


def run_cells(script: Path, out: Path) -> None:
    """Execute the code cells of ``script`` in one namespace, writing ``out/cells.json`` (per
    cell: kind, source, printed text, figure files, seconds) and the figures ``out/NAME-K.png``.
    Raises (after writing what ran) when a cell does."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done: list[dict[str, Any]] = []
    names: dict[str, Any] = {"__name__": "__main__", "__file__": str(script)}
    count = 0
    try:
        for k, cell in enumerate(cells(script.read_text())):
            entry: dict[str, Any] = {"kind": cell.kind, "source": cell.source, "output": "",
                                     "figures": [], "seconds": 0.0}
            done.append(entry)
            if cell.kind != "code":
                continue
            printed, start = io.StringIO(), time.perf_counter()
            try:
                with contextlib.redirect_stdout(printed):
                    exec(compile(cell.source, f"{script.name} (cell {k + 1})", "exec"), names)
            finally:
                entry["output"] = printed.getvalue()
                entry["seconds"] = time.perf_counter() - start
                for num in plt.get_fignums():
                    count += 1
                    file = f"{script.stem}-{count}.png"
                    plt.figure(num).savefig(out / file, dpi=DPI, bbox_inches="tight")
                    entry["figures"].append(file)
                plt.close("all")
    finally:
        (out / "cells.json").write_text(json.dumps(done, indent=1))


def execute(script: Path, out: Path, small: bool | None = None) -> list[dict[str, Any]]:
    """Run ``script`` in a fresh interpreter (this file's :func:`run_cells`) in a temporary
    folder holding a link to ``examples/``; its figures and ``cells.json`` go into ``out``.
    ``small``: run the small version (default: as the environment says). Raises RuntimeError
    with the child's output when a cell fails."""
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"),
                                                      os.environ.get("PYTHONPATH")]))}
    if small is not None:
        env[SMALL] = "1" if small else "0"
    with tempfile.TemporaryDirectory(prefix="tutorial-") as work:
        (Path(work) / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
        done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--run",
                               str(script.resolve()), str(out.resolve())], cwd=work, env=env,
                              capture_output=True, text=True, timeout=TIMEOUT)
    if done.returncode != 0:
        raise RuntimeError(f"tutorial {script.name} failed:\n{(done.stdout + done.stderr)[-6000:]}")
    return json.loads((out / "cells.json").read_text())


def small_mode() -> bool:
    return os.environ.get(SMALL) == "1"


def executed(script: Path, cache: Path, small: bool) -> tuple[Path, list[dict[str, Any]]]:
    """The executed ``script`` in ``cache``: its folder (figures, ``cells.json``) and cells,
    executed now unless a folder for this very text and mode is there already (written to a
    temporary name and renamed, so a concurrent reader never sees half of one)."""
    digest = hashlib.sha256(script.read_bytes()).hexdigest()[:16]
    target = cache / f"{script.stem}-{'small' if small else 'full'}-{digest}"
    if not (target / "cells.json").is_file():
        part = cache / f".{target.name}-{os.getpid()}"
        shutil.rmtree(part, ignore_errors=True)
        execute(script, part, small)
        try:
            part.rename(target)
        except OSError:  # another process finished it first
            shutil.rmtree(part, ignore_errors=True)
    return target, json.loads((target / "cells.json").read_text())


def render(name: str, done: list[dict[str, Any]]) -> str:
    """The page of an executed tutorial: Markdown cells as they are, code cells in ``python``
    fences followed by their printed text (a ``text`` fence) and their figures."""
    parts = []
    for cell in done:
        if cell["kind"] == "markdown":
            parts.append(cell["source"])
            continue
        parts.append(f"```python\n{cell['source']}\n```")
        if cell["output"].strip():
            parts.append(f"```text\n{cell['output'].rstrip()}\n```")
        parts += [f"![{name}: figure]({name}/{f})" for f in cell["figures"]]
    total = sum(c["seconds"] for c in done)
    source = f"{name}.py"
    parts.append(f"*This page was executed when the site was built ({total:.0f} s). Its source, a "
                 f"jupytext percent-format script that runs as it is: [{source}]({source}).*")
    return "\n\n".join(parts) + "\n"


# --- the mkdocs hook -----------------------------------------------------------------------------


_BUILT: list[tempfile.TemporaryDirectory] = []  # the executed tutorials, until the build ends


def on_files(files: Any, config: Any, **kwargs: Any) -> Any:
    from mkdocs.structure.files import File

    if os.environ.get(CACHE):
        cache = Path(os.environ[CACHE])
        cache.mkdir(parents=True, exist_ok=True)
    else:  # a fresh execution, kept until the build ends
        _BUILT.append(tempfile.TemporaryDirectory(prefix="shallowflow-tutorials-"))
        cache = Path(_BUILT[-1].name)
    for script in sorted(TUTORIALS.glob("*.py")):
        name = script.stem
        folder, done = executed(script, cache, small_mode())
        files.append(File.generated(config, f"tutorials/{name}.md", content=render(name, done)))
        for cell in done:
            for fig in cell["figures"]:
                files.append(File.generated(config, f"tutorials/{name}/{fig}",
                                            abs_src_path=str(folder / fig)))
    return files


def on_post_build(config: Any, **kwargs: Any) -> None:
    while _BUILT:
        _BUILT.pop().cleanup()


if __name__ == "__main__":
    if sys.argv[1] == "--run":
        try:
            run_cells(Path(sys.argv[2]), Path(sys.argv[3]))
        except Exception:
            traceback.print_exc()
            sys.exit(1)
    else:
        target = Path(sys.argv[2])
        executed = execute(Path(sys.argv[1]), target)
        (target / f"{Path(sys.argv[1]).stem}.md").write_text(render(Path(sys.argv[1]).stem, executed))
