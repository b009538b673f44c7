"""Validation errors as readable lines: ``field.path: problem (got value)``, one per field; the
value and a key a user typed are echoed bounded and escaped (:func:`shallowflow.errors.shown`)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from shallowflow.config.data_kinds import DATA_KINDS
from shallowflow.config.init_schemes import INIT_SCHEMES
from shallowflow.errors import SHOWN, shown

RENAMED = {
    "train.engine": "train.parametrisation", "train.reduce": "train.span",
    "train.certify": "train.step_certificate", "train.certify_tol": "train.step_certificate_tol",
    "train.certify_precision": "train.precision_certificate",
    "train.certify_precision_tol": "train.precision_certificate_tol",
    "train.certify_end": "train.end_state",
}
"""Old keys and their new names: an old key is refused with a message naming the new one."""

_UNION_MEMBER = re.compile(r"^(float|int|str|bool|none|[a-z-]+\[.*\])$")


def _where(loc: tuple[Any, ...]) -> tuple[str, str]:
    """(field path, context) of a pydantic error location: the tag of a data kind or init
    scheme (``init.dpb.scale``) becomes context, a union member's type name is dropped."""
    parts = [str(x) for x in loc]
    context = ""
    if len(parts) > 1 and parts[0] in ("data", "init"):
        registry = DATA_KINDS if parts[0] == "data" else INIT_SCHEMES
        if parts[1] in registry:
            context = f" for {parts[0]}.{'kind' if parts[0] == 'data' else 'scheme'} {parts[1]!r}"
            del parts[1]
    while parts and _UNION_MEMBER.match(parts[-1]):
        parts.pop()
    return shown(".".join(parts), bare=True), context


def _bounded(msg: str, error: Any) -> str:
    """A pydantic message with the long words it quotes from the input (an unknown tag, a text
    that is not a number) shortened as :func:`shallowflow.errors.shown` shows them."""
    words = [error.get("input"), *(error.get("ctx") or {}).values()]
    for word in words:
        if isinstance(word, str) and len(word) > SHOWN and word in msg:
            msg = msg.replace(word, shown(word, bare=True))
    return msg


def format_validation_error(err: ValidationError) -> str:
    """One line per field: ``field.path: message (got value)``; an old key (:data:`RENAMED`)
    is named with its new name; the messages of a union's members are joined with "or"."""
    problems: dict[str, tuple[list[str], str]] = {}
    for e in err.errors():
        loc, context = _where(e["loc"])
        msg = _bounded(e["msg"].removeprefix("Value error, "), e)
        if e["type"] == "extra_forbidden":
            msg = (f"renamed to {RENAMED[loc]}" if loc in RENAMED
                   else f"unknown field{context} (not allowed here; check the spelling)")
        got = e.get("input")
        echo = "" if isinstance(got, dict) or got is None else f" (got {shown(got)})"
        msgs, _ = problems.setdefault(loc, ([], echo))
        if msg not in msgs:
            msgs.append(msg)
    lines = []
    for loc, (msgs, echo) in problems.items():
        text = msgs[0] + "".join(" or " + m.removeprefix("Input should be ") for m in msgs[1:])
        head = re.match(r"^([A-Za-z_][\w./]*)(?: \(.*?\))?: ", text)
        if not loc or (head and head.group(1).startswith(loc)):
            lines.append(f"{text}{echo}")  # the message names its field
        elif head:  # a model's validator names a field of that model
            lines.append(f"{loc}.{text}{echo}")
        else:
            lines.append(f"{loc}: {text}{echo}")
    return "\n".join(lines)
