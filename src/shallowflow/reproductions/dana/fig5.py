"""dana-fig5: the convergence threshold N(d = 30, p) against p (paper: sub-linear in p).

Paper (000 §5.1, Fig. 5; MATH.md §5): d = 30, p = 50..400. Protocol:
:mod:`shallowflow.reproductions.dana.threshold`.
"""

from __future__ import annotations

import numpy as np

from shallowflow.reproductions.base import Reproduction, register
from shallowflow.reproductions.dana.threshold import scan_build

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


build = scan_build("p", "sub-linearly", sublinear_rule,
                   "The convergence threshold N(d, p) of DPB's network on sphere data against "
                   "the width p at fixed dimension d (Figure 5 of the paper).")

register(Reproduction("dana-fig5", "convergence threshold against p",
                      "Dana, Pillaud-Vivien, Bach (000), Figure 5", build, PRESETS, __doc__ or ""))
