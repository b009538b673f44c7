"""What to cite (``shallowflow cite``, :mod:`shallowflow.citations`, the reports' Cite section):
the BibTeX parses (read here by a parser of the test's own), every entry has its type's
required fields, every reproduction of the catalogue maps to existing entries (the MNIST ones
to MNIST too, found from the reproductions' own sources), and the command prints them."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shallowflow import __version__
from shallowflow.citations import ENTRIES, EXTRA, FEATURES, PAPERS, SOFTWARE, bibtex, keys_for
from shallowflow.citations import reproduction_keys as keys_of
from shallowflow.cli.commands import app
from shallowflow.reproductions import index
from shallowflow.reproductions.index import catalogue
from shallowflow.reproductions.report import cite_section

REQUIRED = {  # BibTeX's required fields (biblatex's for @software), and a year everywhere
    "article": {"author", "title", "journal", "year"},
    "inproceedings": {"author", "title", "booktitle", "year"},
    "misc": {"author", "title", "year"},
    "software": {"author", "title", "year"},
}


def parse(text: str) -> dict[str, tuple[str, dict[str, str]]]:
    """BibTeX text -> {key: (type, {field: value})}, each value braced; fails on an unbalanced
    brace, a field without '= {', text between entries, or a key seen twice."""
    entries: dict[str, tuple[str, dict[str, str]]] = {}
    i = 0
    while True:
        gap_end = text.find("@", i)
        gap = text[i:] if gap_end < 0 else text[i:gap_end]
        assert not gap.strip(), f"text between entries: {gap!r}"
        if gap_end < 0:
            return entries
        head = re.compile(r"@(\w+)\{([^,\s]+),\s*").match(text, gap_end)
        assert head, text[gap_end:gap_end + 40]
        kind, key = head.group(1), head.group(2)
        fields: dict[str, str] = {}
        i = head.end()
        while text[i] != "}":
            field = re.compile(r"(\w+) = \{").match(text, i)
            assert field, text[i:i + 40]
            depth, j = 1, field.end()
            while depth:
                assert j < len(text), f"unbalanced braces in {key}.{field.group(1)}"
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            fields[field.group(1)] = text[field.end():j - 1]
            assert text[j] == ",", f"{key}.{field.group(1)}: no comma after the value"
            i = j + 1
            while text[i].isspace():
                i += 1
        assert key not in entries, key
        entries[key] = (kind, fields)
        i += 1


def test_every_entry_parses_with_its_required_fields():
    parsed = parse(bibtex(tuple(ENTRIES)))
    assert list(parsed) == list(ENTRIES)
    for key, (kind, fields) in parsed.items():
        assert REQUIRED[kind] <= set(fields), (key, REQUIRED[kind] - set(fields))
        assert re.fullmatch(r"(19|20)\d\d", fields["year"]), (key, fields["year"])
        assert all(value.strip() for value in fields.values()), key
    assert parsed["shallowflow"][1]["version"] == __version__


def test_the_parser_refuses_broken_bibtex():
    good = bibtex(("shallowflow",))
    for broken in (good.replace("{ReLU}", "{ReLU"), good.replace("},\n}", "}\n}", 1),
                   "stray " + good, good.replace("title = {", "title {")):
        with pytest.raises((AssertionError, IndexError)):
            parse(broken)


def test_every_reproduction_rests_on_existing_entries():
    names = list(catalogue())
    assert {n.split("-")[0] for n in names} <= set(PAPERS)  # every reproduction rests on a paper
    assert set(EXTRA) <= set(names) and not set(FEATURES) & set(names)
    for name in names:
        keys = keys_of(name)
        assert keys and set(keys) <= set(ENTRIES), name
        assert keys_for(name) == (*SOFTWARE, *keys)
    for keys in [*PAPERS.values(), *EXTRA.values(), *(k for _, k in FEATURES.values())]:
        assert set(keys) <= set(ENTRIES)


def test_a_reproduction_on_mnist_cites_mnist():
    """The reproductions whose module reads MNIST (its source says so; read, not imported) are
    exactly those that cite the MNIST paper."""
    targets = {name: target for paper in index.PAPERS for name, target in
               importlib.import_module(f"shallowflow.reproductions.{paper}").REPRODUCTIONS.items()}
    on_mnist = set()
    for name, target in targets.items():
        source = Path(importlib.util.find_spec(target.partition(":")[0]).origin).read_text()
        if "mnist" in source.lower():
            on_mnist.add(name)
    assert on_mnist == {n for n in targets if "lecun1998gradient" in keys_of(n)}
    assert on_mnist  # the test tests something


def test_the_report_names_the_keys_and_the_command():
    heading, text = cite_section("mmv-fig5")
    assert heading == "Cite"
    assert all(f"`{k}`" in text for k in keys_for("mmv-fig5"))
    assert "`shallowflow cite mmv-fig5`" in text


@pytest.mark.parametrize(("args", "keys"), [
    ([], list(SOFTWARE)),
    (["town-fig5"], [*SOFTWARE, "town2026mildly"]),
    (["mmv-fig5"], [*SOFTWARE, "min2024early", "lecun1998gradient"]),
    (["mnist"], [*SOFTWARE, "lecun1998gradient"]),
    (["all"], list(ENTRIES)),
])
def test_the_command_prints_the_entries(args, keys):
    result = CliRunner().invoke(app, ["cite", *args])
    assert result.exit_code == 0, result.output
    assert list(parse(result.stdout)) == keys
    assert ", ".join(keys) in result.stderr


def test_an_unknown_name_is_one_error_line_listing_the_names():
    result = CliRunner().invoke(app, ["cite", "town-fig9"])
    assert result.exit_code == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: NAME: ")
    assert "'town-fig9'" in lines[0] and "closest: town-fig" in lines[0]
    assert all(n in lines[0] for n in [*catalogue(), *FEATURES, "all"])
