"""The verdict on an end state: global minimum, strict local minimum, saddle, degenerate or not
stationary, with the numbers and the tolerance each decision used (docs/math.md §9.4, §9.6).

:func:`end_state` judges one network; :func:`end_states` judges every run of a results
Dataset (``experiment.to_dataset``: final networks ``a_final`` (run, neuron), ``W_final``
(run, neuron, dim), or the recorded snapshots ``a``, ``W`` at a time index).

Neurons are sorted into (§9.4): zero (||w_j|| <= tol_zero max(1, max_k ||w_k||)), dead (non-zero,
no sample with <w_j, x_k> > 0), smooth (the rest); a pair (j, k) of a non-zero neuron is at a kink
when |<w_j, x_k>| <= tol_kink ||w_j|| ||x_k||. The decisions, in order:

1. global minimum: L - floor <= tol_loss (the loss is at its floor to tolerance, whatever the
   gradient: near a minimiser the gradient is only O(sqrt(L - floor)));
2. not stationary: ||grad L||_2 > tol_grad;
3. saddle: a direction of descent of order two or less: a smooth-part eigenvalue (symmetry modes
   projected out) below -tol_curv (kept only if its eigenvector, or its negative, activates no
   kink pair); or at a zero neuron or a neuron's kink pairs, a second-order escape
   kappa max|G_K| > tol_curv (a_j = 0) or a first-order one kappa min_u a_j G_K(u) < -tol_grad;
4. strict local minimum: the convexity test of §9.4 passes (a local minimum), there are no zero
   neurons, dead neurons or kink pairs, and the smallest projected eigenvalue exceeds tol_curv;
5. degenerate: the rest (a non-strict local minimum when ``local_minimum`` is True, else a point
   the second-order test does not decide).

tol_curv = tol_curvature * max(1, max |eigenvalue|) (relative). The losses are convex in the
outputs, which the local-minimum test of §9.4 uses.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from shallowflow.model.activations import Activation
from shallowflow.model.losses import Loss
from shallowflow.model.network import Network
from shallowflow.model.run_attrs import RunAttrs
from shallowflow.stationary.derivatives import (
    Problem,
    as_network,
    gradient,
    neuron_index,
    output_derivative,
    problem,
)
from shallowflow.stationary.escape import Extrema, extrema
from shallowflow.stationary.polish import PolishMethod, polish
from shallowflow.stationary.spectrum import DENSE_MAX, Spectrum, SpectrumMethod, smooth_spectrum

VerdictLabel = Literal["global minimum", "strict local minimum", "saddle", "degenerate",
                       "not stationary"]
VERDICTS: tuple[str, ...] = ("global minimum", "strict local minimum", "saddle", "degenerate",
                             "not stationary")


@dataclass(frozen=True)
class Tolerances:
    """The thresholds of the verdict (docs/math.md §9.6). ``grad``, ``loss``: absolute, on
    ||grad L||_2 (and first-order escape slopes) and on L - floor. ``curvature``: relative to
    max(1, max |eigenvalue|), on eigenvalues, second-order escape curvatures and the coupling
    kappa ||M_j||. ``zero``: relative to max(1, max_k ||w_k||), on ||w_j||. ``kink``: relative to
    ||w_j|| ||x_k||, on |<w_j, x_k>|."""

    grad: float = 1e-8
    loss: float = 1e-10
    curvature: float = 1e-7
    zero: float = 1e-7
    kink: float = 1e-9


@dataclass(frozen=True)
class Escape:
    """The best descent direction found at a zero neuron or at a neuron's kink pairs (§9.3):
    move neuron ``neuron`` to (a_j + t sign_b, w_j + t u). ``order`` 2: ``value`` is the curvature
    -kappa max|G_K| (per unit step of both, L changes by value t^2 / 2); order 1: the slope
    kappa min_u a_j G_K(u)."""

    neuron: int
    order: int
    value: float
    direction: np.ndarray = field(repr=False)
    sign_b: float
    exact: bool


@dataclass(frozen=True)
class Verdict:
    """The end-state verdict of one network, its numbers and the tolerances used
    (docs/math.md §9.6)."""

    label: str
    reason: str
    loss: float
    floor: float
    grad_norm: float
    grad_max: float
    zero_neurons: int
    dead_neurons: int
    kink_pairs: int
    smooth_neurons: int
    smooth_params: int
    symmetry_modes: int
    eig_min: float  # smooth-part spectrum, symmetry modes projected out (nan: no smooth part)
    eig_max: float
    spectrum_method: str
    spectrum_converged: bool
    negative_curvature: bool  # eig_min < -tol_curv with a usable eigenvector
    coupling_max: float  # max_j kappa ||M_j|| over the smooth neurons (§9.4(a))
    escape: Escape | None  # the best escape at zero neurons / kink pairs (None: none there)
    escape_exact: bool  # the extrema of G were exact (d <= 2) or searched
    local_minimum: bool  # the convexity test of §9.4 passes
    dead_distance: float  # min ||w_j|| over dead neurons: a flat path of that length leads to a
    # zero neuron (nan: no dead neuron)
    dead_escape: float  # the second-order escape -kappa max|G| available there (nan: none)
    tolerances: dict[str, float] = field(default_factory=dict)
    spectrum: Spectrum | None = field(default=None, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The scalar fields (escape flattened) for tables."""
        out = {k: v for k, v in asdict(self).items() if k not in ("escape", "spectrum",
                                                                   "tolerances")}
        e = self.escape
        out.update(escape_neuron=-1 if e is None else e.neuron,
                   escape_order=0 if e is None else e.order,
                   escape_value=np.nan if e is None else e.value)
        out.update({f"tol_{k}": v for k, v in self.tolerances.items()})
        return out


def near_zero(values: np.ndarray, tol: float) -> np.ndarray:
    """The entries that count as zero (docs/math.md §9.6): ``|v| <= tol max(1, max |v|)``, the
    maximum taken over the last axis (one network's neurons; leading axes are runs)."""
    v = np.abs(np.asarray(values, np.float64))
    return v <= tol * np.maximum(1.0, v.max(axis=-1, keepdims=True, initial=0.0))


def _escape_at(j: int, a_j: float, ext: Extrema, kappa: float, a_zero: bool) -> Escape:
    """The best escape of neuron j from the extrema of G_K (§9.3)."""
    if a_zero:  # second order: b of the sign opposite to G(u)
        if ext.maximum >= -ext.minimum:
            return Escape(j, 2, -kappa * ext.maximum, ext.argmax, -1.0, ext.exact)
        return Escape(j, 2, kappa * ext.minimum, ext.argmin, 1.0, ext.exact)
    if a_j > 0:  # first order: slope kappa a_j G(u), lowest at argmin
        return Escape(j, 1, kappa * a_j * ext.minimum, ext.argmin, float(np.sign(a_j)), ext.exact)
    return Escape(j, 1, kappa * a_j * ext.maximum, ext.argmax, float(np.sign(a_j)), ext.exact)


def _descends(e: Escape, tol_grad: float, tol_curv: float) -> bool:
    return e.value < -(tol_curv if e.order == 2 else tol_grad)


def end_state(net: Network, prob: Problem, floor: float = 0.0,
              tol: Tolerances = Tolerances(), spectrum_method: SpectrumMethod = "auto",
              dense_max: int = DENSE_MAX, lanczos_iter: int = 300,
              escape_starts: int = 32, seed: int = 0) -> Verdict:
    """The verdict of one network at its parameters (docs/math.md §9.4, §9.6): gradient
    (``network.loss_and_gradient``), neuron classes, smooth-part spectrum
    (:func:`~shallowflow.stationary.spectrum.smooth_spectrum`), escape tests
    (:func:`~shallowflow.stationary.escape.extrema`) and the decision rules of the module
    docstring. ``floor``: the infimum of the loss (0 for the four losses when the data can be
    fitted)."""
    net = as_network(net.a, net.W)
    a, W = net.a, net.W
    p, d = W.shape
    X = prob.X
    loss, grad, Z = gradient(net, prob)
    g_flat = np.concatenate([grad.a, grad.W.ravel()])
    grad_norm, grad_max = float(np.linalg.norm(g_flat)), float(np.max(np.abs(g_flat), initial=0.0))
    g = output_derivative(net, prob)
    kappa = prob.kappa

    wn = np.linalg.norm(W, axis=1)
    xn = np.linalg.norm(X, axis=1)
    zero, a_zero = near_zero(wn, tol.zero), near_zero(a, tol.zero)
    band = tol.kink * wn[None, :] * xn[:, None]  # (n, p)
    kink = (np.abs(Z) <= band) & ~zero[None, :] & (xn[:, None] > 0)
    active = (Z > band) & ~zero[None, :]
    leak = prob.activation.leak
    # dead: flat, inactive on every sample (ReLU only: a leaky neuron is never flat)
    dead = ~zero & ~active.any(axis=0) if leak == 0.0 else np.zeros(p, dtype=bool)
    smooth = ~zero & ~dead
    slope = np.where(active, 1.0, np.where(Z < -band, leak, 0.0)) * ~zero[None, :]
    M = (slope * g[:, None]).T @ X  # (p, d): M_j = sum_k g_k sigma'(z_jk) x_k off the kinks
    coupling = kappa * np.linalg.norm(M, axis=1)
    coupling_max = float(coupling[smooth].max(initial=0.0))

    spec = None
    eig_min = eig_max = np.nan
    if smooth.any():
        spec = smooth_spectrum(net, prob, smooth, spectrum_method, dense_max, lanczos_iter,
                               seed=seed)
        if spec.size > spec.symmetry_modes:
            eig_min, eig_max = spec.eig_min, spec.eig_max
    tol_curv = tol.curvature * max(1.0, spec.scale if spec is not None else 0.0)

    # negative curvature, usable only if the eigenvector keeps every kink pair inactive (§9.4)
    negative = bool(spec is not None and np.isfinite(eig_min) and eig_min < -tol_curv)
    if negative and kink[:, smooth].any():
        v = spec.vector_min
        idx_s = np.flatnonzero(smooth)
        vw = v[idx_s.size:].reshape(idx_s.size, d)
        dots = (X @ vw.T)[kink[:, smooth]]
        negative = bool(np.all(dots <= 0) or np.all(dots >= 0))

    # escape tests at zero neurons (all samples) and at the kink pairs of non-zero neurons
    escapes: list[Escape] = []
    exact = True
    zero_ext = None
    if dead.any() and not zero.any():
        zero_ext = extrema(X, g, prob.activation, starts=escape_starts, seed=seed)
    for j in range(p):
        if zero[j]:
            if zero_ext is None:
                zero_ext = extrema(X, g, prob.activation, starts=escape_starts, seed=seed)
            ext = zero_ext
        elif kink[:, j].any():
            ext = extrema(X[kink[:, j]], g[kink[:, j]], prob.activation, starts=escape_starts,
                          seed=seed)
        else:
            continue
        exact = exact and ext.exact
        escapes.append(_escape_at(j, float(a[j]), ext, kappa, bool(a_zero[j])))
    dead_distance = float(wn[dead].min()) if dead.any() else np.nan
    dead_escape = (-kappa * max(zero_ext.maximum, -zero_ext.minimum)
                   if dead.any() and zero_ext is not None else np.nan)
    tol_grad = tol.grad
    descending = [e for e in escapes if _descends(e, tol_grad, tol_curv)]
    pool = descending or escapes
    best = min(pool, key=lambda e: (e.order, e.value)) if pool else None

    local_min = bool(grad_norm <= tol_grad and coupling_max <= tol_curv and not descending
                     and not (np.isfinite(eig_min) and eig_min < -tol_curv))
    n_sym = spec.symmetry_modes if spec is not None else 0
    n_smooth_params = int(neuron_index(p, d, smooth).size)
    converged = spec.converged if spec is not None else True

    if loss - floor <= tol.loss:
        label, reason = "global minimum", f"L - floor = {loss - floor:.3g} <= {tol.loss:.3g}"
    elif grad_norm > tol_grad:
        label, reason = "not stationary", f"||grad L||_2 = {grad_norm:.3g} > {tol_grad:.3g}"
    elif negative or descending:
        label = "saddle"
        if descending:
            e = min(descending, key=lambda e: (e.order, e.value))
            kind = "zero neuron" if zero[e.neuron] else "kink pairs of neuron"
            reason = (f"order-{e.order} escape at {kind} {e.neuron}: {e.value:.3g} < "
                      f"-{tol_curv if e.order == 2 else tol_grad:.3g}")
        else:
            reason = f"smooth-part eigenvalue {eig_min:.3g} < -{tol_curv:.3g}"
    elif (local_min and not zero.any() and not dead.any() and not kink.any() and converged
          and np.isfinite(eig_min) and eig_min > tol_curv):
        label = "strict local minimum"
        reason = f"local-minimum test passes; smallest eigenvalue {eig_min:.3g} > {tol_curv:.3g}"
    else:
        label = "degenerate"
        flat = [f"{int(zero.sum())} zero" if zero.any() else "",
                f"{int(dead.sum())} dead, a zero neuron {dead_distance:.3g} away along a flat "
                f"path, escape {dead_escape:.3g} there" if dead.any() else "",
                f"{int(kink.sum())} kink pairs" if kink.any() else "",
                f"eigenvalue {eig_min:.3g} within {tol_curv:.3g}" if np.isfinite(eig_min)
                and abs(eig_min) <= tol_curv else "",
                "Lanczos not converged" if not converged else "",
                "coupling above tolerance" if coupling_max > tol_curv else ""]
        what = ", ".join(f for f in flat if f)
        reason = ("non-strict local minimum" if local_min else "second order undecided") + \
            (f" ({what})" if what else "")
    tols = {"grad": tol_grad, "loss": tol.loss, "curvature": tol_curv, "zero": tol.zero,
            "kink": tol.kink}
    return Verdict(label, reason, float(loss), float(floor), grad_norm, grad_max,
                   int(zero.sum()), int(dead.sum()), int(kink.sum()), int(smooth.sum()),
                   n_smooth_params, n_sym, float(eig_min), float(eig_max),
                   spec.method if spec is not None else "none", bool(converged), negative,
                   coupling_max, best, exact, local_min, dead_distance, dead_escape, tols, spec)


def _pick_network(ds: xr.Dataset, run: int, at: str | int) -> Network:
    if at == "final":
        if "a_final" in ds:
            return as_network(ds["a_final"].isel(run=run).values,
                              ds["W_final"].isel(run=run).values)
        at = -1
    if "a" not in ds or "W" not in ds:
        raise ValueError("end_states: the Dataset holds neither a_final/W_final nor the "
                         "snapshots a, W (record the probes 'a' and 'W')")
    return as_network(ds["a"].isel(run=run, time=int(at)).values,
                      ds["W"].isel(run=run, time=int(at)).values)


def end_states(ds: xr.Dataset, X: object | None = None, y: object | None = None, *,
               at: str | int = "final", activation: Activation | None = None,
               loss: Loss | None = None, kappa: float | None = None, floor: float = 0.0,
               tol: Tolerances = Tolerances(), polish_method: PolishMethod | None = None,
               polish_tol: float = 1e-12, polish_iter: int = 50,
               spectrum_method: SpectrumMethod = "auto", dense_max: int = DENSE_MAX,
               runs: Sequence[int] | None = None, judge: bool = True,
               progress: Callable[[int, int], None] | None = None,
               judge_network: Callable[[Network], Verdict] | None = None) -> xr.Dataset:
    """The verdict of every run of a results Dataset (docs/math.md §9.6), as a Dataset over
    ``run`` with variables ``end_*`` and the tolerances in its attributes.

    ``X``, ``y``: the data as the network sees them (bias column included), shared (n, d) or per
    run (R, n, d); None takes ``ds["X"]``, ``ds["y"]`` (``train(..., keep_data=True)``). The loss,
    reduction, kappa and activation default to the Dataset's attributes ``loss_name``,
    ``reduction``, ``kappa``, ``leak`` (ReLU when absent). ``at``: "final" (a_final, W_final) or
    a time index of the recorded snapshots a, W. ``polish_method``: polish each run first
    (:func:`~shallowflow.stationary.polish.polish`) and judge the polished point; the polished
    networks (``a_polished``, ``W_polished``), the distance moved and the polish's stop reason are
    added. ``judge=False``: polish only (no ``end_label``). ``progress(done, total)`` after each
    run. ``judge_network``: the verdict of one network in place of :func:`end_state` on the data
    (the population's, :mod:`shallowflow.stationary.population_state`; no polish then)."""
    if judge_network is not None and polish_method is not None:
        raise ValueError("polish_method: not with judge_network (the polish needs the data)")
    if X is None and "X" not in ds:
        raise ValueError("X: the Dataset holds no data (a population run has none: judge it "
                         "with train.end_state = true or shallowflow.certify_run(folder); a "
                         "finite-data run: train(..., keep_data=True) or pass X and y)")
    X = ds["X"].values if X is None else np.asarray(X)
    y = ds["y"].values if y is None else np.asarray(y)
    attrs = RunAttrs.of(ds)
    loss = loss or Loss(attrs.loss_name, attrs.reduction)  # type: ignore[arg-type]
    kappa = attrs.kappa if kappa is None else float(kappa)
    activation = activation or Activation(attrs.leak)
    chosen = list(range(ds.sizes["run"])) if runs is None else [int(r) for r in runs]
    rows: list[dict[str, Any]] = []
    directions, polished = [], []
    for i, r in enumerate(chosen):
        Xr = X[r] if X.ndim == 3 else X
        yr = y[r] if y.ndim == 2 else y
        prob = problem(Xr, yr, loss, kappa, activation)
        net = _pick_network(ds, r, at)
        row: dict[str, Any] = {}
        if polish_method is not None:
            pol = polish(net, prob, polish_method, polish_tol, polish_iter, tol.zero)
            net = pol.network
            polished.append(net)
            row.update(polish_stop=pol.stop, polish_distance=pol.distance,
                       polish_relative_distance=pol.relative_distance,
                       polish_iterations=pol.iterations, loss_before_polish=pol.loss_before,
                       grad_norm_before_polish=pol.grad_norm_before,
                       loss_after_polish=pol.loss_after, grad_norm_after_polish=pol.grad_norm_after)
        if judge:
            v = (end_state(net, prob, floor, tol, spectrum_method, dense_max)
                 if judge_network is None else judge_network(net))
            row = {**v.as_dict(), **row}
            directions.append(v.escape.direction if v.escape is not None
                              else np.full(Xr.shape[1], np.nan))
        rows.append(row)
        if progress is not None:
            progress(i + 1, len(chosen))
    out = xr.Dataset(coords={"run": ds["run"].values[chosen]})
    for key in rows[0] if rows else ():
        out[f"end_{key}"] = ("run", np.array([row[key] for row in rows]))
    if judge and rows:
        out["end_escape_direction"] = (("run", "dim"), np.array(directions))
    if polished:
        out["a_polished"] = (("run", "neuron"), np.array([np.asarray(n.a) for n in polished]))
        out["W_polished"] = (("run", "neuron", "dim"),
                             np.array([np.asarray(n.W) for n in polished]))
    out.attrs.update({"at": str(at), "floor": floor, "activation": activation.name,
                      "leak": activation.leak, "loss_name": loss.name,
                      "reduction": loss.reduction, "kappa": kappa,
                      "polish": polish_method or "none"})
    if judge:
        out.attrs.update({"verdicts": ", ".join(VERDICTS),
                          **{f"tolerance_{k}": v for k, v in asdict(tol).items()},
                          "tolerance_rule": "grad, loss absolute; curvature relative to "
                                            "max(1, max|eigenvalue|) (end_tol_curvature is the "
                                            "absolute value used per run); zero relative to "
                                            "max(1, max||w||); kink relative to ||w|| ||x||"})
    return out


TABLE_FIELDS = ("stop_reason", "end_step", "end_label", "end_loss", "end_grad_norm",
                "end_zero_neurons", "end_dead_neurons", "end_kink_pairs", "end_eig_min",
                "end_eig_max", "end_escape_value", "end_polish_stop", "end_polish_distance",
                "end_polish_relative_distance", "end_reason")
"""The per-run columns of an end-state table (those present in the Dataset)."""


def end_table(ds: xr.Dataset) -> pd.DataFrame:
    """One row per run: why it stopped (``stop_reason``, ``end_step``, from training) and its
    certificate (``end_*``, from :func:`end_states`), the columns of ``TABLE_FIELDS``
    that ``ds`` holds, without the ``end_`` prefix."""
    columns = {"run": ds["run"].values}
    for name in TABLE_FIELDS:
        if name in ds:
            key = name if name in ("stop_reason", "end_step") else name.removeprefix("end_")
            columns[key] = ds[name].values
    return pd.DataFrame(columns)
