"""dana-fig4: the convergence threshold N(d, p = 30) against d (paper: linear in d).

Paper (000 §5.1, Fig. 4; docs/math.md §5): d = 10..100, p = 30, n from N - 15d to N + 15d in
steps of d. Method: :mod:`shallowflow.reproductions.dana.threshold`.
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


class Fig4Params(Params):
    """Parameters of dana-fig4."""

    d_values: list[Annotated[int, Field(ge=1)]] = Field(
        min_length=1, description="dimensions d at which the threshold is found")
    p: int = Field(ge=1, description="number of neurons (fixed)")
    runs: ScanRuns
    coarse_runs: CoarseRuns
    span: Span
    step: Step
    seed: ScanSeed


PRESETS = {
    "quick": {"d_values": [20, 30, 40], "p": 30, "runs": 8, "coarse_runs": 6, "span": 4.0,
              "step": 1.0, "seed": 0},
    "paper": {"d_values": list(range(10, 101, 10)), "p": 30, "runs": 25, "coarse_runs": 10,
              "span": 15.0, "step": 1.0, "seed": 0},
}
AIC_MARGIN = 2.0  # the linear law may be this far above the best AIC
MIN_R2 = 0.95  # and must explain this much of the variance
PROPORTIONAL = (0.85, 1.15)  # power exponents counted as "proportional to d": 1 +- 0.15, the
# lower edge being dana-fig5's sub-linear cut, so that "linear" and "sub-linear" do not overlap



def linear_rule(fits: dict[str, LawFit], x: np.ndarray, N: np.ndarray) -> tuple[str, str]:
    """Reproduced when the linear law a + b d has the lowest AIC of the three laws (or is within
    AIC_MARGIN of it) with R2 >= MIN_R2, and N is proportional to d (power exponent in
    PROPORTIONAL: the paper writes N(d, p) = C(p) d); partly when the linear law fits but N is
    not proportional to d (an affine law with an intercept); else not reproduced."""
    best = min(f.aic for f in fits.values())
    k = fits["power"].coef[1]
    linear = fits["linear"].aic <= best + AIC_MARGIN and fits["linear"].r2 >= MIN_R2
    lo, hi = PROPORTIONAL
    proportional = lo <= k <= hi
    verdict = ("reproduced" if linear and proportional else "partly" if linear
               else "not reproduced")
    return (verdict,
            f"Rule: the linear law a + b d has the lowest AIC (or within {AIC_MARGIN:g}) and "
            f"R2 >= {MIN_R2}, and N is proportional to d (power exponent in [{lo}, {hi}]; the "
            f"paper writes N(d,p) = C(p)d); 'partly' if the linear law fits but N is not "
            f"proportional. Linear R2 {fits['linear'].r2:.4f}, AIC linear "
            f"{fits['linear'].aic:.2f} vs best {best:.2f}: {'fits' if linear else 'does not fit'}"
            f"; exponent {k:.3f}: {'proportional' if proportional else 'not proportional'}.")


SCAN = ThresholdScan("d", "linearly", linear_rule, sources.LINEAR_IN_D)

REPRODUCTION = Reproduction(
    "dana-fig4", "convergence threshold against d", "Dana, Pillaud-Vivien, Bach (000), Figure 4",
    Fig4Params, PRESETS, SCAN.simulate, SCAN.judge, SCAN.draw, SCAN.method,
    summary="The convergence threshold N(d, p) of DPB's network on sphere data against the "
            "dimension d at fixed width p (Figure 4 of the paper).")
