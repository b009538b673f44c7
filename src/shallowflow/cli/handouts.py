"""The commands that hand a user something to keep: ``shallowflow example`` (the example
experiments shipped in the package, with the data files they read) and ``shallowflow cite`` (the
BibTeX of what a reproduction or a feature rests on, :mod:`shallowflow.citations`).

The examples are the repository's ``examples/`` folder, shipped in the package as
``shallowflow/examples`` (package data), so a user with only the wheel has them. An example that
reads files (``path = "examples/data/..."``, or a sweep's ``base = "..."``) is written with those
files beside it, and its data paths rewritten to where they were written (paths in an experiment
are relative to the folder the command runs in; a sweep's base is relative to the sweep file).
"""

from __future__ import annotations

import difflib
import json
import re
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from shallowflow.cli.process import fail, guard
from shallowflow.errors import shown
from shallowflow.runtime.progress import console, out

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

DATA_REF = re.compile(r'"examples/(data/[^"]+)"')
"""A data file an example reads, as its config names it (relative to the repository's root)."""
BASE_REF = re.compile(r'^base\s*=\s*"([^"]+)"', re.M)
"""The base experiment a sweep example names (relative to the sweep file)."""


def examples() -> dict[str, Traversable]:
    """The shipped example configs by name (the file name without ``.toml``), sorted."""
    folder = resources.files("shallowflow") / "examples"
    found = {p.name.removesuffix(".toml"): p for p in folder.iterdir() if p.name.endswith(".toml")}
    return dict(sorted(found.items()))


def describe(text: str) -> str:
    """An example's one-line description: its first comment line."""
    first = next((line for line in text.splitlines() if line.startswith("#")), "#")
    return first.lstrip("# ").strip()


def _lookup(name: str) -> tuple[str, Traversable]:
    found = examples()
    stem = name.removesuffix(".toml")
    if stem not in found:
        close = difflib.get_close_matches(stem, list(found), n=3)
        raise ValueError(f"NAME: unknown example {shown(name)}"
                         + (f" (closest: {', '.join(close)})" if close else "")
                         + f"; allowed: {', '.join(found)}")
    return stem, found[stem]


def files_for(name: str, target: Path) -> list[tuple[Path, bytes]]:
    """What ``shallowflow example NAME --out TARGET`` writes: ``TARGET`` (the config, its data
    paths rewritten to the files written beside it) and every file it reads, beside it (a
    sweep's base with the files that one reads), in writing order."""
    _, source = _lookup(name)
    folder = resources.files("shallowflow") / "examples"
    text = source.read_text()
    written: list[tuple[Path, bytes]] = []
    for ref in dict.fromkeys(DATA_REF.findall(text)):
        beside = target.parent / Path(ref).name
        text = text.replace(f'"examples/{ref}"', json.dumps(beside.as_posix()))
        written.append((beside, folder.joinpath(*ref.split("/")).read_bytes()))
    for base in dict.fromkeys(BASE_REF.findall(text)):
        written += files_for(base, target.parent / base)
    return [(target, text.encode()), *written]


def example(
    name: Annotated[Optional[str], typer.Argument(  # noqa: UP045 (typer needs Optional)
        help="an example (see `shallowflow example`); none: list them")] = None,
    target: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--out", "-o", help="the .toml file to write (the files it reads go beside it); "
                            "none: print the config")] = None,
    overwrite: Annotated[bool, typer.Option(help="replace files shallowflow wrote")] = False,
) -> None:
    """List the example experiments, print one, or write one with the files it reads beside it."""
    if name is None:
        out.print("[bold]examples:[/] (shallowflow example NAME --out FILE)")
        for stem, source in examples().items():
            out.print(f"  {stem:20s} {describe(source.read_text())}", highlight=False)
        return
    with guard(lambda: f"nothing was written to {target}"):
        from shallowflow.output import claim_files

        stem, source = _lookup(name)
        if target is None:
            text = source.read_text()
            out.print(text, markup=False, highlight=False, emoji=False, end="")
            reads = [Path(r).name for r in DATA_REF.findall(text)] + BASE_REF.findall(text)
            if reads:
                console.print(f"[cyan]note:[/] this example reads {', '.join(reads)}: write it "
                              "with --out FILE to get them beside it", highlight=False)
            return
        if target.suffix != ".toml":
            raise ValueError(f"--out: must name a .toml file (got {shown(target)})")
        files = files_for(stem, target)
        beside = [p.name for p, _ in files[1:]]
        if target.name in beside:
            raise ValueError(f"--out: {shown(target)} has the name of a file the example reads "
                             f"({', '.join(beside)}); give another name")
        with claim_files([p for p, _ in files], overwrite, field_name="--out") as place, \
                place.writing() as tmps:
            for tmp, (_, data) in zip(tmps, files, strict=True):
                tmp.write_bytes(data)
    command = "sweep" if BASE_REF.search(source.read_text()) else "run"
    out.print(f"example {stem} written to {target}"
              + (f" (with {', '.join(beside)} beside it)" if beside else "")
              + f"; run it: shallowflow {command} {target} --out runs/{target.stem}",
              highlight=False)


def cite(
    name: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        help="a reproduction (see `shallowflow list`), a feature, or 'all'; none: the "
             "software")] = None,
) -> None:
    """Print the BibTeX to cite: shallowflow, JAX and what reproduction or feature NAME rests on."""
    from shallowflow.citations import FEATURES, bibtex, keys_for

    if name is not None and name != "all" and name not in FEATURES:
        from shallowflow.reproductions.index import catalogue

        names = list(catalogue())
        if name not in names:
            close = difflib.get_close_matches(name, [*names, *FEATURES], n=3)
            fail(ValueError(f"NAME: unknown name {shown(name)}"
                            + (f" (closest: {', '.join(close)})" if close else "")
                            + f"; allowed: a reproduction ({', '.join(names)}), a feature "
                            f"({', '.join(FEATURES)}) or all"))
    keys = keys_for(name)
    out.print(bibtex(keys), markup=False, highlight=False, emoji=False, end="")
    console.print(f"[cyan]note:[/] {len(keys)} entries: {', '.join(keys)}", highlight=False)
