"""A griffe extension for the API reference: the docstrings' Sphinx roles (``:func:`x.y```,
``:class:`~x.Y```) become cross-references (a link where the target is documented on the site, a
code span otherwise), a paragraph's closing ``::`` before a literal block becomes ``:``, and a
doctest example (from a ``>>>`` line to the next blank line) becomes a ``pycon`` code block.
Loaded by mkdocs.yml (mkdocstrings' ``extensions``); changes no source file."""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:func|class|meth|attr|data|mod|obj|exc|const):`(~?)([^`<]+?)\s*(?:<([^>`]+)>)?`")
LITERAL = re.compile(r"(\S)::$", re.M)
SPACED_BRACKETS = re.compile(r"\]([ \t]+)\[")  # prose like "[a] [b]" is no reference link
DOCTEST = re.compile(r"^([ \t]*)>>> .*(?:\n(?![ \t]*$).*)*", re.M)


def _ref(match: re.Match[str]) -> str:
    short, text, target = match.group(1), match.group(2).strip(), match.group(3)
    target = (target or text).strip()
    shown = text.rsplit(".", 1)[-1] if short else text
    return f'<autoref identifier="{target}" optional><code>{shown}</code></autoref>'


def markdown(text: str) -> str:
    """The docstring ``text`` with its roles as optional cross-references, RST's ``::`` as
    ``:``, bracketed prose kept as text and doctest examples as code blocks."""
    text = SPACED_BRACKETS.sub(lambda m: "]" + m.group(1) + "\\[", text)
    text = LITERAL.sub(r"\1:", ROLE.sub(_ref, text))
    return DOCTEST.sub(lambda m: f"{m.group(1)}```pycon\n{m.group(0)}\n{m.group(1)}```", text)


class SphinxRoles(griffe.Extension):
    """Rewrites every docstring once, as griffe loads its object."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
