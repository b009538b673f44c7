"""The span basis: training in an orthonormal basis of the data span, losslessly (docs/math.md §0.3).

Outputs and gradients depend on W only through W Q, where Q (d, r) is an orthonormal basis of the
span of the inputs: every gradient dL/dw_j = kappa a_j M_j lies in that span. So the engine trains
W_r = W Q (p, r) with inputs X_r = X Q (n, r), and the out-of-span part W_perp = W - W_r Q^T stays
exactly constant; norms, balancedness and the PL curvature add its constant ||w_perp||^2.

Orthogonal inputs (x_i . x_k = 0 for i != k) are diagonal in the basis q_i = x_i / ||x_i||:
X_r = diag(||x_i||), the :class:`~shallowflow.model.inputs.DiagonalInputs` fast path with O(n p) work per
neuron-step instead of O(n d p). Working in the data basis also makes pre-activations exact
multiples of the coordinates, so rounding of X w can no longer flip their sign.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from shallowflow.model.inputs import DiagonalInputs, Inputs, PerRunInputs, SharedInputs

ORTHOGONALITY_TOL = 1e-10


class Span(NamedTuple):
    """Inputs in the span basis and the basis Q (d, r), or (R, d, r) for per-run data."""

    inputs: Inputs
    basis: np.ndarray


def is_orthogonal(X: np.ndarray, tol: float = ORTHOGONALITY_TOL) -> bool:
    """True if the rows of X (n, d) are pairwise orthogonal: |x_i . x_k| <= tol max ||x||^2."""
    G = X @ X.T
    diag = np.diag(G).copy()
    if np.any(diag == 0):
        return False
    np.fill_diagonal(G, 0.0)
    return bool(np.max(np.abs(G), initial=0.0) <= tol * diag.max())


def _span_one(X: np.ndarray) -> tuple[str, np.ndarray, np.ndarray]:
    """('diagonal', norms, Q) or ('dense', X Q, Q) or ('none', X, I)."""
    n, d = X.shape
    if is_orthogonal(X):
        norms = np.linalg.norm(X, axis=1)
        return "diagonal", norms, (X / norms[:, None]).T
    if n < d:
        Q, _ = np.linalg.qr(X.T)
        return "dense", X @ Q, Q
    return "none", X, np.eye(d)


def span_of(X: np.ndarray) -> Span | None:
    """X (n, d) or (R, n, d) in its span basis; None when the span basis gains nothing (n >= d
    and the rows are not orthogonal)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 2:
        kind, Xr, Q = _span_one(X)
        if kind == "none":
            return None
        if kind == "diagonal":
            return Span(DiagonalInputs(Xr[:, None]), Q)
        return Span(SharedInputs.of(Xr), Q)
    parts = [_span_one(Xi) for Xi in X]
    kinds = {k for k, _, _ in parts}
    if kinds == {"diagonal"}:
        return Span(DiagonalInputs(np.stack([p[1] for p in parts], axis=1)),
                         np.stack([p[2] for p in parts]))
    if X.shape[1] < X.shape[2]:
        Qs = [p[2] if k != "diagonal" else np.linalg.qr(Xi.T)[0]
              for (k, _, _), p, Xi in zip(parts, parts, X, strict=True)]
        Q = np.stack(Qs)
        return Span(PerRunInputs(np.matmul(X, Q)), Q)
    return None


def project(W: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(W_r = W Q, W_perp = W - W_r Q^T) for W (R, p, d) and Q (d, r) or (R, d, r)."""
    if Q.ndim == 2:  # one 2-D GEMM over all runs' neurons (numpy's stacked matmul is slower)
        R, p, d = W.shape
        Wr = (W.reshape(R * p, d) @ Q).reshape(R, p, -1)
        return Wr, W - (Wr.reshape(R * p, -1) @ Q.T).reshape(R, p, d)
    Wr = np.matmul(W, Q)  # stacked BLAS products (numpy's einsum does not use BLAS here)
    return Wr, W - np.matmul(Wr, Q.transpose(0, 2, 1))


def restore(Wr: np.ndarray, Q: np.ndarray, W_perp: np.ndarray) -> np.ndarray:
    """W = W_r Q^T + W_perp; W_r may carry a record axis: (R, K, p, r) with W_perp (R, p, d)."""
    lead = Wr.shape[:-1]
    if Q.ndim == 2:
        full = (Wr.reshape(-1, Wr.shape[-1]) @ Q.T).reshape((*lead, Q.shape[0]))
    elif Wr.ndim == 4:
        full = np.matmul(Wr, Q.transpose(0, 2, 1)[:, None])
    else:
        full = np.matmul(Wr, Q.transpose(0, 2, 1))
    return full + (W_perp[:, None] if Wr.ndim == 4 else W_perp)
