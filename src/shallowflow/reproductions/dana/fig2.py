"""dana-fig2: the phase transition of the group dynamics (DPB Theorem 2, Figure 2).

Paper (000 §4.2, App. A.6; MATH.md §1.5, §5): orthonormal inputs, p = 2 groups of k = n/2 points
with constant labels 1 and 2 (||D_1|| = 1, ||D_2|| = 2), one neuron per group started in the span
of its group along D_j (N_0 = ||w_j(0)||^2 = 1, c_0 = 1). The rescaled loss L_n(t) = L(t t_n),
t_n = (sqrt(np)/4) log(np), tends to the step function L_inf with jumps at 1/||D_2|| = 1/2 and
1/||D_1|| = 1 and levels 1.25 -> 0.25 -> 0. The paper's figure is the closed form at
n = 100 + floor(e^42) (the authors' script trains nothing); here it is drawn the same way, and
gradient descent on actual group-initialised networks at moderate n is overlaid on its own closed
form (MATH.md §1.5 exact solution), at step lr and lr/2 (GD is first order in lr).

The data (X = I_n, labels 1 then 2) are written to a .npz file and the network is built by the
library's ``group`` initialisation with ``direction="aligned"`` (w_j uniform on its group,
||w_j|| = 1, a_j = 1) and passed as a ``given`` initialisation: the ``group`` scheme's data
generators have no constant-per-group labels. Training runs in the orthogonal fast path
(``reduce = "on"``: X = I_n has orthogonal rows).
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import xarray as xr
from scipy.optimize import brentq

from shallowflow import init as inits
from shallowflow.config import experiment_from_mapping
from shallowflow.reproductions.base import Context, Reproduction, register
from shallowflow.reproductions.claims import Claim
from shallowflow.reproductions.dana.convergence import train_runs
from shallowflow.theory import group_dynamics as gd

PRESETS = {
    "quick": {"ns": [64, 256, 1024], "lr": 0.5, "span": 1.6, "records": 400, "eps": 0.25,
              "window": 0.2, "levels": [1.0, 2.0]},
    "paper": {"ns": [64, 256, 1024, 4096], "lr": 0.25, "span": 1.6, "records": 400,
              "eps": 0.25, "window": 0.2, "levels": [1.0, 2.0]},
}
N_FIGURE = 100 + math.floor(math.e**42)  # the authors' phase_transition.py
CLOSED_NS = [1e2, 1e3, 1e4, 1e6, 1e9, 1e12, 1e15, float(N_FIGURE)]


def _write_problem(folder: Path, n: int, levels: list[float]) -> tuple[str, str]:
    """Data X = I_n with constant labels per group, and the group-initialised network, as files."""
    p = len(levels)
    k = n // p
    X = np.eye(n)
    y = np.repeat(np.asarray(levels, float), k)
    net = inits.group(jax.random.PRNGKey(0), jnp.asarray(X), jnp.asarray(y), p, 1.0, "aligned")
    data, init = folder / f"data_n{n}.npz", folder / f"init_n{n}.npz"
    np.savez(data, X=X, y=y)
    np.savez(init, a=np.asarray(net.a), W=np.asarray(net.W))
    return str(data), str(init)


def simulate_group(n: int, lr: float, span: float, every_flow: float, levels: list[float],
                   folder: Path, show_progress: bool = True) -> tuple[xr.Dataset, gd.GroupProblem]:
    """GD (lr, T = p, kappa = 1/p) on the group problem up to span * t_n, recording loss, outputs
    and neuron norms every ``every_flow`` units of flow time; with its closed-form problem."""
    p = len(levels)
    data, init = _write_problem(folder, n, levels)
    t_n = gd.rescaled_time(n, p)
    every = max(1, round(every_flow / lr))
    steps = every * math.ceil(span * t_n / (every * lr))
    exp = experiment_from_mapping({
        "name": f"group-n{n}-lr{lr:g}", "seed": 0, "runs": 1,
        "data": {"kind": "file", "path": data},
        "model": {"width": p, "kappa": "1/p"},
        "init": {"scheme": "given", "path": init, "scale": 1.0},
        "train": {"lr": lr, "steps": steps, "time_scale": "width", "reduce": "on"},
        "record": {"every": every, "points": 0, "probes": ["loss", "output", "neuron_norm"]},
    })
    batch, ds = train_runs(exp, [0], exp.name, show_progress)
    prob = gd.GroupProblem.from_network(batch.X, batch.y, ds.a_init.values[0],
                                        ds.W_init.values[0])
    r = np.asarray(batch.y)[None, :] - ds.output.values[0]  # (time, sample)
    group_loss = 0.5 * (r**2).reshape(r.shape[0], p, n // p).mean(axis=2)
    out = xr.Dataset(
        {"loss": ("time", ds.loss.values[0]),
         "group_loss": (("time", "neuron"), group_loss),
         "norm_sq": (("time", "neuron"), ds.neuron_norm.values[0] ** 2),
         "loss_closed": ("time", gd.loss(prob, ds.time.values).values),
         "group_loss_closed": (("time", "neuron"), gd.group_loss(prob, ds.time.values).values),
         "norm_sq_closed": (("time", "neuron"),
                            gd.neuron_norm_sq(prob, ds.time.values).values)},
        coords={"time": ds.time.values, "time_rescaled": ("time", ds.time.values / t_n),
                "neuron": np.arange(p)},
        attrs={"n": n, "p": p, "lr": lr, "t_n": t_n, "reduced": int(ds.attrs["reduced"]),
               "notes": ds.attrs["notes"], "D_norm": prob.D_norm, "N0": prob.N0, "c0": prob.c0})
    return out, prob


def crossing_time(t: np.ndarray, values: np.ndarray, level: float) -> float:
    """First time a decreasing record falls to ``level`` (linear interpolation); NaN if never or
    already below at t[0]."""
    below = np.flatnonzero(values <= level)
    if below.size == 0 or below[0] == 0:
        return float("nan")
    i = below[0]
    t0, t1, v0, v1 = t[i - 1], t[i], values[i - 1], values[i]
    return float(t0 + (v0 - level) * (t1 - t0) / (v0 - v1))


def closed_window(prob: gd.GroupProblem, eps: float) -> np.ndarray:
    """(t^j(eps) - t^j(1 - eps))/t_n from the closed-form group loss by root finding (no use of
    the derived window formula)."""
    t_n = gd.rescaled_time(prob.n, prob.p)
    out = []
    for j in range(prob.p):
        D2 = prob.D_norm[j] ** 2

        def f(s: float, level: float, j: int = j) -> float:
            return float(gd.group_loss(prob, np.array([s * t_n])).values[0, j] - level)

        times = [brentq(f, 0.0, 50.0, args=(0.5 * e * D2,), xtol=1e-14) for e in (eps, 1 - eps)]
        out.append(times[0] - times[1])
    return np.array(out)


def sup_outside(s: np.ndarray, L: np.ndarray, Linf: np.ndarray, jumps: np.ndarray,
                delta: float) -> float:
    """max |L_n - L_inf| over rescaled times farther than ``delta`` from every jump."""
    keep = np.all(np.abs(s[:, None] - jumps[None, :]) > delta, axis=1)
    return float(np.max(np.abs(L - Linf)[keep]))


def build(ctx: Context) -> list[Claim]:
    P = ctx.params
    levels, p, eps, delta = list(P["levels"]), len(P["levels"]), P["eps"], P["window"]
    D = np.abs(np.asarray(levels, float))  # constant labels: ||D_j|| = |y_j|
    jumps = 1.0 / D
    s = np.linspace(0.0, P["span"], 3201)

    # closed form at growing n, up to the paper's n = 100 + floor(e^42)
    closed = {}
    for n in CLOSED_NS:
        prob = gd.GroupProblem.uniform(n, D, N0=1.0, c0=1.0)
        t_n = gd.rescaled_time(n, p)
        closed[n] = (gd.loss(prob, s * t_n).values, gd.limit_loss(prob, s * t_n).values, prob)
    Linf = closed[CLOSED_NS[-1]][1]
    cf = xr.Dataset({"loss": (("n", "s"), np.stack([closed[n][0] for n in CLOSED_NS])),
                     "limit_loss": ("s", Linf)},
                    coords={"n": np.array(CLOSED_NS), "s": s},
                    attrs={"p": p, "D_norm": D, "N0": 1.0, "c0": 1.0,
                           "description": "closed-form rescaled loss L(s t_n), MATH.md §1.5"})
    ctx.data("closed_form", cf)

    # simulations at lr and lr/2, recorded at the same flow times
    sims: dict[tuple[int, float], xr.Dataset] = {}
    probs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in P["ns"]:
            t_n = gd.rescaled_time(n, p)
            every_flow = max(P["lr"], P["span"] * t_n / P["records"])
            every_flow = P["lr"] * max(1, round(every_flow / P["lr"]))
            for lr in (P["lr"], P["lr"] / 2):
                ds, prob = simulate_group(int(n), lr, P["span"], every_flow, levels, Path(tmp),
                                          ctx.show_progress)
                sims[n, lr] = ds
                probs[n] = prob
                ctx.data(f"sim_n{n}_lr{lr:g}", ds)
    lr, lr2 = P["lr"], P["lr"] / 2

    # claim 1: closed form vs GD
    err, err2, err_rich = {}, {}, {}
    for n in P["ns"]:
        a, b = sims[n, lr], sims[n, lr2]
        ref = a.loss_closed.values
        err[n] = float(np.max(np.abs(a.loss.values - ref) / ref))
        err2[n] = float(np.max(np.abs(b.loss.values - ref) / ref))
        rich = 2 * b.loss.values - a.loss.values  # Richardson: removes the O(lr) term
        err_rich[n] = float(np.max(np.abs(rich - ref) / ref))
    ratios = {n: err[n] / err2[n] for n in P["ns"]}
    first_order = all(1.6 <= r <= 2.4 for r in ratios.values())
    rich_small = all(err_rich[n] <= 0.25 * err2[n] for n in P["ns"])
    claims = [Claim(
        "closed_form_vs_gd",
        "The exact group dynamics (MATH.md §1.5: cos_j = tanh(c_j t/2 + artanh c_0), N_j(t), "
        "L^j by eq. 81) is the gradient flow of group-initialised networks",
        "exact for the flow (GD error O(lr))",
        {f"n={n}": round(err[n], 5) for n in P["ns"]},
        "reproduced" if first_order and rich_small else "not reproduced", None,
        f"Max over records (t/t_n in [0, {P['span']}]) of |L_GD - L_closed|/L_closed at step "
        f"lr = {lr:g} (flow time per step; T = p = {p}). Verdict rule: the error halves with the "
        "step (ratio in [1.6, 2.4], i.e. first order in lr, so it vanishes for the flow) and the "
        "Richardson combination 2 L(lr/2) - L(lr) is at least 4x closer than L(lr/2).",
        {**{f"n={n}, lr={lr2:g}": round(err2[n], 5) for n in P["ns"]},
         **{f"n={n}, ratio lr/(lr/2)": round(ratios[n], 3) for n in P["ns"]},
         **{f"n={n}, Richardson": float(f"{err_rich[n]:.3g}") for n in P["ns"]}})]

    # claim 2: L_n -> L_inf away from the jumps
    dist_closed = {n: sup_outside(s, closed[n][0], Linf, jumps, delta) for n in CLOSED_NS}
    dist_sim = {}
    for n in P["ns"]:
        b = sims[n, lr2]
        lim = gd.limit_loss(probs[n], b.time.values).values
        dist_sim[n] = sup_outside(b.time_rescaled.values, b.loss.values, lim, jumps, delta)
    dc = np.array([dist_closed[n] for n in CLOSED_NS])
    ds_ = np.array([dist_sim[n] for n in P["ns"]])
    decreasing = bool(np.all(np.diff(dc) < 0) and np.all(np.diff(ds_) < 0))
    # where the jumps sit at finite n (eps = 1/2 crossing of each group loss)
    mid = {}
    for n in (min(P["ns"]), CLOSED_NS[-1]):
        prob = closed[n][2] if n in closed else probs[n]
        mid[n] = (gd.transition_time(prob, 0.5).values / gd.rescaled_time(prob.n, p)).round(4)
    claims.append(Claim(
        "limit_step_function",
        "L_n(t) = L(t t_n) tends to the step function L_inf (levels 1.25 -> 0.25 -> 0, jumps at "
        "t = 1/||D_2|| = 1/2 and 1/||D_1|| = 1) (Theorem 2, Figure 2)",
        "L_n -> L_inf", {f"n={n:.3g}": round(v, 4) for n, v in dist_closed.items()},
        "reproduced" if decreasing and dc[-1] < 0.01 else "not reproduced", None,
        f"sup |L_n - L_inf| over t/t_n in [0, {P['span']}] outside windows of half-width "
        f"{delta} around the jumps, closed form (c_0 = 1, N_0 = 1) at growing n. Verdict rule: "
        f"decreasing in n for the closed form and for the GD runs (lr/2), and below 0.01 at the "
        f"paper's n = 100 + floor(e^42). The approach is slow: the half-loss crossing of group "
        f"j sits at (1/||D_j||)(1 + O(1/log n)): at n = {min(P['ns'])}: "
        f"{mid[min(P['ns'])].tolist()}; at n = e^42: {mid[CLOSED_NS[-1]].tolist()} "
        "(limits 1 and 0.5).",
        {f"GD n={n}": round(v, 4) for n, v in dist_sim.items()}))

    # claim 3: the transition window
    win_sim, win_derived, win_printed = {}, {}, {}
    for n in P["ns"]:
        b = sims[n, lr2]
        t, t_n = b.time.values, b.attrs["t_n"]
        w = []
        for j in range(p):
            D2 = D[j] ** 2
            gl = b.group_loss.values[:, j]
            w.append((crossing_time(t, gl, 0.5 * eps * D2)
                      - crossing_time(t, gl, 0.5 * (1 - eps) * D2)) / t_n)
        win_sim[n] = np.array(w)
        win_derived[n] = np.asarray(gd.window_width(D, n, p, eps))
        win_printed[n] = np.asarray(gd.window_width_as_printed(D, n, eps))
    big = closed[CLOSED_NS[-1]][2]
    win_closed_big = closed_window(big, eps)
    der_big = np.asarray(gd.window_width(D, big.n, p, eps))
    pr_big = np.asarray(gd.window_width_as_printed(D, big.n, eps))
    rel_derived = max(float(np.max(np.abs(win_sim[n] / win_derived[n] - 1))) for n in P["ns"])
    rel_printed = min(float(np.min(np.abs(win_sim[n] / win_printed[n] - 1))) for n in P["ns"])
    shrinks = bool(np.all(np.diff(np.stack([win_sim[n] for n in P["ns"]]), axis=0) < 0))
    if rel_derived < 0.05 and shrinks:
        verdict = "partly" if rel_printed > 0.5 else "reproduced"
    else:
        verdict = "not reproduced"
    claims.append(Claim(
        "transition_window",
        "Each transition takes a rescaled time (t^j(1-eps) - t^j(eps))/t_n ~ (1/(2||D_j||)) "
        "log C^j(eps)/log n (eq. 12, eq. 86-87), i.e. shrinks like 1/log n",
        {f"printed, n=e^42, j={j + 1}": round(float(pr_big[j]), 5) for j in range(p)},
        {f"closed form, n=e^42, j={j + 1}": round(float(win_closed_big[j]), 5)
         for j in range(p)},
        verdict, None,
        f"Window between the levels (1-eps)/2 ||D_j||^2 and eps/2 ||D_j||^2 of the group loss, "
        f"eps = {eps}, in units of t_n = (sqrt(np)/4) log(np). Measured on the GD runs (lr/2, "
        f"linear interpolation between records) and on the closed form (root finding). "
        f"Derived formula 2 log C(eps)/(||D_j|| log(np)) with C(eps) = [(1-sqrt eps)/sqrt eps]"
        f"[sqrt(1-eps)/(1-sqrt(1-eps))] (MATH.md §1.5): worst relative deviation of the GD "
        f"windows {rel_derived:.3g}. The printed formula (1/(2||D_j||)) log C^j(eps)/log n "
        f"with eq. 87's C^j is off by at least {rel_printed:.3g} (relative) at every simulated n"
        f" and by a factor {float(np.min(win_closed_big / pr_big)):.3g}-"
        f"{float(np.max(win_closed_big / pr_big)):.3g} at n = e^42 (eq. 84 drops a ||D_j|| "
        f"factor; 1/(c_j t_n) = 2/(||D_j|| log(np)), not 1/(2 ||D_j|| log n)). Verdict: "
        f"'partly' when the 1/log n shrinking and the derived window hold (within 5%) but the "
        f"printed constant misses by more than 50%.",
        {**{f"derived, n=e^42, j={j + 1}": round(float(der_big[j]), 5) for j in range(p)},
         **{f"GD n={n}": np.round(win_sim[n], 4).tolist() for n in P["ns"]},
         **{f"derived n={n}": np.round(win_derived[n], 4).tolist() for n in P["ns"]},
         **{f"printed n={n}": np.round(win_printed[n], 4).tolist() for n in P["ns"]}}))

    # figures
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    shown = [1e3, 1e6, 1e12, CLOSED_NS[-1]]
    cmap = plt.get_cmap("viridis")
    for i, n in enumerate(shown):
        label = "n = 100 + floor(e^42) (paper)" if n == CLOSED_NS[-1] else f"n = {n:.0e}"
        ax1.plot(s, closed[n][0], color=cmap(i / len(shown)), lw=1.6, label=label)
    for ax in (ax1, ax2):
        ax.plot(s, Linf, "k--", lw=1.2, label="L_inf (limit)")
        for j in jumps:
            ax.axvline(j, color="0.6", lw=0.6, ls=":")
        ax.set_xlabel("t / t_n,   t_n = (sqrt(np)/4) log(np)")
        ax.grid(alpha=0.3)
    ax1.set_ylabel("rescaled loss L_n(t) = L(t t_n)")
    ax1.set_title("closed form (MATH.md §1.5), p = 2, ||D|| = 1, 2", fontsize=10)
    ax1.legend(fontsize=8)
    for i, n in enumerate(P["ns"]):
        b = sims[n, lr]
        c = f"C{i}"
        ax2.plot(b.time_rescaled, b.loss_closed, color=c, lw=1.2)
        stride = max(1, b.sizes["time"] // 40)
        ax2.plot(b.time_rescaled[::stride], b.loss[::stride], "o", color=c, ms=3.5,
                 label=f"GD n = {n} (lines: closed form)")
    ax2.set_title(f"gradient descent (lr = {lr:g}) on group-initialised networks", fontsize=10)
    ax2.legend(fontsize=8)
    fig.suptitle("DPB Fig. 2: phase transitions of the rescaled loss", fontsize=11)
    ctx.figure("fig2_phase_transition", fig,
               "Left: the rescaled loss L(t t_n) of the exact group dynamics (two neurons, groups "
               "with labels 1 and 2, N_0 = 1, c_0 = 1) against t/t_n for growing n, with the limit "
               "L_inf of Theorem 2 (dashed); the paper's Figure 2 is the curve at n = 100 + "
               "floor(e^42). Right: gradient descent on group-initialised networks "
               "(markers) and their closed forms (lines).")

    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(16, 4.5), layout="constrained")
    for i, n in enumerate(P["ns"]):
        for step, ls in ((lr, "-"), (lr2, "--")):
            b = sims[n, step]
            rel = np.abs(b.loss.values - b.loss_closed.values) / b.loss_closed.values
            ax1.plot(b.time_rescaled, rel, ls, color=f"C{i}", lw=1,
                     label=f"n = {n}, lr = {step:g}")
    ax1.set_yscale("log")
    ax1.set_ylim(bottom=1e-5)
    ax1.set_xlabel("t / t_n")
    ax1.set_ylabel("|L_GD - L_closed| / L_closed")
    ax1.set_title("GD vs closed form (first order in lr)", fontsize=10)
    ax1.legend(fontsize=7, ncol=2)
    ax2.semilogx(CLOSED_NS, dc, "k.-", label="closed form")
    ax2.semilogx(P["ns"], ds_, "o", color="C3", label=f"GD (lr = {lr2:g})")
    ax2.set_xlabel("n")
    ax2.set_ylabel(f"sup |L_n - L_inf|, |t/t_n - jump| > {delta}")
    ax2.set_yscale("log")
    ax2.set_title("convergence to the step function", fontsize=10)
    ax2.legend(fontsize=8)
    xs = np.geomspace(32, CLOSED_NS[-1], 200)
    for j in range(p):
        c = f"C{j}"
        ax3.loglog(xs, [gd.window_width(D[j], x, p, eps) for x in xs], "-", color=c,
                   label=f"derived, ||D|| = {D[j]:g}")
        ax3.loglog(xs, [gd.window_width_as_printed(D[j], x, eps) for x in xs], ":", color=c,
                   label=f"as printed (eq. 12/87), ||D|| = {D[j]:g}")
        ax3.loglog(P["ns"], [win_sim[n][j] for n in P["ns"]], "o", color=c, ms=5,
                   label=f"GD, ||D|| = {D[j]:g}")
        ax3.loglog([CLOSED_NS[-1]], [win_closed_big[j]], "s", color=c, ms=6, mfc="none")
    ax3.set_xlabel("n")
    ax3.set_ylabel(f"window (t^j(eps) - t^j(1-eps)) / t_n,  eps = {eps}")
    ax3.set_title("transition window (squares: closed form at e^42)", fontsize=10)
    ax3.legend(fontsize=7)
    for ax in (ax1, ax2, ax3):
        ax.grid(alpha=0.3, which="both")
    ctx.figure("fig2_checks", fig,
               "Left: relative error of gradient descent against the closed form, at lr and "
               "lr/2 (it halves: first order in the step). Middle: distance of L_n to L_inf "
               f"outside windows of half-width {delta} around the jumps, decreasing with n "
               "(slowly, O(1/log n)). Right: transition window, derived formula (solid), the "
               "paper's printed formula (dotted), GD measurements (dots) and the closed form at "
               "the paper's n (squares).")

    ctx.section("Protocol", (
        f"p = {p} groups of k = n/{p} orthonormal points (X = I_n) with labels {levels}; neuron j "
        "starts as w_j = (1/sqrt k) sum of its group's points (the library's group "
        "initialisation, direction 'aligned'), a_j = ||w_j|| = 1, so N_0 = 1 and c_0 = 1. "
        f"GD with T = p, kappa = 1/p at lr = {lr:g} and {lr2:g} (one step = lr units of flow "
        f"time) up to t = {P['span']} t_n, in the orthogonal fast path (reduced = "
        f"{sims[P['ns'][0], lr].attrs['reduced']}). Closed forms (MATH.md §1.5) from "
        "shallowflow.theory.group_dynamics, read off the initial network "
        "(GroupProblem.from_network). The paper's own figure has no training: the authors' "
        "script evaluates the closed form with c_0 = 1 at n = 100 + floor(e^42)."))
    ctx.summary = (
        "Phase transitions of the loss of a two-neuron group-initialised network on orthonormal "
        "data (Figure 2 and Theorem 2 of the paper): the closed form at the paper's n and "
        "gradient descent at moderate n.")
    return claims


register(Reproduction("dana-fig2", "phase transition of the group dynamics",
                      "Dana, Pillaud-Vivien, Bach (000), Figure 2 and Theorem 2", build, PRESETS,
                      __doc__ or ""))
