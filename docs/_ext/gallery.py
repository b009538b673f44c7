"""The gallery (mkdocs hook, mkdocs.yml ``hooks``): one page per reproduction and an index of
thumbnails grouped by paper, generated at every build from the committed reproduction folders
``gallery/NAME/`` of the repository (nothing is trained when the site is built).

A folder is what ``shallowflow reproduce NAME --out gallery/NAME --preset quick`` wrote, kept
small (:func:`prune`): its figures (PNG, re-encoded with a 256-colour palette), ``report.md``,
``claims.json``, ``params.json``, ``provenance.json`` and, where it is small, ``results.nc``
(then ``shallowflow reproduce NAME --from gallery/NAME --out DIR`` judges and draws it again),
plus ``gallery.json``: the command, the commit and the wall time that made it.

A page shows the reproduction's summary, the paper it reproduces (with a link), every figure with
its caption (from ``report.md``), the claims and checks tables from ``claims.json`` with coloured
verdicts, the command and its wall time. The Gallery entry of the nav (``Gallery:
gallery/index.md``) becomes a section with the index and one page per reproduction, by paper.

Making or refreshing folders (one at a time; each is timed)::

    python docs/_ext/gallery.py NAME [NAME ...]    # runs the quick preset into gallery/NAME
"""

from __future__ import annotations

import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "gallery"
SRC = ROOT / "src"
if str(SRC) not in sys.path:  # the package of this checkout, whatever is installed
    sys.path.insert(0, str(SRC))

from shallowflow.citations import ENTRIES, PAPERS  # noqa: E402

RECORD = "gallery.json"
"""The record of how a folder was made: command, commit, wall time, machine, date."""
KEEP = {"report.md", "claims.json", "params.json", "provenance.json", ".shallowflow", RECORD}
"""What a folder keeps besides its PNG figures (and a small ``results.nc``)."""
RESULTS_LIMIT = 300 * 2**10
"""``results.nc`` is kept (so ``--from`` can re-judge the folder) when it is at most this big."""
NAV_KEY = "Gallery"
FIGURE = re.compile(r"^!\[[^\]]*\]\(([^)\s]+\.png)\)\n\n\*(.*?)\*$", re.M | re.S)
"""A figure of report.md: the image line, a blank line, its caption in italics."""
LINKS = {"safran2018spurious": "https://proceedings.mlr.press/v80/safran18a.html",
         "safran2021effects": "https://proceedings.mlr.press/v134/safran21a.html"}
"""Where a paper without an arXiv number is read (the others link to arXiv)."""
VERDICT_CLASS = {"reproduced": "ok", "partly": "partly", "not reproduced": "no",
                 "inconclusive": "unknown"}


# --- the folders -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Folder:
    """One committed reproduction folder, read."""

    name: str
    path: Path
    title: str
    summary: str
    figures: list[tuple[str, str]]   # (file name, caption)
    claims: list[dict[str, Any]]
    record: dict[str, Any]
    params: dict[str, Any]

    @property
    def rejudgeable(self) -> bool:
        return (self.path / "results.nc").is_file()


def folder_names() -> list[str]:
    """The names of the committed folders (those holding a ``claims.json``), sorted."""
    return sorted(p.parent.name for p in GALLERY.glob("*/claims.json"))


def read(name: str) -> Folder:
    """The folder ``gallery/NAME`` with its title and summary (the report's heading and first
    paragraph), figures, claims, record and parameters."""
    path = GALLERY / name
    report = (path / "report.md").read_text()
    lines = report.split("\n\n")
    title = lines[0].removeprefix("# ").split(": ", 1)[-1].strip()
    summary = lines[1].strip()
    figures = [(f, " ".join(c.split())) for f, c in FIGURE.findall(report)]
    return Folder(name, path, title, summary, figures,
                  json.loads((path / "claims.json").read_text()),
                  json.loads((path / RECORD).read_text()) if (path / RECORD).is_file() else {},
                  json.loads((path / "params.json").read_text()))


def missing(catalogue: list[str]) -> list[str]:
    """The reproductions of ``catalogue`` that have no committed folder."""
    return sorted(set(catalogue) - set(folder_names()))


# --- papers ------------------------------------------------------------------------------------


def untex(text: str) -> str:
    """BibTeX text as plain text: accents ``{\\'e}`` as characters, braces dropped."""
    accents = {"'": "\u0301", "`": "\u0300", '"': "\u0308", "^": "\u0302", "~": "\u0303"}
    text = re.sub(r"\{\\(['`\"^~])\{?(\w)\}?\}",
                  lambda m: unicodedata.normalize("NFC", m.group(2) + accents[m.group(1)]), text)
    return text.replace("{", "").replace("}", "")


def fields(key: str) -> dict[str, str]:
    return {k: untex(v) for k, v in ENTRIES[key].fields}


def authors_short(key: str) -> str:
    """``Dana, Pillaud-Vivien, Bach`` or ``Town et al.``: the family names of an entry."""
    names = [a.split(",")[0].strip() if "," in a else a.split()[-1]
             for a in fields(key)["author"].split(" and ")]
    return ", ".join(names) if len(names) <= 3 else f"{names[0]} et al."


def link(key: str) -> str:
    f = fields(key)
    return f"https://arxiv.org/abs/{f['eprint']}" if "eprint" in f else LINKS.get(key, "")


def papers_of(name: str) -> tuple[str, ...]:
    """The BibTeX keys of the papers reproduction ``name`` follows (by its prefix)."""
    return PAPERS.get(name.split("-")[0], ())


def group_title(keys: tuple[str, ...]) -> str:
    if not keys:
        return "Other"
    return "; ".join(f"{authors_short(k)} {fields(k)['year']}" for k in keys)


def paper_lines(keys: tuple[str, ...]) -> list[str]:
    """One Markdown line per paper: authors, title (linked), venue, year."""
    out = []
    for key in keys:
        f = fields(key)
        venue = f.get("booktitle") or f.get("journal") or (
            f"arXiv:{f['eprint']}" if "eprint" in f else "")
        title = f"[*{f['title']}*]({link(key)})" if link(key) else f"*{f['title']}*"
        out.append(f"{f['author'].replace(' and ', ', ')}. {title}. {venue}, {f['year']}.")
    return out


# --- pages -------------------------------------------------------------------------------------


def verdict_span(verdict: str) -> str:
    return f'<span class="verdict verdict-{VERDICT_CLASS[verdict]}">{html.escape(verdict)}</span>'


def claims_table(claims: list[dict[str, Any]]) -> str:
    """The claims as a Markdown table (the report's columns and number format), the verdict
    coloured."""
    from shallowflow.reproductions.report import digits, fmt

    rows = ["| claim | reference | source | measured | interval | verdict |",
            "|---|---|---|---|---|---|"]
    for c in claims:
        ref = c["reference"]
        p = digits(ref, c["interval"], [ref, c["measured"]]
                   if isinstance(ref, float | int) and not isinstance(ref, bool) else None)
        interval = "" if c["interval"] is None else fmt(list(c["interval"]), p)
        rows.append(f'| **{c["id"]}**: {fmt(c["statement"])} | {fmt(ref, p)} | '
                    f'{c["source"]["kind"]} | {fmt(c["measured"], p)} | {interval} | '
                    f'{verdict_span(c["verdict"])} |')
    return "\n".join(rows)


def tally(claims: list[dict[str, Any]]) -> str:
    """``3 reproduced, 1 partly``: the verdicts of the counted claims."""
    counted = [c["verdict"] for c in claims if c["role"] == "claim"]
    return ", ".join(f"{counted.count(v)} {v}" for v in VERDICT_CLASS if counted.count(v))


def paper_anchor(name: str) -> str | None:
    """The section of docs/reproductions/ that discusses ``name``, if one has its heading."""
    for page in sorted((ROOT / "docs/reproductions").glob("*.md")):
        if re.search(rf"^## {re.escape(name)}\s*$", page.read_text(), re.M):
            return f"../reproductions/{page.name}#{name}"
    return None


def page(f: Folder) -> str:
    """The Markdown of the gallery page of folder ``f``."""
    rec = f.record
    out = [f"# {f.name}", "", f"**{f.title}.** {f.summary}", ""]
    out += ["**Paper.** " + " ".join(paper_lines(papers_of(f.name)) or ["(none: the software)"]),
            ""]
    discussed = paper_anchor(f.name)
    if discussed:
        out += [f"What this reproduction finds at the paper's sizes, and how it compares: "
                f"[the paper's page]({discussed}).", ""]
    for file, caption in f.figures:
        out += [f"[![{f.name}: {file}]({f.name}/{file})]({f.name}/{file})", "",
                f"*{html.escape(caption)}*", ""]
    counted = [c for c in f.claims if c["role"] == "claim"]
    checks = [c for c in f.claims if c["role"] == "check"]
    if counted:
        out += ["## Claims", "", claims_table(counted), ""]
    if checks:
        out += ["## Checks", "", "Consistency checks, not counted among the claims.", "",
                claims_table(checks), ""]
    out += ["## How it was made", ""]
    command = rec.get("command", f"shallowflow reproduce {f.name} --preset {f.params['preset']}")
    out += ["```bash", command, "```", ""]
    facts = []
    if "wall_s" in rec:
        facts.append(f"Wall time {rec['wall_s']:.1f} s on {rec.get('machine', 'an unrecorded machine')}")
    if "commit" in rec:
        facts.append(f"at commit `{rec['commit'][:12]}` ({rec.get('date', '')})")
    out += [("; ".join(facts) + ".") if facts else "No record of how it was made.", ""]
    out += [f"Preset `{f.params['preset']}`; precision: {f.params.get('precision', '?')} "
            "Settings, notes on each claim and the run time's split: the folder's "
            f"`gallery/{f.name}/report.md`.", ""]
    if f.rejudgeable:
        out += ["The folder keeps its `results.nc`: judge and draw it again without training:",
                "", "```bash", f"shallowflow reproduce {f.name} --from gallery/{f.name} --out "
                f"rejudged-{f.name}", "```", ""]
    if rec.get("removed"):
        out += ["Not committed, to keep the repository small (the command above writes them): "
                + ", ".join(f"`{r}`" for r in rec["removed"]) + ".", ""]
    return "\n".join(out)


def groups(names: list[str]) -> dict[tuple[str, ...], list[str]]:
    """The names by the papers they follow, papers in the order of first appearance."""
    out: dict[tuple[str, ...], list[str]] = {}
    for name in names:
        out.setdefault(papers_of(name), []).append(name)
    return out


def index(folders: list[Folder], absent: list[str]) -> str:
    """The gallery's index: a thumbnail card per reproduction, grouped by paper."""
    by_name = {f.name: f for f in folders}
    out = ["# Gallery", "",
           "Every reproduction's figures and claims, one page each, generated when the site is "
           "built from the folders its quick preset wrote (committed under `gallery/`; the "
           "command, its commit and its wall time are on each page). Verdicts: "
           + ", ".join(verdict_span(v) for v in VERDICT_CLASS) + ". The papers' sizes and what "
           "they give: [Reproductions](../reproductions/index.md).", ""]
    for keys, names in groups(sorted(by_name, key=_order)).items():
        out += [f"## {group_title(keys)}", "", *[line + "  " for line in paper_lines(keys)], "",
                '<div class="gallery-grid" markdown>', ""]
        for name in names:
            f = by_name[name]
            thumb = (f'<img src="{name}/{f.figures[0][0]}" alt="{name}" loading="eager">'
                     if f.figures else "")
            out += [f'<a class="gallery-card" href="{name}.html">{thumb}'
                    f'<span class="gallery-name">{name}</span>'
                    f'<span class="gallery-title">{html.escape(f.title)}</span>'
                    f'<span class="gallery-tally">{tally(f.claims)}</span></a>', ""]
        out += ["</div>", ""]
    if absent:
        out += ["## Not in the gallery yet", "",
                "These reproductions have no committed folder yet: "
                + ", ".join(f"`{n}`" for n in absent) + ".", ""]
    return "\n".join(out)


def _order(name: str) -> tuple[int, str]:
    prefixes = list(PAPERS)
    prefix = name.split("-")[0]
    return (prefixes.index(prefix) if prefix in prefixes else len(prefixes), name)


# --- mkdocs hooks --------------------------------------------------------------------------------


def nav_section(names: list[str]) -> list[Any]:
    """The nav's Gallery section: the index, then one subsection per paper."""
    section: list[Any] = [{"Overview": "gallery/index.md"}]
    for keys, members in groups(sorted(names, key=_order)).items():
        section.append({group_title(keys): [{n: f"gallery/{n}.md"} for n in members]})
    return section


def on_config(config: Any, **kwargs: Any) -> Any:
    nav = config.get("nav") or []
    for i, item in enumerate(nav):
        if isinstance(item, dict) and item.get(NAV_KEY) == "gallery/index.md":
            nav[i] = {NAV_KEY: nav_section(folder_names())}
    return config


def on_files(files: Any, config: Any, **kwargs: Any) -> Any:
    from mkdocs.structure.files import File

    from shallowflow.reproductions.index import catalogue

    folders = [read(n) for n in folder_names()]
    files.append(File.generated(config, "gallery/index.md",
                                content=index(folders, missing(list(catalogue())))))
    for f in folders:
        files.append(File.generated(config, f"gallery/{f.name}.md", content=page(f)))
        for file, _ in f.figures:
            files.append(File.generated(config, f"gallery/{f.name}/{file}",
                                        abs_src_path=str(f.path / file)))
    return files


# --- making a folder -----------------------------------------------------------------------------


def compress_png(path: Path) -> None:
    """Re-encode a PNG with a 256-colour palette (a third of the size of matplotlib's RGBA),
    over white where it is transparent."""
    from PIL import Image

    with Image.open(path) as im:
        rgba = im.convert("RGBA")
    flat = Image.new("RGBA", rgba.size, "white")
    flat.alpha_composite(rgba)
    small = flat.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT,
                                         dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    small.save(buffer, "PNG", optimize=True)
    if buffer.tell() < path.stat().st_size:
        path.write_bytes(buffer.getvalue())


def prune(path: Path) -> list[str]:
    """Keep what the gallery needs: the figures report.md shows (PNG, compressed), the text
    files (:data:`KEEP`) and a small ``results.nc``; the command's path made portable. Returns
    what was removed."""
    report = (path / "report.md").read_text()
    shown = {f for f, _ in FIGURE.findall(report)}
    removed = []
    for p in sorted(path.iterdir()):
        if p.name in shown:
            compress_png(p)
        elif p.name in KEEP or (p.name == "results.nc" and p.stat().st_size <= RESULTS_LIMIT):
            continue
        else:
            removed.append(f"{p.name} ({p.stat().st_size / 2**20:.1f} MiB)")
            p.unlink()
    prov = json.loads((path / "provenance.json").read_text())
    if prov.get("command"):  # no path of the machine; the folder by its final name
        name = path.name.removeprefix(".").removesuffix("-new")
        prov["command"] = [Path(arg).name if i == 0 else
                           f"gallery/{name}" if arg.endswith(f".{name}-new") else arg
                           for i, arg in enumerate(prov["command"])]
    (path / "provenance.json").write_text(json.dumps(prov, indent=2) + "\n")
    marker = path / ".shallowflow"
    if marker.is_file():
        kept = json.loads(marker.read_text())
        kept["entries"] = sorted(p.name for p in path.iterdir() if p.name != ".shallowflow")
        marker.write_text(json.dumps(kept, indent=1) + "\n")
    return removed


def write_record(path: Path, wall_s: float, machine: str, commit: str, date: str,
                 removed: list[str]) -> None:
    """``gallery.json``: the command, commit, date, wall time and machine that made the folder
    ``path``, and what :func:`prune` removed from it."""
    name = path.name.removeprefix(".").removesuffix("-new")
    record = {"command": f"shallowflow reproduce {name} --out gallery/{name} --preset quick",
              "commit": commit, "date": date, "wall_s": round(wall_s, 1), "machine": machine,
              "removed": removed}
    (path / RECORD).write_text(json.dumps(record, indent=1) + "\n")


def make(name: str) -> None:
    """Run the quick preset of ``name`` (timed) into a new folder beside ``gallery/NAME``,
    prune it, write its record, then put it in the place of ``gallery/NAME``."""
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.strip()
    load = os.getloadavg()[0]
    date = time.strftime("%Y-%m-%d", time.gmtime())
    new = GALLERY / f".{name}-new"
    shutil.rmtree(new, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import sys; from shallowflow.cli import main; "
                    "sys.argv[0] = 'shallowflow'; main()", "reproduce", name, "--out",
                    str(new.relative_to(ROOT)), "--preset", "quick", "--quiet"],
                   cwd=ROOT, check=True, env={**os.environ, "PYTHONPATH": str(SRC)})
    wall = time.perf_counter() - start
    machine = f"{os.cpu_count()} CPU cores (load average {load:.1f} at the start)"
    write_record(new, wall, machine, commit, date, prune(new))
    shutil.rmtree(GALLERY / name, ignore_errors=True)
    new.rename(GALLERY / name)


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        make(arg)
