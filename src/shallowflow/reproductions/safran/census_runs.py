"""The runs of safran-minima and their census (docs/math.md §11.8): for each teacher width k and
student width n = k + extra, ``runs`` networks from Xavier's start trained by GD on the
Safran-Shamir objective

    F(W) = 1/2 E[(sum_i relu(<w_i, x>) - sum_i relu(<e_i, x>))^2],   x ~ N(0, I_k),

(data kind ``gaussian_teacher`` with the orthonormal teacher, output weights frozen at 1) until
||grad F||_F <= ``stop_grad`` or the step budget; then at every end point the closed-form loss and
gradient, the Hessian spectrum (:func:`~shallowflow.stationary.population_state.hessian_spectra`),
the verdict (:func:`~shallowflow.stationary.population_state.decide`) and the canonical form up
to permutations of neurons and coordinates (:mod:`shallowflow.stationary.census`).

The Dataset has one entry per run (dimension ``run``: ``run_k``, ``run_n``, ``run_converged``,
``run_global``, ``run_stop`` (the stop reason: "gradient", "loss" or "steps"), ``run_label``,
``run_loss``, ``run_grad_norm``, ``run_eig_min``, ``run_eig_max``,
``run_steps``, ``run_class``) and one per census class (dimension ``class``: the census columns
``class_k``, ``class_n``, ``class_runs``, ``class_converged``, ``class_loss``, ``class_eig_min``,
``class_multiplicity``, ``class_global`` and the canonical form ``class_W`` (class, neuron,
dim), NaN-padded to the largest n and k), with the wall seconds of each part in its attributes
(``train_s``, ``hessian_s``, ``census_s``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from shallowflow.config import Experiment, experiment_from_mapping
from shallowflow.model.population import Teacher, population_gradient
from shallowflow.precision import float64
from shallowflow.stationary.census import CLASS_TOL, canonical_form, census
from shallowflow.stationary.population_state import (
    decide,
    hessian_spectra,
    population_problem,
)
from shallowflow.stationary.verdict import Tolerances, near_zero
from shallowflow.training.entry import Trainer

RECORD_EVERY = 50
"""Steps between record points, where the gradient stop is tested (docs/math.md §0.3)."""
TOL = Tolerances(grad=1e-8, loss=1e-10)
"""The verdict's tolerances (docs/math.md §9.6): a run that stopped at ||grad F|| <= 1e-12 is
stationary to far below ``grad``; ``loss`` separates global minima (F ~ 1e-24 there) from the
spurious ones (F > 1e-3)."""


def experiment(k: int, n: int, runs: int, seed: int, lr_scale: float, steps: int,
               stop_grad: float, stop_loss: float = 0.0) -> Experiment:
    """Safran and Shamir's protocol at one (k, n): orthonormal teacher in d = k, n students
    from Xavier's start with output weights 1 (frozen: second_layer_rate 0), GD at step
    ``lr_scale`` / k until ||grad F|| <= ``stop_grad`` (tested every :data:`RECORD_EVERY` steps)
    or, where ``stop_loss`` > 0, F < ``stop_loss`` (tested every step)."""
    return experiment_from_mapping({
        "name": f"safran-k{k}-n{n}", "seed": seed, "runs": runs,
        "data": {"kind": "gaussian_teacher", "d": k, "k": k, "teacher": "orthonormal"},
        "model": {"width": n},
        "init": {"scheme": "xavier", "output": "ones"},
        "train": {"lr": lr_scale / k, "steps": steps, "stop_grad": stop_grad,
                  "stop_loss": stop_loss or None, "second_layer_rate": 0.0},
        "record": {"every": RECORD_EVERY, "points": 0, "probes": ["loss"]},
    })


def end_points(ds: xr.Dataset, k: int, stop_grad: float) -> tuple[pd.DataFrame, np.ndarray,
                                                                    float, float]:
    """Per run of one (k, n): loss, gradient norm, Hessian spectrum ends, verdict and canonical
    form; returns (per-run table, canonical forms (R, n, k), Hessian seconds, census seconds)."""
    a, W = ds.a_final.values, ds.W_final.values
    R = W.shape[0]
    prob = population_problem(np.ones(k), np.eye(k), train_a=False)
    with float64():
        pg = population_gradient(a, W, Teacher(np.ones(k), np.eye(k)))
        loss, gW = np.asarray(pg.loss), np.asarray(pg.grad_W)
    grad = np.sqrt(np.sum(gW**2, axis=(1, 2)))
    zero = np.sum(near_zero(np.linalg.norm(W, axis=2), TOL.zero), axis=1)
    start = time.perf_counter()
    smooth = np.flatnonzero(zero == 0)  # a zero neuron: no Hessian there (docs/math.md §11.3)
    eig_min, eig_max = np.full(R, np.nan), np.full(R, np.nan)
    if smooth.size:
        spectra = hessian_spectra(a[smooth], W[smooth], prob)
        eig_min[smooth], eig_max[smooth] = spectra[:, 0], spectra[:, -1]
    hessian_s = time.perf_counter() - start
    start = time.perf_counter()
    labels = [decide(float(loss[r]), float(grad[r]), float(eig_min[r]),
                     TOL.curvature * max(1.0, abs(eig_min[r]), abs(eig_max[r]))
                     if np.isfinite(eig_min[r]) else TOL.curvature, int(zero[r]), None, TOL)[0]
              for r in range(R)]
    forms = np.stack([canonical_form(W[r], symmetry="neurons and coordinates", k=k)
                      for r in range(R)])
    table = pd.DataFrame({
        "converged": ds.stop_reason.values == "gradient", "global": loss <= TOL.loss,
        "stop": ds.stop_reason.values.astype(str),
        "label": labels, "loss": loss, "grad_norm": grad, "eig_min": eig_min,
        "eig_max": eig_max, "steps": ds.end_step.values})
    table["converged"] &= grad <= stop_grad * (1 + 1e-6)
    return table, forms, hessian_s, time.perf_counter() - start


def simulate_census(k_values: Sequence[int], extra_values: Sequence[int], runs: int, seed: int,
                    lr_scale: float, steps: int, stop_grad: float, train: Trainer,
                    stop_loss: float = 0.0) -> xr.Dataset:
    """Train every (k, n = k + extra) and take its census (module docstring)."""
    pairs = [(int(k), int(k) + int(e)) for e in extra_values for k in k_values]
    exps = [experiment(k, n, runs, seed + 1000 * k + 100 * (n - k), lr_scale, steps, stop_grad,
                       stop_loss) for k, n in pairs]
    # the costliest first (a step of width n at k costs n (n + k) k): the longest batches start
    # while the short ones fill the other cores, instead of running alone at the end
    order = sorted(range(len(pairs)), key=lambda i: -pairs[i][1] * sum(pairs[i]) * pairs[i][0])
    start = time.perf_counter()
    trained: list[xr.Dataset] = [None] * len(pairs)  # type: ignore[list-item]
    for i, ds in zip(order, train([exps[i] for i in order], label="safran-minima"), strict=True):
        trained[i] = ds
    train_s = time.perf_counter() - start
    per_run, classes, forms_kept = [], [], []
    hessian_s = census_s = 0.0
    for (k, n), ds in zip(pairs, trained, strict=True):
        table, forms, h_s, c_s = end_points(ds, k, stop_grad)
        start = time.perf_counter()
        rows, row_of_run = census(forms, table["loss"].values, table["eig_min"].values,
                                  table["converged"].values, table["global"].values)
        census_s += c_s + time.perf_counter() - start
        hessian_s += h_s
        forms_kept += [forms[rep] for rep in rows["representative"]]
        table["class"], table["k"], table["n"] = sum(map(len, classes)) + row_of_run, k, n
        per_run.append(table)
        classes.append(rows.assign(k=k, n=n))
    runs_df = pd.concat(per_run, ignore_index=True)
    cls = pd.concat(classes, ignore_index=True)
    big_n, big_k = max(n for _, n in pairs), max(k for k, _ in pairs)
    W = np.full((len(cls), big_n, big_k), np.nan)
    for i, f in enumerate(forms_kept):
        W[i, : f.shape[0], : f.shape[1]] = f
    out = xr.Dataset(
        {f"run_{c}": ("run", runs_df[c].values) for c in runs_df.columns}
        | {f"class_{c}": ("class", cls[c].values) for c in cls.columns}
        | {"class_W": (("class", "neuron", "dim"), W)},
        coords={"run": np.arange(len(runs_df)), "class": np.arange(len(cls))})
    out["run_label"] = out["run_label"].astype(str)
    out["run_stop"] = out["run_stop"].astype(str)
    out.attrs.update({"train_s": train_s, "hessian_s": hessian_s, "census_s": census_s,
                      "record_every": RECORD_EVERY, "class_tol": CLASS_TOL})
    return out
