"""Optimal assignments: the cheapest matching of rows to columns of a cost matrix, batched over
leading axes (scipy's linear_sum_assignment, the Hungarian method's successor), and the distance
between two networks up to a permutation of their neurons (docs/math.md §11.9).

    min_cost(C) = min over permutations pi of sum_j C[j, pi(j)]             (C square, m x m)
    permutation_distance((a, W), (a', W'))^2 = min_pi sum_j (a_j - a'_pi(j))^2 + |w_j - w'_pi(j)|^2

O(m^3) per matrix. Host code (numpy); the compiled loop reaches it through a callback
(:mod:`shallowflow.dynamics.teacher_probes`).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment


def assignments(cost: np.ndarray) -> np.ndarray:
    """The optimal permutation pi (..., m) of every square cost matrix (..., m, m): row j goes
    to column pi[j]. A non-finite entry is never chosen (ValueError if no finite matching)."""
    cost = np.asarray(cost, np.float64)
    if cost.ndim < 2 or cost.shape[-1] != cost.shape[-2]:
        raise ValueError(f"cost: needs square matrices (..., m, m), got shape {cost.shape}")
    flat = cost.reshape(-1, *cost.shape[-2:])
    out = np.empty(flat.shape[:2], np.int64)
    for i, c in enumerate(flat):
        rows, cols = linear_sum_assignment(c)
        out[i, rows] = cols
    return out.reshape(cost.shape[:-1])


def min_cost(cost: np.ndarray) -> np.ndarray:
    """min over permutations pi of sum_j cost[..., j, pi(j)], (...) float64; NaN for a matrix
    holding a NaN."""
    cost = np.asarray(cost, np.float64)
    bad = np.any(np.isnan(cost), axis=(-1, -2))
    safe = np.where(np.isnan(cost), 0.0, cost)
    pi = assignments(safe)
    total = np.take_along_axis(safe, pi[..., None], axis=-1)[..., 0].sum(axis=-1)
    return np.where(bad, np.nan, total)


def permutation_distance(a: np.ndarray, W: np.ndarray, a2: np.ndarray, W2: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray]:
    """(distance (...), pi (..., p)): the Euclidean distance between the networks (a, W) and
    (a2, W2) (a (..., p), W (..., p, d)) minimised over permutations pi of the second one's
    neurons, and that pi (module docstring)."""
    a, W, a2, W2 = (np.asarray(v, np.float64) for v in (a, W, a2, W2))
    cost = ((a[..., :, None] - a2[..., None, :]) ** 2
            + np.sum((W[..., :, None, :] - W2[..., None, :, :]) ** 2, axis=-1))
    pi = assignments(cost)
    total = np.take_along_axis(cost, pi[..., None], axis=-1)[..., 0].sum(axis=-1)
    return np.sqrt(total), pi
