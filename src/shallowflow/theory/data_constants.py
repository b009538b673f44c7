"""Data constants of DPB and the low-correlation condition (docs/math.md §1.3).

For a data set (x_i, y_i), i = 1..n, stored as X (n, d) and y (n,):

    C_x^- = min_i ||x_i||,   C_x^+ = max_i ||x_i||,   C_y^- = min_i |y_i|,   C_y^+ = max_i |y_i|,
    D_X   = diag(||x_i||^2)   (the diagonal of the n x n Gram matrix X X^T in our row layout).

Assumption 2 (DPB eq.4) asks the off-diagonal part of the Gram matrix to be small:

    ||X^T X - D_X||_op  <  (C_x^-)^2 / (2 sqrt n) * C_y^- / C_y^+,

where DPB's X is d x n (columns are points), so X^T X is the n x n Gram matrix; with our row layout
it is ``X @ X.T``. Lemma 3 gives a sufficient dimension for i.i.d. whitened sub-Gaussian data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Assumption2",
    "DataConstants",
    "assumption2",
    "data_constants",
    "gram_offdiagonal_norm",
    "lemma3_dimension",
]


@dataclass(frozen=True)
class DataConstants:
    """The four DPB data constants (docs/math.md §1.3).

    Attributes
    ----------
    C_x_minus, C_x_plus : float
        min_i ||x_i|| and max_i ||x_i||.
    C_y_minus, C_y_plus : float
        min_i |y_i| and max_i |y_i|.
    n : int
        Number of samples.
    """

    C_x_minus: float
    C_x_plus: float
    C_y_minus: float
    C_y_plus: float
    n: int


def data_constants(X: np.ndarray, y: np.ndarray) -> DataConstants:
    """C_x^-, C_x^+, C_y^-, C_y^+ of a data set (docs/math.md §1.3).

    Parameters
    ----------
    X : (n, d) array
        Inputs, one point per row.
    y : (n,) array
        Labels.

    Returns
    -------
    DataConstants
        C_x^- = min_i ||x_i||, C_x^+ = max_i ||x_i||, C_y^- = min_i |y_i|, C_y^+ = max_i |y_i|.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X, y: need X (n, d) and y (n,), got {X.shape} and {y.shape}")
    norms = np.linalg.norm(X, axis=1)
    ay = np.abs(y)
    return DataConstants(float(norms.min()), float(norms.max()), float(ay.min()), float(ay.max()),
                         int(X.shape[0]))


def gram_offdiagonal_norm(X: np.ndarray) -> float:
    """||X^T X - D_X||_op in DPB's notation (docs/math.md §1.3, §1.4(3)).

    The spectral norm of the n x n Gram matrix with its diagonal removed; with rows as points the
    Gram matrix is ``X @ X.T``. It is 0 for orthogonal data.

    Parameters
    ----------
    X : (n, d) array
        Inputs, one point per row.

    Returns
    -------
    float
        The largest absolute eigenvalue of X X^T - diag(||x_i||^2).
    """
    X = np.asarray(X, dtype=np.float64)
    G = X @ X.T
    G = G - np.diag(np.diag(G))
    return float(np.max(np.abs(np.linalg.eigvalsh(G)))) if G.size else 0.0


@dataclass(frozen=True)
class Assumption2:
    """Both sides of DPB's Assumption 2 (eq.4, docs/math.md §1.3).

    Attributes
    ----------
    lhs : float
        ||X^T X - D_X||_op.
    rhs : float
        (C_x^-)^2 / (2 sqrt n) * C_y^- / C_y^+.
    holds : bool
        lhs < rhs (strict, as in the paper).
    """

    lhs: float
    rhs: float
    holds: bool


def assumption2(X: np.ndarray, y: np.ndarray) -> Assumption2:
    """Check DPB's low-correlation Assumption 2 (docs/math.md §1.3, DPB eq.4).

        ||X^T X - D_X||_op  <  (C_x^-)^2 / (2 sqrt n) * C_y^- / C_y^+

    Parameters
    ----------
    X : (n, d) array
        Inputs, one point per row.
    y : (n,) array
        Labels.

    Returns
    -------
    Assumption2
        Left side, right side and whether the strict inequality holds.
    """
    c = data_constants(X, y)
    lhs = gram_offdiagonal_norm(X)
    rhs = c.C_x_minus**2 / (2.0 * math.sqrt(c.n)) * c.C_y_minus / c.C_y_plus
    return Assumption2(lhs, rhs, bool(lhs < rhs))


def lemma3_dimension(n: int, eps: float, constants: DataConstants, C: float = 1.0) -> float:
    """Sufficient input dimension of DPB Lemma 3 (eq.46, docs/math.md §1.3).

        d >= 8 (C_y^+/C_y^-)^2 (C_x^+/C_x^-)^4 (C^2 n^2 + n log(2/eps))

    guarantees Assumption 2 with probability >= 1 - eps for i.i.d. whitened sub-Gaussian data.

    Parameters
    ----------
    n : int
        Number of samples.
    eps : float
        Failure probability, in (0, 1).
    constants : DataConstants
        The data constants (or the bounds of their support).
    C : float, default 1
        The universal constant of Vershynin's Remark 5.59. It is **unknown** (it depends on the
        sub-Gaussian norm of the columns); the default 1 is a placeholder, not a value from the paper.

    Returns
    -------
    float
        The right-hand side of eq.46 (a real number; round up for an integer dimension).
    """
    if not 0 < eps < 1:
        raise ValueError(f"eps: must be in (0, 1), got {eps}")
    k = constants
    return (8.0 * (k.C_y_plus / k.C_y_minus) ** 2 * (k.C_x_plus / k.C_x_minus) ** 4
            * (C**2 * n**2 + n * math.log(2.0 / eps)))
