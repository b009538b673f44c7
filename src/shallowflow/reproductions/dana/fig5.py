"""dana-fig5: the convergence threshold N(d = 30, p) against p (paper: sub-linear in p).

Paper (000 §5.1, Fig. 5; docs/math.md §5): d = 30, p = 50..400. Method:
:mod:`shallowflow.reproductions.dana.threshold`.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field

from shallowflow.analysis.fits import LawFit
from shallowflow.reproductions.base import Params, Reproduction
from shallowflow.reproductions.dana import dpb_sources as sources
from shallowflow.reproductions.dana.threshold import (
    CoarseRuns,
    ScanRuns,
    ScanSeed,
    Span,
    Step,
    ThresholdScan,
)


class Fig5Params(Params):
    """Parameters of dana-fig5."""

    p_values: list[Annotated[int, Field(ge=1)]] = Field(
        min_length=1, description="numbers of neurons p at which the threshold is found")
    d: int = Field(ge=1, description="input dimension (fixed)")
    runs: ScanRuns
    coarse_runs: CoarseRuns
    span: Span
    step: Step
    seed: ScanSeed


PRESETS = {
    "quick": {"p_values": [15, 30, 60], "d": 20, "runs": 8, "coarse_runs": 6, "span": 4.0,
              "step": 1.0, "seed": 0},
    "paper": {"p_values": list(range(50, 401, 50)), "d": 30, "runs": 25, "coarse_runs": 10,
              "span": 15.0, "step": 1.0, "seed": 0},
}
SUBLINEAR_EXPONENT = 0.85  # power-law exponents below this are sub-linear



def sublinear_rule(fits: dict[str, LawFit], x: np.ndarray, N: np.ndarray) -> tuple[str, str]:
    """Sub-linear growth when the power-law exponent lies in (0, SUBLINEAR_EXPONENT), or the
    logarithmic law a + b log p fits best (lowest AIC) with b > 0: the paper's words are "a
    sub-linear polynomial growth or a logarithmic growth"."""
    k = fits["power"].coef[1]
    best = min(fits, key=lambda law: fits[law].aic)
    growing_log = best == "log" and fits["log"].coef[1] > 0
    ok = 0 < k < SUBLINEAR_EXPONENT or growing_log
    return ("reproduced" if ok else "not reproduced",
            f"Rule: power-law exponent in (0, {SUBLINEAR_EXPONENT}) or a growing logarithmic "
            f"law has the lowest AIC; exponent {k:.3f}, best law by AIC: {best}.")


SCAN = ThresholdScan("p", "sub-linearly", sublinear_rule, sources.SUBLINEAR_IN_P)

REPRODUCTION = Reproduction(
    "dana-fig5", "convergence threshold against p", "Dana, Pillaud-Vivien, Bach (000), Figure 5",
    Fig5Params, PRESETS, SCAN.simulate, SCAN.judge, SCAN.draw, SCAN.method,
    summary="The convergence threshold N(d, p) of DPB's network on sphere data against the "
            "width p at fixed dimension d (Figure 5 of the paper).")
