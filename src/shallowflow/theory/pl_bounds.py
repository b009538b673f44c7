"""Bounds on the local PL curvature of DPB (Lemma 7, Theorem 1) and the Experiment-2 measures.

Convention (docs/math.md §1.1, §1.4): h(x) = (1/p) sum_j a_j sigma(<w_j, x>), L = (1/(2n)) sum_i r_i^2,
flow dtheta/dt = -p grad L, so the local PL curvature is mu = p ||grad L||^2 / L = -(dL/dt)/L
(the ``pl_curvature`` probe with kappa = 1/p and time scale T = p). Indicators 1_{j,i} =
1{<w_j, x_i> > 0}. Arrays may carry leading batch axes: a (..., p), W (..., p, d), X (n, d) or
(..., n, d), y (n,) or (..., n); results then have shape (...).
"""

from __future__ import annotations

import math

import numpy as np

from shallowflow.theory.data_constants import DataConstants, data_constants

__all__ = [
    "active",
    "average_curvature",
    "experiment2_measures",
    "last_step_curvature",
    "mu_low",
    "mu_lower",
    "mu_upp",
    "mu_upper",
    "network_output",
    "theorem1_mu_lower",
    "theorem1_rate",
    "theorem1_width",
]


def _arrays(*vs: np.ndarray) -> list[np.ndarray]:
    return [np.asarray(v, dtype=np.float64) for v in vs]


def _scalar_or_array(out: np.ndarray) -> np.ndarray | float:
    return float(out) if np.ndim(out) == 0 else out


def _preactivation(W: np.ndarray, X: np.ndarray) -> np.ndarray:
    """<w_j, x_i>, shape (..., p, n)."""
    return np.matmul(W, np.swapaxes(X, -1, -2))


def active(W: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Activation indicators 1_{j,i} = 1{<w_j, x_i> > 0} (docs/math.md §0.2), shape (..., p, n)."""
    return _preactivation(*_arrays(W, X)) > 0


def network_output(a: np.ndarray, W: np.ndarray, X: np.ndarray) -> np.ndarray:
    """h(x_i) = (1/p) sum_j a_j sigma(<w_j, x_i>) (docs/math.md §1.1), shape (..., n)."""
    a, W, X = _arrays(a, W, X)
    return np.einsum("...p,...pn->...n", a, np.maximum(_preactivation(W, X), 0.0)) / a.shape[-1]


def _active_mean(weight: np.ndarray, W: np.ndarray, X: np.ndarray) -> np.ndarray:
    """(1/p) sum_j weight_j 1_{j,i}, shape (..., n)."""
    return np.einsum("...p,...pn->...n", weight, active(W, X)) / weight.shape[-1]


def _norms(X: np.ndarray) -> np.ndarray:
    return np.linalg.norm(X, axis=-1)


def _gram_offdiag(X: np.ndarray) -> np.ndarray:
    G = np.einsum("...nd,...md->...nm", X, X)
    n = G.shape[-1]
    G = G * (1.0 - np.eye(n))
    return np.max(np.abs(np.linalg.eigvalsh(G)), axis=-1)


def mu_upper(a: np.ndarray, W: np.ndarray, X: np.ndarray, correlation: bool = True) -> np.ndarray | float:
    """Upper bound on mu of DPB Lemma 7 (eq.23, docs/math.md §1.4(3)).

        mu <= (2/n) K max_i (1/p) sum_j (a_j^2 + ||w_j||^2) 1_{j,i},

    with K = (C_x^+)^2 as printed. The printed proof (eq.27) bounds ||X P_j R||^2 by
    (C_x^+)^2 ||P_j R||^2, which needs orthogonal data; in general ||X P_j R||^2 <=
    ((C_x^+)^2 + ||X^T X - D_X||) ||P_j R||^2, so ``correlation=True`` (default) uses
    K = (C_x^+)^2 + ||X^T X - D_X||_op. Both coincide on orthogonal data; the printed bound can fail
    on correlated data (e.g. a repeated point).

    Parameters
    ----------
    a : (..., p) array
    W : (..., p, d) array
    X : (n, d) or (..., n, d) array
    correlation : bool, default True
        Add the Gram off-diagonal norm (valid for all data); False gives the bound as printed.

    Returns
    -------
    float or array (...)
    """
    a, W, X = _arrays(a, W, X)
    per_point = _active_mean(a**2 + np.sum(W**2, axis=-1), W, X)
    K = np.max(_norms(X), axis=-1) ** 2
    if correlation:
        K = K + _gram_offdiag(X)
    return _scalar_or_array(2.0 / X.shape[-2] * K * np.max(per_point, axis=-1))


def mu_lower(a: np.ndarray, W: np.ndarray, X: np.ndarray) -> np.ndarray | float:
    """Lower bound on mu of DPB Lemma 7 (eq.23 = eq.7, docs/math.md §1.4(3)).

        mu >= (2/n) ((C_x^-)^2 - ||X^T X - D_X||_op) min_i (1/p) sum_j a_j^2 1_{j,i}

    Valid for any parameters and data; informative when (C_x^-)^2 > ||X^T X - D_X|| (Assumption 2
    implies it).

    Parameters
    ----------
    a : (..., p) array
    W : (..., p, d) array
    X : (n, d) or (..., n, d) array

    Returns
    -------
    float or array (...)
    """
    a, W, X = _arrays(a, W, X)
    K = np.min(_norms(X), axis=-1) ** 2 - _gram_offdiag(X)
    return _scalar_or_array(2.0 / X.shape[-2] * K * np.min(_active_mean(a**2, W, X), axis=-1))


def theorem1_rate(constants: DataConstants) -> float:
    """Rate constant of DPB Theorem 1 (docs/math.md §1.4(4)).

        C = (6/5) (C_x^-)^2 C_y^- / C_x^+,   <mu_inf> >= C/n.
    """
    c = constants
    return 1.2 * c.C_x_minus**2 * c.C_y_minus / c.C_x_plus


def theorem1_mu_lower(a: np.ndarray, W: np.ndarray, X: np.ndarray, y: np.ndarray,
                      constants: DataConstants | None = None) -> np.ndarray | float:
    """Instantaneous lower bound of DPB Theorem 1, eq.6 (docs/math.md §1.4(4)).

        mu(t) >= (C/n) min_i |1 - r_i(t)/y_i| = (C/n) min_i |h(x_i)/y_i|,
        C = (6/5) (C_x^-)^2 C_y^- / C_x^+.

    It follows from Lemma 7's lower bound under Assumptions 1 (|a_j| >= ||w_j||) and 2.

    Parameters
    ----------
    a, W : (..., p), (..., p, d) arrays
    X : (n, d) array
    y : (n,) array
    constants : DataConstants, optional
        Defaults to the constants of (X, y).

    Returns
    -------
    float or array (...)
    """
    X, y = _arrays(X, y)
    c = constants if constants is not None else data_constants(X, y)
    h = network_output(a, W, X)
    return _scalar_or_array(theorem1_rate(c) / X.shape[-2] * np.min(np.abs(h / y), axis=-1))


def theorem1_width(n: int, eps: float, C_aw: float, C_x_plus: float, C_y_plus: float,
                   corollary: bool = False) -> float:
    """Width sufficient for DPB Theorem 1 (docs/math.md §1.4(4)).

        p >= 4 log(4n/eps) (1 + (C_{a,w} C_x^+ / C_y^+)^2)

    (Corollary 1 uses log(6n/eps): ``corollary=True``). C_{a,w} is a sub-exponential-norm constant of
    a <w, x_bar>_+ under the initial law of (a, w); it has no closed form and is a parameter here.
    """
    if not 0 < eps < 1:
        raise ValueError(f"eps: must be in (0, 1), got {eps}")
    m = 6.0 if corollary else 4.0
    return 4.0 * math.log(m * n / eps) * (1.0 + (C_aw * C_x_plus / C_y_plus) ** 2)


# --------------------------------------------------------------------- Experiment 2 measures
def last_step_curvature(loss: np.ndarray, k: int = 1, lr: float = 1.0) -> np.ndarray | float:
    """mu(t_inf) from a per-epoch loss record (DPB App. B Exp. 2, docs/math.md §1.4(11) item 1).

        k = 1 (paper):  mu(t_inf) = log(L(t_inf - 1) / L(t_inf)) / lr
        k > 1 (code):   the mean over the last k epochs of the one-step log-ratio,
                        = log(L(t_inf - k) / L(t_inf)) / (k lr)   (the code uses k = 100).

    Parameters
    ----------
    loss : (..., T) array
        L(0), L(1), ..., L(t_inf): one value per epoch, ending at the last epoch (cut the tail of a
        run frozen by a stop rule before calling).
    k : int, default 1
        Number of final epochs averaged.
    lr : float, default 1
        Step size (flow time per epoch).
    """
    L = np.asarray(loss, dtype=np.float64)
    if not 1 <= k < L.shape[-1]:
        raise ValueError(f"k: need 1 <= k < record length {L.shape[-1]}, got {k}")
    return _scalar_or_array(np.log(L[..., -1 - k] / L[..., -1]) / (k * lr))


def average_curvature(loss: np.ndarray, lr: float = 1.0) -> np.ndarray | float:
    """<mu_inf> = (1/t_inf) log(L(0)/L(t_inf)) (DPB §5.2, docs/math.md §1.4(2), §1.4(11) item 2).

    ``loss`` is the per-epoch record (..., T) with t_inf = (T - 1) lr.
    """
    L = np.asarray(loss, dtype=np.float64)
    t_inf = (L.shape[-1] - 1) * lr
    return _scalar_or_array(np.log(L[..., 0] / L[..., -1]) / t_inf)


def mu_low(a: np.ndarray, W: np.ndarray, X: np.ndarray) -> np.ndarray | float:
    """mu_low = (2/n) min_i (1/p) sum_j a_j^2 1_{j,i} (docs/math.md §1.4(11) item 3).

    Lemma 7's lower bound with C_x^- = 1 and exactly orthogonal data (DPB App. B).
    """
    a, W, X = _arrays(a, W, X)
    return _scalar_or_array(2.0 / X.shape[-2] * np.min(_active_mean(a**2, W, X), axis=-1))


def mu_upp(a: np.ndarray, W: np.ndarray, X: np.ndarray) -> np.ndarray | float:
    """mu_upp = (16/n) max_i (1/p) sum_j a_j^2 1_{j,i} (docs/math.md §1.4(11) item 4).

    Lemma 7's upper bound with C_x^+ <= 2 and ||w_j|| <= |a_j|: 16 = 2 (C_x^+)^2 2 (DPB App. B).
    """
    a, W, X = _arrays(a, W, X)
    return _scalar_or_array(16.0 / X.shape[-2] * np.max(_active_mean(a**2, W, X), axis=-1))


def experiment2_measures(loss: np.ndarray, a: np.ndarray, W: np.ndarray, X: np.ndarray,
                         k: int = 100, lr: float = 1.0) -> dict[str, np.ndarray | float]:
    """The four Experiment-2 measures of DPB App. B (docs/math.md §1.4(11)).

    Parameters
    ----------
    loss : (..., T) array
        Per-epoch loss record L(0..t_inf).
    a, W : final weights, (..., p) and (..., p, d).
    X : (n, d) array
    k : int, default 100
        Epochs averaged by the code's variant of mu(t_inf) (clipped to the record length).
    lr : float, default 1

    Returns
    -------
    dict
        ``mu_t_inf`` (one-step log-ratio), ``mu_t_inf_avg`` (code's mean over the last k epochs),
        ``mu_avg`` (<mu_inf>), ``mu_low``, ``mu_upp``.
    """
    T = np.shape(loss)[-1]
    return {
        "mu_t_inf": last_step_curvature(loss, 1, lr),
        "mu_t_inf_avg": last_step_curvature(loss, min(k, T - 1), lr),
        "mu_avg": average_curvature(loss, lr),
        "mu_low": mu_low(a, W, X),
        "mu_upp": mu_upp(a, W, X),
    }
