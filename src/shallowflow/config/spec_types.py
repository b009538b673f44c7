"""The building blocks shared by the spec classes: the strict base model, the error type, array
fields and their digest, derived arrays cached on a spec, ranges and registries."""

from __future__ import annotations

import hashlib
import sys
import types
from collections.abc import Callable
from pathlib import PurePath
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
    SerializationInfo,
    model_validator,
)

from shallowflow.errors import UserError, shown

if sys.version_info >= (3, 11):  # the TOML reader of this Python, for the config modules
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # noqa: F401


def _float_array(value: Any) -> Any:
    """An array given in memory (numpy array or nested lists from a file), as float64."""
    arr = np.array(value, dtype=float)
    arr.setflags(write=False)
    return arr


DIGEST = {"digest": True}
"""Serialisation context for identities (batch signatures, batch ids, compile-cache keys): arrays
are written as a hash of their bytes instead of their values (`model_dump(context=DIGEST)`)."""


def _as_list(value: Any, info: SerializationInfo) -> Any:
    if info.context and info.context.get("digest"):
        digest = hashlib.sha1(repr(value.shape).encode() + value.tobytes()).hexdigest()
        return f"array{list(value.shape)} sha1:{digest}"
    return value.tolist()


FloatArray = Annotated[Any, BeforeValidator(_float_array), PlainSerializer(_as_list, when_used="json")]
"""A float64 array held in a spec (in-memory data and initial networks); a file holds it as
nested lists, an identity as a hash (:data:`DIGEST`)."""


MAX_SEED = 2**63 - 1
"""Seeds are stored as int64 and become JAX keys: 0 <= seed <= 2^63 - 1."""


class ConfigError(UserError):
    """An invalid configuration; the message lists every problem as ``field: problem (got ...)``,
    one per line."""


def _admits(annotation: Any, leaf: Callable[[Any], bool]) -> bool:
    """Whether ``leaf`` holds for the type or, through ``Annotated`` and unions, for one of its
    members (the one walk over a field's annotation that the checks below share)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _admits(args[0], leaf)
    if origin is Union or origin is types.UnionType:
        return any(_admits(a, leaf) for a in args)
    return leaf(annotation)


def _literal(annotation: Any) -> tuple[Any, ...]:
    """The values of a Literal type (none for any other type)."""
    return get_args(annotation) if get_origin(annotation) is Literal else ()


def admits_bool(annotation: Any) -> bool:
    """Whether a field of this type takes true/false (bool itself, a Literal of booleans, Any, or
    a union holding one of them); a number field does not."""
    return _admits(annotation, lambda t: t is bool or t is Any
                   or any(isinstance(v, bool) for v in _literal(t)))


def admits_text(annotation: Any, text: str) -> bool:
    """Whether a field of this type takes the text ``text`` as it is: a str, path or free field
    (Any), or a Literal naming it; a number field does not (``width = "3"`` is text, not 3)."""
    return _admits(annotation, lambda t: t in (str, Any) or text in _literal(t)
                   or (isinstance(t, type) and issubclass(t, PurePath)))


def _numeric(annotation: Any) -> bool:
    """Whether a field of this type takes a number (int or float, possibly in a union)."""
    return _admits(annotation, lambda t: t in (int, float))


class StrictModel(BaseModel):
    """Unknown keys, non-finite floats (inf, nan), true/false where a number or a word is asked
    for (``runs = true`` is not one run) and text where a number is asked for (``width = "3"``)
    are refused, never converted; specs are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _no_booleans_as_numbers(cls, values: Any) -> Any:
        if isinstance(values, dict):
            for name, value in values.items():
                field = cls.model_fields.get(name)
                if isinstance(value, bool) and field is not None \
                        and not admits_bool(field.annotation):
                    raise ValueError(f"{name}: must be a number or a word, not true/false (got "
                                     f"{str(value).lower()})")
                if isinstance(value, str) and field is not None \
                        and not admits_text(field.annotation, value) \
                        and _numeric(field.annotation):
                    raise ValueError(f"{name}: must be a number, not the text {shown(value)} "
                                     "(write it without quotes)")
        return values


class _Loaded:
    """Arrays derived from a spec's fields (a file read at validation), cached on the spec. They
    never make two specs differ: all instances compare equal."""

    def __init__(self, *arrays: np.ndarray) -> None:
        for arr in arrays:
            arr.setflags(write=False)
        self.arrays = arrays

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Loaded)

    def __hash__(self) -> int:
        return 0


NAME_CHARS = 120
"""The longest experiment or sweep name: it prefixes every progress line."""


def label_problem(value: Any) -> str | None:
    """Why ``value`` is no :data:`Label` (None: it is one)."""
    if not isinstance(value, str):
        return "must be text"
    if not 1 <= len(value) <= NAME_CHARS:
        return f"must be 1 to {NAME_CHARS} characters long"
    if not value.isprintable():
        return "must be printable text (no control characters or line breaks)"
    return None


def _check_label(value: str) -> str:
    problem = label_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


Label = Annotated[str, AfterValidator(_check_label)]
"""A name shown in progress lines and reports: 1 to :data:`NAME_CHARS` printable characters."""

Range = tuple[float, float]


def _check_range(name: str, r: Range) -> None:
    lo, hi = r
    if not (0 < lo <= hi):
        raise ValueError(f"{name}: must satisfy 0 < low <= high, got {shown(list(r))}")



def _registry(union: Any, tag: str) -> dict[str, Any]:
    """{tag value: spec class} of a discriminated union of spec classes."""
    return {get_args(m.model_fields[tag].annotation)[0]: m for m in get_args(get_args(union)[0])}
