"""Overrides of a nested mapping by dotted key paths: ``--set key.path=value`` on the command
line and the points of a sweep grid walk the tree with the one function :func:`set_path`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from shallowflow.config.spec_types import ConfigError, tomllib


def parse_value(text: str) -> Any:
    """Parse a ``--set`` value as a TOML literal (number, bool, string, array); else a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def split_override(item: str) -> tuple[list[str], Any]:
    """``key.path=value`` as (key parts, parsed value); refuses a missing ``=`` or key."""
    if "=" not in item:
        raise ConfigError(f"--set: expected key.path=value, got {item!r}")
    key, _, raw = item.partition("=")
    parts = key.strip().split(".")
    if not all(p.strip() for p in parts):
        raise ConfigError(f"--set: {item!r} names no field; expected key.path=value "
                          "(e.g. train.lr=0.1)")
    return [p.strip() for p in parts], parse_value(raw.strip())


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
            raise ConfigError(f"{where}: {'.'.join(parts)!r}: {part!r} is not a table")
        node = child
    node[parts[-1]] = value


def apply_overrides(mapping: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply ``key.path=value`` overrides to a nested dict (a new dict is returned)."""
    result = copy_tree(mapping)
    for item in overrides:
        parts, value = split_override(item)
        set_path(result, parts, value, "--set")
    return result
