"""The limit saddle-to-saddle process of tiny-initialisation training on orthonormal data
(Algorithm 1, docs/math.md §3.4; TBLEL Theorem 2).

In accelerated time t = (flow time) / log(1/lambda), as lambda -> 0 gradient flow from the balanced
initialisation a_j = s_j lambda, w_j = lambda w̄_j(0) jumps between saddles θ^(0) = 0, θ^(1), ...:

* unfitted neuron j points along D_j^(k) = Σ_{i ∈ A_j ∩ U_k} |y_i| x_i                     (eq.9)
  and its norm exponent e_j = log||w_j|| / log(1/lambda) grows with slope
  β_j^(k) = c_L ||D_j^(k)|| = c_L (Σ_{i ∈ A_j ∩ U_k} y_i²)^{1/2}                          (eq.10)
  starting from e_j(0) = -1 (piecewise affine, eq.11);
* the first neuron whose exponent reaches 0 jumps at τ_{k+1} to the single-neuron minimiser
  w_j = D / ||D||^{1/2}, a_j = s_j ||D||^{1/2} and fits S_{k+1} = A_j ∩ U_k       (eqs.12-14);
* between jumps, L(θ^(k)) = c Σ_{i ∈ U_k} y_i² (c: the loss normaliser, 1/(2n) for 'square').

Loss and time conventions (docs/math.md §3.1, §0.3). Training is dθ/dt = -T ∇L with L = c Σ r_i²
(T: the engine's ``time_scale``), so in accelerated time d<w_j, x_i>/dt = c_L a_j r_i 1{...} with
c_L = 2 c T:

    loss 'square' (reduction 'mean'): L = 1/(2n) Σ r²   c = 1/(2n),  c_L = T/n
    loss 'mse'    (reduction 'mean'): L = 1/n Σ r²      c = 1/n,     c_L = 2T/n
    (reduction 'sum' drops the 1/n)

All jump times scale as 1/c_L. :func:`loss_constant` and :func:`loss_normaliser` give c_L and c
from a loss name; :func:`limit_process` takes c_L and, separately, c (``loss_normaliser``,
default c_L / 2, i.e. T = 1), so that the plateau losses use the same convention as the run they
are compared with.

The process is computed with one pass over the jumps (at most m) of vectorised numpy: per-neuron
sums Σ_{A_j ∩ U_k} y_i² are updated by subtracting the rows of the mask fitted at each jump,
with exact integer counts so that an emptied set gives slope exactly 0. n = 10^4, m = 100 takes
about 0.05-0.1 s (X = None).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np
import xarray as xr

from shallowflow.model.losses import Loss
from shallowflow.model.run_attrs import RunAttrs
from shallowflow.theory.activation_mask import (
    Assumption4Report,
    activation_mask,
    as_finite,
    check_assumption4,
    check_inputs,
    check_labels,
    check_signs,
    unit_rows,
)

TIE_RTOL = 1e-9


# ------------------------------------------------------------------------------ conventions
def loss_normaliser(loss: str, n: int, reduction: str = "mean") -> float:
    """c in L = c Σ_i r_i²: 1/(2n) for 'square', 1/n for 'mse' (reduction 'sum': 1/2 and 1);
    :meth:`shallowflow.model.losses.Loss.quadratic_coefficient`."""
    if int(n) != n or n < 1:
        raise ValueError(f"n: must be a positive integer, got {n!r}")
    try:
        return float(Loss(loss, reduction).quadratic_coefficient(int(n)))  # type: ignore[arg-type]
    except ValueError as err:
        raise ValueError(f"loss: Algorithm 1 needs a square loss, 'square' or 'mse' with reduction "
                         f"'mean' or 'sum'; got loss={loss!r}, reduction={reduction!r}") from err


def loss_constant(loss: str, n: int, time_scale: float = 1.0, reduction: str = "mean") -> float:
    """c_L = 2 c T (docs/math.md §3.1): T/n for 'square' = 1/(2n) Σ r², 2T/n for 'mse' = 1/n Σ r².

    >>> loss_constant("square", 4), loss_constant("mse", 4)  # the hand example's c_L = 1/4
    (0.25, 0.5)
    """
    if not (np.isfinite(time_scale) and time_scale > 0):
        raise ValueError(f"time_scale: must be finite and > 0, got {time_scale!r}")
    return 2.0 * loss_normaliser(loss, n, reduction) * float(time_scale)


# ---------------------------------------------------------------------------------- result
def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class SaddleProcess:
    """Output of Algorithm 1 (docs/math.md §3.4). K jumps, n points, m neurons, d input dimensions.

    Saddle k (k = 0..K) holds on (τ_k, τ_{k+1}) with τ_0 = 0 and τ_{K+1} = ∞.

    tau (K,): jump times τ_1 < ... < τ_K (accelerated time).
    sequence (K,): the neuron j_k that jumps at τ_k (0-based).
    exponents (K+1, m): e_j(τ_k); -1 at k = 0, 0 from the neuron's own jump on.
    slopes (K+1, m): β_j^(k) on (τ_k, τ_{k+1}); 0 for fitted neurons and on the last interval.
    losses (K+1,): L(θ^(k)) = c Σ_{U_k} y_i².
    jump_scale (K,): ||D_{j_k}^{(k-1)}|| (= a_{j_k}² = ||w_{j_k}||² after the jump).
    fitted_by (n,): the neuron that fits point i, -1 if none; fit_jump (n,): its jump k, 0 if none.
    neuron_jump (m,): the jump k at which neuron j is fitted, 0 if never (both derived from
    ``sequence`` and ``fitted_by``).
    a_final (m,), W_final (m, d): the final saddle θ^(K) (the interpolator when every row of the
    mask is non-zero). signs (m,), directions (m, d) unit rows, mask (n, m), y (n,): the inputs.
    c_L, loss_normaliser: the conventions (module docstring). report: Assumption 4.
    """

    tau: np.ndarray
    sequence: np.ndarray
    exponents: np.ndarray
    slopes: np.ndarray
    losses: np.ndarray
    jump_scale: np.ndarray
    fitted_by: np.ndarray
    a_final: np.ndarray
    W_final: np.ndarray
    signs: np.ndarray
    directions: np.ndarray
    mask: np.ndarray
    y: np.ndarray
    c_L: float
    loss_normaliser: float
    report: Assumption4Report

    # sizes ---------------------------------------------------------------------------------
    @property
    def K(self) -> int:
        return int(self.tau.shape[0])

    @property
    def n(self) -> int:
        return int(self.y.shape[0])

    @property
    def m(self) -> int:
        return int(self.signs.shape[0])

    @property
    def d(self) -> int:
        return int(self.W_final.shape[1])

    def __repr__(self) -> str:
        return (f"SaddleProcess(n={self.n}, m={self.m}, d={self.d}, K={self.K}, c_L={self.c_L:.6g}, "
                f"tau={np.array2string(self.tau[:6], precision=6)}{'...' if self.K > 6 else ''}, "
                f"final loss={self.losses[-1]:.6g}, assumption4_ok={self.report.ok})")

    # jump of each neuron and point ----------------------------------------------------------
    @cached_property
    def neuron_jump(self) -> np.ndarray:
        """(m,): the jump k at which neuron j is fitted (j = sequence[k - 1]), 0 if never."""
        jump = np.zeros(self.m, dtype=np.int64)
        jump[self.sequence] = np.arange(1, self.K + 1)
        return _frozen(jump)

    @cached_property
    def fit_jump(self) -> np.ndarray:
        """(n,): the jump k at which point i is fitted (that of neuron fitted_by[i]), 0 if never."""
        jump = np.zeros(self.n, dtype=np.int64)
        fitted = self.fitted_by >= 0
        jump[fitted] = self.neuron_jump[self.fitted_by[fitted]]
        return _frozen(jump)

    # saddles -------------------------------------------------------------------------------
    @property
    def jump_starts(self) -> np.ndarray:
        """(K+1,): τ_0 = 0, τ_1, ..., τ_K (start of each saddle's interval)."""
        return np.concatenate([[0.0], self.tau])

    def fitted_neurons(self, k: int | np.ndarray) -> np.ndarray:
        """(m,) bool: neurons in F_k (fitted by jump k); an array k (..., 1) gives (..., m)."""
        return (self.neuron_jump >= 1) & (self.neuron_jump <= k)

    @property
    def a(self) -> np.ndarray:
        """(K+1, m): second-layer weights of the saddles θ^(0) = 0, ..., θ^(K)."""
        on = self.fitted_neurons(np.arange(self.K + 1)[:, None])
        return np.where(on, self.a_final[None], 0.0)

    @property
    def W(self) -> np.ndarray:
        """(K+1, m, d): hidden weights of the saddles (memory (K+1) m d; prefer ``saddle``)."""
        return (self.a != 0)[:, :, None] * self.W_final[None]

    def saddle(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(a (m,), W (m, d)) of θ^(k), 0 <= k <= K."""
        if not 0 <= k <= self.K:
            raise ValueError(f"k: must be in [0, K = {self.K}], got {k}")
        on = self.fitted_neurons(k)
        return np.where(on, self.a_final, 0.0), on[:, None] * self.W_final

    def fitted_sets(self) -> list[np.ndarray]:
        """[S_1, ..., S_K]: the points fitted at each jump (0-based indices, sorted)."""
        order = np.argsort(self.fit_jump, kind="stable")
        bounds = np.searchsorted(self.fit_jump[order], np.arange(1, self.K + 2))
        return [order[bounds[k]:bounds[k + 1]] for k in range(self.K)]

    @property
    def unfitted(self) -> np.ndarray:
        """Points never fitted (U_K)."""
        return np.flatnonzero(self.fitted_by < 0)

    @property
    def output(self) -> np.ndarray:
        """(n,) network output of the final saddle at the data points: y_i on fitted points, else 0."""
        return np.where(self.fitted_by >= 0, self.y, 0.0)

    # curves ---------------------------------------------------------------------------------
    def exponent_at(self, times: object) -> tuple[np.ndarray, np.ndarray]:
        """(saddle index k (T,), exponents e_j(t) (T, m)) at accelerated times t >= 0; right-
        continuous: at t = τ_k the process is in saddle k and the jumping neuron has e = 0."""
        t = as_finite("times", times, 1)
        if np.any(t < 0):
            raise ValueError(f"times: accelerated times must be >= 0, got min {t.min()}")
        k = np.searchsorted(self.tau, t, side="right")
        e = self.exponents[k] + self.slopes[k] * (t - self.jump_starts[k])[:, None]
        return k, np.minimum(e, 0.0)

    def curves(self, times: object, log_lambda: float | None = None) -> xr.Dataset:
        """The limit curves at accelerated times ``times`` (T,), in the simulation's language.

        Variables: ``loss`` (time) = L(θ^(k)) on the saddle interval containing t;
        ``log_norm_exponent`` (time, neuron) = e_j(t) (docs/math.md §3.2: ||w_j|| = lambda^{-e_j});
        with ``log_lambda`` = log lambda < 0 (natural log of the initial scale), also
        ``log_norm`` (time, neuron) = log ||w_j|| = e_j(t) log(1/lambda) before neuron j's jump and
        (1/2) log ||D_j|| from it on (its O(1) norm ||w_j|| = ||D_j||^{1/2}).
        Coordinates: ``time_accelerated`` (time); with ``log_lambda`` also the index ``time`` =
        flow time = t log(1/lambda), as in :func:`shallowflow.training.batches.to_dataset`, so the
        curves overlay a run: ``ds.loss.sel(run=0).plot(x="time_accelerated")``.
        """
        t = as_finite("times", times, 1)
        k, e = self.exponent_at(t)
        variables: dict[str, Any] = {
            "loss": (("time",), self.losses[k]),
            "log_norm_exponent": (("time", "neuron"), e),
        }
        coords: dict[str, Any] = {"time_accelerated": ("time", t), "neuron": np.arange(self.m)}
        if log_lambda is not None:
            if not (np.isfinite(log_lambda) and log_lambda < 0):
                raise ValueError(f"log_lambda: must be the finite natural log of an initial scale "
                                 f"lambda < 1, got {log_lambda!r}")
            L = -float(log_lambda)
            scale = np.zeros(self.m)
            fitted = self.neuron_jump >= 1
            scale[self.sequence] = self.jump_scale
            half_log = 0.5 * np.log(np.where(fitted, scale, 1.0))
            done = self.fitted_neurons(k[:, None])
            variables["log_norm"] = (("time", "neuron"), np.where(done, half_log[None], e * L))
            coords["time"] = ("time", t * L)
        ds = xr.Dataset(variables, coords=coords)
        ds["loss"].attrs["description"] = "limit plateau loss L(theta^(k)) (Algorithm 1)"
        ds["log_norm_exponent"].attrs["description"] = "norm exponent e_j = log||w_j|| / log(1/lambda)"
        ds.attrs.update(c_L=self.c_L, loss_normaliser=self.loss_normaliser,
                        time_units="time_accelerated = flow time / log(1/lambda)")
        return ds

    def to_dataset(self, saddle_weights: bool = True) -> xr.Dataset:
        """The process as an xarray Dataset with dims ``jump`` (k = 0..K, k = 0 the start),
        ``neuron``, ``dim`` and ``sample``.

        jump: jump_time (τ_0 = 0), jump_neuron (-1 at k = 0), jump_scale (||D||, NaN at 0),
        loss_after (L(θ^(k))), exponent (e_j(τ_k)), slope (β_j^(k)), a (θ^(k)), and W (jump,
        neuron, dim) unless ``saddle_weights=False`` (memory (K+1) m d).
        neuron: sign, direction (unit w̄_j(0)), neuron_jump, a_final, W_final.
        sample: y, mask (sample, neuron), fitted_by, fit_jump. Attributes: c_L, loss_normaliser,
        assumption4 (the report as text), assumption4_ok.
        """
        jump = np.arange(self.K + 1)
        v: dict[str, Any] = {
            "jump_time": ("jump", self.jump_starts),
            "jump_neuron": ("jump", np.concatenate([[-1], self.sequence])),
            "jump_scale": ("jump", np.concatenate([[np.nan], self.jump_scale])),
            "loss_after": ("jump", self.losses),
            "exponent": (("jump", "neuron"), self.exponents),
            "slope": (("jump", "neuron"), self.slopes),
            "a": (("jump", "neuron"), self.a),
            "sign": ("neuron", self.signs),
            "direction": (("neuron", "dim"), self.directions),
            "neuron_jump": ("neuron", self.neuron_jump),
            "a_final": ("neuron", self.a_final),
            "W_final": (("neuron", "dim"), self.W_final),
            "y": ("sample", self.y),
            "mask": (("sample", "neuron"), self.mask),
            "fitted_by": ("sample", self.fitted_by),
            "fit_jump": ("sample", self.fit_jump),
        }
        if saddle_weights:
            v["W"] = (("jump", "neuron", "dim"), self.W)
        coords = {"jump": jump, "neuron": np.arange(self.m), "dim": np.arange(self.d),
                  "sample": np.arange(self.n)}
        return xr.Dataset(v, coords=coords, attrs={
            "c_L": self.c_L, "loss_normaliser": self.loss_normaliser,
            "assumption4": str(self.report), "assumption4_ok": int(self.report.ok),
            "description": "limit saddle-to-saddle process (Algorithm 1, docs/math.md §3.4)"})


# ---------------------------------------------------------------------------- Algorithm 1
def limit_process(X: object | None, y: object, signs: object, directions: object, c_L: float,
                  loss_normaliser: float | None = None, tie_rtol: float = TIE_RTOL,
                  check: bool = True) -> SaddleProcess:
    """Run Algorithm 1 (docs/math.md §3.4) and return the :class:`SaddleProcess`.

    X (n, d): orthonormal rows, or None for the identity (x_i = e_i, d = n: nothing of size n²
    is formed). y (n,): labels. signs (m,): s_j ∈ {±1}. directions (m, d): initial directions
    w̄_j(0) (any positive scale). c_L > 0: the loss constant (:func:`loss_constant`).
    loss_normaliser: c in L = c Σ r² for the plateau losses (default c_L / 2: time scale T = 1).
    tie_rtol: two candidate times within this relative distance count as a tie (Assumption
    4(ii); the lowest neuron index jumps). check: verify that X is orthonormal.
    """
    y = check_labels(y)
    n = y.shape[0]
    s = check_signs(signs)
    m = s.shape[0]
    if not (np.isfinite(c_L) and c_L > 0):
        raise ValueError(f"c_L: must be finite and > 0, got {c_L!r}")
    c = c_L / 2.0 if loss_normaliser is None else loss_normaliser
    if not (np.isfinite(c) and c > 0):
        raise ValueError(f"loss_normaliser: must be finite and > 0, got {loss_normaliser!r}")
    if not (np.isfinite(tie_rtol) and tie_rtol >= 0):
        raise ValueError(f"tie_rtol: must be finite and >= 0, got {tie_rtol!r}")
    X = check_inputs(X, n, check)
    d = n if X is None else X.shape[1]
    D0 = as_finite("directions", directions, 2)
    if D0.shape != (m, d):
        raise ValueError(f"directions: must have shape (m, d) = ({m}, {d}) (m from signs, d from "
                         f"{'X' if X is not None else 'n: X is the identity'}), got {D0.shape}")
    Wbar = unit_rows(D0, "directions")
    M = activation_mask(X, y, s, Wbar, check=False)
    report = check_assumption4(M, y)

    y2 = y * y
    Mf = M.astype(np.float64)
    mass = y2 @ Mf  # Σ_{A_j ∩ U_k} y_i², updated at each jump
    count = M.sum(axis=0).astype(np.int64)  # |A_j ∩ U_k| exactly
    unfitted = np.ones(n, dtype=bool)
    free = np.ones(m, dtype=bool)  # neurons not in F_k
    e = -np.ones(m)
    t_now = 0.0
    fitted_by = -np.ones(n, dtype=np.int64)
    fit_jump = np.zeros(n, dtype=np.int64)
    taus, seq, scales, exps, slopes, tied = [], [], [], [e.copy()], [], []
    while True:
        live = free & (count > 0)
        beta = np.where(live, c_L * np.sqrt(np.maximum(mass, 0.0)), 0.0)
        slopes.append(beta)
        if not live.any():
            break
        T = np.full(m, np.inf)
        T[live] = t_now + (-e[live]) / beta[live]
        j = int(np.argmin(T))
        t_next = float(T[j])
        k = len(taus) + 1
        if np.sum(T <= t_next * (1.0 + tie_rtol)) > 1:
            tied.append(k)
        e = np.where(free, np.minimum(e + beta * (t_next - t_now), 0.0), 0.0)
        e[j] = 0.0
        new = np.flatnonzero(M[:, j] & unfitted)
        taus.append(t_next)
        seq.append(j)
        scales.append(float(np.sqrt(mass[j])))
        fitted_by[new] = j
        fit_jump[new] = k
        unfitted[new] = False
        free[j] = False
        mass -= y2[new] @ Mf[new]
        count -= M[new].sum(axis=0)
        mass[count == 0] = 0.0
        t_now = t_next
        exps.append(e.copy())

    K = len(taus)
    scale = np.asarray(scales, dtype=np.float64)
    # final weights: w_j = D_j / ||D_j||^{1/2}, D_j = Σ_{i ∈ S} |y_i| x_i; a_j = s_j ||D_j||^{1/2}
    root = np.zeros(m)
    if K:
        root[np.asarray(seq)] = np.sqrt(scale)
    a_final = s * root
    fitted_points = np.flatnonzero(fitted_by >= 0)
    coef = np.zeros((m, n))
    owner = fitted_by[fitted_points]
    coef[owner, fitted_points] = np.abs(y[fitted_points]) / root[owner]
    W_final = coef if X is None else coef @ X
    # plateau losses: c Σ_{U_k} y², summed per jump from the end (no cancellation)
    per_jump = np.bincount(fit_jump, weights=y2, minlength=K + 1)  # [never fitted, S_1, ..., S_K]
    tail = np.concatenate([np.cumsum(per_jump[:0:-1])[::-1], [0.0]])  # Σ_{k' > k} |S_k'| mass
    losses = c * (per_jump[0] + tail)
    report = replace(report, argmin_unique=not tied, tied_jumps=tuple(tied))
    return SaddleProcess(
        tau=_frozen(np.asarray(taus, dtype=np.float64)),
        sequence=_frozen(np.asarray(seq, dtype=np.int64)),
        exponents=_frozen(np.stack(exps)), slopes=_frozen(np.stack(slopes)), losses=_frozen(losses),
        jump_scale=_frozen(scale), fitted_by=_frozen(fitted_by), a_final=_frozen(a_final),
        W_final=_frozen(W_final), signs=_frozen(s), directions=_frozen(Wbar), mask=_frozen(M),
        y=_frozen(y), c_L=float(c_L), loss_normaliser=float(c), report=report)


# --------------------------------------------------------------------------- from a simulation
def from_run(ds: xr.Dataset, X: object | None, y: object, run: int = 0, *, loss: str | None = None,
             reduction: str | None = None, time_scale: float | None = None,
             **kwargs: Any) -> SaddleProcess:
    """Algorithm 1 for the initial state of run ``run`` of a simulation Dataset
    (:func:`shallowflow.training.batches.simulate`): signs = sign(a_init), directions = W_init rows.

    X, y: the run's data (e.g. ``shallowflow.training.batches.dataset_of``; X None for the identity).
    loss, reduction, time_scale default to the Dataset's attributes ``loss_name``, ``reduction``
    and ``time_scale``; c_L and the plateau normaliser are derived from them
    (:func:`loss_constant`). The stored initial network is lambda times the unit one; when lambda
    is so small that W_init underflows (log lambda below about -700), use
    :func:`shallowflow.training.overlays.saddle_process_from_experiment`.
    Extra keyword arguments go to :func:`limit_process`.
    """
    for name in ("a_init", "W_init"):
        if name not in ds:
            raise ValueError(f"ds: needs the variable {name!r} of a simulation Dataset")
    runs = ds.sizes.get("run", 0)
    if not 0 <= run < runs:
        raise ValueError(f"run: must be in [0, {runs}), got {run}")
    attrs = RunAttrs.of(ds)
    kappa = attrs.kappa
    if kappa != 1.0:
        raise ValueError(f"ds: Algorithm 1 is for output scale kappa = 1, the run has kappa = {kappa}")
    a0 = np.asarray(ds.a_init.isel(run=run).values, dtype=np.float64)
    W0 = np.asarray(ds.W_init.isel(run=run).values, dtype=np.float64)
    if np.any(a0 == 0) or np.any(~np.any(W0 != 0, axis=1)):
        raise ValueError("ds: the stored initial network has zero neurons (lambda below the float "
                         "range underflows a_init, W_init); use "
                         "shallowflow.training.overlays.saddle_process_from_experiment instead")
    return from_network(a0, W0, X, y, loss or attrs.loss_name, reduction or attrs.reduction,
                        attrs.time_scale if time_scale is None else float(time_scale),
                        **kwargs)


def from_network(a0: np.ndarray, W0: np.ndarray, X: object | None, y: object, loss: str,
                 reduction: str, time_scale: float, **kwargs: Any) -> SaddleProcess:
    """Algorithm 1 from a balanced initial network a0 (p,), W0 (p, d) (any scale: only the signs
    and directions are used) on data X, y, with c_L and the plateau normaliser derived from the
    loss name, reduction and time scale (:func:`loss_constant`). Extra keyword arguments go to
    :func:`limit_process`."""
    peak = np.max(np.abs(W0), axis=1, initial=0.0)
    if np.any(a0 == 0) or np.any(peak == 0):
        raise ValueError("a_init/W_init: every neuron needs a non-zero a_j and w_j")
    norms = np.linalg.norm(W0 / peak[:, None], axis=1)  # ||w_j|| / peak_j (no underflow)
    gap = np.abs(np.abs(a0) / peak / norms - 1.0)
    if not np.all(gap <= 1e-8):
        raise ValueError("a_init/W_init: Algorithm 1 needs a balanced start |a_j| = ||w_j|| "
                         f"(Assumption 3), max relative gap {gap.max():.3g}")
    n = check_labels(y).shape[0]
    c_L = loss_constant(loss, n, time_scale, reduction)
    return limit_process(X, y, np.sign(a0), W0, c_L,
                         loss_normaliser=loss_normaliser(loss, n, reduction), **kwargs)
