"""Ordinary least squares with a bias and Boursier-Flammarion's Theorem 2 limit (docs/math.md §2.4).

Inputs are the rows of X~ (n, d) with the bias column included (1-D data: x~ = (x, 1)):

    beta* = argmin_beta sum_k (<beta, x~_k> - y_k)^2 = (X~^T X~)^{-1} X~^T y,
    L_OLS = c_q sum_k (<beta*, x~_k> - y_k)^2,   c_q = 1/n for BF's loss (``mse``, mean: no 1/2),

and Theorem 2's limit (λ -> 0, any width m, Assumption 3): h_inf(x~_k) = <beta*, x~_k> on the
data, L(theta_inf) = L_OLS > 0, and h_inf(x) = max(0, <beta*, x~>), the positive part of the OLS
line (docs/math.md §2.4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shallowflow.model.losses import Loss
from shallowflow.theory.extremal import BF_LOSS


@dataclass(frozen=True)
class OLSFit:
    """beta* (d,), the fitted values <beta*, x~_k> (n,), the loss L_OLS under ``loss`` and
    ``positive``: min_k <beta*, x~_k> > 0 (one ReLU neuron along beta* fits the OLS values,
    as in Theorem 2). For 1-D data with a bias, slope = beta[0] and intercept = beta[1]."""

    beta: np.ndarray
    fitted: np.ndarray
    loss: float
    positive: bool

    @property
    def slope(self) -> float:
        return float(self.beta[0])

    @property
    def intercept(self) -> float:
        return float(self.beta[-1])


def ols(X: object, y: object, loss: Loss = BF_LOSS) -> OLSFit:
    """The least-squares fit beta* = argmin sum_k (<beta, x~_k> - y_k)^2 of y on the rows of X~
    (bias column included; minimum-norm solution if X~ is rank deficient) and its loss
    L_OLS = c_q sum_k r_k^2 (``Loss.quadratic_coefficient``: 1/n for ``mse``, 1/(2n) for
    ``square``) (docs/math.md §2.4)."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    beta = np.linalg.lstsq(X, y, rcond=None)[0]
    fitted = X @ beta
    value = loss.quadratic_coefficient(len(y)) * float(np.sum((fitted - y) ** 2))
    return OLSFit(beta, fitted, value, bool(np.min(fitted) > 0))


def theorem2_limit(X: object, beta: object) -> np.ndarray:
    """h_inf(x~) = max(0, <beta*, x~>) at the rows of X (..., d) (bias column included): the
    positive part of the OLS predictor, Theorem 2's limit as λ -> 0 (docs/math.md §2.4). On data
    with min_k <beta*, x~_k> > 0 it equals the OLS values."""
    return np.maximum(np.asarray(X, dtype=np.float64) @ np.asarray(beta, dtype=np.float64), 0.0)
