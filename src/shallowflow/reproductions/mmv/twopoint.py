"""mmv-two-point: two positive points at decreasing separation mu (paper 004, App. A.2-A.3,
Figures 7, 8 and 9 in one reproduction, so that the three settings share one initialisation and
one set of rules).

Data (docs/math.md §4.3): x_1 = (1, 0), x_2 = (sin angle, cos angle), y_1 = y_2 = +1, with
angle = 0.1 (Fig. 7, mu = sin 0.1), 0.001 (Fig. 8, mu = sin 0.001) and orthogonal x_2 = (0, 1)
(Fig. 9, mu = 0: ``angle = 0``). The
protocol of App. A.1: h = 50, W and v entries N(0, alpha^2) with alpha = 1e-6, GD step 2e-3 on
both layers; the loss is the reproductions' headline reading (``alignment_curves.PRIMARY``) unless changed.
The same seed gives the three settings the same initial network.

Claims:

* ``slower_as_mu_falls``: the iteration from which every positive-output neuron (V_+) is in S_+
  or S_dead comes later for mu = sin 0.001 than for sin 0.1 (never reached counts as later),
  and at the paper's check iteration (7000) no live V_+ neuron is outside S_+ for sin 0.1 while
  some are for sin 0.001;
* ``aligned_mu_positive`` (Theorem 1, mu = sin 0.1): at the last record every V_+ neuron is in
  S_+ or S_dead, those that started with a positive activation in S_+, and V_- is dead;
* ``orthogonal_three_directions`` (mu = 0): at the end of the alignment phase (loss onset,
  ``alignment_curves.onset_iteration``) every live V_+ neuron lies within :data:`ANGLE_TOL` of x_1, x_2 or
  x_+;
* ``orthogonal_only_splus_grow`` (mu = 0): at the last record the V_+ neurons in S_+ carry at
  least :data:`GROWN_SHARE` of sum_{V_+} ||w_j||^2.
"""

from __future__ import annotations

import math
import time

import numpy as np
import xarray as xr
from pydantic import Field

from shallowflow.reproductions.base import Figure, Reproduction, Section, run_time
from shallowflow.reproductions.claims import Claim, band_verdict, printed, qualitative, threshold
from shallowflow.reproductions.fields import LossReading, Seed
from shallowflow.reproductions.mmv.alignment_curves import (
    PAPER_ALPHA,
    PAPER_LR,
    PAPER_WIDTH,
    PRIMARY,
    READINGS,
    GDRun,
    all_aligned_iteration,
    iterations,
    mmv_experiment,
    onset_iteration,
    polar_panels,
    reading,
    stack,
)
from shallowflow.theory import alignment as al
from shallowflow.training.entry import Trainer

SETTINGS = ("sin 0.1", "sin 0.001", "0")
FIGURES = {"sin 0.1": "Fig. 7", "sin 0.001": "Fig. 8", "0": "Fig. 9"}
ANGLE_TOL = 0.05  # radians: "aligned with x_1, x_2 or x_+"
ANGLE_TOL_VARIANT = 0.1  # a looser alignment tolerance, reported beside
GROWN_SHARE = 0.9  # share of sum_{V_+} ||w_j||^2 carried by the S_+ neurons at mu = 0
FIG9 = "App. A.3, Fig. 9: "


class TwoPointParams(GDRun):
    """Parameters of mmv-two-point."""

    seed: Seed = Field(description="seed of the initialisation (shared by the settings)")
    reading: LossReading
    check: int = Field(gt=0, description="the paper's check iteration (Fig. 8: 7000)")
    late: int = Field(gt=0, description="the paper's late iteration (Fig. 8: 21 000)")

    def model_post_init(self, _: object) -> None:
        if self.reading not in READINGS:
            raise ValueError(f"reading: unknown {self.reading!r}; allowed: {', '.join(READINGS)}")


_COMMON = {"width": PAPER_WIDTH, "alpha": PAPER_ALPHA, "lr": PAPER_LR, "every": 100, "seed": 0,
           "reading": PRIMARY, "check": 7000, "late": 21_000}
PRESETS = {"quick": {**_COMMON, "steps": 25_000}, "paper": {**_COMMON, "steps": 30_000}}


def data_spec(setting: str) -> dict[str, object]:
    """The data of a setting (module docstring)."""
    return {"kind": "two_point", "angle": 0.0 if setting == "0" else float(setting.split()[1])}


# -------------------------------------------------------------------------------- simulate
def simulate(P: TwoPointParams, train: Trainer) -> xr.Dataset:
    """One run per setting; saves loss, v (``a``), W per record and the data, along ``setting``."""
    start = time.perf_counter()
    loss, red = reading(P.reading)
    exps = [mmv_experiment(data=data_spec(s), width=P.width, alpha=P.alpha, lr=P.lr,
                           steps=P.steps, loss=loss, reduction=red, seed=P.seed, every=P.every,
                           at_steps=(P.check, P.late), name="mmv-two-point") for s in SETTINGS]
    dss = train(exps, label="mmv-two-point", keep_data=True)
    keep = ["loss", "a", "W", "X", "y"]
    out = stack([ds[keep].isel(run=0).expand_dims(setting=[s]) for ds, s in zip(dss, SETTINGS,
                                                                               strict=True)],
                "setting", list(SETTINGS))
    out = out.assign_coords(iteration=("time", iterations(dss[0], P.lr)))
    out.attrs.update(lr=P.lr, simulate_wall_s=time.perf_counter() - start)
    return out


# ----------------------------------------------------------------------------------- judge
def _one(ds: xr.Dataset, s: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    one = ds.sel(setting=s)
    return (one["W"].values, one["a"].values, one["X"].values, one["y"].values,
            ds["iteration"].values)


def measures(ds: xr.Dataset, s: str, P: TwoPointParams) -> dict[str, object]:
    """Alignment iteration, live V_+ neurons outside S_+ at the check and late iterations and at
    the end, and the final cone counts of one setting."""
    W, a, X, y, it = _one(ds, s)
    cones = al.cone_counts(W, X, y, a)
    code = al.cone_membership(W, X, y)

    def outside(k: int) -> int:
        return int(np.sum((a[k] > 0) & (code[k] == al.OTHER)))

    def at(step: int) -> int:
        return int(np.argmin(np.abs(it - step)))

    return {"alignment_iteration": all_aligned_iteration(cones, it),
            "outside_at_check": outside(at(P.check)), "outside_at_late": outside(at(P.late)),
            "outside_at_end": outside(-1),
            "final_V_plus": dict(zip(al.CONE_NAMES, cones[-1, 0].tolist(), strict=True)),
            "final_V_minus": dict(zip(al.CONE_NAMES, cones[-1, 1].tolist(), strict=True)),
            "onset_iteration": onset_iteration(ds.sel(setting=s)["loss"].values, it)}


def _later(t_fast: float, t_slow: float) -> bool:
    return (not math.isfinite(t_slow) and math.isfinite(t_fast)) or t_slow > t_fast


def slower_claim(ds: xr.Dataset, P: TwoPointParams) -> Claim:
    """Rule in the module docstring; one part holding: partly."""
    m = {s: measures(ds, s, P) for s in SETTINGS}
    fast, slow = m["sin 0.1"], m["sin 0.001"]
    order = _later(fast["alignment_iteration"], slow["alignment_iteration"])  # type: ignore[arg-type]
    check = fast["outside_at_check"] == 0 and slow["outside_at_check"] > 0  # type: ignore[operator]
    verdict = "reproduced" if order and check else "partly" if order or check else "not reproduced"
    return Claim(
        "slower_as_mu_falls", "Alignment is slower as mu falls: at iteration 7000 all live positive "
        "neurons are in S_+ for mu = sin 0.1 but not for mu = sin 0.001 (one still outside at "
        "21 000)", {"sin 0.1 outside at 7000": 0, "sin 0.001 outside at 7000": "> 0",
                    "sin 0.001 outside at 21000": 1},
        {s: {k: m[s][k] for k in ("alignment_iteration", "outside_at_check", "outside_at_late",
                                  "outside_at_end")} for s in SETTINGS}, verdict, None,
        f"Alignment iteration: first record from which every V_+ neuron is in S_+ or S_dead "
        f"(nan: not by the end). 'outside': V_+ neurons (v_j > 0) in no cone (active on one point "
        f"only). Parts: ordering of the alignment iterations ({'holds' if order else 'fails'}), "
        f"counts at iteration {P.check} ({'hold' if check else 'fail'}). The count at "
        f"{P.late} is reported, not judged ('in this particular instance of the experiment').",
        source=printed("App. A.2 on Fig. 8: \"at iteration 7000, there are still neurons (that "
                       "are not dead) outside S_+ [...] while in our previous setting (mu = "
                       "sin(0.1)), all neurons (that are not dead) have reached S_+\"; \"we also "
                       "see one neuron remains outside S_+ at the late stage of the training (at "
                       "iteration 21000)\""))


def aligned_claim(ds: xr.Dataset, P: TwoPointParams) -> Claim:
    """Theorem 1 at mu = sin 0.1 (module docstring)."""
    W, a, X, y, _ = _one(ds, "sin 0.1")
    code = al.cone_membership(W, X, y)
    started = np.max(W[0] @ X.T, axis=-1) > 0
    pos, neg = a[-1] > 0, a[-1] < 0
    in_cones = bool(np.all(np.isin(code[-1][pos], (al.S_PLUS, al.S_DEAD))))
    started_in = bool(np.all(code[-1][pos & started] == al.S_PLUS))
    neg_dead = bool(np.all(code[-1][neg] == al.S_DEAD))
    parts = [in_cones, started_in, neg_dead]
    verdict = "reproduced" if all(parts) else "partly" if any(parts) else "not reproduced"
    return Claim(
        "aligned_mu_positive", "Theorem 1 (mu = sin 0.1): every positive neuron ends in S_+ or "
        "S_dead, in S_+ if it started with a positive activation; negative neurons die",
        "all", {"V_+ in S_+ or S_dead": in_cones, "started-active V_+ in S_+": started_in,
                "V_- dead": neg_dead,
                "final V_+ cones": dict(zip(al.CONE_NAMES, np.bincount(code[-1][pos], minlength=4)
                                            .tolist(), strict=True))},
        verdict, None,
        "Read at the last record; signs from the current v. Theorem 1 is stated for a balanced "
        "start (constant signs); this start is the experiments' Gaussian one. With positive data "
        "only, S_- is empty, so Theorem 1 leaves V_- only S_dead.",
        source=qualitative("App. A.2 on Fig. 7: \"positive neurons (that are not dead) eventually "
                           "enters S_+, activating both data points\"; Theorem 1.1: \"if max_{i "
                           "in I_+} <w_j(0), x_i> > 0, then w_j(t_1) in S_+\""))


def _angles(W: np.ndarray, refs: np.ndarray) -> np.ndarray:
    U = W / np.linalg.norm(W, axis=-1, keepdims=True)
    R = refs / np.linalg.norm(refs, axis=-1, keepdims=True)
    return np.arccos(np.clip(U @ R.T, -1.0, 1.0))


def orthogonal_claims(ds: xr.Dataset, P: TwoPointParams) -> list[Claim]:
    """The two mu = 0 claims (module docstring)."""
    W, a, X, y, it = _one(ds, "0")
    onset = onset_iteration(ds.sel(setting="0")["loss"].values, it)
    k = int(np.searchsorted(it, onset)) if math.isfinite(onset) else len(it) - 1
    k = min(k, len(it) - 1)
    refs = np.vstack([X[0], X[1], X[0] + X[1]])
    code = al.cone_membership(W[k], X, y)
    live = (a[k] > 0) & (code != al.S_DEAD)
    ang = _angles(W[k][live], refs)
    near = ang.min(axis=1) <= ANGLE_TOL
    near_loose = ang.min(axis=1) <= ANGLE_TOL_VARIANT
    which = np.argmin(ang, axis=1)
    counts = {name: int(np.sum(near & (which == i))) for i, name in enumerate(("x_1", "x_2", "x_+"))}
    counts["elsewhere"] = int(np.sum(~near))
    c1 = Claim(
        "orthogonal_three_directions", "At mu = 0 the positive neurons end the alignment phase "
        "aligned with x_1, x_2 or x_+ (Fig. 9)", "every live V_+ neuron near x_1, x_2 or x_+",
        counts, "reproduced" if near.all() and near.size else "not reproduced", None,
        f"Read at the end of the alignment phase, the loss onset (iteration {it[k]}); near: "
        f"within {ANGLE_TOL} rad (a tolerance of the project's own). Largest angle to the "
        f"nearest direction: {float(ang.min(axis=1).max()) if ang.size else float('nan'):.3g} rad.",
        {f"within {ANGLE_TOL_VARIANT} rad": {
            "near": f"{int(near_loose.sum())}/{near_loose.size}",
            "verdict": "reproduced" if near_loose.all() and near_loose.size else "not reproduced"}},
        source=qualitative(FIG9 + "\"In the alignment phase, positive neurons are aligned with "
                           "one of these directions: x_1, x_2, x_+\""))
    codeT = al.cone_membership(W[-1], X, y)
    pos = a[-1] > 0
    sq = np.sum(W[-1] ** 2, axis=-1)
    share = float(sq[pos & (codeT == al.S_PLUS)].sum() / sq[pos].sum()) if pos.any() else math.nan
    nrm = np.sqrt(sq)
    share_norm = (float(nrm[pos & (codeT == al.S_PLUS)].sum() / nrm[pos].sum()) if pos.any()
                  else math.nan)
    other = pos & (codeT != al.S_PLUS)
    ratio = (float(np.sqrt(sq[other].max() / sq[pos & (codeT == al.S_PLUS)].min()))
             if other.any() and np.any(pos & (codeT == al.S_PLUS)) else math.nan)
    c2 = Claim(
        "orthogonal_only_splus_grow", "At mu = 0 only the neurons in S_+ grow their norm for the "
        "final convergence (Fig. 9)", f"share of sum_(V_+) ||w_j||^2 in S_+ >= {GROWN_SHARE}",
        round(share, 6), band_verdict((share, share) if math.isfinite(share) else None,
                                      (GROWN_SHARE, 1.0)),
        (share, share) if math.isfinite(share) else None,
        f"At the last record: S_+ holds {int(np.sum(pos & (codeT == al.S_PLUS)))} of {int(pos.sum())} "
        f"V_+ neurons; the largest norm outside S_+ over the smallest inside: {ratio:.3g}. "
        f"Rule: share >= {GROWN_SHARE}.",
        {"share of sum_(V_+) ||w_j|| in S_+": round(share_norm, 6)},
        source=threshold(f"the paper's words (Fig. 9: \"only those aligned with x_+ grow their "
                         f"norm for final convergence\") give no number; a share >= {GROWN_SHARE} "
                         f"of the squared norm in S_+ is the project's reading of 'only', one-sided "
                         f"(the share is at most 1)"))
    return [c1, c2]


def judge(ds: xr.Dataset, P: TwoPointParams) -> list[Claim]:
    """The four claims of mmv-two-point."""
    return [slower_claim(ds, P), aligned_claim(ds, P), *orthogonal_claims(ds, P)]


# ------------------------------------------------------------------------------------ draw
def draw(ds: xr.Dataset, P: TwoPointParams) -> list[Figure]:
    """Per setting: neurons at initialisation, mid-alignment, the check and late iterations and
    the end, with the data and cones; and the loss curves."""
    import matplotlib.pyplot as plt

    from shallowflow.plots.polar import default_floor, shifted_log_radius

    it = ds["iteration"].values
    marks = [0, 2000, P.check, P.late, int(it[-1])]
    idx = [int(np.argmin(np.abs(it - m))) for m in marks]
    fig = plt.figure(figsize=(3.3 * len(idx), 3.4 * len(SETTINGS)))
    gs = fig.add_gridspec(len(SETTINGS), len(idx))
    for row, s in enumerate(SETTINGS):
        W, a, X, _, _ = _one(ds, s)
        floor = default_floor(W[0])
        rmax = float(shifted_log_radius(np.array(np.nanmax(np.linalg.norm(W, axis=-1))), floor))
        polar_panels(fig, [gs[row, c] for c in range(len(idx))], [(a[k], W[k]) for k in idx],
                     [f"mu = {s} ({FIGURES[s]}), it {it[k]}" for k in idx], X, floor, rmax or 1.0)
    fig.suptitle(f"MMV Figs. 7-9: two positive points, h = {P.width}, alpha = {P.alpha:g}, GD step "
                 f"{P.lr:g}, loss {P.reading} (purple v > 0, red v < 0; dotted: activation "
                 "boundaries)", fontsize=10)
    fig.tight_layout()
    fig2, ax = plt.subplots(1, 2, figsize=(11, 3.6))
    for s in SETTINGS:
        one = ds.sel(setting=s)
        W, a, X, y, _ = _one(ds, s)
        code = al.cone_membership(W, X, y)
        ax[0].plot(it, one["loss"], label=f"mu = {s}")
        ax[1].plot(it, np.sum((a > 0) & (code == al.OTHER), axis=-1), label=f"mu = {s}")
    ax[0].set_title("loss", fontsize=9)
    ax[1].set_title("positive neurons outside S_+ and S_dead", fontsize=9)
    for a_ in ax:
        a_.axvline(P.check, color="0.5", ls=":")
        a_.set_xlabel("iteration")
        a_.legend(fontsize=7)
        a_.grid(alpha=0.3)
    fig2.tight_layout()
    return [Figure("twopoint_neurons", fig,
                   "Neurons (angle of w_j, shifted-log radius of ||w_j||) for mu = sin 0.1, sin "
                   "0.001 and 0 at initialisation, iteration 2000, the paper's 7000 and 21 000 and "
                   "the end; crosses: x_1, x_2; dotted: the lines <x_i, w> = 0 bounding the cones."),
            Figure("twopoint_counts", fig2,
                   "Loss and the number of positive neurons in no cone (active on one point only) "
                   "against iteration, per mu (dotted: the check iteration).")]


def method(ds: xr.Dataset, P: TwoPointParams) -> list[Section]:
    """Sections "Method", "Measured" and "Run time"."""
    rows = ["| mu | alignment iteration | outside at check | outside late | outside at end | "
            "loss onset |", "|---|---|---|---|---|---|"]
    for s in SETTINGS:
        m = measures(ds, s, P)
        rows.append(f"| {s} | {m['alignment_iteration']} | {m['outside_at_check']} | "
                    f"{m['outside_at_late']} | {m['outside_at_end']} | {m['onset_iteration']:.0f} |")
    return [("Method", (
        f"x_1 = (1, 0), x_2 = (sin angle, cos angle) with angle 0.1 and 0.001, and x_2 = (0, 1); "
        f"y = +1 for both. h = {P.width}, W and v entries N(0, {P.alpha:g}^2), seed {P.seed} (the "
        f"same initial network in the three settings), full-batch GD step {P.lr:g}, {P.steps} "
        f"iterations, loss {P.reading} (the paper defines a sum of exponential or logistic "
        f"losses but does not say which its experiments use, nor the normalisation), float64, "
        f"snapshots every "
        f"{P.every} iterations and at {P.check} and {P.late}.")),
        ("Measured", "\n".join(rows)),
        run_time(ds)]


REPRODUCTION = Reproduction(
    "mmv-two-point", "alignment on two positive points as mu falls (Figs. 7-9)",
    "Min, Mallada, Vidal (004), Figures 7, 8 and 9", params=TwoPointParams, presets=PRESETS,
    simulate=simulate, judge=judge, draw=draw, method=method,
    summary="Two positive points with separation mu = sin 0.1, sin 0.001 and 0: positive neurons "
            "reach S_+ more slowly as mu falls, and at mu = 0 they stop at x_1, x_2 or x_+, only "
            "those in S_+ growing (Figures 7-9 of Min, Mallada and Vidal).")
