"""Squared parameter norms of the learned and of the minimum-norm interpolator on orthonormal data
(docs/math.md §3.5, TBLEL eq.15 and Theorem 3).

Learned (the final saddle of Algorithm 1; a_j² = ||w_j||² = ||D|| for each fitted neuron):

    ||θ_∞||² = Σ_j (a_j² + ||w_j||²) = 2 Σ_{k=1}^K ||D_{j_k}^{(k-1)}|| = 2 Σ_k (Σ_{i ∈ S_k} y_i²)^{1/2}

Minimum norm (one neuron per label sign, w = D_± / ||D_±||^{1/2}, D_± = Σ_{i ∈ I_±} |y_i| x_i):

    ||θ*||² = 2 (||y_+|| + ||y_-||),    ||y_±|| = (Σ_{i ∈ I_±} y_i²)^{1/2}

Theorem 3 bounds ||θ_∞||² by C y_max √n with high probability (constant not recoverable,
docs/math.md §7): only the two computable sides and their ratio are exposed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from shallowflow.theory.activation_mask import check_inputs, check_labels

if TYPE_CHECKING:
    from shallowflow.theory.saddle_process import SaddleProcess


def learned_norm_sq(process: SaddleProcess) -> float:
    """||θ_∞||² = 2 Σ_k ||D_{j_k}^{(k-1)}|| of the final saddle of Algorithm 1."""
    return float(2.0 * np.sum(process.jump_scale))


def min_norm_sq(y: object) -> float:
    """||θ*||² = 2 (||y_+|| + ||y_-||), the smallest squared norm of any interpolator of (X, y)
    with orthonormal X (any width >= 2)."""
    y = check_labels(y)
    return float(2.0 * (np.linalg.norm(y[y > 0]) + np.linalg.norm(y[y < 0])))


def norm_ratio(process: SaddleProcess, y: object | None = None) -> float:
    """||θ_∞||² / ||θ*||² (>= 1 when the learned network interpolates); y defaults to the
    process's labels."""
    ref = min_norm_sq(process.y if y is None else y)
    if ref == 0:
        raise ValueError("y: all labels are zero, the minimum norm is 0 and the ratio undefined")
    return learned_norm_sq(process) / ref


def min_norm_interpolator(X: object | None, y: object) -> tuple[np.ndarray, np.ndarray]:
    """θ* as two neurons (a (2,), W (2, d)): the positive-label neuron first. X None: identity.
    A neuron whose label class is empty is zero."""
    y = check_labels(y)
    n = y.shape[0]
    a, rows = np.zeros(2), np.zeros((2, n))
    for r, sign in enumerate((1.0, -1.0)):
        part = np.where(sign * y > 0, np.abs(y), 0.0)
        norm = np.linalg.norm(part)
        if norm > 0:
            a[r] = sign * np.sqrt(norm)
            rows[r] = part / np.sqrt(norm)
    X = check_inputs(X, n)
    return (a, rows) if X is None else (a, rows @ X)
