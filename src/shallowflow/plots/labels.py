"""How numbers are written in figures and reports: one label per concept.

The initial scale lambda is always given by its decimal log (``log10_lambda``); its label is
``1e-12`` in text and ``$\\lambda = 10^{-12}$`` in figures. A non-integer decimal log (a scale
given by its natural log, e.g. lambda = e^-1000) is written ``e^-1000``.
"""

from __future__ import annotations

import math


def lambda_label(log10_lambda: float, tex: bool = False) -> str:
    """The label of the scale lambda = 10^log10_lambda: '1e-12' (text) or '$\\lambda = 10^{-12}$'
    (``tex``); 'e^-1000' for a non-integer decimal log."""
    v = float(log10_lambda)
    if tex:
        return f"$\\lambda = 10^{{{v:g}}}$"
    if v.is_integer():
        return f"1e{int(v)}"
    return f"e^{v * math.log(10):.0f}"
