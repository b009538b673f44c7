"""``report.md``: the figures and the claims table of a reproduction, side by side.

Numbers are shown with 4 significant digits, or more where a band or an interval needs them: a
row never prints a pair whose two ends are different numbers as equal (:func:`digits`)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from shallowflow.citations import SOFTWARE, reproduction_keys
from shallowflow.reproductions.claims import Claim

DIGITS = 4
"""Significant digits of a number in a report, unless a pair in its row needs more."""
MAX_DIGITS = 17
"""Enough for any two different float64 numbers to print differently."""


def _pairs(value: Any) -> Iterable[tuple[float, float]]:
    """The (lo, hi) pairs of numbers in ``value``: a two-number list or tuple, anywhere inside."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _pairs(v)
    elif isinstance(value, (list, tuple)):
        if len(value) == 2 and all(isinstance(v, float | int) and not isinstance(v, bool)
                                   for v in value):
            yield float(value[0]), float(value[1])
        else:
            for v in value:
                yield from _pairs(v)


def digits(*values: Any) -> int:
    """The fewest significant digits (at least :data:`DIGITS`) at which every pair of different
    finite numbers in ``values`` prints as two different numbers."""
    pairs = [(a, b) for v in values for a, b in _pairs(v)
             if a != b and math.isfinite(a) and math.isfinite(b)]
    for p in range(DIGITS, MAX_DIGITS + 1):
        if all(f"{a:.{p}g}" != f"{b:.{p}g}" for a, b in pairs):
            return p
    return MAX_DIGITS


def fmt(value: Any, p: int = DIGITS) -> str:
    """``value`` as table text: floats to ``p`` significant digits, lists in brackets.

    >>> fmt({"a": 0.123456, "b": [1.0, 2.5]})
    '{a: 0.1235, b: [1, 2.5]}'
    >>> fmt({"max |x|": 2.0})  # no | is left to split a table's row
    '{max /x/: 2}'
    """
    if isinstance(value, float):
        return f"{value:.{p}g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(fmt(v, p) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{fmt(k)}: {fmt(v, p)}" for k, v in value.items()) + "}"
    return str(value).replace("|", "/").replace("\n", " ")


def claims_table(claims: list[Claim]) -> str:
    """One row per claim: statement, reference and its source kind, measured value, interval,
    verdict; numbers with the digits their row's pairs need."""
    rows = ["| claim | reference | source | measured | interval | verdict |",
            "|---|---|---|---|---|---|"]
    for c in claims:
        p = digits(c.reference, c.interval, [c.reference, c.measured]
                   if isinstance(c.reference, float | int) else None)
        interval = "" if c.interval is None else fmt(list(c.interval), p)
        rows.append(f"| **{c.id}**: {fmt(c.statement)} | {fmt(c.reference, p)} | {c.source.kind} | "
                    f"{fmt(c.measured, p)} | {interval} | {c.verdict} |")
    return "\n".join(rows)


def _notes(claims: list[Claim]) -> list[str]:
    """A bullet per claim: where its reference comes from, its notes and its variants, each a
    bullet under it."""
    out = []
    for c in claims:
        parts = [f"Reference ({c.source.kind}): {c.source.where.strip()}"]
        if c.notes.strip():
            parts.append(c.notes.strip())
        if c.variants:
            parts.append("Variants: " + "; ".join(f"{k}: {fmt(v, digits(v))}"
                                                  for k, v in c.variants.items()))
        out += [f"- **{c.id}**", *(f"  - {' '.join(part.split())}" for part in parts)]
    return out


def cite_section(name: str) -> tuple[str, str]:
    """The report's "Cite" section: the BibTeX keys reproduction ``name`` rests on
    (:func:`shallowflow.citations.reproduction_keys`), the software's, and the command that
    prints their entries."""
    keys = ", ".join(f"`{k}`" for k in reproduction_keys(name))
    software = ", ".join(f"`{k}`" for k in SOFTWARE)
    return ("Cite", f"This reproduction rests on {keys}; the software: {software}. "
                    f"`shallowflow cite {name}` prints their BibTeX.")


def render(title: str, summary: str, figures: list[tuple[str, str]], claims: list[Claim],
           sections: list[tuple[str, str]], preset: str, params: dict, precision: str) -> str:
    """The Markdown report: summary, figures with captions, claims table (the counted claims,
    then the checks), claim notes with each reference's source, further sections (the run time
    among them, :func:`shallowflow.reproductions.reproduce.run_time_section`), the preset's
    parameters and the precision the runs were trained in."""
    out = [f"# {title}", "", summary.strip(), ""]
    for path, caption in figures:
        out += [f"![{path}]({path})", "", f"*{caption.strip()}*", ""]
    counted = [c for c in claims if c.role == "claim"]
    checks = [c for c in claims if c.role == "check"]
    if counted:
        out += ["## Claims", "", claims_table(counted), ""]
    if checks:
        out += ["## Checks", "", "Consistency checks: they hold by construction or test little, "
                "and are not counted among the claims.", "", claims_table(checks), ""]
    notes = _notes(claims)
    if notes:
        out += ["### Notes", "", *notes, ""]
    for heading, text in sections:
        out += [f"## {heading}", "", text.strip(), ""]
    settings = ", ".join(f"{k} = {fmt(v)}" for k, v in params.items())
    out += ["## Settings", "", f"Preset `{preset}`: {settings}.", "",
            f"Precision: {precision}", ""]
    return "\n".join(out)
