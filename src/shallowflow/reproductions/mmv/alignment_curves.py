"""Common set-up of the Min-Mallada-Vidal reproductions (docs/math.md §4; paper 004, §4 and App. A).

The paper's experimental protocol (docs/math.md §4.1): f(x) = sum_j v_j relu(<w_j, x>) (no output
scale), entries of W and v drawn N(0, alpha^2) with alpha = 1e-6 (``init.scheme = "gaussian"``,
not balanced), h = 50, full-batch GD with step 2e-3 on both layers. The paper defines the loss
as a sum of exponential or logistic losses (§2) but does not say which one its experiments use,
nor their normalisation: the four readings exponential/logistic x sum/mean (:data:`READINGS`) are
offered; the reproductions
take :data:`PRIMARY` = "exponential-mean" for their headline verdicts because Fig. 5's loss panel
starts at 1 (exponential loss at f = 0, averaged; a sum starts at n, the logistic mean at log 2)
and report every reading they ran.

Everything MMV-specific is measured post hoc from recorded snapshots of W and v with
:mod:`shallowflow.theory.alignment` (cones) and :mod:`shallowflow.theory.alignment_measures`
(cosines and their bands, stable rank, spectral norm, A.5 changes); curve measurements come from
:mod:`shallowflow.analysis.curves`.

Helpers:

* :func:`mmv_experiment`: the validated experiment of one setting;
* :func:`first_layer_init`: App. A.5's comparison start (W ~ N(0, alpha^2), fixed v = +-1);
* :func:`curve_measures`: per-record alignment quantities of a recorded trajectory;
* :func:`alignment_iteration`, :func:`onset_iteration`: the two times the claims read off;
* :data:`TOY_X`, :data:`TOY_Y`: the toy 2-D mu-separated set of App. A.1 (coordinates chosen
  here: the paper does not give them);
* :func:`polar_panels`: 2-D neuron snapshots with the cones (``plots.polar.draw_polar``);
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, get_args

import numpy as np
import xarray as xr
from pydantic import Field

from shallowflow.analysis.curves import first_crossing, first_rise
from shallowflow.config import Experiment
from shallowflow.reproductions.base import Params
from shallowflow.reproductions.fields import (
    Alpha,
    Every,
    HiddenWidth,
    LearningRate,
    Reading,
    Seed,
    Steps,
)
from shallowflow.theory import alignment as al
from shallowflow.theory import alignment_measures as measures

PAPER_ALPHA = 1e-6  # §4 and App. A: entries of W and v ~ N(0, alpha^2)
PAPER_LR = 2e-3  # GD step
PAPER_WIDTH = 50  # h
PAPER_STEPS = 15_000  # Fig. 5's horizon (iterations)
PAPER_BATCH = 2000  # App. A.5's SGD batch
READINGS: dict[str, tuple[str, str]] = {
    name: tuple(name.split("-")) for name in get_args(Reading)}  # type: ignore[misc]
"""The paper's open loss readings (docs/math.md §7): name -> (loss, reduction)."""
PRIMARY = "exponential-mean"
"""The reading of the headline verdicts: Fig. 5's loss panel starts at 1 (module docstring)."""

ALIGN_LEVEL = 0.95  # "good alignment": both cos(w_bar_+, x_+) and cos(w_bar_-, x_-) >= this
ONSET_DROP = 0.01  # the loss "starts to decrease": first record with L <= (1 - 0.01) L(0)

# App. A.1's toy set (not given in the paper; chosen here): 4 positive points at angles 20..65
# degrees, 4 negative ones at 200..250 degrees, norms between 0.8 and 1.2. Same-label pairs are
# at most 50 degrees apart and opposite-label pairs at least 130 degrees, so mu = cos(50 deg).
_TOY_DEG = np.array([20.0, 35.0, 50.0, 65.0, 200.0, 220.0, 235.0, 250.0])
_TOY_NORM = np.array([1.0, 0.8, 1.2, 0.9, 1.1, 0.9, 1.0, 0.8])
TOY_X = np.column_stack([_TOY_NORM * np.cos(np.radians(_TOY_DEG)),
                         _TOY_NORM * np.sin(np.radians(_TOY_DEG))])
TOY_Y = np.array([1.0, 1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0])
TOY_DESCRIPTION = ("8 points in R^2: +1 at angles 20, 35, 50, 65 degrees with norms 1.0, 0.8, 1.2, "
                   "0.9; -1 at 200, 220, 235, 250 degrees with norms 1.1, 0.9, 1.0, 0.8 "
                   "(mu = cos 50 deg = 0.643)")


class GDRun(Params):
    """The full-batch GD run MMV's figures share (docs/math.md §4.3): h neurons, W and v
    entries N(0, alpha^2), ``steps`` iterations of step ``lr``, a record every ``every``."""

    width: HiddenWidth
    alpha: Alpha
    lr: LearningRate = Field(description="GD step size")
    steps: Steps = Field(description="GD iterations")
    every: Every
    seed: Seed


class MnistSource(Params):
    """Where an MNIST reproduction's images come from (docs/math.md §4.3): the embedded
    500-per-digit subset (``mnist_path`` None) or a user's IDX images file or .npz
    (``shallowflow reproduce mmv-fig5 --preset paper --set 'mnist_path="train-images-idx3-ubyte.gz"'``);
    ``per_digit`` keeps the first images of each digit (None: all of them)."""

    per_digit: int | None = Field(None, ge=2, description="images per digit (None: all)")
    mnist_path: str | None = Field(
        None, description="a user's MNIST images (IDX file, folder or .npz); None: embedded subset")

    def model_post_init(self, _: object) -> None:
        if self.mnist_path is None and self.per_digit is not None and self.per_digit > 500:
            raise ValueError(f"per_digit: the embedded subset has 500 images per digit (got "
                             f"{self.per_digit}); give mnist_path for more")

    def data(self, digits: Sequence[int]) -> dict[str, Any]:
        """The ``data`` table of the experiments (kind ``mnist``)."""
        return {"kind": "mnist", "digits": list(digits), "per_digit": self.per_digit,
                "path": self.mnist_path}


def reading(name: str) -> tuple[str, str]:
    """(loss, reduction) of a reading name of :data:`READINGS`."""
    return READINGS[name]


def mmv_experiment(*, data: dict[str, Any], width: int = PAPER_WIDTH, alpha: float = PAPER_ALPHA,
                   lr: float = PAPER_LR, steps: int = PAPER_STEPS, loss: str = "exponential",
                   reduction: str = "mean", seed: int = 0, runs: int = 1, every: int = 100,
                   at_steps: Sequence[int] = (), second_layer_rate: float = 1.0,
                   optimizer: str = "gd",
                   batch_size: int | None = None, init: dict[str, Any] | None = None,
                   name: str = "mmv") -> Experiment:
    """One setting of the paper's protocol (module docstring): records the loss, ``a`` (= v) and
    the snapshots of W every ``every`` steps (plus ``at_steps``). ``init`` replaces the Gaussian
    N(0, alpha^2) start (e.g. :func:`first_layer_init`)."""
    return Experiment.model_validate({
        "name": name, "seed": seed, "runs": runs, "data": data,
        "model": {"width": width},
        "init": init if init is not None else {"scheme": "gaussian", "scale": alpha},
        "train": {"loss": loss, "reduction": reduction, "lr": lr, "steps": steps,
                  "second_layer_rate": second_layer_rate, "optimizer": optimizer, "batch_size": batch_size},
        "record": {"every": every, "points": 0, "at_steps": list(at_steps),
                   "probes": ["loss", "a"], "snapshots": True},
    })


def first_layer_init(seed: int, width: int, d: int, alpha: float) -> dict[str, Any]:
    """App. A.5's first-layer-only start: W_ij ~ N(0, alpha^2), v_j = +-1 with equal probability
    (then fixed by ``train.second_layer_rate = 0``), drawn here with numpy's generator from ``seed``
    and given in memory (``init.scheme = "given"``)."""
    rng = np.random.default_rng(seed)
    W = alpha * rng.standard_normal((width, d))
    v = rng.choice([-1.0, 1.0], size=width)
    return {"scheme": "given", "a": v, "W": W}


def iterations(ds: xr.Dataset, lr: float) -> np.ndarray:
    """GD iteration of each record (flow time / lr, rounded)."""
    return np.round(ds["time"].values / lr).astype(np.int64)


def curve_measures(W: np.ndarray, a: np.ndarray, X: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Per-record quantities of a recorded trajectory W (T, p, d), a (T, p) (docs/math.md §4.4):
    the alignment cosines with their bands (``cos_plus``, ``cos_plus_min``, ...), the stable rank,
    ||W||_2^2, ||W||_F^2, |V_+| and the cone counts of V_+ and V_- (``cones`` (T, 2, 4), columns
    other, S_+, S_-, S_dead)."""
    xp, xm = al.class_directions(X, y)
    cos = measures.alignment_cosines(W, a, xp, xm)
    out = {f"cos_{k}": v for k, v in cos.items()}
    out["spectral_sq"] = np.asarray(measures.spectral_norm_sq(W))
    out["stable_rank"] = np.asarray(measures.stable_rank(W, out["spectral_sq"]))
    out["frobenius_sq"] = np.sum(W * W, axis=(-2, -1))
    out["n_plus"] = np.sum(a > 0, axis=-1)
    out["cones"] = al.cone_counts(W, X, y, a)
    return out


def alignment_iteration(cos_plus: np.ndarray, cos_minus: np.ndarray, it: np.ndarray,
                        level: float = ALIGN_LEVEL) -> float:
    """First iteration at which both class cosines reach ``level`` (``curves.first_rise`` of
    their minimum, interpolated between records; NaN if never). A missing class (all-positive
    data) drops its term."""
    both = np.fmin(cos_plus, cos_minus) if np.any(np.isfinite(cos_minus)) else cos_plus
    both = np.where(np.isfinite(both), both, -1.0)
    return float(first_rise(both, it.astype(float), np.array([level]), inclusive=True)[0])


def onset_iteration(loss: np.ndarray, it: np.ndarray, drop: float = ONSET_DROP) -> float:
    """First iteration with L <= (1 - drop) L(0) (``curves.first_crossing``; NaN if never): the
    loss "starts to decrease" and the norms grow."""
    return float(first_crossing(loss, it.astype(float), np.array([(1 - drop) * loss[0]]),
                                inclusive=True, below_at_start="nan")[0])


def all_aligned_iteration(cones: np.ndarray, it: np.ndarray) -> float:
    """First recorded iteration from which on every neuron of V_+ is in S_+ or S_dead and every
    neuron of V_- in S_- or S_dead (Theorem 1's alignment; ``cones`` (T, 2, 4) from
    :func:`curve_measures`); NaN if that never holds up to the last record."""
    bad = (cones[:, 0, al.OTHER] + cones[:, 0, al.S_MINUS]
           + cones[:, 1, al.OTHER] + cones[:, 1, al.S_PLUS]) > 0
    if bad[-1]:
        return math.nan
    k = len(bad) - int(np.argmax(bad[::-1])) if bad.any() else 0
    return float(it[k])


def stack(dss: Sequence[xr.Dataset], dim: str, labels: Sequence[Any]) -> xr.Dataset:
    """Datasets of equal shapes as one along ``dim`` (coordinate ``labels``); variables without
    ``dim`` in any of them (shared data) are kept once."""
    out = xr.concat(list(dss), dim=dim, data_vars="minimal", coords="minimal",
                    compat="override", combine_attrs="override")
    return out.assign_coords({dim: list(labels)})


# ------------------------------------------------------------------------------------ drawing
def polar_panels(fig: Any, spec: Any, snaps: Sequence[tuple[np.ndarray, np.ndarray]],
                 titles: Sequence[str], X: np.ndarray, floor: float, rmax: float) -> list[Any]:
    """One polar panel per snapshot (v, W) in the cells ``spec`` (a sequence of subplot specs):
    neurons at the angle of w_j, shifted-log radius of ||w_j|| (``plots.polar.draw_polar``;
    purple v_j > 0, red v_j < 0), the data directions (crosses) and the activation boundaries
    of the data (dotted), whose sectors are the cones S_+, S_- and S_dead."""
    from shallowflow.plots.polar import draw_polar

    axes = []
    for cell, (a, W), title in zip(spec, snaps, titles, strict=True):
        ax = fig.add_subplot(cell, projection="polar")
        draw_polar(ax, a, W, X=X, floor=floor, rmax=rmax, cones=True)
        ax.set_title(title, fontsize=9)
        axes.append(ax)
    return axes
