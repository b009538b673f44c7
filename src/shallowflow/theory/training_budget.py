"""Training budget and convergence thresholds of DPB's experiments (docs/math.md §1.4(12)).

Budget (DPB App. B; code utils.nb_epochs): t_inf = 1.5 (sqrt(np)/4) log(np) units of flow time
(dtheta/dt = -p grad L), run as floor(t_inf/lr) + 1 epochs.

Thresholds on L = (1/(2n)) sum r_i^2 below which a run counts as converged:

    paper (App. B, Fig. 3)      C_y^- / (2n)
    sign-safe variant [D]       (C_y^-)^2 / (2n): forces |r_i| < C_y^- <= |y_i| for all i, so every
                                prediction has the sign of its label; equals the paper's at C_y^- = 1
    code, Exp. 1                1/(2n)   (p L < p/(2n))
    code, Exp. 2                1e-6/(2n)
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

__all__ = ["budget", "converged", "epochs", "threshold"]

ThresholdRule = Literal["paper", "sign", "code", "exp2"]


def budget(n: int, p: int) -> float:
    """t_inf = 1.5 (sqrt(np)/4) log(np), in flow time (docs/math.md §1.4(12))."""
    return 1.5 * math.sqrt(n * p) / 4.0 * math.log(n * p)


def epochs(n: int, p: int, lr: float = 1.0) -> int:
    """Number of epochs of the budget, floor(t_inf/lr) + 1 (docs/math.md §1.4(12); code utils.nb_epochs)."""
    return math.floor(budget(n, p) / lr) + 1


def threshold(n: int, rule: ThresholdRule = "paper", C_y_minus: float = 1.0) -> float:
    """Convergence threshold on L (docs/math.md §1.4(12)).

    Parameters
    ----------
    n : int
        Number of samples.
    rule : {"paper", "sign", "code", "exp2"}
        ``paper``: C_y^-/(2n) (DPB App. B); ``sign``: (C_y^-)^2/(2n), the sufficient condition for
        correct signs [D]; ``code``: 1/(2n) (Exp. 1 code); ``exp2``: 1e-6/(2n) (Exp. 2 code).
    C_y_minus : float, default 1
        min_i |y_i| (used by ``paper`` and ``sign``).
    """
    values = {
        "paper": C_y_minus,
        "sign": C_y_minus**2,
        "code": 1.0,
        "exp2": 1e-6,
    }
    if rule not in values:
        raise ValueError(f"rule: must be one of {sorted(values)}, got {rule!r}")
    return values[rule] / (2.0 * n)


def converged(final_loss: np.ndarray | float, threshold: float) -> np.ndarray | bool:
    """Whether the final loss is strictly below the threshold (docs/math.md §1.4(12), §1.4(13)).

    Non-finite losses (diverged runs) count as not converged.
    """
    L = np.asarray(final_loss, dtype=np.float64)
    out = np.isfinite(L) & (L < threshold)
    return bool(out) if out.ndim == 0 else out
