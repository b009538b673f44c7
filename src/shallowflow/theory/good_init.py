"""Good initialisation: DPB Lemma 5 and the experiments' neuron count (docs/math.md §1.4(5)).

The event I: every data point has a neuron that is active on it and whose output weight has the
sign of its label,

    I = { for all i there is j with <w_j(0), x_i> > 0 and a_j(0) y_i > 0 }.

Lemma 5 (DPB eq.17): P(I) >= 1 - n (3/4)^p for neurons with symmetric laws (orthogonal data, or
any data when the signs of <w_j, x_i> are fair coins). The experiments take the smallest width with
n (3/4)^p < eps, p(n, eps) = floor(log(n/eps)/log(4/3)) + 1.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from shallowflow.theory.activation_mask import fit_mask
from shallowflow.theory.pl_bounds import active

__all__ = ["good_init_event", "lemma5_bound", "neurons_for"]


def lemma5_bound(n: int | np.ndarray, p: int | np.ndarray) -> np.ndarray | float:
    """Lower bound on the probability of a good initialisation, DPB Lemma 5 (docs/math.md §1.4(5)).

        P(I) >= 1 - n (3/4)^p

    Parameters
    ----------
    n : int or array
        Number of samples.
    p : int or array
        Number of neurons.

    Returns
    -------
    float or array
        1 - n (3/4)^p (may be negative, i.e. vacuous, for small p).
    """
    out = 1.0 - np.asarray(n, dtype=np.float64) * 0.75 ** np.asarray(p, dtype=np.float64)
    return float(out) if np.ndim(out) == 0 else out


def neurons_for(n: int, eps: float = 0.05) -> int:
    """Neuron count of DPB's experiments, p(n, eps) (docs/math.md §1.4(5); DPB App. B, utils.nb_neurons).

        p(n, eps) = floor(log(n/eps) / log(4/3)) + 1

    This is the smallest integer p with n (3/4)^p < eps, i.e. with Lemma 5's bound above 1 - eps.
    The float formula is corrected by an exact rational comparison where rounding would make it
    miss that definition (when n/eps is within rounding of a power of 4/3).

    Parameters
    ----------
    n : int
        Number of samples (>= 1).
    eps : float, default 0.05
        Allowed failure probability, in (0, 1).

    Returns
    -------
    int
        The width p.
    """
    if n < 1:
        raise ValueError(f"n: must be >= 1, got {n}")
    if not 0 < eps < 1:
        raise ValueError(f"eps: must be in (0, 1), got {eps}")
    p = math.floor(math.log(n / eps) / math.log(4 / 3)) + 1
    e, three_quarters = Fraction(eps), Fraction(3, 4)
    while p > 0 and n * three_quarters ** (p - 1) < e:
        p -= 1
    while not n * three_quarters**p < e:
        p += 1
    return p


def good_init_event(a: np.ndarray, W: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray | bool:
    """The event I of DPB Lemma 5 for one network or a batch (docs/math.md §1.4(5)).

        I = for all i, there is j with <w_j, x_i> > 0 and a_j y_i > 0

    (the authors' ``is_well_init``): every row of the mask M_ij = 1{<w_j, x_i> > 0} 1{a_j y_i > 0}
    (:func:`shallowflow.theory.activation_mask.fit_mask`) has a one.

    Parameters
    ----------
    a : (..., p) array
        Output weights.
    W : (..., p, d) array
        Hidden weights, one neuron per row.
    X : (n, d) or (..., n, d) array
        Inputs, one point per row.
    y : (n,) or (..., n) array
        Labels.

    Returns
    -------
    bool or bool array of shape (...)
        Whether I holds for each network.
    """
    a, y = (np.asarray(v, dtype=np.float64) for v in (a, y))
    M = fit_mask(np.swapaxes(active(W, X), -1, -2), a, y)  # (..., n, p)
    out = np.all(np.any(M, axis=-1), axis=-1)
    return bool(out) if out.ndim == 0 else out
