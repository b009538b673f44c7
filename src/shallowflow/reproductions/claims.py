"""Paper claims and their verdicts: one entry of ``claims.json`` per quantitative claim.

A claim states what the paper says (``paper_value``), what the simulation measured
(``measured``, with an ``interval`` when the measurement has one) and a ``verdict``:

- ``reproduced``: the measurement supports the claim (an interval contains the paper's value,
  or a qualitative property holds);
- ``not reproduced``: it contradicts the claim;
- ``partly``: some parts hold, others do not (the notes say which);
- ``inconclusive``: the measurement cannot decide (interval too wide, preset too small).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

VERDICTS = ("reproduced", "not reproduced", "partly", "inconclusive")


@dataclass(frozen=True)
class Claim:
    """One paper claim with the measurement that tests it."""

    id: str
    statement: str
    paper_value: Any
    measured: Any
    verdict: str
    interval: tuple[float, float] | None = None
    notes: str = ""
    variants: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict: must be one of {VERDICTS}, got {self.verdict!r}")


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
