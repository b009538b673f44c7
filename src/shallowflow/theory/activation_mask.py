"""The mask matrix of the limit saddle-to-saddle process and Assumption 4 (docs/math.md §3.3, §3.5).

For orthonormal inputs x_i (rows of X), labels y_i, output signs s_j and initial directions
w̄_j(0) (rows of ``directions``), the mask M ∈ {0, 1}^{n×m} is

    M_ij = 1{<w̄_j(0), x_i> > 0} · 1{s_j y_i > 0}                     (docs/math.md §3.3)

so column j lists A_j, the points neuron j activates with the right sign. Assumption 4 asks:
(i) no zero row (every point can be fitted), no zero column (every neuron can grow), pairwise
distinct columns; (ii) non-zero labels and a unique argmin at every step of Algorithm 1.
:func:`check_assumption4` reports each violation; the argmin part is filled in by the process
(:mod:`shallowflow.theory.saddle_process`). Proposition 2(i) bounds the probability of (i) under
the random balanced initialisation of Assumption 3 (:func:`assumption4_probability_bound`).

``X = None`` stands for the identity (x_i = e_i, d = n): the mask is then read off the
directions' first n coordinates without forming X.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

ORTHONORMAL_ATOL = 1e-8
_EXACT_CHECK_FLOPS = 5e8  # above this n^2 d, orthonormality is checked with random probes


# ------------------------------------------------------------------------------- validation
def as_finite(name: str, value: object, ndim: int) -> np.ndarray:
    """``value`` as a float64 array of ``ndim`` dimensions with finite entries (else ValueError)."""
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != ndim:
        raise ValueError(f"{name}: must be a {ndim}-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"{name}: entries must be finite, got {arr[tuple(bad)]} at index "
                         f"{tuple(int(b) for b in bad)}")
    return arr


def check_orthonormal(X: object, atol: float = ORTHONORMAL_ATOL, name: str = "X") -> np.ndarray:
    """X (n, d) as float64, after checking X X^T = I_n to ``atol`` (docs/math.md §3.1, Assumption 1).

    Small problems are checked exactly; when n^2 d exceeds ~5e8 the check uses 8 random probe
    vectors v (X X^T v = v for all v iff X X^T = I; a deviation escapes a random probe with
    probability 0). Raises ValueError naming ``name`` with the largest deviation found.
    """
    X = as_finite(name, X, 2)
    n, d = X.shape
    if n > d:
        raise ValueError(f"{name}: {n} orthonormal rows need n <= d, got shape {X.shape}")
    if n * n * d <= _EXACT_CHECK_FLOPS:
        err = float(np.max(np.abs(X @ X.T - np.eye(n)), initial=0.0))
    else:
        V = np.random.default_rng(0).standard_normal((n, 8))
        err = float(np.max(np.abs(X @ (X.T @ V) - V)) / np.max(np.abs(V)))
    if not err <= atol:
        raise ValueError(f"{name}: rows must be orthonormal (X X^T = I within {atol:g}), got "
                         f"max |X X^T - I| = {err:.3g}; Algorithm 1 needs orthonormal data "
                         "(docs/math.md §3.1)")
    return X


def check_signs(signs: object, name: str = "signs") -> np.ndarray:
    """Output signs s_j ∈ {-1, +1} as a float64 (m,) array (else ValueError)."""
    s = as_finite(name, signs, 1)
    bad = np.flatnonzero(np.abs(s) != 1.0)
    if bad.size:
        raise ValueError(f"{name}: entries must be +1 or -1, got {s[bad[0]]} at index {bad[0]}")
    return s


def check_directions(directions: object, m: int, d: int, name: str = "directions") -> np.ndarray:
    """Initial directions (m, d) normalised to unit rows (they must be finite and non-zero)."""
    W = as_finite(name, directions, 2)
    if W.shape != (m, d):
        raise ValueError(f"{name}: must have shape (m, d) = ({m}, {d}), got {W.shape}")
    return unit_rows(W, name)


def unit_rows(W: np.ndarray, name: str) -> np.ndarray:
    """Rows of W scaled to unit norm, safely for tiny rows (1e-200: the squares underflow)."""
    peak = np.max(np.abs(W), axis=1, initial=0.0)
    zero = np.flatnonzero(peak == 0)
    if zero.size:
        raise ValueError(f"{name}: rows must be non-zero (a direction is needed), row "
                         f"{zero[0]} is zero")
    W = W / peak[:, None]
    return W / np.linalg.norm(W, axis=1, keepdims=True)


def check_labels(y: object, n: int | None = None, name: str = "y") -> np.ndarray:
    """Labels (n,) as float64, finite (zero labels are allowed here and flagged by Assumption 4)."""
    y = as_finite(name, y, 1)
    if n is not None and y.shape[0] != n:
        raise ValueError(f"{name}: must have one label per row of X (n = {n}), got {y.shape[0]}")
    return y


def check_inputs(X: object | None, n: int, check: bool = True) -> np.ndarray | None:
    """X (n, d) as float64 with orthonormal rows (``check=False``: only finite), one row per label;
    None (the identity) passes through."""
    if X is None:
        return None
    X = check_orthonormal(X) if check else as_finite("X", X, 2)
    if X.shape[0] != n:
        raise ValueError(f"X: must have one row per label (n = {n}), got shape {X.shape}")
    return X


# ------------------------------------------------------------------------------------- mask
def fit_mask(active: np.ndarray, signs: np.ndarray, y: np.ndarray) -> np.ndarray:
    """M_ij = active_ij 1{s_j y_i > 0} with active_ij = 1{<w_j, x_i> > 0}: (..., n, m) bool from
    active (..., n, m), signs (..., m) and y (..., n). Point i can be fitted by neuron j (docs/math.md
    §3.3; DPB Lemma 5's event I is "every row has a one", s_j = a_j); zero signs or labels never
    count."""
    return active & (y[..., :, None] * signs[..., None, :] > 0)


def activation_mask(X: object | None, y: object, signs: object, directions: object,
                    check: bool = True) -> np.ndarray:
    """M (n, m) bool with M_ij = 1{<w̄_j, x_i> > 0} 1{s_j y_i > 0} (docs/math.md §3.3).

    X (n, d) orthonormal rows, or None for the identity (d = n, no matrix formed); y (n,);
    signs (m,) in {±1}; directions (m, d), any non-zero scale. ``check=False`` skips the
    orthonormality check (the caller has done it).
    """
    y = check_labels(y)
    s = check_signs(signs)
    X = check_inputs(X, y.shape[0], check)
    if X is None:
        Wbar = check_directions(directions, s.shape[0], y.shape[0])
        pre = Wbar.T  # <w̄_j, e_i> = w̄_j[i]
    else:
        Wbar = check_directions(directions, s.shape[0], X.shape[1])
        pre = X @ Wbar.T
    return fit_mask(pre > 0, s, y)


# ------------------------------------------------------------------------------- Assumption 4
@dataclass(frozen=True)
class Assumption4Report:
    """Violations of Assumption 4 (docs/math.md §3.3). Indices are 0-based.

    zero_rows: points no neuron can fit (4(i)); zero_columns: neurons that cannot grow (4(i));
    duplicate_groups: groups (>= 2) of neurons with identical non-zero columns (4(i); they grow as
    one rank-1 group, Algorithm 1 then lets the lowest index fit); zero_labels: 4(ii);
    argmin_unique: None until Algorithm 1 has run, then whether every argmin of line 8 was unique
    up to the relative tolerance; tied_jumps: the jumps k (1-based) at which it was not.
    """

    n: int
    m: int
    zero_rows: np.ndarray
    zero_columns: np.ndarray
    duplicate_groups: tuple[np.ndarray, ...]
    zero_labels: np.ndarray
    argmin_unique: bool | None = None
    tied_jumps: tuple[int, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """True when no violation was found (the argmin part counts once it is known)."""
        return (self.zero_rows.size == 0 and self.zero_columns.size == 0
                and not self.duplicate_groups and self.zero_labels.size == 0
                and self.argmin_unique is not False)

    def __str__(self) -> str:
        def show(idx: np.ndarray) -> str:
            head = ", ".join(str(int(i)) for i in idx[:10])
            return f"{idx.size} ({head}{', ...' if idx.size > 10 else ''})"

        lines = [f"Assumption 4 (docs/math.md §3.3), n = {self.n} points, m = {self.m} neurons: "
                 f"{'OK' if self.ok else 'VIOLATED'}"]
        lines.append(f"  (i)  zero rows (unfittable points): {show(self.zero_rows)}")
        lines.append(f"  (i)  zero columns (neurons that cannot grow): {show(self.zero_columns)}")
        groups = "; ".join("{" + ", ".join(str(int(j)) for j in g) + "}"
                           for g in self.duplicate_groups[:5])
        more = "; ..." if len(self.duplicate_groups) > 5 else ""
        lines.append(f"  (i)  groups of identical columns: {len(self.duplicate_groups)}"
                     + (f" ({groups}{more})" if groups else ""))
        lines.append(f"  (ii) zero labels: {show(self.zero_labels)}")
        if self.argmin_unique is None:
            lines.append("  (ii) unique argmin: not checked (run Algorithm 1)")
        else:
            ties = ", ".join(str(k) for k in self.tied_jumps)
            lines.append(f"  (ii) unique argmin at every jump: {self.argmin_unique}"
                         + (f" (ties at jumps {ties})" if ties else ""))
        return "\n".join(lines)


def check_assumption4(mask: np.ndarray, y: object) -> Assumption4Report:
    """Assumption 4 checks on a mask (n, m) and labels y (n,) (the argmin part stays unknown)."""
    M = np.asarray(mask, dtype=bool)
    if M.ndim != 2:
        raise ValueError(f"mask: must be a 2-D (n, m) array, got shape {M.shape}")
    y = check_labels(y, M.shape[0])
    zero_rows = np.flatnonzero(~M.any(axis=1))
    nonzero_col = M.any(axis=0)
    zero_columns = np.flatnonzero(~nonzero_col)
    groups: tuple[np.ndarray, ...] = ()
    live = np.flatnonzero(nonzero_col)
    if live.size > 1:
        packed = np.ascontiguousarray(np.packbits(M[:, live], axis=0).T)  # (live, n/8) bytes
        keys = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
        _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
        inverse = inverse.ravel()
        groups = tuple(live[inverse == g] for g in np.flatnonzero(counts > 1))
        groups = tuple(sorted(groups, key=lambda g: int(g[0])))
    return Assumption4Report(M.shape[0], M.shape[1], zero_rows, zero_columns, groups,
                             np.flatnonzero(y == 0))


# ------------------------------------------------------------------------------ Proposition 2
def minority_count(y: object) -> int:
    """n_min = min(|I_+|, |I_-|), the size of the smaller label class (docs/math.md §3.5)."""
    y = check_labels(y)
    return int(min(np.sum(y > 0), np.sum(y < 0)))


def assumption4_probability_bound(n: int, m: int, n_min: int) -> float:
    """Proposition 2(i) (docs/math.md §3.5): under Assumption 3, Assumption 4(i) holds with probability
    at least 1 - n (3/4)^m - m 2^{-n_min} - (m(m-1)/4) 2^{-n_min} (may be negative: vacuous).

    Terms: a row is zero with probability (3/4)^m; a column with at most 2^{-|I_{s_j}|}; a pair of
    equal non-zero columns with at most 2^{-n_min}/2.
    """
    for name, v in (("n", n), ("m", m), ("n_min", n_min)):
        if int(v) != v or v < 0:
            raise ValueError(f"{name}: must be a non-negative integer, got {v!r}")
    tail = 2.0 ** (-float(n_min))
    return float(1.0 - n * 0.75**m - m * tail - m * (m - 1) / 4.0 * tail)
