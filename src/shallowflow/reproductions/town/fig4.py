"""town-fig4: neuron norms and directions around the first jump.

Paper (003 Fig. 4, App. A.3; docs/math.md §3.2, §3.4): same training as Fig. 1; the six neurons'
norm (log scale) and direction projected on a random 2-D plane at several epochs: the neurons
first turn to Algorithm 1's directions D_j^(0)/||D_j^(0)|| (eq.9) while their norms grow
exponentially; just before τ_1 one neuron has a significant norm; just after τ_1 the unfitted
neurons turn quickly to their new directions D_j^(1). The paper's snapshots are at epochs
506 000, 508 000, 510 000 and 538 000 with τ_1 at about epoch 507 000. Here the snapshot times
are chosen from the limit process: 0, τ_1/2, 0.98 τ_1, τ_1, 1.02 τ_1 and midway between τ_2 and
τ_3 (after the second jump; 1.1 τ_2 if there are only two jumps), recorded exactly (probe "W").

Saved Dataset (``results.nc``): at each ``snapshot`` the hidden weights ``W``, the log-norms,
the accelerated time and step, and the cosines of every neuron's direction with Algorithm 1's
D_j^(0) (``cos_old``) and D_j^(1) (``cos_new``); the final log-norms, the data, the initial
network and the limit process's inputs (:func:`~shallowflow.reproductions.town.scale_runs.limit_of`).
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from pydantic import Field

from shallowflow.model.run_attrs import RunAttrs
from shallowflow.plots.labels import lambda_label
from shallowflow.reproductions.base import Figure, Params, Reproduction, Section
from shallowflow.reproductions.claims import Claim
from shallowflow.reproductions.fields import Balance, LearningRate, Log10Lambda, RecordDt, Seed
from shallowflow.reproductions.town import tblel_sources as sources
from shallowflow.reproductions.town.scale_runs import (
    limit_of,
    limit_processes,
    process_vars,
    simulate_scales,
)
from shallowflow.theory.saddle_process import SaddleProcess
from shallowflow.training.entry import Trainer


class Fig4Params(Params):
    """Parameters of town-fig4."""

    n: int = Field(ge=2, description="number of points n = d (X = I)")
    m: int = Field(ge=1, description="network width")
    seed: Seed = Field(description="seed of the labels and the initialisation")
    log10_lambda: Log10Lambda
    lr: LearningRate = Field(description="GD learning rate on the MSE (1/n) sum r^2")
    record_dt: RecordDt = Field(description="record every this much flow time (besides the "
                                            "snapshots)")
    balance: Balance = Field(
        description="log-norm engine balance ('free': plain GD up to rounding)")
    plane_seed: Seed = Field(description="seed of the random projection plane of the figure")


PRESETS = {
    "quick": {"n": 64, "m": 6, "seed": 0, "log10_lambda": -100.0, "lr": 0.01, "record_dt": 2.0,
              "balance": "free", "plane_seed": 1},
    "paper": {"n": 64, "m": 6, "seed": 0, "log10_lambda": -200.0, "lr": 0.01, "record_dt": 1.0,
              "balance": "free", "plane_seed": 1},
}
COS_MIN = 0.99  # direction of the jumping neuron against D_j / ||D_j||
SMALL_NORM = 1e-3  # the other neurons' norms right after the jump
MIN_RADIUS = 0.15  # shorter arrows are drawn at this length (directions stay visible)
SUMMARY = ("Directions and norms of the six neurons around the first jump, against the "
           "limit process's predicted directions (Figure 4 of Town et al.).")


def directions_of(W: np.ndarray) -> np.ndarray:
    """w_j / ||w_j|| over the last axis (zero rows stay zero)."""
    nrm = np.linalg.norm(W, axis=-1, keepdims=True)
    return np.divide(W, nrm, out=np.zeros_like(W), where=nrm > 0)


def predicted_directions(p: SaddleProcess, k: int) -> np.ndarray:
    """(m, n): D_j^(k)/||D_j^(k)|| with D_j^(k) = Σ_{i ∈ A_j ∩ U_k} |y_i| e_i for X = I
    (docs/math.md §3.4 eq.9; rows of zeros where the set is empty)."""
    y = np.abs(p.y)
    unfitted = (p.fit_jump == 0) | (p.fit_jump > k)  # U_k
    return directions_of((p.mask & unfitted[:, None]).T * y[None])  # (m, n)


def snapshot_times(p: SaddleProcess) -> dict[str, float]:
    """The snapshots' accelerated times, by name (module docstring)."""
    t1 = float(p.tau[0])
    times = {"start": 0.0, "0.5 τ_1": 0.5 * t1, "0.98 τ_1": 0.98 * t1, "τ_1": t1,
             "1.02 τ_1": 1.02 * t1}
    if p.K >= 3:
        times["(τ_2 + τ_3)/2"] = 0.5 * float(p.tau[1] + p.tau[2])
    elif p.K == 2:
        times["1.1 τ_2"] = 1.1 * float(p.tau[1])
    return times


# -------------------------------------------------------------------------------- simulate
def simulate(P: Fig4Params, train: Trainer) -> xr.Dataset:
    """One run recorded exactly at the snapshot times (from the limit process, which depends on
    the problem only); the snapshots and their cosines with Algorithm 1's directions."""
    ll = P.log10_lambda * math.log(10)
    problem = {"n": P.n, "m": P.m, "seed": P.seed, "labels": "abs_normal", "loss": "mse",
               "balance": P.balance}
    p = limit_processes([problem])[0]
    snaps = snapshot_times(p)
    runs = simulate_scales(train, problem, [ll], P.lr, P.record_dt,
                           extra_times=list(snaps.values()), probes=("loss", "log_norm", "W"),
                           label="town-fig4", process=p)
    ds = runs.ds.isel(run=0)
    t = ds.time_accelerated.values
    sel = np.argmin(np.abs(t[None] - np.array(list(snaps.values()))[:, None]), axis=1)
    units = directions_of(ds.W.values[sel])  # (snapshot, neuron, dim)
    D0, D1 = predicted_directions(p, 0), predicted_directions(p, 1)
    snap = ("snapshot", "neuron")
    return xr.Dataset(
        {"W": ((*snap, "dim"), ds.W.values[sel]), "log_norm": (snap, ds.log_norm.values[sel]),
         "t": ("snapshot", t[sel]), "step": ("snapshot", ds.step.values[sel]),
         "cos_old": (snap, np.sum(units * D0, axis=2)),
         "cos_new": (snap, np.sum(units * D1, axis=2)),
         "log_norm_final": ("neuron", ds.log_norm.values[-1]),
         "a_init": ("neuron", ds.a_init.values), "W_init": (("neuron", "dim"), ds.W_init.values),
         "X": (("sample", "dim"), ds.X.values), "y": ("sample", runs.y), **process_vars(p)},
        coords={"snapshot": list(snaps), "neuron": np.arange(p.m)},
        attrs={"log_lambda": ll, "lr": P.lr, "loss": "mse", "span": RunAttrs.of(ds).span})


# ----------------------------------------------------------------------------------- judge
def direction_claim(ds: xr.Dataset, p: SaddleProcess, P: Fig4Params) -> Claim:
    """Rule: the jumping neuron's cosine with D_j^(0) is >= COS_MIN at 0.98 τ_1 and at τ_1."""
    j1, cos0 = int(p.sequence[0]), ds.cos_old
    c_before, c_at = float(cos0.sel(snapshot="0.98 τ_1")[j1]), float(cos0.sel(snapshot="τ_1")[j1])
    return Claim(
        "jump_direction",
        "At the jump, the jumping neuron points along D_j/||D_j|| (Algorithm 1, eq.9)",
        1.0, {"cos at 0.98 τ_1": round(c_before, 6), "cos at τ_1": round(c_at, 6)},
        "reproduced" if min(c_before, c_at) >= COS_MIN else "not reproduced", None,
        f"Neuron {j1} (Algorithm 1's first jump), lambda = {lambda_label(P.log10_lambda)}, "
        f"lr = {P.lr:g}; cosine between w_j/||w_j|| and D_j^(0)/||D_j^(0)||. Rule: >= {COS_MIN} at "
        f"both times. The other unfitted neurons' cosines with their own D_j^(0):",
        {nm: [round(float(c), 4) for c in cos0.sel(snapshot=nm).values]
         for nm in ("0.5 τ_1", "0.98 τ_1")},
        source=sources.JUMP_DIRECTION)


def alone_claim(ds: xr.Dataset, p: SaddleProcess) -> Claim:
    """Rule: at 1.02 τ_1 the jumping neuron has at least half its final norm and every other
    neuron a norm <= SMALL_NORM."""
    j1 = int(p.sequence[0])
    others = [j for j in range(p.m) if j != j1]
    after = ds.log_norm.sel(snapshot="1.02 τ_1").values
    final_norm = float(np.exp(ds.log_norm_final.values[j1]))
    grown, rest = float(np.exp(after[j1])), float(np.exp(after[others].max()))
    return Claim(
        "alone_grows", "At the first jump only the jumping neuron becomes O(1)",
        "one neuron O(1), the others still near 0",
        {"||w_j1|| at 1.02 τ_1": round(grown, 4), "its final norm": round(final_norm, 4),
         "largest other norm": float(f"{rest:.3g}")},
        "reproduced" if grown >= 0.5 * final_norm and rest <= SMALL_NORM else "not reproduced",
        None,
        f"Rule: at 1.02 τ_1 the jumping neuron has at least half its final norm and every other "
        f"neuron a norm <= {SMALL_NORM}.",
        {"log||w_j|| at 0.98 τ_1": [round(float(v), 2)
                                    for v in ds.log_norm.sel(snapshot="0.98 τ_1").values],
         "log||w_j|| at 1.02 τ_1": [round(float(v), 2) for v in after]},
        source=sources.ALONE)


def realignment_claim(ds: xr.Dataset, p: SaddleProcess) -> Claim | None:
    """Rule: reproduced if the neurons whose direction changes at the jump turned (cosine with
    D^(1) above that with D^(0) and above its value at 0.98 τ_1) and all reach COS_MIN; partly if
    they turned without all reaching it. None when no neuron's direction changes."""
    j1 = int(p.sequence[0])
    D0, D1 = predicted_directions(p, 0), predicted_directions(p, 1)
    turned = [j for j in range(p.m)
              if j != j1 and np.any(D1[j]) and float(np.sum(D0[j] * D1[j])) < 0.999]
    if not turned:
        return None
    after, before = {"snapshot": "1.02 τ_1"}, {"snapshot": "0.98 τ_1"}
    c_new = [float(ds.cos_new.sel(after)[j]) for j in turned]
    c_old = [float(ds.cos_old.sel(after)[j]) for j in turned]
    c_prev = [float(ds.cos_new.sel(before)[j]) for j in turned]
    turning = all(cn > co and cn > cp for cn, co, cp in zip(c_new, c_old, c_prev, strict=True))
    verdict = ("reproduced" if turning and min(c_new) >= COS_MIN
               else "partly" if turning else "not reproduced")
    return Claim(
        "realignment", "Just after the jump the unfitted neurons turn to their new directions "
        "D_j^(1)/||D_j^(1)||",
        1.0, {f"neuron {j}": round(c, 4) for j, c in zip(turned, c_new, strict=True)},
        verdict, None,
        f"Cosines at 1.02 τ_1 with the new directions, for the neurons whose direction changes "
        f"(cos(D^(0), D^(1)) < 0.999). Rule: reproduced if all >= {COS_MIN} and the neurons "
        f"turned (cosine with the new direction larger than with the old one, "
        f"{[round(c, 4) for c in c_old]}, and than at 0.98 τ_1, {[round(c, 4) for c in c_prev]}); "
        f"partly if they turned without all reaching {COS_MIN}. The turn takes a few "
        f"1/(β_j^(1) log(1/lambda)) in accelerated time (the fitted points' components stop "
        f"growing while the others grow), 0 in the limit; the simulated jump itself comes "
        f"O(1/log(1/lambda)) after τ_1.",
        {"cos with old D^(0) at 1.02 τ_1": [round(c, 4) for c in c_old]},
        source=sources.REALIGNMENT)


def judge(ds: xr.Dataset, P: Fig4Params) -> list[Claim]:
    """jump_direction, alone_grows and, when some neuron's direction changes, realignment."""
    p = limit_of(ds)
    claims = [direction_claim(ds, p, P), alone_claim(ds, p)]
    turn = realignment_claim(ds, p)
    return claims + ([turn] if turn is not None else [])


# ------------------------------------------------------------------------------------ draw
def draw(ds: xr.Dataset, P: Fig4Params) -> list[Figure]:
    """Polar plots of the neurons at every snapshot."""
    import matplotlib.pyplot as plt

    p, L = limit_of(ds), -float(ds.attrs["log_lambda"])
    t, logn, units = ds.t.values, ds.log_norm.values, directions_of(ds.W.values)
    rng = np.random.default_rng(P.plane_seed)
    plane = np.linalg.qr(rng.standard_normal((p.d, 2)))[0].T  # (2, d), orthonormal rows
    colors = plt.cm.tab10(np.arange(p.m))
    names = [str(v) for v in ds.snapshot.values]
    cols = 3
    rows = math.ceil(len(names) / cols)
    fig = plt.figure(figsize=(5.0 * cols, 4.9 * rows))
    for i, name in enumerate(names):
        ax = fig.add_subplot(rows, cols, i + 1, projection="polar")
        k = int(np.searchsorted(p.tau, t[i], side="right"))
        Dk = predicted_directions(p, k)
        for j in range(p.m):
            radius = 1.0 + logn[i, j] / L  # 0 at initialisation, 1 once ||w_j|| = O(1)
            proj = plane @ units[i, j]
            ang = math.atan2(proj[1], proj[0])
            ax.annotate("", xy=(ang, max(radius, MIN_RADIUS)), xytext=(0, 0),
                        arrowprops={"arrowstyle": "-|>", "color": colors[j], "lw": 2.0})
            if p.fitted_neurons(k)[j]:
                continue
            if np.any(Dk[j]):
                pd = plane @ Dk[j]
                ax.plot([math.atan2(pd[1], pd[0])] * 2, [0, 1.08], ls="--", color=colors[j],
                        lw=0.9, alpha=0.8)
        ax.set_ylim(0, 1.1)
        ax.set_yticks([0.25, 0.5, 0.75, 1.0])
        ax.tick_params(labelsize=7)
        ax.set_title(f"{name}: t = {t[i]:.3f}, epoch {int(ds.step.values[i]):,}", fontsize=9)
    handles = [plt.Line2D([], [], color=colors[j], lw=2,
                          label=f"neuron {j}" + (f" (jump {p.neuron_jump[j]})" if p.neuron_jump[j]
                                                 else ""))
               for j in range(p.m)]
    handles.append(plt.Line2D([], [], color="0.3", ls="--", label="Algorithm 1 direction D_j^(k)"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8)
    fig.suptitle(f"Town et al. Fig. 4: lambda = {lambda_label(P.log10_lambda)}, GD lr = "
                 f"{P.lr:g}; arrow angle: direction projected on a random plane, arrow length: "
                 f"1 + log||w_j|| / log(1/lambda)", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.96))
    return [Figure(
        "fig4_polar", fig,
        "Neurons as arrows: angle of the direction w_j/||w_j|| projected on a random 2-D "
        "plane (seeded), length 1 + log||w_j||/log(1/lambda) (0 at initialisation, 1 once "
        "the neuron is O(1); shorter than 0.15 drawn at 0.15). Dashed: Algorithm 1's "
        "direction D_j^(k)/||D_j^(k)|| of each unfitted neuron on the current saddle "
        "interval. The first jump's neuron grows alone at τ_1; after the jump the others "
        "turn to their new directions.")]


# ---------------------------------------------------------------------------------- method
def method(ds: xr.Dataset, P: Fig4Params) -> list[Section]:
    """Section "Method": the set-up and the snapshot times."""
    p, L = limit_of(ds), -float(ds.attrs["log_lambda"])
    t, steps = ds.t.values, ds.step.values
    names = [str(v) for v in ds.snapshot.values]
    return [("Method", (
        f"Same problem and training as town-fig1 (n = d = {p.n}, m = {p.m}, seed {P.seed}, GD "
        f"lr = {P.lr:g} on MSE, log-norm parametrisation, balance '{P.balance}', span = "
        f"{RunAttrs.of(ds).span}), at lambda = {lambda_label(P.log10_lambda)} (log(1/lambda) = "
        f"{L:.1f}). Snapshots (accelerated time, epoch): "
        + ", ".join(f"{nm}: {t[i]:.4f} / {int(steps[i]):,}" for i, nm in enumerate(names))
        + f". Algorithm 1: τ = {np.array2string(p.tau, precision=4)}, first jump by neuron "
        f"{int(p.sequence[0])}. The paper's snapshots (epochs 506k, 508k, 510k vs τ_1 ≈ 507k) lie "
        f"within 0.4% of τ_1, consistent with a much smaller lambda (town-fig1: probably about "
        f"e^-1000), where the jump is correspondingly sharper; here ±2% of τ_1 is used."))]


REPRODUCTION = Reproduction(
    "town-fig4", "neuron directions and norms around a jump",
    "Town, Boursier, Lewis, Englert, Lazić (003), Figure 4", params=Fig4Params, presets=PRESETS,
    simulate=simulate, judge=judge, draw=draw, method=method, summary=SUMMARY)
