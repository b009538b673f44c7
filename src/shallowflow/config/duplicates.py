"""A key given twice, named: the key, the table that holds it and the line, for TOML (whose
reader says "Cannot overwrite a value" or names only the key of an inline table) and YAML (whose
mappings, block or flow, would keep the last value silently)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

import yaml

from shallowflow.config.spec_types import tomllib
from shallowflow.errors import shown

_PART = r'(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|\'[^\']*\')'
_DOTTED = rf"{_PART}(?:\s*\.\s*{_PART})*"
_KEY = re.compile(rf"\s*({_DOTTED})\s*=")
_HEADER = re.compile(rf"\s*\[\[?\s*({_DOTTED})\s*\]\]?")
_AT = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)$")
_TOKEN = re.compile(rf'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*'
                    rf"|({_DOTTED})\s*=|[{{}}\[\]]")


@dataclass(frozen=True)
class Duplicate:
    """A key given twice (``key``), or a table declared twice or extended after it was given
    whole (``kind``), in the table ``table`` (its key path; empty: the top level), at ``line``."""

    kind: str  # "key", "table" or "closed"
    key: str
    table: tuple[str, ...]
    line: int

    def problem(self, line: bool = True) -> str:
        """What is wrong, e.g. ``duplicate key 'width' in model (line 13)`` (``line``: with the
        line number)."""
        at = f" (line {self.line})" if line else ""
        if self.kind == "table":
            return f"table [{shown(self.key, bare=True)}] is declared twice{at}"
        if self.kind == "closed":
            return (f"{shown(self.key)} was given whole (an inline table or array) and cannot be "
                    f"extended later{at}")
        where = f"in {shown('.'.join(self.table), bare=True)}" if self.table else \
            "at the top level"
        return f"duplicate key {shown(self.key)} {where}{at}"

    @property
    def rule(self) -> str:
        """What is allowed."""
        return {"table": "each table may be declared once",
                "closed": "give all its keys where it is written"}.get(
            self.kind, "each key may be given once in a table")

    def words(self) -> str:
        """The problem and what is allowed, on one line."""
        return f"{self.problem()}; {self.rule}"


def _plain(key: str) -> list[str]:
    """A dotted TOML key as its parts, quotes removed."""
    parts = re.findall(_PART, key)
    return [p[1:-1] if p[:1] in "\"'" else p for p in parts]


def _header(lines: list[str], before: int) -> list[str]:
    """The key path of the last table header above line index ``before``."""
    for line in reversed(lines[:before]):
        match = _HEADER.match(line)
        if match:
            return _plain(match.group(1))
    return []


def _statement(lines: list[str], last: int) -> int | None:
    """The index of the line where the key/value statement ending on line index ``last`` starts
    (a value may span lines): the nearest line starting with ``key =`` from which the statement
    parses on its own."""
    for first in range(last, -1, -1):
        if _KEY.match(lines[first]):
            try:
                tomllib.loads("\n".join(lines[first:last + 1]))
            except tomllib.TOMLDecodeError:
                continue
            return first
    return None


def _open_tables(text: str) -> list[str]:
    """The keys of the inline tables still open at the end of ``text`` (a statement cut where
    the reader stopped), outermost first."""
    stack: list[str | None] = []
    key: str | None = None
    for token in _TOKEN.finditer(text):
        word = token.group(0)
        if token.group(1) is not None:
            key = ".".join(_plain(token.group(1)))
        elif word == "{":
            stack.append(key)
        elif word == "[":
            stack.append(None)
        elif word in "}]" and stack:
            stack.pop()
    return [k for k in stack if k is not None]


def toml_duplicate(text: str, err: tomllib.TOMLDecodeError) -> Duplicate | None:
    """The repeated key of a TOML document that the reader refused (``err``), or None where
    ``err`` is about something else (or the key cannot be told)."""
    message = str(err)
    at = _AT.search(message)
    if at is None:
        return None
    what = message[:at.start()]
    lines = text.splitlines()
    if at.group(1) is not None:
        last, column = int(at.group(1)) - 1, int(at.group(2)) - 1
    else:
        content = [i for i, line in enumerate(lines)
                   if line.strip() and not line.lstrip().startswith("#")]
        last, column = (content[-1] if content else 0), None
    if not 0 <= last < len(lines):
        return None
    declared = re.match(r"Cannot declare (\(.*\)) twice$", what)
    if declared:
        return Duplicate("table", ".".join(ast.literal_eval(declared.group(1))), (), last + 1)
    closed = re.match(r"Cannot mutate immutable namespace (\(.*\))$", what)
    if closed:
        return Duplicate("closed", ".".join(ast.literal_eval(closed.group(1))), (), last + 1)
    inline = re.match(r"Duplicate inline table key (.*)$", what)
    if inline:
        first = next((i for i in range(last, -1, -1) if _KEY.match(lines[i])), last)
        upto = "\n".join([*lines[first:last], lines[last][:column]])
        table = tuple(_header(lines, first)) + tuple(_open_tables(upto))
        return Duplicate("key", ast.literal_eval(inline.group(1)), table, last + 1)
    if what == "Cannot overwrite a value":
        first = _statement(lines, last)
        if first is None:
            return None
        key = ".".join(_plain(_KEY.match(lines[first]).group(1)))  # type: ignore[union-attr]
        return Duplicate("key", key, tuple(_header(lines, first)), first + 1)
    return None


def yaml_duplicate(node: Any, path: tuple[str, ...] = ()) -> Duplicate | None:
    """The first key given twice in a YAML node tree (block or flow mappings, at any depth),
    with the path of the mapping that holds it; scalar keys are compared as written."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is not None and key in seen:
                return Duplicate("key", key, path, key_node.start_mark.line + 1)
            if key is not None:
                seen.add(key)
            found = yaml_duplicate(value_node, (*path, str(key)))
            if found:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            found = yaml_duplicate(item, (*path, str(index)))
            if found:
                return found
    return None
