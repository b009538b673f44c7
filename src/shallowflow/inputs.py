"""How the data enters the two contractions of a batched gradient step (MATH.md §0.3).

The engine keeps the hidden weights of all R runs side by side, ``Wt`` of shape (d, R, p)
(Wt[:, r, j] = w_j of run r), so both contractions of a step are single GEMMs over all runs:

    Z[i, r, j] = <w_j^(r), x_i^(r)>                  pre-activations     (n, R, p)
    M[:, r, j] = sum_i G[i, r, j] x_i^(r)            back-projection     (d, R, p)

An ``Inputs`` object implements these two maps for one data layout:

- :class:`SharedInputs`: one dataset for every run, X (n, d). Z = X @ Wt, M = X^T @ G.
- :class:`PerRunInputs`: a dataset per run, X (R, n, d): batched contractions.
- :class:`DiagonalInputs`: orthogonal data written in its own orthonormal basis, X = diag(s):
  Z = s * Wt and M = s * G, O(n R p) work instead of O(n d R p) (MATH.md §0.3 fast path).

Contractions over an inner dimension of at most 4 (1-D data with a bias, three points) are
unrolled into elementwise products: XLA's GEMM for such shapes is far slower than the arithmetic.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jax import Array

SMALL = 4


def _mm(A: Array, B: Array) -> Array:
    """A @ B for 2-D arrays, unrolled over a small inner dimension."""
    k = A.shape[1]
    if k <= SMALL:
        out = A[:, 0, None] * B[None, 0, :]
        for i in range(1, k):
            out = out + A[:, i, None] * B[None, i, :]
        return out
    return A @ B


class SharedInputs(NamedTuple):
    """One dataset X (n, d) shared by all runs (``Xt`` = X^T, kept to avoid a per-step copy)."""

    X: Array
    Xt: Array

    @classmethod
    def of(cls, X: Array) -> SharedInputs:
        X = jnp.asarray(X)
        return cls(X, X.T)

    @property
    def n(self) -> int:
        return self.X.shape[0]

    def pre(self, Wt: Array) -> Array:
        d, R, p = Wt.shape
        return _mm(self.X, Wt.reshape(d, R * p)).reshape(self.X.shape[0], R, p)

    def post(self, G: Array) -> Array:
        n, R, p = G.shape
        return _mm(self.Xt, G.reshape(n, R * p)).reshape(self.Xt.shape[0], R, p)

    def labels(self, y: Array) -> Array:
        """Labels (n,) as (n, 1): they broadcast over runs."""
        return y[:, None]

    def take_runs(self, idx: Array) -> SharedInputs:
        """The inputs of runs ``idx`` (shared: the same)."""
        return self


class PerRunInputs(NamedTuple):
    """A dataset per run, X (R, n, d) (labels (R, n))."""

    X: Array

    @property
    def n(self) -> int:
        return self.X.shape[1]

    def pre(self, Wt: Array) -> Array:
        return jnp.einsum("rnd,drp->nrp", self.X, Wt)

    def post(self, G: Array) -> Array:
        return jnp.einsum("rnd,nrp->drp", self.X, G)

    def labels(self, y: Array) -> Array:
        return y.T

    def take_runs(self, idx: Array) -> PerRunInputs:
        return PerRunInputs(self.X[idx])


class DiagonalInputs(NamedTuple):
    """Orthogonal inputs in their own orthonormal basis: x_i = s_i e_i, s of shape (n, 1) shared
    or (n, R) per run; the hidden weights are then (n, R, p) coordinates in that basis."""

    s: Array

    @property
    def n(self) -> int:
        return self.s.shape[0]

    def pre(self, Wt: Array) -> Array:
        return self.s[:, :, None] * Wt

    def post(self, G: Array) -> Array:
        return self.s[:, :, None] * G

    def labels(self, y: Array) -> Array:
        return y[:, None] if y.ndim == 1 else y.T

    @property
    def per_run(self) -> bool:
        """True when every run has its own norms (s of shape (n, R), R > 1)."""
        return self.s.shape[1] > 1

    def take_runs(self, idx: Array) -> DiagonalInputs:
        return DiagonalInputs(self.s[:, idx]) if self.per_run else self


Inputs = SharedInputs | PerRunInputs | DiagonalInputs
