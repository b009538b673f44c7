"""Overrides of a nested mapping by dotted key paths: ``--set key.path=value`` on the command
line and the points of a sweep grid walk the tree with the one function :func:`set_path`."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from shallowflow.config.duplicates import toml_duplicate
from shallowflow.config.spec_types import ConfigError, tomllib
from shallowflow.errors import shown


def parse_value(text: str, key: str = "v") -> Any:
    """Parse a ``--set`` value as a TOML literal (number, bool, string, array, inline table);
    else a string. An inline table that gives a key twice is refused, naming the key and where
    it is below ``key``."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError as err:
        found = toml_duplicate(f"v = {text}", err)
        if found is None:
            return text
        table = (key, *found.table[1:]) if found.table else ()
        found = dataclasses.replace(found, table=table)
        raise ConfigError(f"--set: {found.problem(line=False)} (got {shown(f'{key}={text}')}); "
                          f"{found.rule}") from None


def split_override(item: str) -> tuple[list[str], Any]:
    """``key.path=value`` as (key parts, parsed value); refuses a missing ``=`` or key."""
    if "=" not in item:
        raise ConfigError(f"--set: expected key.path=value, got {shown(item)}")
    key, _, raw = item.partition("=")
    parts = key.strip().split(".")
    if not all(p.strip() for p in parts):
        raise ConfigError(f"--set: {shown(item)} names no field; expected key.path=value "
                          "(e.g. train.lr=0.1)")
    names = [p.strip() for p in parts]
    return names, parse_value(raw.strip(), ".".join(names))


def copy_tree(mapping: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON-like mapping (a parsed config file)."""
    return json.loads(json.dumps(mapping))


def set_path(mapping: dict[str, Any], parts: Sequence[str], value: Any, where: str) -> None:
    """Set the entry ``parts`` (key path) of ``mapping`` to ``value`` in place, creating missing
    tables; a key on the way that holds no table is refused, the error starting with ``where``
    (``--set``, ``grid``)."""
    node = mapping
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{where}: {shown('.'.join(parts))}: {shown(part)} is not a table")
        node = child
    node[parts[-1]] = value


def apply_overrides(mapping: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``key.path=value`` overrides to a nested dict (a new dict is returned)."""
    result = copy_tree(mapping)
    for item in overrides:
        parts, value = split_override(item)
        set_path(result, parts, value, "--set")
    return result
