"""dana-fig2: the phase transition of the group dynamics (DPB Theorem 2, Figure 2).

Paper (000 §4.2, App. A.6; docs/math.md §1.5, §5): orthonormal inputs, p = 2 groups of k = n/2
points with constant labels 1 and 2 (||D_1|| = 1, ||D_2|| = 2), one neuron per group started in
the span of its group along D_j (N_0 = ||w_j(0)||^2 = 1, c_0 = 1). The rescaled loss
L_n(t) = L(t t_n), t_n = (sqrt(np)/4) log(np), tends to the step function L_inf with jumps at
1/||D_2|| = 1/2 and 1/||D_1|| = 1 and levels 1.25 -> 0.25 -> 0. The paper's figure is the closed
form at n = 100 + floor(e^42) (the authors' script trains nothing); here it is drawn the same way,
and gradient descent on actual group-initialised networks at moderate n is overlaid on its own
closed form (docs/math.md §1.5 exact solution), at step lr and lr/2 (GD is first order in lr).

The data (X = I_n, labels 1 then 2) are given in memory (data kind ``arrays``) and the network is
built by the library's ``group`` initialisation with ``direction="aligned"`` (w_j uniform on its
group, ||w_j|| = 1, a_j = 1) and passed as a ``given`` initialisation: the ``group`` scheme's data
generators have no constant-per-group labels. Training runs in the orthogonal fast path
(``span = "on"``: X = I_n has orthogonal rows).

Layout of the saved Dataset: the closed form on ``(n_closed, s)``; the GD runs on
``(n, lr, record, neuron)`` (records padded with NaN: each n has its own record count); the
measured errors, distances to L_inf and transition windows per n; the paper-n values (closed-form
window, half-loss crossing) on ``neuron``.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr
from pydantic import Field
from scipy.optimize import brentq

from shallowflow.config import Experiment, experiment_from_mapping
from shallowflow.model import initialisation as inits
from shallowflow.model.run_attrs import RunAttrs
from shallowflow.precision import float64
from shallowflow.reproductions.base import Figure, Params, Reproduction, Section
from shallowflow.reproductions.claims import Claim
from shallowflow.reproductions.dana import dpb_sources as sources
from shallowflow.reproductions.dana.group_measures import (
    gd_run,
    gd_windows,
    other_eps_variants,
    other_window_variants,
    sup_outside,
)
from shallowflow.reproductions.fields import LearningRate
from shallowflow.theory import group_dynamics as group
from shallowflow.training.entry import Trainer


class Fig2Params(Params):
    """Parameters of dana-fig2."""

    ns: list[int] = Field(min_length=1, description="sizes n of the gradient-descent problems "
                          "(multiples of the number of groups)")
    lr: LearningRate = Field(description="step of the coarse GD run (the fine run uses lr/2)")
    span: float = Field(gt=0, description="horizon in units of t_n = (sqrt(np)/4) log(np)")
    records: int = Field(ge=1, description="about this many loss records per run")
    eps: float = Field(gt=0, lt=0.5, description="transition window between the levels "
                       "(1-eps)/2 ||D_j||^2 and eps/2 ||D_j||^2 of the group loss")
    window: float = Field(gt=0, description="half-width (in t/t_n) of the windows around the "
                          "jumps left out of sup |L_n - L_inf|")
    levels: list[float] = Field(min_length=1, description="constant label of each group "
                                "(||D_j|| = |level_j|)")


PRESETS = {
    "quick": {"ns": [64, 256, 1024], "lr": 0.5, "span": 1.6, "records": 400, "eps": 0.25,
              "window": 0.2, "levels": [1.0, 2.0]},
    "paper": {"ns": [64, 256, 1024, 4096], "lr": 0.25, "span": 1.6, "records": 400,
              "eps": 0.25, "window": 0.2, "levels": [1.0, 2.0]},
}
N_FIGURE = 100 + math.floor(math.e**42)  # the authors' phase_transition.py
CLOSED_NS = [1e2, 1e3, 1e4, 1e6, 1e9, 1e12, 1e15, float(N_FIGURE)]
S_POINTS = 3201  # grid of t/t_n for the closed form
FIRST_ORDER = (1.6, 2.4)  # error ratio lr vs lr/2 of a first-order method
RICHARDSON_GAIN = 0.25  # the Richardson combination must be at least 4x closer
LIMIT_TOL = 0.01  # sup |L_n - L_inf| at the paper's n
DERIVED_TOL = 0.05  # relative deviation of the GD windows from the derived formula
PRINTED_MISS = 0.5  # relative miss of the printed formula that makes the verdict 'partly'
OTHER_WINDOWS = (0.1, 0.3)  # other half-widths around the jumps (limit_step_function variants)
OTHER_EPS = (0.1, 0.4)  # other transition levels eps (transition_window variants)


# ------------------------------------------------------------------------------------ simulate
def norms(P: Fig2Params) -> np.ndarray:
    """||D_j|| = |y_j| (constant labels per group, orthonormal inputs)."""
    return np.abs(np.asarray(P.levels, float))


def s_grid(P: Fig2Params) -> np.ndarray:
    """The t/t_n grid of the closed-form curves."""
    return np.linspace(0.0, P.span, S_POINTS)


def group_problem(n: int, levels: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                        np.ndarray]:
    """Data X = I_n with constant labels per group and the group-initialised network (a, W)."""
    p = len(levels)
    X = np.eye(n)
    y = np.repeat(np.asarray(levels, float), n // p)
    net = inits.group(jax.random.PRNGKey(0), jnp.asarray(X), jnp.asarray(y), p, 1.0, "aligned")
    return X, y, np.asarray(net.a), np.asarray(net.W)


def every_flow(P: Fig2Params, n: int) -> float:
    """Flow time between records: about span t_n / records, a multiple of lr (at least lr)."""
    t_n = group.rescaled_time(n, len(P.levels))
    flow = max(P.lr, P.span * t_n / P.records)
    return P.lr * max(1, round(flow / P.lr))


def group_experiment(n: int, lr: float, span: float, flow: float,
                     levels: list[float]) -> Experiment:
    """GD (lr, T = p, kappa = 1/p) on the group problem up to span * t_n, recording loss, outputs
    and neuron norms every ``flow`` units of flow time."""
    p = len(levels)
    X, y, a, W = group_problem(n, levels)
    every = max(1, round(flow / lr))
    steps = every * math.ceil(span * group.rescaled_time(n, p) / (every * lr))
    return experiment_from_mapping({
        "name": f"group-n{n}-lr{lr:g}", "seed": 0, "runs": 1,
        "data": {"kind": "arrays", "X": X, "y": y},
        "model": {"width": p, "kappa": "1/p"},
        "init": {"scheme": "given", "a": a, "W": W},
        "train": {"lr": lr, "steps": steps, "time_scale": "width", "span": "on"},
        "record": {"every": every, "points": 0, "probes": ["loss", "output", "neuron_norm"]},
    })


def gd_curves(ds: xr.Dataset, p: int) -> tuple[xr.Dataset, group.GroupProblem]:
    """One trained run (with its data) as curves on ``record``, with the closed form of its
    initial network (docs/math.md §1.5) and the limit L_inf at the same times."""
    X, y = ds.X.values, ds.y.values
    n = y.shape[0]
    prob = group.GroupProblem.from_network(X, y, ds.a_init.values[0], ds.W_init.values[0])
    t, t_n = ds.time.values, group.rescaled_time(n, p)
    r = y[None, :] - ds.output.values[0]  # (time, sample)
    group_loss = 0.5 * (r**2).reshape(r.shape[0], p, n // p).mean(axis=2)
    curves = xr.Dataset(
        {"time": ("record", t),
         "time_rescaled": ("record", t / t_n),
         "loss": ("record", ds.loss.values[0]),
         "group_loss": (("record", "neuron"), group_loss),
         "norm_sq": (("record", "neuron"), ds.neuron_norm.values[0] ** 2),
         "loss_closed": ("record", group.loss(prob, t).values),
         "group_loss_closed": (("record", "neuron"), group.group_loss(prob, t).values),
         "norm_sq_closed": (("record", "neuron"), group.neuron_norm_sq(prob, t).values),
         "loss_limit": ("record", group.limit_loss(prob, t).values),
         "t_n": ((), t_n),
         "span": ((), RunAttrs.of(ds).span)},
        coords={"record": np.arange(t.size), "neuron": np.arange(p)})
    return curves, prob


def gd_measures(n: int, a: xr.Dataset, b: xr.Dataset, prob: group.GroupProblem,
                P: Fig2Params) -> dict[str, Any]:
    """Errors against the closed form at lr (``a``) and lr/2 (``b``), their Richardson
    combination, the distance to L_inf off the jumps, the half-loss crossings and the transition
    windows (GD and formulas) of one n."""
    D, p = norms(P), len(P.levels)
    ref = a.loss_closed.values
    rich = 2 * b.loss.values - a.loss.values  # Richardson: removes the O(lr) term
    return {
        "error": ("lr", [float(np.max(np.abs(c.loss.values - ref) / ref)) for c in (a, b)]),
        "error_richardson": ((), float(np.max(np.abs(rich - ref) / ref))),
        "dist_gd": ((), sup_outside(b.time_rescaled.values, b.loss.values, b.loss_limit.values,
                                    1.0 / D, P.window)),
        "half_time_gd": ("neuron", group.transition_time(prob, 0.5).values
                         / group.rescaled_time(prob.n, p)),
        "window_gd": ("neuron", gd_windows(b, D, P.eps)),
        "window_derived": ("neuron", np.asarray(group.window_width(D, n, p, P.eps))),
        "window_printed": ("neuron", np.asarray(group.window_width_as_printed(D, n, P.eps))),
    }


def simulate_gd(P: Fig2Params, train: Trainer) -> xr.Dataset:
    """GD at lr and lr/2 for every n (recorded at the same flow times), with measures."""
    lrs, p = [P.lr, P.lr / 2], len(P.levels)
    exps = [group_experiment(n, lr, P.span, every_flow(P, n), list(P.levels))
            for n in P.ns for lr in lrs]
    trained = iter(train(exps, label="dana-fig2", keep_data=True))
    parts = []
    for n in P.ns:
        (a, _), (b, prob) = (gd_curves(next(trained), p) for _ in lrs)
        part = xr.concat([a, b], dim="lr").assign_coords(lr=lrs)
        parts.append(part.assign(gd_measures(n, a, b, prob, P)))
    return xr.concat(parts, dim="n", join="outer").assign_coords(n=list(P.ns))


def closed_window(prob: group.GroupProblem, eps: float) -> np.ndarray:
    """(t^j(eps) - t^j(1 - eps))/t_n from the closed-form group loss by root finding (no use of
    the derived window formula, docs/math.md §1.5)."""
    t_n = group.rescaled_time(prob.n, prob.p)
    out = []
    for j in range(prob.p):
        D2 = prob.D_norm[j] ** 2

        def f(s: float, level: float, j: int = j) -> float:
            return float(group.group_loss(prob, np.array([s * t_n])).values[0, j] - level)

        times = [brentq(f, 0.0, 50.0, args=(0.5 * e * D2,), xtol=1e-14) for e in (eps, 1 - eps)]
        out.append(times[0] - times[1])
    return np.array(out)


def simulate_closed(P: Fig2Params) -> xr.Dataset:
    """The closed-form rescaled loss L(s t_n) (c_0 = 1, N_0 = 1) at growing n up to the paper's
    n = 100 + floor(e^42), its limit L_inf, their distance off the jumps, and the paper-n
    transition windows (closed form, derived, printed) and half-loss crossings."""
    D, p, s = norms(P), len(P.levels), s_grid(P)
    probs = [group.GroupProblem.uniform(n, D, N0=1.0, c0=1.0) for n in CLOSED_NS]
    loss = np.stack([group.loss(prob, s * group.rescaled_time(n, p)).values
                     for n, prob in zip(CLOSED_NS, probs, strict=True)])
    big = probs[-1]
    Linf = group.limit_loss(big, s * group.rescaled_time(big.n, p)).values
    return xr.Dataset(
        {"closed_loss": (("n_closed", "s"), loss),
         "limit_loss": ("s", Linf),
         "dist_closed": ("n_closed", [sup_outside(s, L, Linf, 1.0 / D, P.window) for L in loss]),
         "window_closed_paper": ("neuron", closed_window(big, P.eps)),
         "window_derived_paper": ("neuron", np.asarray(group.window_width(D, big.n, p, P.eps))),
         "window_printed_paper": ("neuron",
                                  np.asarray(group.window_width_as_printed(D, big.n, P.eps))),
         "half_time_paper": ("neuron", group.transition_time(big, 0.5).values
                             / group.rescaled_time(big.n, p))},
        coords={"n_closed": CLOSED_NS, "s": s, "neuron": np.arange(p)},
        attrs={"description": "closed-form rescaled loss L(s t_n), docs/math.md §1.5"})


def simulate(P: Fig2Params, train: Trainer) -> xr.Dataset:
    """Closed form at growing n, then GD at lr and lr/2 on group-initialised networks (built here,
    before training: in float64, :func:`shallowflow.precision.float64`)."""
    with float64():
        closed = simulate_closed(P)
        return xr.merge([closed, simulate_gd(P, train)], combine_attrs="override")


# --------------------------------------------------------------------------------------- judge
def closed_form_claim(ds: xr.Dataset, P: Fig2Params) -> Claim:
    """GD approaches the closed form at first order in lr (error ratio in FIRST_ORDER, the
    Richardson combination RICHARDSON_GAIN closer)."""
    ns = [int(n) for n in ds.n.values]
    lr, lr2 = (float(v) for v in ds.lr.values)
    err = {n: float(ds.error.sel(n=n, lr=lr)) for n in ns}
    err2 = {n: float(ds.error.sel(n=n, lr=lr2)) for n in ns}
    err_rich = {n: float(ds.error_richardson.sel(n=n)) for n in ns}
    ratios = {n: err[n] / err2[n] for n in ns}
    first_order = all(FIRST_ORDER[0] <= r <= FIRST_ORDER[1] for r in ratios.values())
    rich_small = all(err_rich[n] <= RICHARDSON_GAIN * err2[n] for n in ns)
    return Claim(
        "closed_form_vs_gd",
        "The exact group dynamics (docs/math.md §1.5: cos_j = tanh(c_j t/2 + artanh c_0), "
        "N_j(t), L^j by eq. 81) is the gradient flow of group-initialised networks",
        "exact for the flow (GD error O(lr))",
        {f"n={n}": round(err[n], 5) for n in ns},
        "reproduced" if first_order and rich_small else "not reproduced", None,
        f"Max over records (t/t_n in [0, {P.span}]) of |L_GD - L_closed|/L_closed at step "
        f"lr = {lr:g} (flow time per step; T = p = {len(P.levels)}). Verdict rule: the error "
        f"halves with the step (ratio in [{FIRST_ORDER[0]}, {FIRST_ORDER[1]}], i.e. first order "
        "in lr, so it vanishes for the flow) and the Richardson combination 2 L(lr/2) - L(lr) is "
        f"at least {1 / RICHARDSON_GAIN:g}x closer than L(lr/2).",
        {**{f"n={n}, lr={lr2:g}": round(err2[n], 5) for n in ns},
         **{f"n={n}, ratio lr/(lr/2)": round(ratios[n], 3) for n in ns},
         **{f"n={n}, Richardson": float(f"{err_rich[n]:.3g}") for n in ns}},
        source=sources.CLOSED_FORM)


def limit_claim(ds: xr.Dataset, P: Fig2Params) -> Claim:
    """sup |L_n - L_inf| off the jumps decreases with n (closed form and GD) and is below
    LIMIT_TOL at the paper's n (Theorem 2)."""
    ns = [int(n) for n in ds.n.values]
    dc, dg = ds.dist_closed.values, ds.dist_gd.values
    decreasing = bool(np.all(np.diff(dc) < 0) and np.all(np.diff(dg) < 0))
    first = min(ns)
    return Claim(
        "limit_step_function",
        "L_n(t) = L(t t_n) tends to the step function L_inf (levels 1.25 -> 0.25 -> 0, jumps at "
        "t = 1/||D_2|| = 1/2 and 1/||D_1|| = 1) (Theorem 2, Figure 2)",
        "L_n -> L_inf", {f"n={n:.3g}": round(float(v), 4)
                         for n, v in zip(ds.n_closed.values, dc, strict=True)},
        "reproduced" if decreasing and dc[-1] < LIMIT_TOL else "not reproduced", None,
        f"sup |L_n - L_inf| over t/t_n in [0, {P.span}] outside windows of half-width "
        f"{P.window} around the jumps, closed form (c_0 = 1, N_0 = 1) at growing n. Verdict "
        f"rule: decreasing in n for the closed form and for the GD runs (lr/2), and below "
        f"{LIMIT_TOL} at the paper's n = 100 + floor(e^42). The approach is slow: the half-loss "
        f"crossing of group j sits at (1/||D_j||)(1 + O(1/log n)): at n = {first}: "
        f"{ds.half_time_gd.sel(n=first).values.round(4).tolist()}; at n = e^42: "
        f"{ds.half_time_paper.values.round(4).tolist()} (limits 1 and 0.5).",
        {**{f"GD n={n}": round(float(v), 4) for n, v in zip(ns, dg, strict=True)},
         **other_window_variants(ds, 1.0 / norms(P), LIMIT_TOL, OTHER_WINDOWS)},
        source=sources.LIMIT)


def window_verdict(rel_derived: float, rel_printed: float, shrinks: bool) -> str:
    """reproduced if the GD windows follow the derived formula (within DERIVED_TOL) and shrink
    with n, 'partly' if the printed formula then misses by more than PRINTED_MISS."""
    if rel_derived < DERIVED_TOL and shrinks:
        return "partly" if rel_printed > PRINTED_MISS else "reproduced"
    return "not reproduced"


def window_claim(ds: xr.Dataset, P: Fig2Params) -> Claim:
    """The transition window shrinks like 1/log n with the derived constant (eq. 12, 86-87)."""
    ns = [int(n) for n in ds.n.values]
    win, der, pr = (ds[k].values for k in ("window_gd", "window_derived", "window_printed"))
    closed_big, der_big, pr_big = (ds[f"window_{k}_paper"].values
                                   for k in ("closed", "derived", "printed"))
    rel_derived = max(float(np.max(np.abs(w / d - 1))) for w, d in zip(win, der, strict=True))
    rel_printed = min(float(np.min(np.abs(w / q - 1))) for w, q in zip(win, pr, strict=True))
    shrinks = bool(np.all(np.diff(win, axis=0) < 0))
    groups = range(ds.sizes["neuron"])
    return Claim(
        "transition_window",
        "Each transition takes a rescaled time (t^j(1-eps) - t^j(eps))/t_n ~ (1/(2||D_j||)) "
        "log C^j(eps)/log n (eq. 12, eq. 86-87), i.e. shrinks like 1/log n",
        {f"printed, n=e^42, j={j + 1}": round(float(pr_big[j]), 5) for j in groups},
        {f"closed form, n=e^42, j={j + 1}": round(float(closed_big[j]), 5) for j in groups},
        window_verdict(rel_derived, rel_printed, shrinks), None,
        f"Window between the levels (1-eps)/2 ||D_j||^2 and eps/2 ||D_j||^2 of the group loss, "
        f"eps = {P.eps}, in units of t_n = (sqrt(np)/4) log(np). Measured on the GD runs (lr/2, "
        f"linear interpolation between records) and on the closed form (root finding). "
        f"Derived formula 2 log C(eps)/(||D_j|| log(np)) with C(eps) = [(1-sqrt eps)/sqrt eps]"
        f"[sqrt(1-eps)/(1-sqrt(1-eps))] (docs/math.md §1.5): worst relative deviation of the GD "
        f"windows {rel_derived:.3g}. The printed formula (1/(2||D_j||)) log C^j(eps)/log n "
        f"with eq. 87's C^j is off by at least {rel_printed:.3g} (relative) at every simulated n"
        f" and by a factor {float(np.min(closed_big / pr_big)):.3g}-"
        f"{float(np.max(closed_big / pr_big)):.3g} at n = e^42 (eq. 84 drops a ||D_j|| "
        f"factor; 1/(c_j t_n) = 2/(||D_j|| log(np)), not 1/(2 ||D_j|| log n)). Verdict: "
        f"'partly' when the 1/log n shrinking and the derived window hold (within "
        f"{DERIVED_TOL:.0%}) but the printed constant misses by more than {PRINTED_MISS:.0%}.",
        {**{f"derived, n=e^42, j={j + 1}": round(float(der_big[j]), 5) for j in groups},
         **{f"GD n={n}": np.round(w, 4).tolist() for n, w in zip(ns, win, strict=True)},
         **{f"derived n={n}": np.round(d, 4).tolist() for n, d in zip(ns, der, strict=True)},
         **{f"printed n={n}": np.round(q, 4).tolist() for n, q in zip(ns, pr, strict=True)},
         **other_eps_variants(ds, norms(P), OTHER_EPS)},
        source=sources.WINDOW)


def judge(ds: xr.Dataset, P: Fig2Params) -> list[Claim]:
    """The three claims: closed form vs GD, the limit step function, the transition window."""
    return [closed_form_claim(ds, P), limit_claim(ds, P), window_claim(ds, P)]


# ---------------------------------------------------------------------------------------- draw
def draw_transition(ds: xr.Dataset, P: Fig2Params) -> Figure:
    """The closed form at growing n with L_inf (the paper's figure), and GD on top of it."""
    import matplotlib.pyplot as plt

    s, Linf, jumps = ds.s.values, ds.limit_loss.values, 1.0 / norms(P)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    shown = [1e3, 1e6, 1e12, CLOSED_NS[-1]]
    cmap = plt.get_cmap("viridis")
    for i, n in enumerate(shown):
        label = "n = 100 + floor(e^42) (paper)" if n == CLOSED_NS[-1] else f"n = {n:.0e}"
        ax1.plot(s, ds.closed_loss.sel(n_closed=n), color=cmap(i / len(shown)), lw=1.6,
                 label=label)
    for ax in (ax1, ax2):
        ax.plot(s, Linf, "k--", lw=1.2, label="L_inf (limit)")
        for j in jumps:
            ax.axvline(j, color="0.6", lw=0.6, ls=":")
        ax.set_xlabel("t / t_n,   t_n = (sqrt(np)/4) log(np)")
        ax.grid(alpha=0.3)
    ax1.set_ylabel("rescaled loss L_n(t) = L(t t_n)")
    ax1.set_title("closed form (docs/math.md §1.5), p = 2, ||D|| = 1, 2", fontsize=10)
    ax1.legend(fontsize=8)
    for i, n in enumerate(ds.n.values):
        b = gd_run(ds, n, P.lr)
        ax2.plot(b.time_rescaled, b.loss_closed, color=f"C{i}", lw=1.2)
        stride = max(1, b.sizes["record"] // 40)
        ax2.plot(b.time_rescaled[::stride], b.loss[::stride], "o", color=f"C{i}", ms=3.5,
                 label=f"GD n = {n} (lines: closed form)")
    ax2.set_title(f"gradient descent (lr = {P.lr:g}) on group-initialised networks", fontsize=10)
    ax2.legend(fontsize=8)
    fig.suptitle("DPB Fig. 2: phase transitions of the rescaled loss", fontsize=11)
    return Figure("fig2_phase_transition", fig,
                  "Left: the rescaled loss L(t t_n) of the exact group dynamics (two neurons, "
                  "groups with labels 1 and 2, N_0 = 1, c_0 = 1) against t/t_n for growing n, "
                  "with the limit L_inf of Theorem 2 (dashed); the paper's Figure 2 is the curve "
                  "at n = 100 + floor(e^42). Right: gradient descent on group-initialised "
                  "networks (markers) and their closed forms (lines).")


def draw_checks(ds: xr.Dataset, P: Fig2Params) -> Figure:
    """GD error against the closed form, distance to L_inf, and the transition window."""
    import matplotlib.pyplot as plt

    D, p, eps = norms(P), len(P.levels), P.eps
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(16, 4.5), layout="constrained")
    for i, n in enumerate(ds.n.values):
        for step, ls in zip(ds.lr.values, ("-", "--"), strict=True):
            b = gd_run(ds, n, step)
            rel = np.abs(b.loss.values - b.loss_closed.values) / b.loss_closed.values
            ax1.plot(b.time_rescaled, rel, ls, color=f"C{i}", lw=1,
                     label=f"n = {n}, lr = {step:g}")
    ax1.set_yscale("log")
    ax1.set_ylim(bottom=1e-5)
    ax1.set_xlabel("t / t_n")
    ax1.set_ylabel("|L_GD - L_closed| / L_closed")
    ax1.set_title("GD vs closed form (first order in lr)", fontsize=10)
    ax1.legend(fontsize=7, ncol=2)
    ax2.semilogx(CLOSED_NS, ds.dist_closed, "k.-", label="closed form")
    ax2.semilogx(ds.n, ds.dist_gd, "o", color="C3", label=f"GD (lr = {P.lr / 2:g})")
    ax2.set_xlabel("n")
    ax2.set_ylabel(f"sup |L_n - L_inf|, |t/t_n - jump| > {P.window}")
    ax2.set_yscale("log")
    ax2.set_title("convergence to the step function", fontsize=10)
    ax2.legend(fontsize=8)
    xs = np.geomspace(32, CLOSED_NS[-1], 200)
    for j in range(p):
        c = f"C{j}"
        ax3.loglog(xs, [group.window_width(D[j], x, p, eps) for x in xs], "-", color=c,
                   label=f"derived, ||D|| = {D[j]:g}")
        ax3.loglog(xs, [group.window_width_as_printed(D[j], x, eps) for x in xs], ":", color=c,
                   label=f"as printed (eq. 12/87), ||D|| = {D[j]:g}")
        ax3.loglog(ds.n, ds.window_gd.isel(neuron=j), "o", color=c, ms=5,
                   label=f"GD, ||D|| = {D[j]:g}")
        ax3.loglog([CLOSED_NS[-1]], [ds.window_closed_paper.values[j]], "s", color=c, ms=6,
                   mfc="none")
    ax3.set_xlabel("n")
    ax3.set_ylabel(f"window (t^j(eps) - t^j(1-eps)) / t_n,  eps = {eps}")
    ax3.set_title("transition window (squares: closed form at e^42)", fontsize=10)
    ax3.legend(fontsize=7)
    for ax in (ax1, ax2, ax3):
        ax.grid(alpha=0.3, which="both")
    return Figure("fig2_checks", fig,
                  "Left: relative error of gradient descent against the closed form, at lr and "
                  "lr/2 (it halves: first order in the step). Middle: distance of L_n to L_inf "
                  f"outside windows of half-width {P.window} around the jumps, decreasing with n "
                  "(slowly, O(1/log n)). Right: transition window, derived formula (solid), the "
                  "paper's printed formula (dotted), GD measurements (dots) and the closed form "
                  "at the paper's n (squares).")


def draw(ds: xr.Dataset, P: Fig2Params) -> list[Figure]:
    """The paper's figure with GD overlaid, and the three checks."""
    return [draw_transition(ds, P), draw_checks(ds, P)]


def method(ds: xr.Dataset, P: Fig2Params) -> list[Section]:
    """The problem, the initialisation, the steps and where the closed forms come from."""
    p = len(P.levels)
    in_span = int(ds["span"].isel(n=0).sel(lr=P.lr))
    return [("Method", (
        f"p = {p} groups of k = n/{p} orthonormal points (X = I_n) with labels {list(P.levels)}; "
        "neuron j starts as w_j = (1/sqrt k) sum of its group's points (the library's group "
        "initialisation, direction 'aligned'), a_j = ||w_j|| = 1, so N_0 = 1 and c_0 = 1. "
        f"GD with T = p, kappa = 1/p at lr = {P.lr:g} and {P.lr / 2:g} (one step = lr units of "
        f"flow time) up to t = {P.span} t_n, in the orthogonal fast path (dataset attr span = "
        f"{in_span}). "
        "Closed forms (docs/math.md §1.5) from shallowflow.theory.group_dynamics, read off the "
        "initial network (GroupProblem.from_network). The paper's own figure has no training: "
        "the authors' script evaluates the closed form with c_0 = 1 at n = 100 + floor(e^42)."))]


REPRODUCTION = Reproduction(
    "dana-fig2", "phase transition of the group dynamics",
    "Dana, Pillaud-Vivien, Bach (000), Figure 2 and Theorem 2", Fig2Params, PRESETS,
    simulate, judge, draw, method,
    summary="Phase transitions of the loss of a two-neuron group-initialised network on "
            "orthonormal data (Figure 2 and Theorem 2 of the paper): the closed form at the "
            "paper's n and gradient descent at moderate n.")
