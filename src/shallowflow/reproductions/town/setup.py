"""Common set-up of the Town et al. reproductions town-fig1, town-fig3, town-fig4 and
town-convergence (MATH.md §3.1, §3.7; paper App. A).

The paper's protocol: m = 6 neurons, n = d = 64 orthonormal points (X = I), labels |N(0, 1)|,
balanced initialisation a_j = s_j lambda, w_j = lambda w̄_j(0) (Assumption 3), full-batch GD with
learning rate 0.01 on PyTorch's MSE loss (1/n) Σ r², i.e. ``loss = "mse"`` here, for which the
limit process (Algorithm 1) uses c_L = 2/n (:func:`~shallowflow.theory.saddle_process.
loss_constant`). The initial scale is given by its natural log (``init.log_scale``) and the
log-norm engine is used at every scale (the paper also kept the weights rescaled by 1/lambda and
tracked the log-scale separately); ``balance = "free"`` is plain GD up to rounding.

GD is the Euler scheme of the flow: in accelerated time each jump is shifted by about lr/2 (for a
first jump; lr times the jumping neuron's slope times its waiting time in general), independently
of lambda. Every report states the step size.

Helpers:

* :func:`tblel_experiment`: the validated experiment of one run;
* :func:`simulate_scales`: one batch of runs of the same problem at several lambda, recorded on a
  uniform flow-time grid plus chosen accelerated times, each run stopped once its loss is within
  ``settle`` of the limit's final loss (the loss has a floor when some point is covered by no
  neuron, MATH.md §3.3);
* :func:`crossing_times`: the measured jump times (first crossing of the midpoint between two
  consecutive limit plateaus);
* :func:`growth_times`: when each neuron's norm becomes O(1) (half its final norm);
* :func:`linear_slopes`: least-squares slopes of the log-norms on the interior of each saddle
  interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from shallowflow.config import Experiment, experiment_from_mapping
from shallowflow.experiment import RunRef, prepare_batch, run_batch
from shallowflow.progress import step_progress
from shallowflow.theory.saddle_process import SaddleProcess, from_batch

PAPER_LR = 0.01
GROWN_NORM = 0.1  # ||w_j|| above which a neuron counts as O(1) ("grown")
FIT_FRACTION = 0.5  # a point is fitted once h(x_i) >= 50% of y_i (paper App. A.1)


def log10_label(log10_lambda: float) -> str:
    """'1e-100' for -100, 'e^-1000' style for non-integer decimal exponents."""
    if float(log10_lambda).is_integer():
        return f"1e{int(log10_lambda)}"
    return f"e^{log10_lambda * math.log(10):.0f}"


def tblel_experiment(*, n: int, m: int, log_lambda: float, lr: float, duration: float,
                     seed: int, labels: str = "abs_normal", basis: str = "canonical",
                     loss: str = "mse", balance: str = "free",
                     probes: Sequence[str] = ("loss", "log_norm"), data: dict | None = None,
                     init: dict | None = None, time_scale: float = 1.0,
                     stop_loss: float | None = None) -> Experiment:
    """One run of the paper's set-up (``data``/``init`` replace the orthonormal data and the random
    balanced initialisation, e.g. by a file and a given network)."""
    return experiment_from_mapping({
        "name": f"tblel-n{n}-m{m}-s{seed}", "seed": seed, "runs": 1,
        "data": data or {"kind": "orthonormal", "n": n, "d": n, "labels": labels, "basis": basis},
        "model": {"width": m},
        "init": {**(init or {"scheme": "balanced"}), "log_scale": float(log_lambda)},
        "train": {"loss": loss, "lr": lr, "duration": float(duration), "engine": "lognorm",
                  "balance": balance, "time_scale": float(time_scale), "stop_loss": stop_loss},
        "record": {"points": 0, "probes": list(probes)},  # schedule: see simulate_scales
    })


def limit_processes(problems: Sequence[dict[str, Any]]) -> list[SaddleProcess]:
    """Algorithm 1 for each problem (same shapes), from its data and unit-scale initial network,
    all problems prepared in one batch (:func:`~shallowflow.theory.saddle_process.from_batch`)."""
    exps = [tblel_experiment(**pb, log_lambda=-10.0, lr=PAPER_LR, duration=1.0) for pb in problems]
    batch = prepare_batch([RunRef(e, 0) for e in exps])
    return [from_batch(batch, q) for q in range(len(exps))]


@dataclass
class ScaleRuns:
    """A batch of runs of one problem at several scales, and the problem's limit process."""

    ds: xr.Dataset  # the simulation (dims run, time, ...)
    process: SaddleProcess
    y: np.ndarray
    log_lambdas: np.ndarray  # natural logs, (R,)

    @property
    def L(self) -> np.ndarray:
        """log(1/lambda) per run."""
        return -self.log_lambdas


def flow_duration(process: SaddleProcess, L_max: float, margin: float = 0.08,
                  settle: float = 200.0) -> float:
    """Flow time covering the last limit jump with ``margin`` (relative) at log(1/lambda) = L_max,
    plus ``settle`` units of flow time for the last fit to converge."""
    last = float(process.tau[-1]) if process.K else 1.0
    return last * (1.0 + margin) * L_max + settle


def simulate_scales(problem: dict[str, Any], log_lambdas: Sequence[float], lr: float,
                    record_dt: float, duration: float | None = None,
                    extra_times: Sequence[float] = (), settle_rtol: float = 1e-12,
                    probes: Sequence[str] = ("loss", "log_norm"), label: str = "",
                    show_progress: bool = True, process: SaddleProcess | None = None) -> ScaleRuns:
    """Train ``problem`` (keyword arguments of :func:`tblel_experiment` without log_lambda, lr,
    duration, stop_loss) at every natural-log scale of ``log_lambdas`` in one batch.

    Records: every ``record_dt`` units of flow time, plus the accelerated times ``extra_times``
    of every run (rounded to steps). Each run stops once its loss is below the limit's final
    loss + ``settle_rtol`` x its initial plateau (the limit's loss floor is exact for GD too: an
    uncovered point is never fitted); ``duration`` defaults to :func:`flow_duration`.
    ``process``: the problem's limit process when already computed (:func:`limit_processes`).
    """
    return simulate_problems([problem], log_lambdas, lr, record_dt, duration, extra_times,
                             settle_rtol, probes, label, show_progress,
                             processes=None if process is None else [process])[0]


def simulate_problems(problems: Sequence[dict[str, Any]], log_lambdas: Sequence[float], lr: float,
                      record_dt: float, duration: float | None = None,
                      extra_times: Sequence[float] = (), settle_rtol: float = 1e-12,
                      probes: Sequence[str] = ("loss", "log_norm"), label: str = "",
                      show_progress: bool = True, settle: float = 200.0, stop: bool = True,
                      processes: Sequence[SaddleProcess] | None = None) -> list[ScaleRuns]:
    """:func:`simulate_scales` for several problems of the same shapes (e.g. different seeds) in
    one batch of len(problems) x len(log_lambdas) runs; one :class:`ScaleRuns` per problem. The
    default duration is the longest :func:`flow_duration` (with ``settle``) over the problems.
    ``stop=False``: no early stop, every run trains for the whole duration (for runs of similar
    lengths this avoids the engine's re-batching of stopped runs, which compiles anew for every
    new batch size). ``processes``: the problems' limit processes when already computed."""
    lls = np.asarray(log_lambdas, dtype=np.float64)
    procs = limit_processes(problems) if processes is None else list(processes)
    if duration is None:
        duration = max(flow_duration(p, float(-lls.min()), settle=settle) for p in procs)
    exps = [tblel_experiment(**pb, log_lambda=float(ll), lr=lr, duration=duration, probes=probes,
                             stop_loss=(float(p.losses[-1] + settle_rtol * p.losses[0]) if stop
                                        else None))
            for pb, p in zip(problems, procs, strict=True) for ll in lls]
    batch = prepare_batch([RunRef(e, 0) for e in exps])
    total = exps[0].train.n_steps
    every = max(1, round(record_dt / lr))
    marks = [np.arange(0, total + 1, every, dtype=np.int64), np.array([total], np.int64)]
    for t in extra_times:
        marks.append(np.round(float(t) * -lls / lr).astype(np.int64))
    sched = np.unique(np.concatenate(marks))
    batch.schedule = sched[(sched >= 0) & (sched <= total)]
    name = label or exps[0].name
    with step_progress(f"{name}: {len(exps)} runs, lr {lr:g}", show_progress) as update:
        ds = run_batch(batch, update)
    y = np.asarray(batch.y)
    out, nl = [], len(lls)
    for q, p in enumerate(procs):
        sel = np.arange(q * nl, (q + 1) * nl)
        part = ds.isel(run=sel).assign_coords(run=np.arange(nl))
        out.append(ScaleRuns(part, p, y if y.ndim == 1 else y[sel[0]], lls))
    return out


# ------------------------------------------------------------------------------- measurements
def crossing_times(loss: np.ndarray, t: np.ndarray, plateaus: np.ndarray) -> np.ndarray:
    """For consecutive limit plateaus (L_{k-1}, L_k), the time at which ``loss`` first falls below
    their midpoint, interpolated linearly between records; NaN if it never does. loss, t
    (..., T) (e.g. one row per run); returns (..., K)."""
    loss, t = np.asarray(loss), np.asarray(t)
    mid = 0.5 * (plateaus[:-1] + plateaus[1:])  # (K,)
    below = loss[..., None, :] < mid[:, None]  # (..., K, T)
    i = np.argmax(below, axis=-1)  # first record below the midpoint (0 if none)
    prev = np.maximum(i - 1, 0)

    def at(v: np.ndarray, idx: np.ndarray) -> np.ndarray:  # v (..., T) at idx (..., K)
        return np.take_along_axis(v, idx, axis=-1)

    l0, l1, t0, t1 = at(loss, prev), at(loss, i), at(t, prev), at(t, i)
    with np.errstate(divide="ignore", invalid="ignore"):  # i = 0: no interpolation
        frac = (l0 - mid) / (l0 - l1)
    out = np.where(i == 0, t0, t0 + frac * (t1 - t0))
    return np.where(below.any(axis=-1), out, np.nan)


def growth_times(log_norm: np.ndarray, t: np.ndarray, fraction: float = 0.5,
                 level: float = GROWN_NORM) -> np.ndarray:
    """(..., m) first time each neuron's norm reaches ``fraction`` of its final (last recorded)
    norm, for the neurons whose final norm is at least ``level`` (O(1)); NaN for the others. A
    fixed threshold would not do: at finite lambda a neuron waiting for a close next jump already
    has norm lambda^{-e_j}, e.g. 0.15 for e_j = -0.008 at lambda = 1e-100. log_norm (..., T, m),
    t (..., T)."""
    final = log_norm[..., -1, :]
    first = np.argmax(log_norm >= (final + math.log(fraction))[..., None, :], axis=-2)
    return np.where(final < math.log(level), np.nan, np.take_along_axis(t, first, axis=-1))


def linear_slopes(process: SaddleProcess, t_acc: np.ndarray, exponent: np.ndarray,
                  interior: float = 0.6) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares slopes (K+1, m) of the measured exponents log||w_j|| / log(1/lambda) against
    accelerated time on the central ``interior`` fraction of each saddle interval (τ_k, τ_{k+1})
    (the last interval: (τ_K, 1.1 τ_K)), with their R² (NaN where a neuron is already fitted or
    fewer than 5 records fall in the window)."""
    starts = process.jump_starts
    ends = np.concatenate([process.tau, [starts[-1] * 1.1 + 1e-9]])
    slopes = np.full((process.K + 1, process.m), np.nan)
    r2 = np.full_like(slopes, np.nan)
    for k in range(process.K + 1):
        mid, half = 0.5 * (starts[k] + ends[k]), 0.5 * interior * (ends[k] - starts[k])
        sel = (t_acc >= mid - half) & (t_acc <= mid + half)
        if sel.sum() < 5:
            continue
        x = t_acc[sel]
        for j in np.flatnonzero(~process.fitted_neurons(k)):
            yv = exponent[sel, j]
            coef = np.polyfit(x, yv, 1)
            resid = yv - np.polyval(coef, x)
            ss = np.sum((yv - yv.mean()) ** 2)
            slopes[k, j] = coef[0]
            r2[k, j] = 1.0 - np.sum(resid**2) / ss if ss > 0 else 1.0
    return slopes, r2


def fitted_counts(output: np.ndarray, y: np.ndarray, fraction: float = FIT_FRACTION) -> np.ndarray:
    """Number of points with h(x_i) >= fraction y_i (same sign), output (..., n)."""
    return np.sum((output * np.sign(y) >= fraction * np.abs(y)) & (y != 0), axis=-1)


def limit_fitted_counts(process: SaddleProcess) -> np.ndarray:
    """(K+1,): number of points fitted by the saddle θ^(k)."""
    sizes = [len(s) for s in process.fitted_sets()]
    return np.concatenate([[0], np.cumsum(sizes)]).astype(int)


def process_table(process: SaddleProcess) -> str:
    """Markdown table of Algorithm 1's jumps."""
    rows = ["| k | tau_k | neuron j_k | points fitted | ||D|| | loss after |", "|---|---|---|---|---|---|"]
    sets = process.fitted_sets()
    for k in range(process.K):
        rows.append(f"| {k + 1} | {process.tau[k]:.5f} | {int(process.sequence[k])} | {len(sets[k])} | "
                    f"{process.jump_scale[k]:.4f} | {process.losses[k + 1]:.5g} |")
    return "\n".join(rows)
