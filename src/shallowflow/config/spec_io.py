"""Experiment files: reading a TOML or YAML mapping, validating it into an :class:`Experiment`
(with ``--set`` overrides) and writing a resolved config as TOML."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from shallowflow.config.duplicates import Duplicate, toml_duplicate, yaml_duplicate
from shallowflow.config.messages import format_validation_error
from shallowflow.config.overrides import apply_overrides
from shallowflow.config.spec import Experiment
from shallowflow.config.spec_types import ConfigError, tomllib
from shallowflow.errors import file_refusal, shown, shown_name


class StrictYamlLoader(yaml.SafeLoader):
    """YAML as a configuration needs it: safe tags only, no aliases (a 1 KB file of nested
    aliases expands to gigabytes) and no duplicate keys (TOML refuses them too; YAML would keep
    the last silently)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None, None, f"aliases (*{event.anchor}) are not allowed in a configuration; "
                "write the value out", event.start_mark)
        return super().compose_node(parent, index)

    def construct_document(self, node: Any) -> Any:
        found = yaml_duplicate(node)
        if found is not None:
            raise DuplicateKey(found)
        return super().construct_document(node)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {shown(key)}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


class DuplicateKey(yaml.YAMLError):
    """A YAML mapping that gives a key twice (:func:`~shallowflow.config.duplicates.yaml_duplicate`)."""

    def __init__(self, found: Duplicate) -> None:
        super().__init__(found.words())
        self.found = found


def parse_problem(text: str, err: Exception) -> str:
    """Why a TOML or YAML text could not be read, on one line: a key given twice named with its
    table and line (:mod:`shallowflow.config.duplicates`), else the reader's own message."""
    found = err.found if isinstance(err, DuplicateKey) else \
        toml_duplicate(text, err) if isinstance(err, tomllib.TOMLDecodeError) else None
    if found is not None:
        return found.words()
    detail = " ".join(str(err).split()).replace(' in "<unicode string>",', " at")
    return shown(detail.removesuffix(" ^"), bare=True, limit=200)


def read_mapping(path: str | Path, field: str = "config") -> dict[str, Any]:
    """Read a TOML (.toml) or YAML (.yaml/.yml) file into a dict; ``field`` names the file in
    errors."""
    path = Path(path)
    refusal = file_refusal(path, field, "a .toml or .yaml file this user may read")
    if refusal is not None:
        raise ConfigError(refusal)
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".yaml", ".yml"):
        raise ConfigError(f"{field}: unsupported file type {shown(suffix)} ({shown_name(path)}); "
                          "allowed: .toml, .yaml, .yml")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{field}: {shown_name(path)} is not a text file (not UTF-8); give a "
                          ".toml or .yaml file") from None
    except OSError as err:
        raise ConfigError(f"{field}: cannot read {shown(path)}: {err.strerror}") from None
    try:
        data = tomllib.loads(text) if suffix == ".toml" else \
            yaml.load(text, Loader=StrictYamlLoader)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as err:
        raise ConfigError(f"{field}: cannot parse {shown_name(path)}: "
                          f"{parse_problem(text, err)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{field}: {shown_name(path)} must hold a mapping (key = value) at top "
                          f"level, got {type(data).__name__}")
    return data

def experiment_from_mapping(mapping: dict[str, Any]) -> Experiment:
    """Validate a mapping into an Experiment, raising ConfigError with readable messages.

    The keys are those of an experiment file; every other field takes its default:

    >>> exp = experiment_from_mapping({"data": {"kind": "sphere", "n": 6, "d": 3},
    ...                                "model": {"width": 4}, "init": {"scheme": "dpb"},
    ...                                "train": {"lr": 0.1, "steps": 5}})
    >>> exp.data.n, exp.model.width, exp.runs, exp.train.loss
    (6, 4, 1, 'square')
    >>> experiment_from_mapping({"data": {"kind": "sphere", "n": 6, "d": 3},
    ...                          "model": {"width": 0}, "init": {"scheme": "dpb"},
    ...                          "train": {"lr": 0.1, "steps": 5}})
    Traceback (most recent call last):
    ConfigError: model.width: Input should be greater than 0 (got 0)
    """
    try:
        return Experiment.model_validate(mapping)
    except ValidationError as err:
        raise ConfigError(format_validation_error(err)) from None
    except ValueError as err:  # data loading errors raised inside validators
        raise ConfigError(str(err)) from None


def load_experiment(path: str | Path, overrides: list[str] | None = None) -> Experiment:
    """Read, override and validate an experiment file."""
    return experiment_from_mapping(apply_overrides(read_mapping(path), overrides or []))


def dump_toml(mapping: dict[str, Any]) -> str:
    """A minimal TOML writer for resolved configs (tables, scalars, arrays; None is omitted)."""

    def scalar(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v) if not (isinstance(v, float) and math.isinf(v)) else (
                "inf" if v > 0 else "-inf")
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(scalar(x) for x in v) + "]"
        return json.dumps(str(v))

    def table(prefix: str, m: dict[str, Any]) -> list[str]:
        lines = [f"{k} = {scalar(v)}" for k, v in m.items() if v is not None and not isinstance(v, dict)]
        for k, v in m.items():
            if isinstance(v, dict):
                name = f"{prefix}.{k}" if prefix else k
                lines += ["", f"[{name}]", *table(name, v)]
        return lines

    return "\n".join(table("", mapping)).strip() + "\n"
