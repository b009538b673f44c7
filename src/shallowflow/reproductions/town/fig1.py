"""town-fig1: the loss of tiny-initialisation GD on orthonormal data jumps from plateau to
plateau, one neuron per jump, as predicted by the limit process (Algorithm 1).

Paper (003 Fig. 1, App. A.1; docs/math.md §3.4, §3.7): m = 6, n = d = 64, X = I, labels
|N(0, 1)|, balanced initialisation of norm lambda, full-batch GD with lr 0.01 on the MSE loss
(1/n) Σ r²; the loss against epochs shows plateaus and drops, one per neuron, with the Algorithm 1
prediction, and the number of fitted points (output >= 50% of the label). lambda and the stopping
threshold are illegible: this reproduction runs several lambda down to 1e-200 (paper preset: also
e^-1000) with the log-norm engine, and stops each run once its loss is within 1e-12 of the limit's
final plateau (most initialisations of m = 6 neurons leave some of the 64 points uncovered, so
the loss has a floor) or at (1.08 τ_K log(1/lambda) + 200) flow time.

Saved Dataset (``results.nc``): the runs' records (dims ``run, time``: ``loss``, ``log_norm``,
``fitted``), the data and the limit process's inputs (:func:`~shallowflow.reproductions.town.
scale_runs.limit_of`), and the measurements per run: jump times (``run, jump``), growth times
(``run, neuron``), plateau losses and fitted points (``run, saddle``), the fitted points under
the other rules h(x_i) >= f y_i (``run, fit_fraction, saddle``), neurons per drop.
"""

from __future__ import annotations

import math
import time

import numpy as np
import xarray as xr
from pydantic import Field

from shallowflow.analysis.curves import (
    GROWN_NORM,
    crossing_times,
    first_crossing,
    fitted_counts,
    growth_times,
)
from shallowflow.model.run_attrs import RunAttrs, log_lambda_of
from shallowflow.plots.labels import lambda_label
from shallowflow.reproductions.base import Figure, Reproduction, Section
from shallowflow.reproductions.claims import Claim
from shallowflow.reproductions.town import tblel_sources as sources
from shallowflow.reproductions.town.scale_runs import (
    ScalesParams,
    limit_fitted_counts,
    limit_of,
    process_table,
    process_vars,
    simulate_scales,
)
from shallowflow.theory.saddle_process import SaddleProcess, limit_process, loss_constant
from shallowflow.training.entry import Trainer


class Fig1Params(ScalesParams):
    """Parameters of town-fig1."""

    epoch_draws: int = Field(ge=1, description="random problems for the implied-lambda estimate")


PRESETS = {
    "quick": {"n": 64, "m": 6, "seed": 0, "log10_lambdas": [-5.0, -25.0, -100.0, -200.0], "lr": 0.01,
              "record_dt": 0.25, "balance": "free", "epoch_draws": 200},
    "paper": {"n": 64, "m": 6, "seed": 0,
              "log10_lambdas": [-5.0, -10.0, -25.0, -50.0, -100.0, -200.0, -1000 / math.log(10)],
              "lr": 0.01, "record_dt": 0.5, "balance": "free", "epoch_draws": 2000},
}
PAPER_TAU1_EPOCH = 507_000  # App. A: "τ_1 approximately corresponds to epoch 507,000"
TIME_RTOL = 0.02  # jump times: max relative error at the smallest lambda
LOSS_RTOL = 0.01  # plateau losses: max relative deviation at the smallest lambda
CONVENTIONS = ("mse", "square")  # loss conventions of the implied-lambda estimate
QUANTILES = (0.05, 0.5, 0.95)
OTHER_FIT_FRACTIONS = (0.25, 0.75)  # fitted-point rule h(x_i) >= f y_i besides App. A.1's 50 %
OTHER_GROWN = (0.1, 0.9)  # a neuron grown at this fraction of its final norm, besides 1/2
OTHER_PLATEAU_AT = (0.25, 0.75)  # plateaus read at this fraction of each interval, besides 1/2
SUMMARY = ("Loss curves of tiny-initialisation gradient descent on orthonormal data at several "
           "initial scales against the saddle-to-saddle limit process (Figure 1 of Town et al.).")


# -------------------------------------------------------------------------------- simulate
def implied_scales(n: int, m: int, draws: int, lr: float, seed: int) -> dict[str, np.ndarray]:
    """log(1/lambda) = (507 000 lr) / τ_1 implied by the paper's τ_1 ≈ epoch 507 000 (flow time
    507 000 lr) for ``draws`` random problems of the paper's kind, under both loss conventions
    (c_L = 2/n for MSE, 1/n for (1/(2n)) Σ r², docs/math.md §3.1)."""
    rng = np.random.default_rng(seed)
    tau: dict[str, list[float]] = {k: [] for k in CONVENTIONS}
    for _ in range(draws):
        y = np.abs(rng.standard_normal(n))
        s = rng.choice([-1.0, 1.0], m)
        W = rng.standard_normal((m, n))
        for loss in tau:
            p = limit_process(None, y, s, W, loss_constant(loss, n), check=False)
            if p.K:
                tau[loss].append(p.tau[0])
    flow = PAPER_TAU1_EPOCH * lr
    return {k: flow / np.asarray(v) for k, v in tau.items()}


def plateau_times(p: SaddleProcess, at: float = 0.5) -> np.ndarray:
    """(K+1,): where the plateaus are read: at the fraction ``at`` of the way between
    consecutive limit jump times (midway by default), and 1.1 τ_K for the last one."""
    starts = p.jump_starts
    return np.concatenate([starts[:-1] + at * np.diff(starts), [1.1 * p.tau[-1]]])


def record_index(t_acc: np.ndarray, at: np.ndarray) -> np.ndarray:
    """(R, len(at)): the first record of each run at or after the accelerated times ``at``."""
    return np.minimum([np.searchsorted(t, at) for t in t_acc], t_acc.shape[1] - 1)


def drop_counts(cross: np.ndarray, grow: np.ndarray) -> np.ndarray:
    """(R, K): neurons growing during each loss drop, the intervals split halfway between the
    measured drops (cross (R, K), grow (R, m); NaN growth times count nowhere)."""
    R = cross.shape[0]
    edges = np.concatenate([np.zeros((R, 1)), 0.5 * (cross[:, :-1] + cross[:, 1:]),
                            np.full((R, 1), np.inf)], axis=1)  # (R, K+1)
    g = grow[:, None, :]
    return np.sum((g > edges[:, :-1, None]) & (g <= edges[:, 1:, None]), axis=2)


def simulate(P: Fig1Params, train: Trainer) -> xr.Dataset:
    """All lambda in one batch; jump, growth and plateau measurements per run (docs/math.md §8.3, §8.4),
    the limit process's inputs and the implied-lambda quantiles."""
    start = time.perf_counter()
    log10s = sorted(P.log10_lambdas, reverse=True)
    problem = {"n": P.n, "m": P.m, "seed": P.seed, "labels": "abs_normal", "loss": "mse",
               "balance": P.balance}
    runs = simulate_scales(train, problem, np.array(log10s) * math.log(10), P.lr, P.record_dt,
                           probes=("loss", "log_norm", "output"), label="town-fig1")
    train_s = time.perf_counter() - start
    ds, p = runs.ds, runs.process
    t_acc, loss = ds.time_accelerated.values, ds.loss.values  # (R, T)
    cross = crossing_times(loss, t_acc, p.losses)  # (R, K)
    grow = growth_times(ds.log_norm.values, t_acc)  # (R, m)
    fitted = fitted_counts(ds.output.values, runs.y)  # (R, T)
    idx = record_index(t_acc, plateau_times(p))
    other_fitted = [np.take_along_axis(fitted_counts(ds.output.values, runs.y, f), idx, axis=1)
                    for f in OTHER_FIT_FRACTIONS]
    implied = implied_scales(p.n, p.m, P.epoch_draws, P.lr, P.seed + 1)
    out = ds[["loss", "log_norm", "a_init", "W_init", "X", "y"]].assign(
        fitted=(("run", "time"), fitted),
        jump_time_measured=(("run", "jump"), cross),
        growth_time=(("run", "neuron"), grow),
        plateau_loss=(("run", "saddle"), np.take_along_axis(loss, idx, axis=1)),
        plateau_fitted=(("run", "saddle"), np.take_along_axis(fitted, idx, axis=1)),
        plateau_fitted_other=(("run", "fit_fraction", "saddle"), np.stack(other_fitted, axis=1)),
        neurons_per_drop=(("run", "jump"), drop_counts(cross, grow)),
        final_loss=("run", loss[:, -1]),
        implied_log_inv_lambda=(("convention", "quantile"),
                                [np.quantile(implied[k], QUANTILES) for k in CONVENTIONS]),
        **process_vars(p))
    out = out.assign_coords(log10_lambda=("run", log10s), convention=list(CONVENTIONS),
                            quantile=list(QUANTILES), fit_fraction=list(OTHER_FIT_FRACTIONS))
    out.attrs.update(lr=P.lr, loss="mse (1/n) sum r^2", train_wall_s=train_s,
                     simulate_wall_s=time.perf_counter() - start)
    return out


# ----------------------------------------------------------------------------------- judge
def labels_of(ds: xr.Dataset) -> list[str]:
    """The lambda label of each run."""
    return [lambda_label(v) for v in ds.log10_lambda.values]


def relative_errors(ds: xr.Dataset, p: SaddleProcess) -> tuple[np.ndarray, np.ndarray]:
    """(R, K) |t_k - τ_k| / τ_k of the jump times and (R, K+1) |L_k - L(θ^(k))| / L(θ^(k)) of
    the plateau losses."""
    rel_err = np.abs(ds.jump_time_measured.values - p.tau[None]) / p.tau[None]
    loss_dev = np.abs(ds.plateau_loss.values - p.losses[None]) / p.losses[None]
    return rel_err, loss_dev


def per_lambda(labels: list[str], what: str, values: np.ndarray) -> dict[str, list[float]]:
    """Variants: the rounded row of ``values`` at each lambda."""
    return {f"lambda {lab}: {what}": [round(float(v), 5) for v in row]
            for lab, row in zip(labels, values, strict=True)}


def sequence_claim(ds: xr.Dataset, p: SaddleProcess) -> Claim:
    """One neuron grows per drop, in Algorithm 1's order, at the smallest lambda."""
    labels, grow = labels_of(ds), ds.growth_time.values
    counts = ds.neurons_per_drop.values.tolist()
    small = len(labels) - 1

    def order(r: int) -> list[int]:
        return [int(j) for j in np.argsort(grow[r]) if np.isfinite(grow[r, j])]

    one_each = all(c == 1 for c in counts[small])
    return Claim(
        "one_neuron_per_jump",
        "Incremental learning: each loss drop corresponds to exactly one neuron becoming O(1), in "
        "the order of Algorithm 1",
        {"neurons per drop": [1] * p.K, "sequence": [int(j) for j in p.sequence]},
        {"neurons per drop": counts[small], "sequence": order(small)},
        "reproduced" if (order(small) == [int(j) for j in p.sequence] and one_each)
        else "not reproduced", None,
        f"At lambda = {labels[small]}: a neuron counts as grown once its norm reaches half its final "
        f"norm (neurons ending with ||w_j|| >= {GROWN_NORM} only); each "
        "loss drop (first crossing of the midpoint between consecutive limit plateaus) owns the "
        "neurons growing between the midpoints of neighbouring drops. Rule: one neuron per drop "
        "and the growth order equals Algorithm 1's jump sequence.",
        {**{f"lambda {labels[r]}": {"per drop": counts[r], "sequence": order(r)}
            for r in range(len(labels))}, **grown_variants(ds)},
        source=sources.ONE_NEURON_PER_JUMP)


def grown_variants(ds: xr.Dataset) -> dict[str, dict[str, list[int]]]:
    """Neurons per drop and growth order at the smallest lambda with a neuron counted as grown
    at the other fractions OTHER_GROWN of its final norm; {} without the log-norm records."""
    if "log_norm" not in ds:
        return {}
    t, logn = ds.time_accelerated.values[-1], ds.log_norm.values[-1]
    cross = ds.jump_time_measured.values[-1:]
    out = {}
    for f in OTHER_GROWN:
        grow = growth_times(logn, t, f)
        out[f"grown at {f:g} of the final norm"] = {
            "per drop": drop_counts(cross, grow[None])[0].tolist(),
            "sequence": [int(j) for j in np.argsort(grow) if np.isfinite(grow[j])]}
    return out


def jump_time_claim(ds: xr.Dataset, p: SaddleProcess, P: Fig1Params) -> Claim:
    """Rule: max relative error <= TIME_RTOL at the smallest lambda, and smaller than at the
    largest lambda."""
    labels, cross = labels_of(ds), ds.jump_time_measured.values
    rel_err, _ = relative_errors(ds, p)
    small = len(labels) - 1

    def worst_of(row: np.ndarray) -> float:
        return float(np.nanmax(row)) if np.any(np.isfinite(row)) else math.inf

    worst, first_big = worst_of(rel_err[small]), worst_of(rel_err[0])
    time_ok = worst <= TIME_RTOL and worst < first_big
    return Claim(
        "jump_times", "The jump times converge to Algorithm 1's τ_k as lambda -> 0 (accelerated time)",
        [round(float(v), 5) for v in p.tau],
        [round(float(v), 5) for v in cross[small]],
        "reproduced" if time_ok else "not reproduced", None,
        f"Measured at lambda = {labels[small]} with GD lr = {P.lr:g}; max relative error "
        f"{worst:.3g} (at lambda = {labels[0]}: {first_big:.3g}). Rule: max relative error <= "
        f"{TIME_RTOL} at the smallest lambda and smaller than at the largest. c_L = 2/n = "
        f"{p.c_L:.4g} (MSE). The remaining error is O(1/log(1/lambda)) from the flow plus the "
        f"Euler bias of GD (about lr/2 in accelerated time, independent of lambda).",
        {**per_lambda(labels, "relative errors", rel_err), **geometric_variant(ds, p)},
        source=sources.JUMP_TIMES)


def geometric_variant(ds: xr.Dataset, p: SaddleProcess) -> dict[str, float]:
    """The worst relative jump-time error at the smallest lambda with the drops read at the
    geometric midpoints sqrt(L_(k-1) L_k) of consecutive plateaus (a loss drop spans decades);
    {} without the loss records."""
    if "loss" not in ds:
        return {}
    levels = np.sqrt(p.losses[:-1] * p.losses[1:])
    cross = first_crossing(ds.loss.values[-1], ds.time_accelerated.values[-1], levels)
    rel = np.abs(cross - p.tau) / p.tau
    worst = float(np.nanmax(rel)) if np.any(np.isfinite(rel)) else math.inf
    return {"max relative error, drops at the geometric midpoints": round(worst, 5)}


def plateau_claim(ds: xr.Dataset, p: SaddleProcess) -> Claim:
    """Rule: reproduced if every plateau is within LOSS_RTOL at the smallest lambda; partly if
    those outside are closer than at the next larger lambda; else not reproduced."""
    labels = labels_of(ds)
    _, loss_dev = relative_errors(ds, p)
    R, small = len(labels), len(labels) - 1
    worst_loss = float(np.nanmax(loss_dev[small]))
    over = np.flatnonzero(loss_dev[small] > LOSS_RTOL)
    shrinking = R > 1 and bool(np.all(loss_dev[small, over] < loss_dev[small - 1, over]))
    verdict = ("reproduced" if over.size == 0 else "partly" if shrinking else "not reproduced")
    return Claim(
        "plateau_losses",
        "Between jumps the loss sits at L(theta^(k)) = (1/n) sum_{i unfitted} y_i^2",
        [round(float(v), 6) for v in p.losses],
        [round(float(v), 6) for v in ds.plateau_loss.values[small]],
        verdict, None,
        f"Simulated loss at the midpoints between consecutive limit jump times and at 1.1 τ_K, "
        f"lambda = {labels[small]}; max relative deviation {worst_loss:.3g}. Rule: reproduced if "
        f"every plateau is within {LOSS_RTOL} (relative); partly if the plateaus outside still "
        f"approach the limit (deviation smaller than at the next larger lambda); else not "
        f"reproduced. Plateaus over the tolerance: {[int(k) for k in over]} (saddle index k). A "
        f"short plateau (τ_(k+1) - τ_k small) is the slowest: at its midpoint the next neuron "
        f"already has norm lambda^(-e_j) with e_j close to 0 and fits part of its points.",
        {**per_lambda(labels, "relative deviations", loss_dev), **plateau_variants(ds, p)},
        source=sources.PLATEAUS)


def plateau_variants(ds: xr.Dataset, p: SaddleProcess) -> dict[str, list[float]]:
    """The relative plateau deviations at the smallest lambda read at the other fractions
    OTHER_PLATEAU_AT of each interval; {} without the loss records."""
    if "loss" not in ds:
        return {}
    t, loss = ds.time_accelerated.values[-1:], ds.loss.values[-1:]
    out = {}
    for at in OTHER_PLATEAU_AT:
        read = np.take_along_axis(loss, record_index(t, plateau_times(p, at)), axis=1)[0]
        out[f"read at {at:g} of each interval"] = [
            round(float(v), 5) for v in np.abs(read - p.losses) / p.losses]
    return out


def fitted_claim(ds: xr.Dataset, p: SaddleProcess) -> Claim:
    """Rule: the fitted-point counts on every plateau equal the saddles' at the smallest lambda."""
    labels, fit_meas = labels_of(ds), ds.plateau_fitted.values
    small, lim_counts = len(labels) - 1, limit_fitted_counts(p)
    return Claim(
        "fitted_points", "The number of fitted points (output >= 50% of the label) on each plateau "
        "is the number of points fitted by the saddle θ^(k)",
        lim_counts.tolist(), fit_meas[small].tolist(),
        "reproduced" if np.array_equal(fit_meas[small], lim_counts) else "not reproduced", None,
        f"Counted at the same times as the plateau losses, lambda = {labels[small]}.",
        {**{f"lambda {lab}": row.tolist() for lab, row in zip(labels, fit_meas, strict=True)},
         **fraction_variants(ds, labels[small])},
        source=sources.FITTED)


def fraction_variants(ds: xr.Dataset, label: str) -> dict[str, list[int]]:
    """The fitted-point counts at the smallest lambda with the other rules h(x_i) >= f y_i
    (App. A.1 calls its 50 % 'somewhat arbitrary but also immaterial'); {} if not saved."""
    if "plateau_fitted_other" not in ds:
        return {}
    return {f"fitted at h(x_i) >= {float(f):g} y_i, lambda {label}": row.tolist()
            for f, row in zip(ds.fit_fraction.values, ds.plateau_fitted_other.values[-1],
                              strict=True)}


def judge(ds: xr.Dataset, P: Fig1Params) -> list[Claim]:
    """The four claims, judged at the smallest lambda against Algorithm 1."""
    p = limit_of(ds)
    return [sequence_claim(ds, p), jump_time_claim(ds, p, P), plateau_claim(ds, p),
            fitted_claim(ds, p)]


# ------------------------------------------------------------------------------------ draw
def draw(ds: xr.Dataset, P: Fig1Params) -> list[Figure]:
    """(a) loss and (b) fitted points against accelerated time, (c) the smallest lambda against
    epochs."""
    import matplotlib.pyplot as plt

    p, labels = limit_of(ds), labels_of(ds)
    t_acc, loss, fitted = ds.time_accelerated.values, ds.loss.values, ds.fitted.values
    L, R, t_end = -log_lambda_of(ds).values, len(labels), 1.15 * p.tau[-1]
    colors = plt.cm.viridis(np.linspace(0.0, 0.85, R))
    t_grid = np.linspace(0.0, t_end, 2000)
    lim = p.curves(t_grid)
    lim_fit = limit_fitted_counts(p)[np.searchsorted(p.tau, t_grid, side="right")]
    fig, (ax1, ax2, ax3) = plt.subplots(1, 3, figsize=(16, 4.6))
    for r in range(R):
        keep = t_acc[r] <= t_end
        ax1.semilogy(t_acc[r, keep], loss[r, keep], color=colors[r], lw=1.3,
                     label=f"GD, lambda = {labels[r]}")
        ax2.plot(t_acc[r, keep], fitted[r, keep], color=colors[r], lw=1.3)
    ax1.semilogy(t_grid, lim.loss, "k--", lw=1.2, label="limit process (Algorithm 1)")
    ax2.plot(t_grid, lim_fit, "k--", lw=1.2)
    for ax in (ax1, ax2):
        for tau in p.tau:
            ax.axvline(tau, color="0.6", lw=0.6, ls=":")
        ax.set_xlabel("accelerated time t / log(1/lambda)")
        ax.grid(alpha=0.3)
        ax.set_xlim(0, t_end)
    ax1.set_ylabel("training loss (1/n) sum r^2")
    ax1.legend(fontsize=7, loc="lower left")
    ax1.set_title("(a) loss against accelerated time")
    ax2.set_ylabel(f"fitted points (h(x_i) >= 50% y_i), of n = {p.n}")
    ax2.set_title("(b) fitted points")
    # (c) the smallest lambda against epochs, as in the paper
    r = R - 1
    epochs = ds.step.values
    e0, e1 = 0.9 * p.tau[0] * L[r] / P.lr, 1.05 * p.tau[-1] * L[r] / P.lr
    keep = (epochs >= e0) & (epochs <= e1)
    ax3.semilogy(epochs[keep], loss[r, keep], color=colors[r], lw=1.5,
                 label=f"GD loss, lambda = {labels[r]}")
    ep_lim = t_grid * L[r] / P.lr
    sel = (ep_lim >= e0) & (ep_lim <= e1)
    ax3.semilogy(ep_lim[sel], lim.loss.values[sel], "k--", lw=1.2, label="limit loss")
    ax3.set_xlabel(f"epoch (lr = {P.lr:g}, full batch)")
    ax3.set_ylabel("training loss")
    ax3b = ax3.twinx()
    ax3b.plot(epochs[keep], fitted[r, keep], color="C3", lw=1.0, label="fitted points")
    ax3b.set_ylabel("fitted points", color="C3")
    ax3.grid(alpha=0.3)
    h1, l1 = ax3.get_legend_handles_labels()
    h2, l2 = ax3b.get_legend_handles_labels()
    ax3.legend(h1 + h2, l1 + l2, fontsize=7, loc="lower left")
    ax3.set_title(f"(c) lambda = {labels[r]} against epochs")
    fig.suptitle(f"Town et al. Fig. 1: m = {p.m}, n = d = {p.n}, labels |N(0,1)|, GD lr = "
                 f"{P.lr:g} on MSE, seed {P.seed} ({p.K} jumps, loss floor "
                 f"{p.losses[-1]:.3g})", fontsize=10)
    fig.tight_layout()
    return [Figure(
        "fig1_loss", fig,
        "(a) Training loss against accelerated time t/log(1/lambda) at each initial scale "
        "lambda (colours) and the limit process's piecewise-constant loss L(theta^(k)) = "
        "(1/n) sum over unfitted points of y_i^2 (dashed); dotted lines: Algorithm 1's jump "
        "times. (b) Number of points whose output reaches 50% of the label, with the limit "
        "count. (c) The smallest lambda against epochs (one GD step per epoch), with the "
        "number of fitted points (right axis).")]


# ---------------------------------------------------------------------------------- method
def method(ds: xr.Dataset, P: Fig1Params) -> list[Section]:
    """Sections "Method", "Which lambda did the paper use?" and "Run time"."""
    p, labels = limit_of(ds), labels_of(ds)
    rel_err, _ = relative_errors(ds, p)
    cross, counts = ds.jump_time_measured.values, ds.neurons_per_drop.values.tolist()
    L, R, q = -log_lambda_of(ds).values, len(labels), ds.implied_log_inv_lambda
    table = ["| lambda | log(1/lambda) | measured jump times (accelerated) | max rel. error | "
             "neurons per drop | final loss |", "|---|---|---|---|---|---|"]
    for r in range(R):
        table.append(f"| {labels[r]} | {L[r]:.1f} | {np.array2string(cross[r], precision=4)} | "
                     f"{np.nanmax(rel_err[r]):.3g} | {counts[r]} | {ds.final_loss.values[r]:.5g} |")
    mse, sq = q.sel(convention="mse").values, q.sel(convention="square").values
    return [("Method", (
        f"Problem: n = d = {p.n}, X = I, labels |N(0,1)|, m = {p.m}, balanced initialisation "
        f"(seed {P.seed}, the first seed, not selected). GD with lr = {P.lr:g} (flow time "
        f"per step) on the MSE loss (1/n) sum r^2 (PyTorch's), log-norm parametrisation (balance "
        f"'{P.balance}': plain GD to rounding), trained in the span of the data (fast path for "
        f"orthogonal data): span = {RunAttrs.of(ds).span}. All lambda in one batch; records every "
        f"{P.record_dt} flow time. Limit process: Algorithm 1 with c_L = 2/n = {p.c_L:.5g} "
        f"(same MSE convention). Assumption 4: {p.report}.\n\n" + process_table(p)
        + "\n\n" + "\n".join(table))),
        ("Which lambda did the paper use?", (
            f"App. A places τ_1 at about epoch {PAPER_TAU1_EPOCH:,} (lr 0.01, i.e. flow time "
            f"{PAPER_TAU1_EPOCH * P.lr:.0f}). Over {P.epoch_draws} random problems of the "
            f"paper's kind, τ_1 (accelerated) implies log(1/lambda) = "
            f"{mse[1]:.0f} (5-95%: {mse[0]:.0f}-{mse[2]:.0f}) with the MSE convention "
            f"and {sq[1]:.0f} ({sq[0]:.0f}-{sq[2]:.0f}) with (1/(2n)) sum "
            f"r^2. Either way lambda^2 is below the float64 range (about e^-1000 = 1e-434 with MSE, "
            f"e^-480 = 1e-209 with the halved loss), consistent with the paper's rescaled weights and "
            f"separately tracked log-scale. Here τ_1 = {p.tau[0]:.4f}, i.e. epoch "
            f"{p.tau[0] * 1000 / P.lr:,.0f} at lambda = e^-1000 with MSE (paper: about "
            f"{PAPER_TAU1_EPOCH:,}; the paper's initialisation is not known).")),
        ("Run time", (
            f"Preset wall time of the simulation: {ds.attrs['simulate_wall_s']:.1f} s, of which "
            f"{ds.attrs['train_wall_s']:.1f} s for preparing and training the {R} runs "
            f"({ds.sizes['time']} records, {int(ds.step.values[-1]):,} GD steps at the smallest "
            f"lambda unless stopped earlier) on this machine."))]


REPRODUCTION = Reproduction(
    "town-fig1", "loss plateaus and jumps against the limit process",
    "Town, Boursier, Lewis, Englert, Lazić (003), Figure 1", params=Fig1Params, presets=PRESETS,
    simulate=simulate, judge=judge, draw=draw, method=method, summary=SUMMARY)
