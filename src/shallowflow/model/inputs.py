"""How the data enters the two contractions of a batched gradient step (docs/math.md §0.3).

The engine keeps the hidden weights of all R runs side by side, ``Wt`` of shape (d, R, p)
(Wt[:, r, j] = w_j of run r), so both contractions of a step are single GEMMs over all runs:

    Z[i, r, j] = <w_j^(r), x_i^(r)>                  pre-activations     (n, R, p)
    M[:, r, j] = sum_i G[i, r, j] x_i^(r)            back-projection     (d, R, p)

An ``Inputs`` object implements these two maps for one data layout, and says in which order it
keeps sample-space arrays (Z, the activity pattern, outputs, labels): ``sample_axis`` is the
position of the sample axis in per-run arrays such as the outputs (0: the canonical (n, R), 1:
(R, n)) and ``neuron_axis`` that of the neurons in Z-shaped arrays (2: (n, R, p) or (R, n, p);
1: (R, p, n)). ``native`` and ``canonical`` convert between the native and canonical orders.

- :class:`SharedInputs`: one dataset for every run, X (n, d). Z = X @ Wt, M = X^T @ G.
- :class:`PerRunInputs`: a dataset per run, X (R, n, d): batched contractions, in the
  run-major order (R, n, p) that batched GEMMs produce and consume (the canonical order would add
  transposes of the (n, R, p) arrays every step: 1.6x slower at DPB's Fig. 3 shapes,
  bench/NOTES.md).
- :class:`RunInputs`: one run's own data, X (1, n, d) with X^T kept beside it, neuron-major
  (1, p, n): both products are plain row-major GEMMs (W X^T and G^T X). The blocked per-run path
  advances blocks of one run in this layout (:mod:`shallowflow.dynamics.compilation`).
- :class:`DiagonalInputs`: orthogonal data written in its own orthonormal basis, X = diag(s):
  Z = s * Wt and M = s * G, O(n R p) work instead of O(n d R p) (docs/math.md §0.3 fast path).
- :class:`OneDimInputs`: one input coordinate and a bias, x_i = (x_i, 1), kept sorted: a neuron's
  active set is then a prefix or a suffix of the sorted data, and a step needs no (n, R, p) array
  at all (:mod:`shallowflow.model.onedim`, docs/math.md §10): O((n + p) log n) per run instead of O(n p).
- :class:`PopulationInputs`: no samples at all: x ~ N(0, L L^T) labelled by a teacher network,
  the expectations in closed form (:mod:`shallowflow.model.population`, docs/math.md §11),
  O((p + k)^2 d) per run; its sample-space arrays have n = 0 samples.

Contractions over an inner dimension of at most 4 (1-D data with a bias, three points) are
unrolled into elementwise products: XLA's GEMM for such shapes is far slower than the arithmetic.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
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


def _row_major(x: Array) -> Array:
    """``x`` as computed: XLA may not fold a transpose of it into the neighbouring product (it
    would turn W^T X^T into a product with a transposed operand, which XLA:CPU computes in its
    own, slower loop instead of its GEMM library)."""
    return jax.lax.optimization_barrier(x)


def _same(x: Array) -> Array:
    """The layout conversion of inputs whose native order is the canonical (n, R, ...)."""
    return x


class SharedInputs(NamedTuple):
    """One dataset X (n, d) shared by all runs (``Xt`` = X^T, kept to avoid a per-step copy)."""

    X: Array
    Xt: Array

    @classmethod
    def of(cls, X: Array | np.ndarray) -> SharedInputs:
        """From X (n, d); host data is transposed on the host and copied to the device (no
        compiled program: ``jnp.asarray`` and ``.T`` of a new shape each compile one)."""
        if isinstance(X, np.ndarray):
            return cls(jax.device_put(X), jax.device_put(np.ascontiguousarray(X.T)))
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
    neuron_axis = 2
    native = canonical = staticmethod(_same)

    def take_runs(self, idx: Array) -> SharedInputs:
        """The inputs of runs ``idx`` (shared: the same)."""
        return self

    per_run = False


class PerRunInputs(NamedTuple):
    """A dataset per run, X (R, n, d) (labels (R, n)). ``Xt`` = X^T per run (R, d, n), where
    blocks of one run read it (:class:`RunInputs`; made once per shard of a batch by
    :func:`~shallowflow.dynamics.compilation.prepared`, not in every segment); None elsewhere."""

    X: Array
    Xt: Array | None = None

    @property
    def n(self) -> int:
        return self.X.shape[1]

    def pre(self, Wt: Array) -> Array:
        """Z in run-major order (R, n, p); one run's is a plain 2-D product (XLA:CPU runs a
        batched product with a batch of one up to 2x slower in float32)."""
        if self.X.shape[0] == 1:
            return (self.X[0] @ Wt[:, 0, :])[None]
        return jnp.einsum("rnd,drp->rnp", self.X, Wt)

    def post(self, G: Array) -> Array:
        """M (d, R, p) from G in run-major order (R, n, p)."""
        if self.X.shape[0] == 1:
            return (self.X[0].T @ G[0])[:, None, :]
        return jnp.einsum("rnd,rnp->drp", self.X, G)

    def labels(self, y: Array) -> Array:
        """Labels (R, n), already run-major."""
        return y

    sample_axis = 1
    neuron_axis = 2

    @staticmethod
    def native(x: Array) -> Array:
        """(n, R, ...) -> (R, n, ...)."""
        return jnp.swapaxes(x, 0, 1)

    canonical = native  # the swap is its own inverse

    def take_runs(self, idx: Array) -> PerRunInputs:
        return PerRunInputs(self.X[idx], None if self.Xt is None else self.Xt[idx])

    per_run = True

    def blocks(self, nb: int, block: int) -> PerRunInputs | RunInputs:
        """The inputs of ``nb`` blocks of ``block`` consecutive runs, blocks first (for
        ``lax.map``): X (nb, block, n, d); blocks of one run as :class:`RunInputs` (X (nb, n,
        d), Xt (nb, d, n))."""
        if block > 1:
            return PerRunInputs(self.X.reshape(nb, block, *self.X.shape[1:]))
        # one run a block: X (nb, n, d), no axis of length one (whose layout XLA may order
        # differently from the loop's, copying the whole data in every segment)
        Xt = _row_major(jnp.swapaxes(self.X, 1, 2)) if self.Xt is None else self.Xt
        return RunInputs(self.X, Xt)


class RunInputs(NamedTuple):
    """One run's own data, X (n, d) (labels (1, n)), and ``Xt`` = X^T (d, n).

    Sample-space arrays are neuron-major, Z (1, p, n): the forward product is W X^T and the
    back-projection G^T X, both plain row-major GEMMs, which XLA:CPU hands to its GEMM library
    (a product with a transposed operand runs in XLA's own loop; in PerRunInputs' (n, p) order
    the step of DPB's Fig. 3 shape took 1.17x longer in float64, 1.19x in float32,
    bench/NOTES.md). Used for blocks of one run (``Xt`` made once per shard, see
    :class:`PerRunInputs`): batched products were faster in PerRunInputs' order."""

    X: Array
    Xt: Array

    @property
    def n(self) -> int:
        return self.X.shape[0]

    def pre(self, Wt: Array) -> Array:
        """Z (1, p, n) = W X^T."""
        return (_row_major(Wt[:, 0, :].T) @ self.Xt)[None]

    def post(self, G: Array) -> Array:
        """M (d, 1, p) from G (1, p, n): (G X)^T."""
        return _row_major(G[0] @ self.X).T[:, None, :]

    def labels(self, y: Array) -> Array:
        """Labels (1, n), already run-major."""
        return y

    sample_axis = 1
    neuron_axis = 1

    @staticmethod
    def native(x: Array) -> Array:
        """(n, 1) -> (1, n); (n, 1, p) -> (1, p, n)."""
        return jnp.swapaxes(x, 0, 1) if x.ndim == 2 else jnp.transpose(x, (1, 2, 0))

    @staticmethod
    def canonical(x: Array) -> Array:
        """(1, n) -> (n, 1); (1, p, n) -> (n, 1, p)."""
        return jnp.swapaxes(x, 0, 1) if x.ndim == 2 else jnp.transpose(x, (2, 0, 1))

    per_run = True


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
    neuron_axis = 2
    native = canonical = staticmethod(_same)

    @property
    def per_run(self) -> bool:
        """True when every run has its own norms (s of shape (n, R), R > 1)."""
        return self.s.shape[1] > 1

    def take_runs(self, idx: Array) -> DiagonalInputs:
        return DiagonalInputs(self.s[:, idx]) if self.per_run else self

    def blocks(self, nb: int, block: int) -> DiagonalInputs:
        """Per-run norms of ``nb`` blocks of ``block`` consecutive runs, blocks first: s (nb, n,
        block)."""
        return DiagonalInputs(jnp.moveaxis(self.s.reshape(self.n, nb, block), 1, 0))


ONEDIM_CELLS = 32
"""Grid cells per data point of :class:`OneDimInputs`' first guess of a neuron's cut."""
ONEDIM_MAX_CELLS = 1 << 16
ONEDIM_MARGIN = 0.25
"""Cells on either side of a kink's cell whose points its search window holds (docs/math.md §10)."""


class OneDimInputs(NamedTuple):
    """Inputs (x_i, 1) with one coordinate and a bias, for the exact bucketed step of
    :mod:`shallowflow.model.onedim` (docs/math.md §10). ``X`` is the data as given, (n, 2) shared or
    (R, n, 2) per run (its last column exactly 1); ``xs`` (Rd, n) the sorted x (Rd = 1 shared, R per
    run), ``order`` (Rd, n) the sorting permutation (xs[r, k] = x[order[r, k]]) and ``rank`` its
    inverse. Sample-space arrays of the gradient (Z, the activity, the outputs) are returned in the
    canonical order (n, R, ...) and the original sample order; the labels are read sorted.

    The search for a neuron's cut starts from a uniform grid over the data: a kink c falls in
    cell floor((c - ``x0``) ``inv_h``) (clipped to -1..G), and row g + 1 of ``window`` holds the
    first sorted index L of the window of 2^K points searched for it, the points just outside the
    window, x_{L-1} and x_{L+2^K} (-inf, +inf past the ends), which verify it, and the window's
    2^K points x_L .. x_{L+2^K-1} (+inf past the end). ``pad`` is xs followed by 2^K + 1 copies
    of +inf; K, the same for every cell, is read off ``window``'s shape."""

    X: Array
    xs: Array
    order: Array
    rank: Array
    pad: Array
    x0: Array
    inv_h: Array
    window: Array

    @classmethod
    def of(cls, X: Array) -> OneDimInputs:
        """Sort the data X (n, 2) or (R, n, 2); ValueError unless its last column is exactly 1."""
        X = jnp.asarray(X)
        if X.ndim not in (2, 3) or X.shape[-1] != 2:
            raise ValueError(f"onedim: needs inputs (x_i, 1) of shape (n, 2) or (R, n, 2), got "
                             f"shape {X.shape}")
        Xn = np.asarray(X)
        if not np.all(Xn[..., 1] == 1):
            raise ValueError("onedim: needs inputs (x_i, 1): the last input column (the bias) must "
                             "be exactly 1")
        x = Xn[..., 0].reshape(-1, Xn.shape[-2])  # (Rd, n)
        if not np.all(np.isfinite(x)):
            raise ValueError("onedim: the inputs must be finite")
        order = np.argsort(x, axis=1, kind="stable")
        xs = np.take_along_axis(x, order, axis=1)
        grids = [_grid(row) for row in xs.astype(np.float64)]
        K = max(g[3] for g in grids)
        size = 1 << K
        x0 = np.array([[g[0]] for g in grids])
        inv_h = np.array([[g[1]] for g in grids])
        window = np.stack([_window(row, g[2], size) for row, g in zip(xs, grids, strict=True)])
        pad = np.concatenate([xs, np.full((xs.shape[0], size + 1), np.inf, xs.dtype)], axis=1)
        dt = X.dtype
        return cls(X, jnp.asarray(xs, dt), jnp.asarray(order, jnp.int32),
                   jnp.asarray(np.argsort(order, axis=1), jnp.int32), jnp.asarray(pad, dt),
                   jnp.asarray(x0, dt), jnp.asarray(inv_h, dt), jnp.asarray(window, dt))

    @property
    def n(self) -> int:
        return self.xs.shape[1]

    @property
    def levels(self) -> int:
        """K: the search window is 2^K points."""
        return (self.window.shape[2] - 3).bit_length() - 1

    @property
    def per_run(self) -> bool:
        """True when every run has its own data (X of shape (R, n, 2))."""
        return self.X.ndim == 3

    def labels(self, y: Array) -> Array:
        """Labels (n,) shared or (R, n) per run, in sorted order: (Rd, n)."""
        if y.ndim == 1:
            return y[self.order]
        if self.order.shape[0] == 1:
            return y[:, self.order[0]]
        return jnp.take_along_axis(y, self.order, axis=1)

    sample_axis = 0
    neuron_axis = 2
    native = canonical = staticmethod(_same)

    def take_runs(self, idx: Array) -> OneDimInputs:
        if not self.per_run:
            return self
        return OneDimInputs(*(v[idx] for v in self))


def _grid(xs: np.ndarray) -> tuple[float, float, np.ndarray, int]:
    """The uniform grid of sorted data xs (n,) (float64): x0, 1/h, the windows' first indices
    (G + 2,) for the cells -1..G, and K (the windows hold at most 2^K points). A kink in cell g
    lies in [x0 + g h, x0 + (g + 1) h); its window holds the points within ``ONEDIM_MARGIN``
    cells of that, so that rounding of the kink and of its cell index stays inside (the step
    verifies it anyway)."""
    n = len(xs)
    G = min(ONEDIM_MAX_CELLS, ONEDIM_CELLS * n)
    span = float(xs[-1] - xs[0])
    h = span / G if span > 0 else 1.0
    g = np.arange(-1, G + 1)
    lo = np.searchsorted(xs, xs[0] + h * (g - ONEDIM_MARGIN), side="left")
    hi = np.searchsorted(xs, xs[0] + h * (g + 1 + ONEDIM_MARGIN), side="right")
    lo[g <= 0] = 0
    hi[g >= G - 1] = n
    K = int(np.ceil(np.log2(max(int(np.max(hi - lo)), 1))))
    return float(xs[0]), 1.0 / h, lo, K


def _window(xs: np.ndarray, lo: np.ndarray, size: int) -> np.ndarray:
    """Rows (L, x_{L-1}, x_{L+size}, x_L, ..., x_{L+size-1}) of the windows starting at ``lo``
    (-inf/+inf past the ends of the sorted data xs)."""
    ext = np.concatenate([[-np.inf], xs, np.full(size + 1, np.inf)])  # ext[i + 1] = xs[i]
    inside = ext[lo[:, None] + 1 + np.arange(size)]
    return np.concatenate([np.stack([lo.astype(np.float64), ext[lo], ext[lo + size + 1]], axis=1),
                           inside], axis=1)


class PopulationInputs(NamedTuple):
    """The population: inputs x ~ N(0, L L^T), labelled by the teacher h*(x) = sum_k b_k
    sigma(<v_k, x>) (docs/math.md §11); ``b`` (k,), ``V`` (k, d), ``chol`` L (d, d) or None for
    the identity. Every run trains on the same population. There is no sample: ``n`` is 0, the
    labels are an empty array, and the gradient path is
    :func:`shallowflow.model.population.batch_loss_and_gradient` (the dense products ``pre`` and
    ``post`` do not exist)."""

    b: Array
    V: Array
    chol: Array | None = None

    n = 0
    sample_axis = 0
    neuron_axis = 2
    native = canonical = staticmethod(_same)
    per_run = False

    def labels(self, y: Array) -> Array:
        """The (empty) labels (0,) as (0, 1)."""
        return y[:, None]

    def take_runs(self, idx: Array) -> PopulationInputs:
        """The inputs of runs ``idx`` (one population: the same)."""
        return self


Inputs = SharedInputs | PerRunInputs | RunInputs | DiagonalInputs | OneDimInputs | PopulationInputs
