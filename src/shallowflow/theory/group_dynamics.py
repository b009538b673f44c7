"""Exact group dynamics of DPB and its phase transition (Theorem 2; docs/math.md §1.5).

Setting (docs/math.md §1.2, §1.5): orthonormal inputs, p groups of k = n/p consecutive points with labels
of one sign s_j per group, one neuron per group (group initialisation), balanced |a_j| = ||w_j||,
w_j in the span of its own group. Simulation convention: h = (1/p) sum_j a_j sigma(<w_j, x>),
L = (1/(2n)) sum_i r_i^2, dtheta/dt = -p grad L; every ``time`` below is this flow time.

Per group j (s_j = +1; the negative case is the mirror image):

    D_j = (1/sqrt k) sum_{i in j} y_i x_i,  g_j = sqrt(k) ||D_j||,  c_j = 2 g_j / n = 2 ||D_j|| / sqrt(np),
    N_j = ||w_j||^2,  cos_j = <D_j/||D_j||, w_j/||w_j||>,  c_0 = cos_j(0),  N_0 = N_j(0),

    cos_j(t) = tanh(c_j t / 2 + artanh c_0)
    N_j(t)   = p g_j N_0 [(1 + c_0^2) cosh(c_j t) + 2 c_0 sinh(c_j t) + 1 - c_0^2]
               / (2 p g_j + N_0 [(1 + c_0^2) sinh(c_j t) + 2 c_0 (cosh(c_j t) - 1) + (1 - c_0^2) c_j t])
    L^j(t)   = (1/2) [ ||D_j||^2 - (2/(sqrt(k) p)) ||D_j|| cos_j N_j + N_j^2/(k p^2) ]      (DPB eq.81)
    L(t)     = (1/p) sum_j L^j(t).

Numerics: everything is evaluated from z = c_j t through e^{-z} (never cosh or sinh of z), and
L^j in the cancellation-free form L^j = (1/2)[(||D_j|| - m_j)^2 + 2 ||D_j|| m_j (1 - cos_j)] with
m_j = N_j / sqrt(np), ||D_j|| - m_j = (p g_j - N_j)/sqrt(np) and 1 - cos_j = 2 (1 - c_0) e^{-z} /
((1 + c_0) + (1 - c_0) e^{-z}), so n up to 1e300 and any t >= 0 give finite values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy.optimize import brentq

__all__ = [
    "GroupProblem",
    "cosine",
    "group_loss",
    "limit_loss",
    "loss",
    "neuron_norm_sq",
    "rescaled_time",
    "trajectory",
    "transition_time",
    "window_constant",
    "window_constant_as_printed",
    "window_width",
    "window_width_as_printed",
]


@dataclass(frozen=True)
class GroupProblem:
    """The parameters of the group dynamics (docs/math.md §1.5).

    Attributes
    ----------
    n : float
        Number of samples (a float, so that n ~ 1e18 is exact enough); k = n/p per group.
    p : int
        Number of groups = neurons.
    D_norm : (p,) array
        ||D_j^n|| = (mean of y_i^2 over group j)^(1/2).
    N0 : (p,) array
        ||w_j(0)||^2.
    c0 : (p,) array
        cos_j(0) = <s_j D_j/||D_j||, w_j(0)/||w_j(0)||>, in (-1, 1].
    """

    n: float
    p: int
    D_norm: np.ndarray
    N0: np.ndarray
    c0: np.ndarray

    def __post_init__(self) -> None:
        for name in ("D_norm", "N0", "c0"):
            v = np.broadcast_to(np.asarray(getattr(self, name), dtype=np.float64), (self.p,)).copy()
            v.setflags(write=False)
            object.__setattr__(self, name, v)
        if not (self.n > 0 and self.p >= 1):
            raise ValueError(f"n, p: need n > 0 and p >= 1, got n={self.n}, p={self.p}")
        if np.any(self.D_norm <= 0) or np.any(self.N0 <= 0):
            raise ValueError("D_norm, N0: must be > 0")
        if np.any((self.c0 > 1) & (self.c0 <= 1 + 1e-12)):  # rounding of a cosine equal to 1
            object.__setattr__(self, "c0", np.minimum(self.c0, 1.0))
            self.c0.setflags(write=False)
        if np.any(self.c0 <= -1) or np.any(self.c0 > 1):
            raise ValueError(f"c0: must lie in (-1, 1], got {self.c0}")

    @classmethod
    def uniform(cls, n: float, D_norm: np.ndarray | list[float], N0: float = 1.0,
                c0: float = 1.0) -> GroupProblem:
        """p = len(D_norm) groups with common N_0 and c_0 (c_0 = 1, N_0 = 1: DPB Figure 2)."""
        D = np.atleast_1d(np.asarray(D_norm, dtype=np.float64))
        return cls(float(n), int(D.size), D, np.full(D.size, N0), np.full(D.size, c0))

    @classmethod
    def from_network(cls, X: np.ndarray, y: np.ndarray, a: np.ndarray, W: np.ndarray,
                     tol: float = 1e-9) -> GroupProblem:
        """Read (n, p, ||D_j||, N_0, c_0) from group-initialised data and network.

        Parameters
        ----------
        X : (n, d) array
            Orthonormal rows; group j is rows j k .. (j + 1) k - 1 with k = n/p.
        y : (n,) array
            Labels, of one sign within each group.
        a : (p,) array, W : (p, d) array
            The initial network: balanced (|a_j| = ||w_j||), w_j in the span of its group with
            <w_j, x_i> > 0 there.
        tol : float
            Relative tolerance of these checks, at least 100 rounding units of the inputs'
            precision (a float32 network is balanced to about 1e-7 only).
        """
        tol = max(tol, 100 * max(np.finfo(np.result_type(v, np.float32)).eps
                                 for v in (X, y, a, W)))
        X, y, a, W = (np.asarray(v, dtype=np.float64) for v in (X, y, a, W))
        n, p = X.shape[0], a.shape[0]
        if n % p:
            raise ValueError(f"p: must divide n = {n}, got {p}")
        if np.max(np.abs(X @ X.T - np.eye(n))) > tol:
            raise ValueError("X: rows must be orthonormal for the closed-form group dynamics")
        k = n // p
        norms = np.linalg.norm(W, axis=1)
        if np.max(np.abs(np.abs(a) - norms) / norms) > tol:
            raise ValueError("a, W: need a balanced network |a_j| = ||w_j||")
        V = (W @ X.T).reshape(p, p, k)  # V[j, q, i] = <w_j, x_i^q>
        own = V[np.arange(p), np.arange(p)]  # (p, k)
        if np.any(own <= 0) or np.any(np.abs(np.sum(own**2, axis=1) - norms**2) > tol * norms**2):
            raise ValueError("W: each w_j must lie in the span of its own group, positive on it")
        Y = y.reshape(p, k)
        s = np.sign(a)
        if np.any(np.sign(Y) != s[:, None]):
            raise ValueError("y, a: every label of group j must have the sign of a_j")
        D_norm = np.sqrt(np.mean(Y**2, axis=1))
        c0 = np.sum(s[:, None] * Y * own, axis=1) / (np.linalg.norm(Y, axis=1) * norms)
        return cls(float(n), p, D_norm, norms**2, c0)

    # derived constants -------------------------------------------------------------------------
    @property
    def k(self) -> float:
        """Group size k = n/p."""
        return self.n / self.p

    @property
    def g(self) -> np.ndarray:
        """g_j = sqrt(k) ||D_j|| = ||y^j||."""
        return math.sqrt(self.k) * self.D_norm

    @property
    def c(self) -> np.ndarray:
        """c_j = 2 g_j / n = 2 ||D_j|| / sqrt(np) (DPB App. A.6)."""
        return 2.0 * self.D_norm / math.sqrt(self.n * self.p)

    @property
    def saturation(self) -> np.ndarray:
        """N_j(inf) = p g_j = sqrt(np) ||D_j||."""
        return math.sqrt(self.n * self.p) * self.D_norm


# ------------------------------------------------------------------------------ closed forms
def _parts(prob: GroupProblem, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(N, S - N, 1 - cos) at flow times t (T,), each (T, p), from e^{-z}, z = c t."""
    t = np.atleast_1d(np.asarray(t, dtype=np.float64))
    z = t[:, None] * prob.c[None, :]
    em = np.exp(-z)
    c0, N0, S = prob.c0, prob.N0, prob.saturation
    A, Bm, Cc = (1 + c0) ** 2 / 2, (1 - c0) ** 2 / 2, 1 - c0**2
    # 2E e^{-z} with 2E = (1 + c0^2) cosh z + 2 c0 sinh z + 1 - c0^2 (numerator of N)
    two_E = A + Bm * em**2 + Cc * em
    # B e^{-z} with B = (1 + c0^2) sinh z + 2 c0 (cosh z - 1) + (1 - c0^2) z (denominator of N)
    B = A - Bm * em**2 - 2 * c0 * em + Cc * z * em
    den = 2 * S * em + N0 * B
    N = S * N0 * two_E / den
    gap = S * (2 * S * em + N0 * (-2 * Bm * em**2 - (2 * c0 + Cc) * em + Cc * z * em)) / den
    one_minus_cos = 2 * (1 - c0) * em / ((1 + c0) + (1 - c0) * em)
    return N, gap, one_minus_cos


def _group_loss_values(prob: GroupProblem, t: np.ndarray) -> np.ndarray:
    N, gap, omc = _parts(prob, t)
    r = math.sqrt(prob.n * prob.p)
    return 0.5 * ((gap / r) ** 2 + 2 * prob.D_norm * (N / r) * omc)


def _curve(values: np.ndarray, prob: GroupProblem, t: np.ndarray, name: str, desc: str) -> xr.DataArray:
    t = np.atleast_1d(np.asarray(t, dtype=np.float64))
    dims = ("time", "neuron") if values.ndim == 2 else ("time",)
    coords = {"time": t, "time_rescaled": ("time", t / rescaled_time(prob.n, prob.p))}
    if values.ndim == 2:
        coords["neuron"] = np.arange(prob.p)
    return xr.DataArray(values, dims=dims, coords=coords, name=name,
                        attrs={"description": desc, "time_units": "flow time (dtheta/dt = -p grad L)"})


def cosine(prob: GroupProblem, t: np.ndarray) -> xr.DataArray:
    """cos_j(t) = tanh(c_j t/2 + artanh c_0) (docs/math.md §1.5; DPB eq.67 with c_j t/2, corrected)."""
    _, _, omc = _parts(prob, t)
    return _curve(1.0 - omc, prob, t, "cos", "cos_j = <D_j/||D_j||, w_j/||w_j||>")


def neuron_norm_sq(prob: GroupProblem, t: np.ndarray) -> xr.DataArray:
    """N_j(t) = ||w_j(t)||^2, the exact solution for any c_0 (docs/math.md §1.5; DPB eq.69 is exact only
    at c_0 = 1, where N = p g N_0 e^{ct} / (p g + N_0 (e^{ct} - 1)))."""
    N, _, _ = _parts(prob, t)
    return _curve(N, prob, t, "norm_sq", "N_j = ||w_j||^2")


def group_loss(prob: GroupProblem, t: np.ndarray) -> xr.DataArray:
    """L^j(t) = (1/2)[||D_j||^2 - (2/(sqrt(k) p)) ||D_j|| cos_j N_j + N_j^2/(k p^2)] (DPB eq.81,
    docs/math.md §1.5), evaluated in a cancellation-free form."""
    return _curve(_group_loss_values(prob, t), prob, t, "group_loss", "L^j = (1/(2k)) sum_{i in j} r_i^2")


def loss(prob: GroupProblem, t: np.ndarray) -> xr.DataArray:
    """L(t) = (1/p) sum_j L^j(t) = (1/(2n)) sum_i r_i^2 (docs/math.md §1.5)."""
    return _curve(_group_loss_values(prob, t).mean(axis=1), prob, t, "loss", "L = (1/p) sum_j L^j")


def trajectory(prob: GroupProblem, t: np.ndarray) -> xr.Dataset:
    """All closed-form curves at flow times t: cos, norm_sq, group_loss (time, neuron), loss (time),
    and the limit loss L_inf(t/t_n); coordinate ``time_rescaled`` = t/t_n (docs/math.md §1.5)."""
    return xr.Dataset({
        "cos": cosine(prob, t),
        "norm_sq": neuron_norm_sq(prob, t),
        "group_loss": group_loss(prob, t),
        "loss": loss(prob, t),
        "limit_loss": limit_loss(prob, t),
    })


def rescaled_time(n: float, p: int, appendix: bool = False) -> float:
    """t_n = (sqrt(np)/4) log(np) (DPB §4.2 eq.12, docs/math.md §1.5); ``appendix=True`` gives App. A.6's
    (sqrt(np)/4) log n (asymptotically equal)."""
    return math.sqrt(n * p) / 4.0 * (math.log(n) if appendix else math.log(n * p))


def limit_loss(prob: GroupProblem, t: np.ndarray) -> xr.DataArray:
    """The limit of the rescaled loss, L_inf(s) = (1/(2p)) sum_j ||D_j||^2 1{s < 1/||D_j||} at
    s = t/t_n (DPB Theorem 2, docs/math.md §1.5), with ||D_j^inf|| taken as ``prob.D_norm``."""
    t = np.atleast_1d(np.asarray(t, dtype=np.float64))
    s = t / rescaled_time(prob.n, prob.p)
    D = prob.D_norm
    values = np.sum(D**2 * (s[:, None] < 1.0 / D), axis=1) / (2.0 * prob.p)
    return _curve(values, prob, t, "limit_loss", "L_inf(t/t_n), Theorem 2")


# ------------------------------------------------------------------------- transition times
def transition_time(prob: GroupProblem, eps: float) -> xr.DataArray:
    """Transition times t_n^j(eps), solving L^j(t) = (eps/2) ||D_j||^2 (docs/math.md §1.5, Theorem 2).

    For c_0 = 1 and N_0 < p g_j, the derived closed form

        t_n^j(eps) = (1/c_j) log[ (1 - sqrt(eps)) (p g_j - N_0) / (sqrt(eps) N_0) ];

    otherwise the root of the (monotone) L^j by Brent's method. NaN where L^j(0) is already at or
    below the level (no solution with t >= 0).

    Returns
    -------
    xarray.DataArray (neuron)
        Flow times; divide by :func:`rescaled_time` for t_n^j(eps)/t_n -> 1/||D_j^inf||.
    """
    if not 0 < eps < 1:
        raise ValueError(f"eps: must be in (0, 1), got {eps}")
    target = 0.5 * eps * prob.D_norm**2
    L0 = _group_loss_values(prob, np.zeros(1))[0]
    S, N0, c = prob.saturation, prob.N0, prob.c
    out = np.full(prob.p, np.nan)
    for j in range(prob.p):
        if not L0[j] > target[j]:
            continue
        if prob.c0[j] == 1.0 and N0[j] < S[j]:
            out[j] = (math.log1p(-math.sqrt(eps)) + math.log(S[j] - N0[j])
                      - math.log(math.sqrt(eps) * N0[j])) / c[j]
            continue

        def f(z: float, j: int = j) -> float:
            return float(_group_loss_values(prob, np.array([z / c[j]]))[0, j] - target[j])

        hi = 1.0
        while f(hi) > 0:
            hi *= 2.0
            if hi > 1e6:
                raise RuntimeError("transition_time: no bracket found")
        out[j] = brentq(f, 0.0, hi, xtol=1e-14, rtol=1e-14, maxiter=500) / c[j]
    return xr.DataArray(out, dims=("neuron",), coords={"neuron": np.arange(prob.p)},
                        name="transition_time", attrs={"eps": eps, "time_units": "flow time"})


def window_constant(eps: float) -> float:
    """C(eps) = [(1 - sqrt eps)/sqrt eps] [sqrt(1 - eps)/(1 - sqrt(1 - eps))] (derived, docs/math.md §1.5).

    For c_0 = 1, t_n^j(eps) - t_n^j(1 - eps) = log C(eps) / c_j exactly (any n)."""
    if not 0 < eps < 1:
        raise ValueError(f"eps: must be in (0, 1), got {eps}")
    r, q = math.sqrt(eps), math.sqrt(1.0 - eps)
    return (1.0 - r) / r * q / (1.0 - q)


def window_width(D_norm: np.ndarray | float, n: float, p: int, eps: float) -> np.ndarray | float:
    """Derived cut-off window (t_n^j(eps) - t_n^j(1 - eps))/t_n (docs/math.md §1.5):

        2 log C(eps) / (||D_j|| log(np)),

    exact for c_0 = 1 with t_n = (sqrt(np)/4) log(np) (positive for eps < 1/2)."""
    out = 2.0 * math.log(window_constant(eps)) / (np.asarray(D_norm, dtype=np.float64) * math.log(n * p))
    return float(out) if np.ndim(out) == 0 else out


def window_constant_as_printed(D_norm: np.ndarray | float, eps: float) -> np.ndarray | float:
    """C^j(eps) as printed in DPB eq.87 (legible in the paper text, App. A.6):

        C^j(eps) = (1 - sqrt eps) / (1 + ||D_j|| (1 - sqrt eps))
                   * (1 + ||D_j|| (1 - sqrt(1 - eps))) / (1 - sqrt(1 - eps)).

    It rests on eq.84, which drops the ||D_j|| factor of the fitted part (and solving it would give
    1 - ||D_j||(...) in the denominators); the correct constant, C(eps) of :func:`window_constant`,
    does not depend on ||D_j||. Reported for comparison only (docs/math.md §1.5)."""
    D = np.asarray(D_norm, dtype=np.float64)
    r, q = math.sqrt(eps), 1.0 - math.sqrt(1.0 - eps)
    out = (1.0 - r) / (1.0 + D * (1.0 - r)) * (1.0 + D * q) / q
    return float(out) if np.ndim(out) == 0 else out


def window_width_as_printed(D_norm: np.ndarray | float, n: float, eps: float) -> np.ndarray | float:
    """The cut-off window as printed in DPB eq.12/eq.86: (1/(2 ||D_j||)) log C^j(eps) / log n.

    Not the window of the dynamics: with the paper's own c_j and t_n, 1/(c_j t_n) =
    2/(||D_j|| log n), not 1/(2 ||D_j|| log n) (a factor 4), and C^j(eps) differs from C(eps). The
    ratio derived/printed is 4 [log C(eps)/log C^j(eps)] [log n / log(np)] (docs/math.md §1.5)."""
    D = np.asarray(D_norm, dtype=np.float64)
    out = np.log(window_constant_as_printed(D, eps)) / (2.0 * D * math.log(n))
    return float(out) if np.ndim(out) == 0 else out
