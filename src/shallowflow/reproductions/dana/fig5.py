"""dana-fig5: the convergence threshold N(d = 30, p) against p (paper: sub-linear in p).

Paper (000 §5.1, Fig. 5; MATH.md §5): d = 30, p = 50..400. Protocol:
:mod:`shallowflow.reproductions.dana.threshold`.
"""

from __future__ import annotations

import numpy as np

from shallowflow.reproductions.base import Context, Reproduction, register
from shallowflow.reproductions.claims import Claim
from shallowflow.reproductions.dana.threshold import threshold_scan

PRESETS = {
    "quick": {"p_values": [15, 30, 60], "d": 20, "runs": 8, "coarse_runs": 6, "span": 4.0,
              "step": 1.0, "seed": 0},
    "paper": {"p_values": list(range(50, 401, 50)), "d": 30, "runs": 25, "coarse_runs": 10,
              "span": 15.0, "step": 1.0, "seed": 0},
}


def sublinear_rule(fits: dict, x: np.ndarray, N: np.ndarray) -> tuple[str, str]:
    """Sub-linear when the power-law exponent is below 0.85, or the logarithmic law fits best."""
    k = fits["power"].coef[1]
    best = min(fits, key=lambda law: fits[law].aic)
    ok = k < 0.85 or best == "log"
    return ("reproduced" if ok else "not reproduced",
            f"Rule: power-law exponent < 0.85 or the logarithmic law has the lowest AIC; "
            f"exponent {k:.3f}, best law by AIC: {best}.")


def build(ctx: Context) -> list[Claim]:
    P = ctx.params
    ctx.summary = ("The convergence threshold N(d, p) of DPB's network on sphere data against the "
                   "width p at fixed dimension d (Figure 5 of the paper).")
    return threshold_scan(ctx, "p", P["p_values"], {"d": P["d"]}, "sub-linearly", sublinear_rule)


register(Reproduction("dana-fig5", "convergence threshold against p",
                      "Dana, Pillaud-Vivien, Bach (000), Figure 5", build, PRESETS, __doc__ or ""))
