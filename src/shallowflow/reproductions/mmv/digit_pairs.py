"""The MNIST digit-pair experiment shared by mmv-fig5 (0/1), mmv-fig10 (3/8) and mmv-fig11 (1/7)
(paper 004, §4 and App. A.4; docs/math.md §4.3-§4.4).

Method: a centred digit pair (first digit +1, pixels in [0, 1]; ``data.kind = "mnist"``, the
embedded 500-per-digit subset unless ``per_digit`` takes fewer), h = 50, W and v entries
N(0, alpha^2), full-batch GD with step 2e-3 for 15 000 iterations, once per loss reading
(``alignment_curves.READINGS``). Snapshots of (v, W) every ``every`` iterations give, post hoc
(``theory.alignment_measures``, ``theory.alignment``), the alignment cosines with their bands, the
stable rank, ||W||_2^2 and the cone counts; only these curves and the last network are saved.

Claims (each for the primary reading, every reading in ``variants``):

* ``alignment_time``: the iteration at which both cos(w_bar_+, x_+) and cos(w_bar_-, x_-) first
  reach ``alignment_curves.ALIGN_LEVEL`` lies in :data:`ALIGN_BAND` ("good alignment after ~2000
  iterations": 2000 / 1.5 to 2000 x 1.5, the growth onset's symmetric factor); variant: the same
  with the smallest cosine over V_+ and V_- (every neuron aligned);
* ``growth_onset``: the first iteration with L <= 0.99 L(0) (the norms grow, the loss starts to
  decrease) lies in :data:`GROWTH_BAND` ("after ~3000 iterations") and after the alignment;
  variants: L <= 0.9 L(0), and ||W||_2^2 at 1% of its final value;
* ``stable_rank``: the final ||W||_F^2/||W||_2^2 lies in :data:`RANK_BAND` ("almost 1"); below 2
  only: partly;
* ``loss_falls``: L(end)/L(0) <= :data:`LOSS_RATIO` (a threshold of the project's own for "the loss
  decreases").
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import xarray as xr
from pydantic import Field

from shallowflow.analysis.curves import first_rise
from shallowflow.data.mnist import load_mnist_pair
from shallowflow.reproductions.base import Figure, Section, run_time
from shallowflow.reproductions.claims import Claim, band_verdict, printed, threshold
from shallowflow.reproductions.fields import Reading
from shallowflow.reproductions.mmv.alignment_curves import (
    ALIGN_LEVEL,
    ONSET_DROP,
    PAPER_ALPHA,
    PAPER_LR,
    PAPER_STEPS,
    PAPER_WIDTH,
    PRIMARY,
    READINGS,
    GDRun,
    MnistSource,
    alignment_iteration,
    curve_measures,
    iterations,
    mmv_experiment,
    onset_iteration,
    reading,
)
from shallowflow.theory.alignment import (
    class_directions,
    pair_sign_agreement,
    stable_rank_bound,
)
from shallowflow.training.entry import Trainer

ALIGN_BAND = (2000.0 / 1.5, 2000.0 * 1.5)  # "good alignment after ~2000 iterations": 2000 / 1.5 .. x 1.5
GROWTH_BAND = (2000.0, 4500.0)  # "after ~3000 iterations the norm starts to grow": 3000 / 1.5 .. x 1.5
ABOUT = 1.5  # "about N iterations": the band [N / 1.5, N x 1.5], one factor for both times
ONSET_DROP_VARIANT = 0.1  # the growth onset read at L <= 0.9 L(0) (variant)
NORM_ONSET = 0.01  # the growth onset read where ||W||_2^2 reaches 1% of its final value (variant)
RANK_BAND = (1.0, 1.5)  # "almost 1"
RANK_BOUND = 2.0  # Theorem 1.3: limsup <= 2
LOSS_RATIO = 0.1  # "the loss decreases": final loss at most 10 % of the initial loss
OTHER_PAIRS = (". The numbers are printed for digits 0 and 1 only: mmv-fig10 and mmv-fig11 hold the "
               "pairs of App. A.4 (\"exactly the same experimental setting [...] only use a different "
               "pair of digits\", Figs. 10-11, no numbers in the text) to them.")
CURVES = ("loss", "cos_plus", "cos_plus_min", "cos_plus_max", "cos_minus", "cos_minus_min",
          "cos_minus_max", "stable_rank", "spectral_sq", "frobenius_sq", "n_plus")


class MnistParams(MnistSource, GDRun):
    """Parameters of the MNIST digit-pair reproductions."""

    readings: list[Reading] = Field(min_length=1, description="loss readings (alignment_curves.READINGS)")
    primary: Reading = Field(description="the reading of the headline verdicts")

    def model_post_init(self, _: object) -> None:
        super().model_post_init(_)
        if self.primary not in self.readings:
            raise ValueError(f"primary: {self.primary!r} must be one of readings {self.readings}")


def presets(quick_per_digit: int = 100) -> dict[str, dict[str, object]]:
    """quick: ``quick_per_digit`` images per digit, the paper's 15 000 iterations, all four
    readings; paper: all 500 embedded images per digit (the paper used all ~12 000 training images
    of the pair; give a user's MNIST files for those)."""
    common = {"width": PAPER_WIDTH, "alpha": PAPER_ALPHA, "lr": PAPER_LR, "steps": PAPER_STEPS,
              "every": 100, "seed": 0, "readings": list(READINGS), "primary": PRIMARY}
    return {"quick": {**common, "per_digit": quick_per_digit}, "paper": {**common, "per_digit": None}}


# -------------------------------------------------------------------------------- simulate
def simulate_pair(P: MnistParams, train: Trainer, digits: tuple[int, int], name: str) -> xr.Dataset:
    """One run per reading on the digit pair; the saved Dataset holds per reading the curves of
    :data:`CURVES` against ``iteration`` and the last network (``a_final``, ``W_final``), plus
    the data (``X``, ``y``) and the pair's mean image ``mean_image``."""
    start = time.perf_counter()
    data = P.data(digits)
    pair = load_mnist_pair(digits, P.mnist_path, per_digit=P.per_digit)
    out = []
    for r in P.readings:
        loss, red = reading(r)
        exp = mmv_experiment(data=data, width=P.width, alpha=P.alpha, lr=P.lr, steps=P.steps,
                             loss=loss, reduction=red, seed=P.seed, every=P.every, name=name)
        ds = train([exp], label=f"{name}: {r}", keep_data=True)[0]
        X, y = ds["X"].values, ds["y"].values
        W, a = ds["W"].values[0], ds["a"].values[0]
        m = curve_measures(W, a, X, y)
        one = xr.Dataset({k: ("iteration", np.asarray(m[k] if k != "loss" else ds["loss"].values[0]))
                          for k in CURVES},
                         coords={"iteration": iterations(ds, P.lr)})
        one["stable_rank_bound"] = ("iteration", rank_bound(W, P.alpha, m["spectral_sq"]))
        one["a_final"] = ("neuron", a[-1])
        one["W_final"] = (("neuron", "dim"), W[-1])
        out.append(one.expand_dims(reading=[r]))
    res = xr.concat(out, dim="reading")
    res["X"], res["y"] = (("sample", "dim"), X), ("sample", y)
    res["mean_image"] = ("dim", pair.mean_image)
    res.attrs.update(digits=list(digits), source=pair.source, n=len(pair.y),
                     counts=str(pair.counts), lr=P.lr,
                     simulate_wall_s=time.perf_counter() - start)
    return res


def rank_bound(W: np.ndarray, alpha: float, spectral_sq: np.ndarray) -> np.ndarray:
    """Theorem 1.3's stable-rank bound along a run (docs/math.md §4.2,
    :func:`shallowflow.theory.alignment.stable_rank_bound`): 2 + 4 sqrt(h) eps W_max^2 /
    ||W||_2^2, read in the theory's form W(0) = eps W_0 with [W_0]_ij ~ N(0, 1/D), i.e.
    eps = alpha sqrt(D) and W_max = max_j ||w_j(0)|| / eps for the experiments' N(0, alpha^2)
    entries (the theorem assumes a balanced start; the experiments' is not)."""
    h, D = W.shape[1], W.shape[2]
    eps = alpha * math.sqrt(D)
    w_max = float(np.linalg.norm(W[0], axis=1).max()) / eps
    return np.asarray(stable_rank_bound(spectral_sq, h, eps, w_max))


# ----------------------------------------------------------------------------------- judge
def measures(ds: xr.Dataset, r: str) -> dict[str, float]:
    """The numbers the claims read off reading ``r``."""
    one = ds.sel(reading=r)
    it = one["iteration"].values
    loss = one["loss"].values
    spectral = one["spectral_sq"].values
    return {"alignment_iteration": alignment_iteration(one["cos_plus"].values,
                                                       one["cos_minus"].values, it),
            "all_neurons_alignment_iteration": alignment_iteration(
                one["cos_plus_min"].values, one["cos_minus_min"].values, it),
            "growth_onset_iteration": onset_iteration(loss, it),
            "onset_at_0.9_L0": onset_iteration(loss, it, ONSET_DROP_VARIANT),
            "norm_onset_iteration": float(first_rise(spectral / spectral[-1], it.astype(float),
                                                     np.array([NORM_ONSET]), inclusive=True)[0]),
            "final_stable_rank": float(one["stable_rank"].values[-1]),
            "loss_ratio": float(loss[-1] / loss[0]),
            "initial_loss": float(loss[0]), "final_loss": float(loss[-1]),
            "final_cos_plus": float(one["cos_plus"].values[-1]),
            "final_cos_minus": float(one["cos_minus"].values[-1]),
            "last_iteration": float(it[-1])}


def _point(v: float) -> tuple[float, float] | None:
    return (v, v) if math.isfinite(v) else None


def _verdicts(ds: xr.Dataset, P: MnistParams, rule: Callable[[dict[str, float]], str],
              keys: tuple[str, ...], others: dict[str, Callable[[dict[str, float]], str]] | None = None,
              ) -> tuple[dict[str, float], str, dict[str, object]]:
    """The primary reading's measures and verdict, and per reading its numbers ``keys`` with the
    verdict; ``others``: verdicts of the same band under another measurement choice (name ->
    rule), shown beside."""
    per = {r: measures(ds, r) for r in ds["reading"].values.tolist()}
    variants = {r: {**{k: _round(m[k]) for k in keys}, "verdict": rule(m),
                    **{f"verdict ({name})": f(m) for name, f in (others or {}).items()}}
                for r, m in per.items()}
    return per[P.primary], rule(per[P.primary]), variants


def _round(v: float) -> float:
    return round(v, 4) if math.isfinite(v) else v


def _tally(variants: dict[str, object]) -> str:
    good = [r for r, v in variants.items() if v["verdict"] == "reproduced"]  # type: ignore[index]
    return f"Readings that reproduce it: {', '.join(good) if good else 'none'} (of {len(variants)})."


def judge(ds: xr.Dataset, P: MnistParams) -> list[Claim]:
    """The four claims of the digit-pair figures (module docstring)."""
    def align_on(key: str) -> Callable[[dict[str, float]], str]:
        def rule(m: dict[str, float]) -> str:
            if not math.isfinite(m[key]) and m["last_iteration"] > ALIGN_BAND[1]:
                return "not reproduced"  # never reached in a run longer than the band
            return band_verdict(_point(m[key]), ALIGN_BAND)
        return rule

    def growth_on(key: str) -> Callable[[dict[str, float]], str]:
        def rule(m: dict[str, float]) -> str:
            v = band_verdict(_point(m[key]), GROWTH_BAND)
            if v == "reproduced" and not m["alignment_iteration"] < m[key]:
                return "not reproduced"
            return v
        return rule

    align_rule, growth_rule = align_on("alignment_iteration"), growth_on("growth_onset_iteration")

    def rank_rule(m: dict[str, float]) -> str:
        s = m["final_stable_rank"]
        v = band_verdict(_point(s), RANK_BAND)
        return "partly" if v == "not reproduced" and s < RANK_BOUND else v

    def loss_rule(m: dict[str, float]) -> str:
        return band_verdict(_point(m["loss_ratio"]), (0.0, LOSS_RATIO))

    claims = []
    m, v, var = _verdicts(ds, P, align_rule, ("alignment_iteration", "all_neurons_alignment_iteration"),
                          {"all neurons": align_on("all_neurons_alignment_iteration")})
    claims.append(Claim(
        "alignment_time", "Neurons of V_+ (V_-) align with x_+ (x_-): good alignment after about "
        "2000 iterations", 2000.0, _round(m["alignment_iteration"]), v,
        _point(m["alignment_iteration"]),
        f"Alignment iteration: first record (interpolated) where both cos(w_bar_+, x_+) and "
        f"cos(w_bar_-, x_-) >= {ALIGN_LEVEL} (the mean neurons: the solid lines of the paper's "
        f"second plot). Rule: within [{ALIGN_BAND[0]:.0f}, {ALIGN_BAND[1]:.0f}] (2000 / {ABOUT:g} "
        f"to 2000 x {ABOUT:g}: 'about' read symmetrically, with the growth onset's factor); never "
        f"reached in a longer run: not reproduced. Variant 'all neurons': the smallest cosine "
        f"over V_+ and over V_- (the lower edges of the shaded bands) >= {ALIGN_LEVEL}: "
        f"{m['all_neurons_alignment_iteration']:.0f} for the headline reading, whose loss "
        f"onset (L <= {1 - ONSET_DROP:g} L(0)) is at {m['growth_onset_iteration']:.0f}. "
        f"Headline reading {P.primary}. {_tally(var)}", var,
        source=printed("§4, on Fig. 5 (second plot): \"Then all neurons in V_+ (V_-) start to "
                       "move towards x_+ (x_-) and achieve good alignment after ~2000 "
                       "iterations\"" + OTHER_PAIRS)))
    m, v, var = _verdicts(ds, P, growth_rule, ("growth_onset_iteration", "alignment_iteration",
                                               "onset_at_0.9_L0", "norm_onset_iteration"),
                          {"L <= 0.9 L(0)": growth_on("onset_at_0.9_L0"),
                           "||W||_2^2 at 1% of final": growth_on("norm_onset_iteration")})
    claims.append(Claim(
        "growth_onset", "After about 3000 iterations the norm ||W||_2^2 starts to grow and the loss "
        "decreases (after the alignment)", 3000.0,
        _round(m["growth_onset_iteration"]), v, _point(m["growth_onset_iteration"]),
        f"Onset: first iteration with L <= {1 - ONSET_DROP:g} L(0). Rule: within "
        f"[{GROWTH_BAND[0]:.0f}, {GROWTH_BAND[1]:.0f}] (3000 / {ABOUT:g} to 3000 x {ABOUT:g}) and "
        f"later than the alignment iteration. Variants: the onset at L <= "
        f"{1 - ONSET_DROP_VARIANT:g} L(0), and where ||W||_2^2 first reaches {NORM_ONSET:g} of its "
        f"final value. Headline reading {P.primary}. {_tally(var)}", var,
        source=printed("§4, on Fig. 5 (third plot): \"After ~3000 iterations, the norm ||W||_2^2 "
                       "starts to grow and the loss decreases\"" + OTHER_PAIRS)))
    m, v, var = _verdicts(ds, P, rank_rule, ("final_stable_rank",))
    claims.append(Claim(
        "stable_rank", "The stable rank ||W||_F^2/||W||_2^2 falls below 2 and is almost 1 "
        "(x_+ and x_- nearly opposite)", "below 2, almost 1", _round(m["final_stable_rank"]), v,
        _point(m["final_stable_rank"]),
        f"Stable rank at the last record. Rule: in {RANK_BAND} reproduced ('almost 1': one-sided, "
        f"a stable rank is never below 1; 1.5 is the project's reading of 'almost'); below "
        f"{RANK_BOUND} only: partly. Headline reading {P.primary}. {_tally(var)}", var,
        source=printed("§4, on Fig. 5 (third plot): \"the stable rank ||W||_F^2/||W||_2^2 "
                       "decreases below 2. [...] Therefore, the stable rank ||W||_F^2/||W||_2^2 is "
                       "almost 1, as seen from the plot\"" + OTHER_PAIRS)))
    m, v, var = _verdicts(ds, P, loss_rule, ("loss_ratio", "initial_loss", "final_loss"))
    claims.append(Claim(
        "loss_falls", "The loss decreases to a small value by iteration 15 000",
        f"L(end)/L(0) <= {LOSS_RATIO}", _round(m["loss_ratio"]), v, _point(m["loss_ratio"]),
        f"L(0) = {m['initial_loss']:.4g}, L(end) = {m['final_loss']:.4g}. Rule: ratio <= "
        f"{LOSS_RATIO}. Headline reading {P.primary}. {_tally(var)}", var,
        source=threshold(f"the paper says only that 'the loss decreases' (§4, on Fig. 5's third "
                         f"plot) and prints no loss value; L(end)/L(0) <= {LOSS_RATIO} (the loss "
                         f"down by a decade over the 15 000 iterations) is the project's own "
                         f"reading of it, one-sided")))
    return claims


# ------------------------------------------------------------------------------------ draw
def _panels(ds: xr.Dataset, r: str, title: str) -> object:
    import matplotlib.pyplot as plt

    one = ds.sel(reading=r)
    it = one["iteration"].values
    X, y = ds["X"].values, ds["y"].values
    order = np.argsort(-y, kind="stable")
    G = X[order] @ X[order].T
    fig = plt.figure(figsize=(17, 4.2))
    gs = fig.add_gridspec(2, 6, width_ratios=[1.3, 1.3, 1.3, 0.6, 0.6, 0.6])
    ax = fig.add_subplot(gs[:, 0])
    lim = float(np.percentile(np.abs(G), 99))
    im = ax.imshow(G, cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
    fig.colorbar(im, ax=ax, fraction=0.046)
    d0, d1 = ds.attrs["digits"]
    ax.set_title(f"<x_i, x_j>, digit {d0} (+1) first, then {d1}", fontsize=9)
    for row, (key, col, lab) in enumerate((("plus", "C3", "cos(w_bar_+, x_+)"),
                                           ("minus", "C2", "cos(w_bar_-, x_-)"))):
        ax = fig.add_subplot(gs[row, 1])
        ax.fill_between(it, one[f"cos_{key}_min"], one[f"cos_{key}_max"], color=col, alpha=0.25,
                        lw=0)
        ax.plot(it, one[f"cos_{key}"], color=col, lw=1.4, label=lab)
        ax.axhline(ALIGN_LEVEL, color="0.5", ls=":", lw=0.8)
        ax.set_ylim(-0.05, 1.02)
        ax.legend(fontsize=7, loc="lower right")
        if row == 0:
            ax.set_title("alignment (band: min..max over V_+ / V_-)", fontsize=9)
        else:
            ax.set_xlabel("iteration")
    ax = fig.add_subplot(gs[:, 2])
    loss = one["loss"].values
    ax.plot(it, loss / loss[0], color="C0", label=f"loss / L(0) (L(0) = {loss[0]:.3g})")
    scale = max(1.0, float(np.nanmax(one["stable_rank"][1:])))
    ax.plot(it, one["stable_rank"] / scale, color="C1", label="stable rank (scaled to max 1)")
    if "stable_rank_bound" in one:
        ax.plot(it, one["stable_rank_bound"] / scale, color="C1", ls="--", lw=0.8,
                label="Theorem 1.3 bound (same scale)")
        ax.set_ylim(-0.05, 1.1)
    ax2 = ax.twinx()
    ax2.plot(it, one["spectral_sq"], color="C4", label="||W||_2^2")
    ax2.set_ylabel("||W||_2^2", fontsize=8)
    ax.set_xlabel("iteration")
    ax.set_title(f"loss, stable rank (end {float(one['stable_rank'][-1]):.3f}), ||W||_2^2",
                 fontsize=9)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="center right")
    a, W = one["a_final"].values, one["W_final"].values
    xbar = ds["mean_image"].values
    xp, xm = class_directions(X, y)
    cp, cm = xp / max(1, int(np.sum(y > 0))), xm / max(1, int(np.sum(y < 0)))

    def scaled(sel: np.ndarray, ref: np.ndarray) -> np.ndarray:  # w_bar at the norm of x_bar_+-
        w = W[sel].mean(axis=0) if np.any(sel) else np.zeros_like(xbar)
        nw = float(np.linalg.norm(w))
        return w * (float(np.linalg.norm(ref)) / nw) if nw > 0 else w

    imgs = [(scaled(a > 0, cp), "w_bar_+ (scaled) + x_bar"),
            (scaled(a < 0, cm), "w_bar_- (scaled) + x_bar"),
            (cp, "x_bar_+ + x_bar"), (cm, "x_bar_- + x_bar")]
    cells = [gs[0, 3], gs[0, 4], gs[1, 3], gs[1, 4]]
    side = round(math.sqrt(len(xbar)))
    for cell, (img, lab) in zip(cells, imgs, strict=True):
        ax = fig.add_subplot(cell)
        ax.imshow((img + xbar).reshape(side, side), cmap="gray")
        ax.set_title(lab, fontsize=8)
        ax.axis("off")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def draw_pair(ds: xr.Dataset, P: MnistParams, figname: str, paper_fig: str) -> list[Figure]:
    """The four panels for the primary reading and the readings compared."""
    import matplotlib.pyplot as plt

    d0, d1 = ds.attrs["digits"]
    head = (f"MMV {paper_fig}: MNIST {d0} vs {d1}, n = {ds.attrs['n']}, h = {P.width}, alpha = "
            f"{P.alpha:g}, GD step {P.lr:g}")
    figs = [Figure(f"{figname}_panels", _panels(ds, P.primary, f"{head}, loss {P.primary}"),
                   f"The four panels of {paper_fig} for the headline reading {P.primary}: Gram "
                   "matrix sorted by label; alignment cosines with their min-max bands over "
                   "V_+/V_-; loss (relative), stable rank with Theorem 1.3's bound 2 + 4 sqrt(h) eps "
                   "W_max^2/||W||_2^2 (dashed, eps = alpha sqrt(D)) and ||W||_2^2; mean neurons and class "
                   "means at the last iteration, shifted back by the mean image (each mean neuron "
                   "rescaled to the norm of its class mean, so that it shows on the pixel scale).")]
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    for r in ds["reading"].values.tolist():
        one = ds.sel(reading=r)
        it, loss = one["iteration"].values, one["loss"].values
        axes[0].plot(it, loss / loss[0], label=r)
        axes[1].plot(it, np.fmin(one["cos_plus"], one["cos_minus"]), label=r)
        axes[2].semilogy(it, one["spectral_sq"], label=r)
    axes[0].set_title("loss / L(0)", fontsize=9)
    axes[1].set_title("min(cos(w_bar_+, x_+), cos(w_bar_-, x_-))", fontsize=9)
    axes[2].set_title("||W||_2^2", fontsize=9)
    for ax in axes:
        ax.axvspan(*GROWTH_BAND, color="0.9", zorder=0)
        ax.set_xlabel("iteration")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{head}: the four loss readings (grey: the paper's growth band)", fontsize=10)
    fig.tight_layout()
    figs.append(Figure(f"{figname}_readings", fig,
                       "Loss, alignment and ||W||_2^2 for each loss reading (exponential/logistic, "
                       "sum/mean), which the paper leaves open."))
    return figs


# ---------------------------------------------------------------------------------- method
def method_pair(ds: xr.Dataset, P: MnistParams) -> list[Section]:
    """Sections "Method", "Readings" and "Run time"."""
    X = ds["X"].values
    y = ds["y"].values
    agree = pair_sign_agreement(X, y)
    rows = ["| reading | alignment iteration | growth onset | final stable rank | L(end)/L(0) |",
            "|---|---|---|---|---|"]
    for r in ds["reading"].values.tolist():
        m = measures(ds, r)
        rows.append(f"| {r} | {m['alignment_iteration']:.0f} | {m['growth_onset_iteration']:.0f} "
                    f"| {m['final_stable_rank']:.4f} | {m['loss_ratio']:.4g} |")
    d0, d1 = ds.attrs["digits"]
    return [("Method", (
        f"MNIST digits {d0} (+1) and {d1} (-1): {ds.attrs['n']} images ({ds.attrs['counts']}) "
        f"from {ds.attrs['source']}; pixels / 255, centred over the pair (the paper: all training "
        f"images of the pair, about 12 000, unstated label assignment and scaling). Fraction of "
        f"pairs with y_i y_k <x_i, x_k> > 0: {agree:.3f} (Assumption 1 only approximately). "
        f"h = {P.width}, W and v entries N(0, {P.alpha:g}^2), seed {P.seed}; full-batch GD, step "
        f"{P.lr:g}, {P.steps} iterations, float64; snapshots every {P.every} iterations, all "
        f"quantities computed from them (theory.alignment, theory.alignment_measures). The paper "
        f"defines the training loss as a sum of exponential or logistic losses (§2) but does not "
        f"say which of the two its experiments use, nor whether they sum or average: each "
        f"reading is run; headline verdicts use {P.primary} (Fig. 5's loss axis starts at 1, "
        f"which only the exponential mean gives).")),
        ("Readings", "\n".join(rows)),
        run_time(ds)]
