"""population-limit: gradient descent on N samples against gradient descent on the population,
from one start, as N grows (issue 35, item 5; docs/math.md §11.9).

Setting: inputs x ~ N(0, I_d), d = 9, the orthonormal ReLU teacher of k = 3 neurons (v_k = e_k,
b_k = 1), a student of p = 8 ReLU neurons, no bias, kappa = 1, both layers trained. For each of
``runs`` starts (Gaussian, a_j, w_j entries N(0, s^2); run r's start from the seed and r) the
population run (data kind ``gaussian_teacher``, the closed form) and, for each N in
``n_values``, a run on N samples labelled by the same teacher (``gaussian_teacher_samples``, a
fresh sample set per run), the same GD step and step budget, so both end at the same flow time.

Measured per (N, run): the distance between the end points |theta_N - theta_inf| (same neuron
labels: one start), its square, the distance up to a permutation of the neurons, the population
loss at the N-sample end point, and whether both reach the same minimum (the neuron roles of
:func:`roles` agree). Fitted: the log-log slopes of the median distance and of the median squared
distance against N over the pairs that reach the same minimum, with percentile bootstrap
intervals over the runs; the pairs that reach different minima are reported separately.

Expected (docs/math.md §11.9, derived): the empirical gradient is the population gradient plus a
fluctuation of size N^(-1/2) (central limit theorem), so the two flows stay O(N^(-1/2)) apart
up to a fixed time and their end points too: slope -1/2 for the distance, -1 for its square.
Issue 35 says "expected near -1" for the distance; the derivation gives -1 for the squared
distance, and both are judged, each with its source.

Layout of the saved Dataset: the end points (``a_pop``, ``W_pop`` on (run, ...); ``a_n``,
``W_n`` on (n, run, ...)), the measures on (n, run) and (run,), the roles on (n, run, neuron).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import xarray as xr
from pydantic import Field, field_validator, model_validator

from shallowflow.analysis.assignment import permutation_distance
from shallowflow.analysis.fits import bootstrap_slope
from shallowflow.config import Experiment, experiment_from_mapping
from shallowflow.dynamics.teacher_probes import teacher_distance_of
from shallowflow.model.population import Teacher, population_gradient
from shallowflow.reproductions.base import Figure, Params, Reproduction, Section
from shallowflow.reproductions.claims import Claim, band_verdict, derived, threshold
from shallowflow.reproductions.fields import LearningRate, Runs, Seed, Steps
from shallowflow.training.entry import Trainer


class LimitParams(Params):
    """Parameters of population-limit."""

    d: int = Field(ge=2, le=1024, description="input dimension")
    teacher_width: int = Field(ge=1, description="teacher neurons k (orthonormal, k <= d)")
    width: int = Field(ge=1, le=4096, description="student neurons p")
    n_values: list[int] = Field(min_length=2, description="sample counts N (increasing)")
    runs: Runs = Field(description="starts (seeds) per N")
    lr: LearningRate
    steps: Steps
    init_scale: float = Field(gt=0, description="initial scale s: a_j, w_j entries N(0, s^2)")
    bootstrap: int = Field(ge=100, description="bootstrap resamples of each slope")
    seed: Seed = Field(description="seed of the starts (run r: the seed and r) and samples")

    @field_validator("n_values")
    @classmethod
    def _increasing(cls, v: list[int]) -> list[int]:
        if any(n < 1 for n in v) or any(b <= a for a, b in itertools.pairwise(v)):
            raise ValueError(f"must be increasing positive sample counts, got {v}")
        return v

    @model_validator(mode="after")
    def _teacher_fits(self) -> LimitParams:
        if self.teacher_width > self.d:
            raise ValueError(f"teacher_width: the orthonormal teacher needs k <= d = {self.d}, "
                             f"got {self.teacher_width}")
        return self


PRESETS = {
    "quick": {"d": 9, "teacher_width": 3, "width": 8, "n_values": [1000, 3000, 10000],
              "runs": 8, "lr": 0.5, "steps": 4000, "init_scale": 0.3, "bootstrap": 2000, "seed": 0},
    "paper": {"d": 9, "teacher_width": 3, "width": 8, "n_values": [1000, 10000, 100000],
              "runs": 20, "lr": 0.5, "steps": 4000, "init_scale": 0.3, "bootstrap": 2000,
              "seed": 0},
}
SLOPE_SQ = -1.0  # the squared distance (issue 35's "near -1", read as the squared distance)
SLOPE = -0.5  # the distance itself (docs/math.md §11.9)
BAND_SQ = 0.2  # "near": [-1.2, -0.8] for the square, hence [-0.6, -0.4] for the distance
MAX_WIDTH_SQ = 0.6  # a wider interval cannot decide
ROLE_FLOOR = 0.05  # a neuron with |z_j| < ROLE_FLOOR * min_k |t_k| is silent (role -1)
ROLE_CARRY = 0.25  # silent in one end point and below this strength in the other: one minimum
GRAD_TOL = 1e-6  # a population end point with ||grad L|| <= GRAD_TOL counts as converged
SAME_PARTLY = 0.8  # same-minimum check: 'partly' when at least this fraction agrees


# ------------------------------------------------------------------------------------ simulate
def experiment(P: LimitParams, n: int | None) -> Experiment:
    """The runs on the population (``n`` None) or on n samples per run, from the same starts."""
    data: dict[str, Any] = {"kind": "gaussian_teacher", "d": P.d, "k": P.teacher_width,
                            "teacher": "orthonormal", "seed": P.seed}
    if n is not None:
        data.update(kind="gaussian_teacher_samples", n=n, per_run=True)
    return experiment_from_mapping({
        "name": f"population-limit-{'inf' if n is None else n}", "seed": P.seed, "runs": P.runs,
        "data": data, "model": {"width": P.width},
        "init": {"scheme": "gaussian", "scale": P.init_scale},
        "train": {"lr": P.lr, "steps": P.steps},
        "record": {"points": 8, "probes": ["loss"]},
    })


def teacher(P: LimitParams) -> Teacher:
    """The orthonormal teacher: b_k = 1, v_k = e_k."""
    return Teacher(np.ones(P.teacher_width), np.eye(P.d)[: P.teacher_width])


def strengths(a: np.ndarray, W: np.ndarray, t: Teacher, kappa: float = 1.0) -> np.ndarray:
    """|z_j| / min_k |b_k v_k| (..., p): each neuron's effective norm, z_j = kappa |a_j| w_j,
    relative to the smallest teacher neuron's (docs/math.md §11.9)."""
    z = kappa * np.abs(a) * np.linalg.norm(W, axis=-1)
    return z / np.min(np.abs(np.asarray(t.b)) * np.linalg.norm(np.asarray(t.V), axis=-1))


def roles(a: np.ndarray, W: np.ndarray, t: Teacher, kappa: float = 1.0) -> np.ndarray:
    """The role of each neuron (..., p): the teacher neuron k of its own sign that its direction
    is closest to (largest cosine), or -1 when it is silent, its strength (:func:`strengths`)
    below ROLE_FLOOR (docs/math.md §11.9)."""
    b, V = np.asarray(t.b), np.asarray(t.V)
    cos = np.einsum("...jd,kd->...jk", W, V) / (
        np.linalg.norm(W, axis=-1)[..., None] * np.linalg.norm(V, axis=-1) + 1e-300)
    cos = np.where(np.sign(a)[..., None] == np.sign(b), cos, -np.inf)
    silent = (strengths(a, W, t, kappa) < ROLE_FLOOR) | ~np.isfinite(np.max(cos, axis=-1))
    return np.where(silent, -1, np.argmax(cos, axis=-1))


def same_minimum(role: np.ndarray, strength: np.ndarray, role2: np.ndarray,
                 strength2: np.ndarray) -> np.ndarray:
    """Whether two end points from one start reach the same minimum (...): every neuron has the
    same role in both, or is silent in one and weak (strength below ROLE_CARRY) in the other (a
    neuron still fading where the other flow has silenced it; docs/math.md §11.9)."""
    fading = (((role == -1) & (strength2 < ROLE_CARRY))
              | ((role2 == -1) & (strength < ROLE_CARRY)))
    return np.all((role == role2) | fading, axis=-1)


def measures(P: LimitParams, pop: xr.Dataset, parts: list[xr.Dataset]) -> xr.Dataset:
    """The end points and every measure of the (N, run) pairs (module docstring)."""
    t = teacher(P)
    ap, Wp = pop.a_final.values, pop.W_final.values
    an = np.stack([ds.a_final.values for ds in parts])
    Wn = np.stack([ds.W_final.values for ds in parts])
    dist = np.sqrt(np.sum((an - ap) ** 2, axis=-1) + np.sum((Wn - Wp) ** 2, axis=(-1, -2)))
    dperm = permutation_distance(an, Wn, np.broadcast_to(ap, an.shape),
                                 np.broadcast_to(Wp, Wn.shape))[0]
    g_pop = population_gradient(ap, Wp, t)
    g_n = population_gradient(an, Wn, t)
    grad_pop = np.sqrt(np.sum(np.asarray(g_pop.grad_a) ** 2, axis=-1)
                       + np.sum(np.asarray(g_pop.grad_W) ** 2, axis=(-1, -2)))
    role_pop, role_n = roles(ap, Wp, t), roles(an, Wn, t)
    strength_pop, strength_n = strengths(ap, Wp, t), strengths(an, Wn, t)
    dims, nr = ("n", "run"), ("n", "run", "neuron")
    return xr.Dataset(
        {"a_pop": (("run", "neuron"), ap), "W_pop": (("run", "neuron", "dim"), Wp),
         "a_n": (nr, an), "W_n": (("n", "run", "neuron", "dim"), Wn),
         "distance": (dims, dist), "distance_perm": (dims, dperm),
         "sample_loss": (dims, np.stack([ds.loss.values[:, -1] for ds in parts])),
         "sample_population_loss": (dims, np.asarray(g_n.loss)),
         "population_loss": ("run", np.asarray(g_pop.loss)),
         "population_grad": ("run", grad_pop),
         "teacher_distance_pop": ("run", teacher_distance_of(ap, Wp, t.b, t.V)),
         "teacher_distance_n": (dims, teacher_distance_of(an, Wn, t.b, t.V)),
         "role_pop": (("run", "neuron"), role_pop), "role_n": (nr, role_n),
         "strength_pop": (("run", "neuron"), strength_pop), "strength_n": (nr, strength_n),
         "same_minimum": (dims, same_minimum(role_n, strength_n, role_pop, strength_pop))},
        coords={"n": list(P.n_values), "run": np.arange(P.runs)})


def simulate(P: LimitParams, train: Trainer) -> xr.Dataset:
    """The population runs and the runs on each N, in one training call; then the measures."""
    pop, *parts = train([experiment(P, None), *(experiment(P, n) for n in P.n_values)],
                        label="population-limit")
    return measures(P, pop, parts)


# --------------------------------------------------------------------------------------- judge
STATISTICS = {"median": np.median, "mean": np.mean}


def slope_fit(ds: xr.Dataset, key: str, P: LimitParams, statistic: str = "median",
              subset: xr.DataArray | None = None, distance: str = "distance"
              ) -> tuple[float, tuple[float, float]]:
    """The log-log slope against N of the ``statistic`` over runs of ``key`` (``distance`` or
    ``distance_sq``, of the variable ``distance``) over the pairs that reach the same minimum
    (and ``subset``), with its 95% percentile bootstrap interval over runs."""
    keep = ds.same_minimum if subset is None else ds.same_minimum & subset
    d = ds[distance].where(keep)
    values = d**2 if key == "distance_sq" else d
    groups = {float(n): values.sel(n=n).values for n in ds.n.values}
    return bootstrap_slope(groups, STATISTICS[statistic], P.bootstrap, seed=P.seed)


def _text(fit: tuple[float, tuple[float, float]]) -> str:
    s, (lo, hi) = fit
    return f"{s:.3f} [{lo:.3f}, {hi:.3f}]"


def _counts(ds: xr.Dataset) -> str:
    return ", ".join(f"N = {int(n)}: {int(ds.same_minimum.sel(n=n).sum())} of {ds.sizes['run']}"
                     for n in ds.n.values)


def _variants(ds: xr.Dataset, key: str, P: LimitParams) -> dict[str, str]:
    """The same slope by the mean, over the pairs whose population run converged, over all
    pairs and up to a permutation of the neurons."""
    converged = ds.population_grad <= GRAD_TOL
    return {
        "mean over runs": _text(slope_fit(ds, key, P, "mean")),
        f"median, population run converged (||grad L|| <= {GRAD_TOL:g}; "
        f"{int(converged.sum())} runs)": _text(slope_fit(ds, key, P, subset=converged)),
        "median, all pairs (different minima included)": _text(bootstrap_slope(
            {float(n): ds.distance.sel(n=n).values ** (2 if key == "distance_sq" else 1)
             for n in ds.n.values}, np.median, P.bootstrap, seed=P.seed)),
        "median, up to a permutation of the neurons": _text(
            slope_fit(ds, key, P, distance="distance_perm")),
    }


STATISTIC_NOTE = (
    "The statistic is the median over runs: in the first paper-preset run two of 20 pairs at "
    "N = 1e5 whose population run was still moving (||grad L|| about 1e-5 at the end, slowly "
    "along the flat directions of the set of global minima) held most of the mean; the "
    "median was chosen after seeing that (the mean is the first variant).")


def slope_sq_claim(ds: xr.Dataset, P: LimitParams) -> Claim:
    """The squared distance falls as N^-1 (issue 35's 'near -1')."""
    slope, interval = slope_fit(ds, "distance_sq", P)
    band = (SLOPE_SQ - BAND_SQ, SLOPE_SQ + BAND_SQ)
    literal = slope_fit(ds, "distance", P)
    return Claim(
        "slope_distance_sq", "the squared distance between the end points of the N-sample and "
        "population flows falls as N^-1 (log-log slope near -1)", SLOPE_SQ, round(slope, 3),
        band_verdict(interval, band, MAX_WIDTH_SQ), (round(interval[0], 3), round(interval[1], 3)),
        f"Slope of log(median over runs of |theta_N - theta_inf|^2) against log N over the pairs "
        f"that reach the same minimum ({_counts(ds)}); 95% percentile bootstrap over runs. Rule: "
        f"reproduced if the interval meets [{band[0]:g}, {band[1]:g}] and is at most "
        f"{MAX_WIDTH_SQ:g} wide. {STATISTIC_NOTE} Issue 35 states 'expected near -1' for the "
        f"distance itself; read literally that is contradicted here: the distance's slope is "
        f"{_text(literal)}, the -1/2 of docs/math.md §11.9 (claim slope_distance).",
        {"issue 35 read literally (the distance, -1)": band_verdict(
            literal[1], band, MAX_WIDTH_SQ), **_variants(ds, "distance_sq", P)},
        source=derived("issue 35, item 5: 'expected near -1' for the distance between the end "
                       "points; the central-limit argument of docs/math.md §11.9 gives a "
                       "distance of order N^(-1/2), so -1 is the squared distance's slope"))


def slope_claim(ds: xr.Dataset, P: LimitParams) -> Claim:
    """The distance falls as N^(-1/2)."""
    slope, interval = slope_fit(ds, "distance", P)
    band = (SLOPE - BAND_SQ / 2, SLOPE + BAND_SQ / 2)
    return Claim(
        "slope_distance", "the distance between the end points of the N-sample and population "
        "flows falls as N^(-1/2) (log-log slope -1/2)", SLOPE, round(slope, 3),
        band_verdict(interval, band, MAX_WIDTH_SQ / 2),
        (round(interval[0], 3), round(interval[1], 3)),
        f"Slope of log(median over runs of |theta_N - theta_inf|) against log N over the pairs "
        f"that reach the same minimum ({_counts(ds)}); 95% percentile bootstrap over runs. Rule: "
        f"reproduced if the interval meets [{band[0]:g}, {band[1]:g}] (half the squared "
        f"distance's band) and is at most {MAX_WIDTH_SQ / 2:g} wide. {STATISTIC_NOTE}",
        _variants(ds, "distance", P),
        source=derived("docs/math.md §11.9: the empirical gradient is the population gradient "
                       "plus a fluctuation of order N^(-1/2) (central limit theorem); the flows "
                       "stay O(N^(-1/2)) apart up to a fixed time (Gronwall)"))


def same_minimum_claim(ds: xr.Dataset) -> Claim:
    """At the largest N every pair reaches the same minimum."""
    last = ds.same_minimum.isel(n=-1).values
    frac = float(last.mean())
    verdict = ("reproduced" if frac == 1.0 else "partly" if frac >= SAME_PARTLY
               else "not reproduced")
    other = [f"N = {int(n)}, run {int(r)}: distance {float(ds.distance.sel(n=n, run=r)):.3g}"
             for n in ds.n.values for r in ds.run.values
             if not bool(ds.same_minimum.sel(n=n, run=r))]
    return Claim(
        "same_minimum", "at the largest N every N-sample flow ends at the population flow's "
        "minimum (the same neuron roles)", 1.0, round(frac, 4), verdict, None,
        f"Pairs with equal roles per N: {_counts(ds)}. A neuron's role is the teacher neuron of "
        f"its sign closest in angle, or silent when kappa |a_j| |w_j| < {ROLE_FLOOR:g} "
        f"min_k |b_k| |v_k|; a neuron silent in one end point and below {ROLE_CARRY:g} in the "
        f"other counts as equal (docs/math.md §11.9). Pairs reaching different minima, left out "
        f"of the fits: {'; '.join(other) if other else 'none'}.",
        source=threshold("the limit N -> infinity of the empirical flow is the population flow "
                         "(docs/math.md §11.9): from one start both should end in one basin; "
                         f"'partly' from {SAME_PARTLY:.0%}"), role="check")


def converged_claim(ds: xr.Dataset) -> Claim:
    """The population runs end at stationary points."""
    g = ds.population_grad.values
    frac = float(np.mean(g <= GRAD_TOL))
    return Claim(
        "population_converged", f"the population runs end at stationary points "
        f"(||grad L|| <= {GRAD_TOL:g})", 1.0, round(frac, 4),
        "reproduced" if frac == 1.0 else "partly" if frac >= SAME_PARTLY else "not reproduced",
        None, f"Largest end gradient norm {float(g.max()):.3g}, median {float(np.median(g)):.3g}; "
        f"largest end population loss {float(ds.population_loss.max()):.3g}; distance to the "
        f"embedded teachers (docs/math.md §11.9) 0 up to 1e-6 for "
        f"{int(np.sum(ds.teacher_distance_pop.values < 1e-6))} of {ds.sizes['run']} runs (the "
        f"others end at a global minimum that splits a teacher neuron, or have not converged). "
        f"The distances are taken at one flow time either way.",
        source=threshold("the distance is between end points; a run still moving at the end "
                         "measures the flows at one time instead"), role="check")


def judge(ds: xr.Dataset, P: LimitParams) -> list[Claim]:
    """The two slopes and the two checks."""
    return [slope_sq_claim(ds, P), slope_claim(ds, P), same_minimum_claim(ds),
            converged_claim(ds)]


# ---------------------------------------------------------------------------------------- draw
def draw_panel(ax: Any, ds: xr.Dataset, P: LimitParams, key: str) -> None:
    """The distance (or its square) of every pair against N, the means, the fit and the
    derived slope."""
    ns = ds.n.values.astype(float)
    d = ds.distance.values ** (2 if key == "distance_sq" else 1)
    same = ds.same_minimum.values
    for i, n in enumerate(ns):
        ax.loglog(np.full(same[i].sum(), n), d[i][same[i]], ".", color="C0", ms=4, alpha=0.5)
        if (~same[i]).any():
            ax.loglog(np.full((~same[i]).sum(), n), d[i][~same[i]], "x", color="C3", ms=5)
    mean = np.array([np.median(d[i][same[i]]) if same[i].any() else np.nan
                     for i in range(len(ns))])
    slope, (lo, hi) = slope_fit(ds, key, P)
    ax.loglog(ns, mean, "o", color="C0", ms=7,
              label=f"median (same minimum): slope {slope:.2f} [{lo:.2f}, {hi:.2f}]")
    ok = np.isfinite(mean)
    if ok.sum() >= 2:
        coef = np.polyfit(np.log(ns[ok]), np.log(mean[ok]), 1)
        nn = np.geomspace(ns[0], ns[-1], 50)
        ax.loglog(nn, np.exp(np.polyval(coef, np.log(nn))), "-", color="C0", lw=1)
        ref = SLOPE_SQ if key == "distance_sq" else SLOPE
        first = np.flatnonzero(ok)[0]
        ax.loglog(nn, mean[first] * (nn / ns[first]) ** ref, "k--", lw=1,
                  label=f"slope {ref:g} (docs/math.md §11.9)")
    ax.plot([], [], "x", color="C3", label="different minima (not fitted)")
    ax.set_xlabel("N (samples)")
    ax.set_ylabel("|theta_N - theta_inf|" + ("^2" if key == "distance_sq" else ""))
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")


def draw(ds: xr.Dataset, P: LimitParams) -> list[Figure]:
    """Distance and squared distance against N, side by side."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), layout="constrained")
    draw_panel(axes[0], ds, P, "distance")
    draw_panel(axes[1], ds, P, "distance_sq")
    fig.suptitle(f"N samples against the population: d = {P.d}, teacher k = {P.teacher_width}, "
                 f"student p = {P.width}, {P.runs} starts, GD lr = {P.lr:g}, {P.steps} steps",
                 fontsize=11)
    return [Figure("population_limit", fig,
                   "Distance between the end points of GD on N samples and GD on the population "
                   "loss from the same start (left) and its square (right) against N, log-log: "
                   "dots are runs, circles their medians over the pairs that reach the same "
                   "minimum, with the least-squares line through them and the slope derived in "
                   "docs/math.md §11.9 (dashed); crosses are pairs that reach different minima, "
                   "left out of the fits.")]


def method(ds: xr.Dataset, P: LimitParams) -> list[Section]:
    """The protocol and the run count."""
    runs = P.runs * (1 + len(P.n_values))
    excess = ", ".join(f"N = {int(n)}: {float(ds.sample_population_loss.sel(n=n).median()):.3g}"
                       for n in ds.n.values)
    return [
        ("Method", (
            f"Inputs x ~ N(0, I_{P.d}), the orthonormal ReLU teacher h*(x) = sum_k relu(x_k), "
            f"k = 1..{P.teacher_width}; a student of {P.width} ReLU neurons, no bias, kappa = 1, "
            f"both layers trained, from a Gaussian start (a_j and w_j entries N(0, "
            f"{P.init_scale:g}^2)); GD with lr = {P.lr:g} for {P.steps} steps (flow time "
            f"{P.lr * P.steps:g}) on the square loss 1/2 E[(h - h*)^2]: on the population in "
            f"closed form (data kind gaussian_teacher, docs/math.md §11.2) and on N = "
            f"{', '.join(str(n) for n in P.n_values)} samples per run (gaussian_teacher_samples, "
            f"a fresh sample set per run), from the same {P.runs} starts. Distances are "
            f"Euclidean over (a, W) with the neurons as started; the distance up to a "
            f"permutation (variant) uses linear_sum_assignment. Median population loss at the "
            f"N-sample end points: {excess}; at the population end points "
            f"{float(ds.population_loss.median()):.3g}.")),
        ("Run time", f"Runs trained: {runs} ({P.runs} on the population, {P.runs} per N)."),
    ]


REPRODUCTION = Reproduction(
    "population-limit", "the finite-sample flow against the population flow as N grows",
    "Issue 35 (the population setting; Safran and Shamir 2018, Safran, Yehudai and Shamir "
    "2021); docs/math.md §11.9", LimitParams, PRESETS, simulate, judge, draw, method,
    summary="GD on N Gaussian samples of a ReLU teacher and GD on the population loss in closed "
            "form, from the same start: the distance between their end points against N, with "
            "the fitted log-log slopes of the distance and its square.")
