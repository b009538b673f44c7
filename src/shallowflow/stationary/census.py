"""End points up to symmetry: a canonical form of a network under the permutations that leave
the population loss unchanged, classes of end points and the census table (docs/math.md §11.8).

The loss of a student against a teacher is unchanged when the student's neurons are permuted;
for the orthonormal teacher (v_i = e_i, b_i = 1) it is also unchanged when the first k input
coordinates are permuted, since that permutes the teacher's neurons among themselves. The
canonical form picks one representative of the orbit:

* ``neurons``: the rows r_j = (a_j, w_j) sorted by <r_j, g> for a fixed generic vector g
  (:data:`GENERIC_SEED`): rows with equal keys are equal (up to rounding), so their order does
  not matter;
* ``neurons and coordinates`` (the orthonormal teacher, k <= d): a maximum-weight matching of
  rows to the k teacher coordinates (``scipy.optimize.linear_sum_assignment`` on W[:, :k], ties
  broken by :data:`TIE_BREAK`) puts each matched row's coordinate on the diagonal; the matched
  pairs are then ordered by one generic combination (:data:`KEY_WEIGHTS`) of the diagonal entry,
  the sum of the row's other entries and the sum of the column's other entries, and the rows and
  columns permuted together; unmatched rows (n > k) follow, ordered as in ``neurons``. Pairs
  whose keys tie are equivalent under a symmetry of the point itself, so their order does not
  matter either.

Two end points are **the same minimum** when their canonical forms differ by at most
:data:`CLASS_TOL` in every entry (absolute): runs stopped at ||grad L|| <= 1e-12 lie within
about 1e-12 / eig_min of their critical point, far below it, while distinct minima of the
Safran-Shamir objective differ by 1e-2 or more. The canonical form is a heuristic for the
coordinate permutations (the exact problem is a graph isomorphism): near-ties of keys that are
not symmetric could split one minimum into two classes, never merge two.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

Symmetry = Literal["neurons", "neurons and coordinates"]
CLASS_TOL = 1e-6
"""Two canonical forms are one class when max |difference| <= CLASS_TOL (module docstring)."""
TIE_BREAK = 1e-6
"""Weight of the tie-break |w_i|^2 |column c|^2 added to the matching's weights W[i, c]: equal
matchings (a symmetric block) are told apart by these invariants of the rows and columns, above
the 1e-10 noise of a converged end point and below the 1e-2 gaps between distinct matchings."""
KEY_WEIGHTS = (0.1 * 2**0.5, 0.01 * 3**0.5)
"""The matched pairs are ordered by diag + w1 rest_row + w2 rest_col, one generic combination of
the three invariants: rounding moves it by 1e-16, so only pairs equal in all three (up to
rounding) can swap places (a lexicographic order would let rounding in one key decide)."""
GENERIC_SEED = 20210802
"""The seed of the fixed generic vector g that orders rows."""


def _generic(size: int) -> np.ndarray:
    return np.random.default_rng(GENERIC_SEED).uniform(1.0, 2.0, size)


def _row_order(R: np.ndarray) -> np.ndarray:
    return np.argsort(R @ _generic(R.shape[1]), kind="stable")


def canonical_form(W: np.ndarray, a: np.ndarray | None = None,
                   symmetry: Symmetry = "neurons", k: int | None = None) -> np.ndarray:
    """The canonical form (p, d) (or (p, d + 1) with the output weights ``a`` as a first
    column) of the network's rows W (p, d) under ``symmetry`` (module docstring); ``k``: the
    number of permutable coordinates (the orthonormal teacher's width, default d)."""
    W = np.asarray(W, np.float64)
    p, d = W.shape
    rows = W if a is None else np.column_stack([np.asarray(a, np.float64), W])
    lead = rows.shape[1] - d  # 1 when a is a column
    if symmetry == "neurons":
        return rows[_row_order(rows)]
    if symmetry != "neurons and coordinates":
        raise ValueError(f"symmetry: must be 'neurons' or 'neurons and coordinates', got "
                         f"{symmetry!r}")
    from scipy.optimize import linear_sum_assignment

    k = d if k is None else int(k)
    if not 1 <= k <= d:
        raise ValueError(f"k: must be in 1..{d}, got {k}")
    tie = np.outer(np.sum(W**2, axis=1), np.sum(W[:, :k] ** 2, axis=0))
    r, c = linear_sum_assignment(W[:, :k] + TIE_BREAK * tie, maximize=True)
    diag = W[r, c]
    rest_row = W[r, :k].sum(axis=1) - diag
    rest_col = W[:, c].sum(axis=0) - diag
    order = np.argsort(diag + KEY_WEIGHTS[0] * rest_row + KEY_WEIGHTS[1] * rest_col,
                       kind="stable")
    r, c = r[order], c[order]
    cols = np.concatenate([c, np.setdiff1d(np.arange(k), c), np.arange(k, d)])
    permuted = rows[:, np.concatenate([np.arange(lead), lead + cols])]
    others = np.setdiff1d(np.arange(p), r)
    others = others[_row_order(permuted[others])]
    return permuted[np.concatenate([r, others])]


def classes(forms: np.ndarray, tol: float = CLASS_TOL) -> np.ndarray:
    """Class labels (R,) of R canonical forms (R, p, m): run i joins the first class whose
    representative (its first run) is within ``tol`` in every entry, else opens a new one;
    labels count from 0 in order of first appearance."""
    forms = np.asarray(forms, np.float64)
    labels = np.empty(forms.shape[0], dtype=int)
    reps: list[np.ndarray] = []
    for i, f in enumerate(forms):
        for label, rep in enumerate(reps):
            if np.max(np.abs(f - rep)) <= tol:
                labels[i] = label
                break
        else:
            labels[i] = len(reps)
            reps.append(f)
    return labels


CENSUS_COLUMNS = ("runs", "converged", "loss", "eig_min", "multiplicity", "global",
                  "representative")
"""The census's columns (:func:`census`); a caller adds its own keys (k, n) in front."""


def census(forms: np.ndarray, loss: np.ndarray, eig_min: np.ndarray, converged: np.ndarray,
           global_: np.ndarray, tol: float = CLASS_TOL) -> tuple[pd.DataFrame, np.ndarray]:
    """One row per distinct end point of R runs (docs/math.md §11.8), and the row of each run
    (R,): the converged runs at a global minimum form one class (a manifold of global minima is
    one class), the other converged runs are classed by their canonical forms ``forms`` (R, p,
    m) (:func:`classes`), and the runs that did not converge form up to two classes of their
    own: those at a global minimum by their loss (``converged`` False, ``global`` True: stopped
    by a loss threshold, or nearing a degenerate global minimum too slowly) and the others
    (``converged`` False, ``global`` False). Columns :data:`CENSUS_COLUMNS`: ``runs`` (R),
    ``loss`` and ``eig_min`` of the class's first run (``representative``, its run index),
    ``multiplicity`` (runs in the class). Rows: global first, then spurious classes by loss,
    then the non-converged (global first)."""
    converged, global_ = np.asarray(converged, bool), np.asarray(global_, bool)
    R = len(converged)
    groups: list[tuple[np.ndarray, bool, bool]] = []
    glob = np.flatnonzero(converged & global_)
    if glob.size:
        groups.append((glob, True, True))
    spurious = np.flatnonzero(converged & ~global_)
    if spurious.size:
        labels = classes(np.asarray(forms)[spurious], tol)
        found = [spurious[labels == c] for c in range(labels.max() + 1)]
        groups += [(m, True, False) for m in sorted(found, key=lambda m: float(loss[m[0]]))]
    for is_global in (True, False):
        stuck = np.flatnonzero(~converged & (global_ == is_global))
        if stuck.size:
            groups.append((stuck, False, is_global))
    row_of_run = np.full(R, -1)
    rows = []
    for i, (members, conv, is_global) in enumerate(groups):
        row_of_run[members] = i
        first = int(members[0])
        rows.append({"runs": R, "converged": conv, "loss": float(loss[first]),
                     "eig_min": float(eig_min[first]), "multiplicity": int(members.size),
                     "global": is_global, "representative": first})
    return pd.DataFrame(rows, columns=list(CENSUS_COLUMNS)), row_of_run
