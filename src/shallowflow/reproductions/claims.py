"""Paper claims and their verdicts: one entry of ``claims.json`` per quantitative claim.

A claim states what the paper says, the value it is judged against (``reference``) and where
that value comes from (``source``, a :class:`Source` of one of the kinds :data:`SOURCES`:
``printed`` by the paper, ``derived`` from its formulas or data, a ``threshold`` of the
project's own, or a ``qualitative`` shape the paper describes; docs/claims.md), what the
simulation measured (``measured``, with an ``interval`` when the measurement has one) and a
``verdict``:

- ``reproduced``: the measurement supports the claim (an interval contains the paper's value,
  or a qualitative property holds);
- ``not reproduced``: it contradicts the claim;
- ``partly``: some parts hold, others do not (the notes say which);
- ``inconclusive``: the measurement cannot decide (interval too wide, preset too small).

A claim's ``role`` is ``claim`` (it can fail on data that another dynamics would produce, and is
counted) or ``check`` (a consistency check that holds by construction or tests little: reported,
never counted among the reproduced claims).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

VERDICTS = ("reproduced", "not reproduced", "partly", "inconclusive")
SOURCES = ("printed", "derived", "threshold", "qualitative")
"""Where a reference comes from: the paper prints it (quote it or name the figure, table or
equation); it is derived from the paper's formulas or data (say how, with the docs/math.md
section); it is the project's own threshold (with its justification); or the paper describes a
shape or an ordering in words (quote them)."""
ROLES = ("claim", "check")


@dataclass(frozen=True)
class Source:
    """Where a claim's reference comes from: ``kind`` (one of :data:`SOURCES`) and ``where``
    (the quoted sentence or the figure, table or equation for ``printed`` and ``qualitative``;
    how it was computed for ``derived``; the justification for ``threshold``)."""

    kind: str
    where: str

    def __post_init__(self) -> None:
        if self.kind not in SOURCES:
            raise ValueError(f"source kind: must be one of {SOURCES}, got {self.kind!r}")
        if not self.where.strip():
            raise ValueError("source: say where the reference comes from")


def printed(where: str) -> Source:
    """A reference the paper prints: ``where`` quotes it or names its figure, table or equation."""
    return Source("printed", where)


def derived(how: str) -> Source:
    """A reference computed from the paper's formulas or data: ``how``, with its docs/math.md
    section."""
    return Source("derived", how)


def threshold(why: str) -> Source:
    """A rule of the project's own: ``why`` justifies it from the paper's words."""
    return Source("threshold", why)


def qualitative(words: str) -> Source:
    """A shape or ordering the paper describes: ``words`` quotes or paraphrases it."""
    return Source("qualitative", words)


@dataclass(frozen=True)
class Claim:
    """One paper claim with the measurement that tests it: ``reference`` is the value it is
    judged against, ``source`` says where that value comes from; ``role`` is ``claim`` (counted)
    or ``check`` (reported, not counted)."""

    id: str
    statement: str
    reference: Any
    measured: Any
    verdict: str
    interval: tuple[float, float] | None = None
    notes: str = ""
    variants: dict[str, Any] = field(default_factory=dict)
    source: Source = field(kw_only=True)
    role: str = "claim"

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict: must be one of {VERDICTS}, got {self.verdict!r}")
        if self.role not in ROLES:
            raise ValueError(f"role: must be one of {ROLES}, got {self.role!r}")


def band_verdict(interval: tuple[float, float] | None, band: tuple[float, float],
                 max_width: float | None = None) -> str:
    """The one band rule: ``inconclusive`` if the measured interval is missing, not finite or
    wider than ``max_width`` (too uncertain to decide); else ``reproduced`` if it meets the
    paper's band [lo, hi] (a point value is the band (v, v)), ``not reproduced`` if it misses
    it."""
    if interval is None or not all(map(math.isfinite, interval)):
        return "inconclusive"
    if max_width is not None and interval[1] - interval[0] > max_width:
        return "inconclusive"
    meets = interval[1] >= band[0] and interval[0] <= band[1]
    return "reproduced" if meets else "not reproduced"


def interval_verdict(paper: float, interval: tuple[float, float] | None,
                     max_width: float | None = None) -> str:
    """:func:`band_verdict` with the band shrunk to the paper's value: reproduced if the
    interval contains it."""
    return band_verdict(interval, (paper, paper), max_width)


def _plain(value: Any) -> Any:
    """JSON-friendly copy: numpy scalars and arrays to Python, NaN/inf to strings."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def to_json(claims: list[Claim]) -> str:
    return json.dumps([_plain(asdict(c)) for c in claims], indent=2) + "\n"


def load_claims(path: str | Path) -> list[dict[str, Any]]:
    """Read a ``claims.json`` file."""
    return json.loads(Path(path).read_text())
