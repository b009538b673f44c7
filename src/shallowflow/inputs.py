"""How the data enters the two contractions of a batched gradient step (docs/math.md §0.3).

The engine keeps the hidden weights of all R runs side by side, ``Wt`` of shape (d, R, p)
(Wt[:, r, j] = w_j of run r), so both contractions of a step are single GEMMs over all runs:

    Z[i, r, j] = <w_j^(r), x_i^(r)>                  pre-activations     (n, R, p)
    M[:, r, j] = sum_i G[i, r, j] x_i^(r)            back-projection     (d, R, p)

An ``Inputs`` object implements these two maps for one data layout, and says in which order it
keeps sample-space arrays (Z, the activity pattern, outputs, labels): ``sample_axis`` 0 is the
canonical (n, R, ...) order, 1 is (R, n, ...). ``native`` and ``canonical`` convert between the two.

- :class:`SharedInputs`: one dataset for every run, X (n, d). Z = X @ Wt, M = X^T @ G.
- :class:`PerRunInputs`: a dataset per run, X (R, n, d): batched contractions, in the
  run-major order (R, n, p) that batched GEMMs produce and consume (the canonical order would add
  transposes of the (n, R, p) arrays every step: 1.6x slower at DPB's Fig. 3 shapes,
  bench/NOTES.md).
- :class:`DiagonalInputs`: orthogonal data written in its own orthonormal basis, X = diag(s):
  Z = s * Wt and M = s * G, O(n R p) work instead of O(n d R p) (docs/math.md §0.3 fast path).

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


def _same(x: Array) -> Array:
    """The layout conversion of inputs whose native order is the canonical (n, R, ...)."""
    return x


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

    sample_axis = 0
    native = canonical = staticmethod(_same)

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
        """Z in run-major order (R, n, p)."""
        return jnp.einsum("rnd,drp->rnp", self.X, Wt)

    def post(self, G: Array) -> Array:
        """M (d, R, p) from G in run-major order (R, n, p)."""
        return jnp.einsum("rnd,rnp->drp", self.X, G)

    def labels(self, y: Array) -> Array:
        """Labels (R, n), already run-major."""
        return y

    sample_axis = 1

    @staticmethod
    def native(x: Array) -> Array:
        """(n, R, ...) -> (R, n, ...)."""
        return jnp.swapaxes(x, 0, 1)

    canonical = native  # the swap is its own inverse

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

    sample_axis = 0
    native = canonical = staticmethod(_same)

    @property
    def per_run(self) -> bool:
        """True when every run has its own norms (s of shape (n, R), R > 1)."""
        return self.s.shape[1] > 1

    def take_runs(self, idx: Array) -> DiagonalInputs:
        return DiagonalInputs(self.s[:, idx]) if self.per_run else self


Inputs = SharedInputs | PerRunInputs | DiagonalInputs
