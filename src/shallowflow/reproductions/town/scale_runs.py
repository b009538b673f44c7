"""Common set-up of the Town et al. reproductions town-fig1, town-fig3, town-fig4 and
town-convergence (docs/math.md §3.1, §3.7; paper App. A).

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

* :func:`tblel_experiment`: the validated experiment of one run, with its record schedule;
* :func:`limit_processes`: Algorithm 1 for problems, from their data and unit-scale networks;
* :func:`simulate_scales` / :func:`simulate_problems`: problems trained at several lambda in one
  batch through ``train``, recorded on a uniform flow-time grid plus chosen accelerated times,
  each run stopped once its loss is within ``settle`` of the limit's final loss (the loss has a
  floor when some point is covered by no neuron, docs/math.md §3.3);
* :func:`process_vars` / :func:`limit_of`: the limit process's inputs stored in a reproduction's
  Dataset, and Algorithm 1 recomputed from them (judge and draw need no training);
* :func:`linear_slopes`: least-squares slopes of the log-norms on the interior of each saddle
  interval; :func:`limit_fitted_counts`, :func:`process_table`: summaries of the process.

The measurements on recorded curves (jump times, growth times, fitted points) are in
:mod:`shallowflow.analysis.curves`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr
from pydantic import Field

from shallowflow.config import Experiment, experiment_from_mapping
from shallowflow.reproductions.base import Params
from shallowflow.reproductions.fields import Balance, LearningRate, NegativeLog10, RecordDt, Seed
from shallowflow.theory.saddle_process import SaddleProcess, limit_process
from shallowflow.training.entry import Trainer
from shallowflow.training.overlays import saddle_process_from_experiment

PAPER_LR = 0.01
SETTLE_RTOL = 1e-12  # a run stops once its loss is within this x its initial plateau of the floor


class ScalesParams(Params):
    """Parameters shared by the reproductions that train one problem at several scales lambda
    (town-fig1, town-fig3); each adds its own."""

    n: int = Field(ge=2, description="number of points n = d (X = I)")
    m: int = Field(ge=1, description="network width")
    seed: Seed = Field(description="seed of the labels and the initialisation")
    log10_lambdas: list[NegativeLog10] = Field(
        min_length=1, description="decimal logs of the initial scales lambda")
    lr: LearningRate = Field(description="GD learning rate on the MSE (1/n) sum r^2")
    record_dt: RecordDt
    balance: Balance = Field(
        description="log-norm parametrisation balance ('free': plain GD up to rounding)")

def tblel_experiment(*, n: int, m: int, log_lambda: float, lr: float, duration: float,
                     seed: int, labels: str = "abs_normal", basis: str = "canonical",
                     loss: str = "mse", balance: str = "free",
                     probes: Sequence[str] = ("loss", "log_norm"), data: dict | None = None,
                     init: dict | None = None, stop_loss: float | None = None,
                     record_every: int | None = None, record_times: Sequence[float] = ()) -> Experiment:
    """One run of the paper's set-up (``data``/``init`` replace the orthonormal data and the random
    balanced initialisation, e.g. by in-memory arrays and a given network). Records every
    ``record_every`` steps and at the flow times ``record_times`` (rounded to steps)."""
    return experiment_from_mapping({
        "name": f"tblel-n{n}-m{m}-s{seed}", "seed": seed, "runs": 1,
        "data": data or {"kind": "orthonormal", "n": n, "d": n, "labels": labels, "basis": basis},
        "model": {"width": m},
        "init": {**(init or {"scheme": "balanced"}), "log_scale": float(log_lambda)},
        "train": {"loss": loss, "lr": lr, "duration": float(duration), "parametrisation": "lognorm",
                  "balance": balance, "time_scale": 1.0, "stop_loss": stop_loss},
        "record": {"every": record_every, "points": 0, "at_times": [float(t) for t in record_times],
                   "probes": list(probes)},
    })


def limit_processes(problems: Sequence[dict[str, Any]]) -> list[SaddleProcess]:
    """Algorithm 1 for each problem (keyword arguments of :func:`tblel_experiment` without
    log_lambda, lr, duration), from its data and unit-scale initial network, no training
    (:func:`~shallowflow.training.overlays.saddle_process_from_experiment`)."""
    return [saddle_process_from_experiment(tblel_experiment(**pb, log_lambda=-10.0, lr=PAPER_LR,
                                                            duration=1.0))
            for pb in problems]


@dataclass
class ScaleRuns:
    """The runs of one problem at several scales, and the problem's limit process."""

    ds: xr.Dataset  # the simulation (dims run, time, ...) with its data X, y
    process: SaddleProcess
    log_lambdas: np.ndarray  # natural logs, (R,)

    @property
    def L(self) -> np.ndarray:
        """log(1/lambda) per run."""
        return -self.log_lambdas

    @property
    def y(self) -> np.ndarray:
        """The labels (n,)."""
        y = self.ds.y.values
        return y if y.ndim == 1 else y[0]


def flow_duration(process: SaddleProcess, L_max: float, margin: float = 0.08,
                  settle: float = 200.0) -> float:
    """Flow time covering the last limit jump with ``margin`` (relative) at log(1/lambda) = L_max,
    plus ``settle`` units of flow time for the last fit to converge:
    τ_K (1 + margin) L_max + settle."""
    last = float(process.tau[-1]) if process.K else 1.0
    return last * (1.0 + margin) * L_max + settle


def stack_runs(dss: Sequence[xr.Dataset]) -> xr.Dataset:
    """The runs of one-run Datasets of one batch (same records) as one Dataset, run 0..R-1;
    variables without a run dimension (shared data) are kept once."""
    out = xr.concat(list(dss), dim="run", data_vars="minimal", coords="minimal",
                    compat="override", combine_attrs="override")
    return out.assign_coords(run=np.arange(out.sizes["run"]))


def simulate_scales(train: Trainer, problem: dict[str, Any], log_lambdas: Sequence[float],
                    lr: float, record_dt: float, extra_times: Sequence[float] = (),
                    probes: Sequence[str] = ("loss", "log_norm"), label: str = "",
                    process: SaddleProcess | None = None) -> ScaleRuns:
    """Train ``problem`` (keyword arguments of :func:`tblel_experiment` without log_lambda, lr,
    duration, stop_loss) at every natural-log scale of ``log_lambdas`` in one batch.

    Records: every ``record_dt`` units of flow time, plus the accelerated times ``extra_times``
    of every run (flow time t log(1/lambda), rounded to steps); the batch records at the union
    of its runs' schedules. Each run stops once its loss is below the limit's final loss +
    SETTLE_RTOL x its initial plateau (the limit's loss floor is exact for GD too: an
    uncovered point is never fitted) or after :func:`flow_duration`.
    ``process``: the problem's limit process when already computed (:func:`limit_processes`).
    """
    return simulate_problems(train, [problem], log_lambdas, lr, record_dt, extra_times, probes,
                             label, processes=None if process is None else [process])[0]


def simulate_problems(train: Trainer, problems: Sequence[dict[str, Any]],
                      log_lambdas: Sequence[float], lr: float, record_dt: float,
                      extra_times: Sequence[float] = (),
                      probes: Sequence[str] = ("loss", "log_norm"), label: str = "",
                      settle: float = 200.0, stop: bool = True,
                      processes: Sequence[SaddleProcess] | None = None) -> list[ScaleRuns]:
    """:func:`simulate_scales` for several problems of the same shapes (e.g. different seeds) in
    one batch of len(problems) x len(log_lambdas) runs; one :class:`ScaleRuns` per problem. The
    duration is the longest :func:`flow_duration` (with ``settle``) over the problems.
    ``stop=False``: no early stop, every run trains for the whole duration (for runs of similar
    lengths this avoids the engine's re-batching of stopped runs, which compiles anew for every
    new batch size). ``processes``: the problems' limit processes when already computed."""
    lls = np.asarray(log_lambdas, dtype=np.float64)
    procs = limit_processes(problems) if processes is None else list(processes)
    duration = max(flow_duration(p, float(-lls.min()), settle=settle) for p in procs)
    every = max(1, round(record_dt / lr))
    exps = [tblel_experiment(**pb, log_lambda=float(ll), lr=lr, duration=duration, probes=probes,
                             stop_loss=(float(p.losses[-1] + SETTLE_RTOL * p.losses[0]) if stop
                                        else None),
                             record_every=every, record_times=[float(t) * -ll for t in extra_times])
            for pb, p in zip(problems, procs, strict=True) for ll in lls]
    dss = train(exps, label=f"{label or exps[0].name}: lr {lr:g}", keep_data=True)
    nl = len(lls)
    return [ScaleRuns(stack_runs(dss[q * nl:(q + 1) * nl]), p, lls) for q, p in enumerate(procs)]


# ------------------------------------------------------------------- the process in a Dataset
def process_vars(p: SaddleProcess) -> dict[str, Any]:
    """Dataset variables holding Algorithm 1's inputs besides the data X, y: the initial signs
    s_j and unit directions w̄_j(0) (``limit_sign``, ``limit_direction``) and the constants c_L,
    c (``limit_c_L``, ``limit_normaliser``), for :func:`limit_of`."""
    return {"limit_sign": ("neuron", p.signs), "limit_direction": (("neuron", "dim"), p.directions),
            "limit_c_L": ((), p.c_L), "limit_normaliser": ((), p.loss_normaliser)}


def limit_of(ds: xr.Dataset) -> SaddleProcess:
    """Algorithm 1 (docs/math.md §3.4) recomputed from the inputs saved by :func:`process_vars`
    and the data ``X`` (sample, dim), ``y`` (sample) of ``ds``: the same process as the one the
    runs were compared with (it depends on the directions only through the activation mask)."""
    return limit_process(ds.X.values, ds.y.values, ds.limit_sign.values,
                         ds.limit_direction.values, float(ds.limit_c_L),
                         loss_normaliser=float(ds.limit_normaliser))


# ------------------------------------------------------------------------------- measurements
def linear_slopes(process: SaddleProcess, t_acc: np.ndarray, exponent: np.ndarray,
                  interior: float = 0.6) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares slopes (K+1, m) of the measured exponents log||w_j|| / log(1/lambda) against
    accelerated time on the central ``interior`` fraction of each saddle interval (τ_k, τ_{k+1})
    (the last interval: (τ_K, 1.1 τ_K)), with their R² = 1 - Σ resid² / Σ (e - ē)² (NaN where a
    neuron is already fitted or fewer than 5 records fall in the window; docs/math.md §3.2)."""
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


def limit_fitted_counts(process: SaddleProcess) -> np.ndarray:
    """(K+1,): number of points fitted by the saddle θ^(k), Σ_{k' <= k} |S_k'|."""
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
