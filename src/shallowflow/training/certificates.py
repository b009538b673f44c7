"""Certificates of a trajectory: how far GD is from gradient flow (step size, docs/math.md
§8.10), and how far a float32 run is from the same run in float64 (precision, §8.13).

Step size. GD with step eta is the Euler scheme of dtheta/dt = -T grad L, so a probe P
recorded at flow time t satisfies P_eta(t) = P_flow(t) + C(t) eta + O(eta^2). The certificate
reruns the same runs at eta/2 (and eta/4) with the same record times and reports, per run,

    abs_k = max over probes, times (and neurons) of |P_{eta/2^(k-1)} - P_{eta/2^k}|
    rel_k = max over probes of  max|P_{eta/2^(k-1)} - P_{eta/2^k}| / max|P_{eta/2^k}|

For a first-order scheme on a smooth stretch rel_1 ~ 2 rel_2, and abs_1 estimates the error of
the eta run itself (P_eta - P_flow ~ 2 (P_eta - P_{eta/2})... to leading order, abs_1).
Only probes that are continuous functions of the trajectory take part. Excluded: balancedness
drifts (themselves O(eta) diagnostics), integer probes, and the PL curvature: ||grad L||^2 jumps
whenever a neuron-sample pair changes activation (the ReLU gradient field is discontinuous), so a
shift of O(eta) in the crossing time changes the recorded mu by O(1) there. Measured on sphere
data (n = 30, p = 8, lr = 0.02): the lr-vs-lr/2 over lr/2-vs-lr/4 ratio was 1.9-2.3 for loss,
norms and weights, but 0.5-0.9 for mu.

Precision. A float32 batch reruns its first k runs in float64 (same data, initialisation, keys
and record times; the float32 run starts from the rounded initialisation) and each of them gets
abs and rel as above, float32 against float64; the other runs get NaN.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from shallowflow.config import Experiment

CERTIFIED_PROBES = ("loss", "neuron_norm", "log_norm", "a", "param_norm_sq", "output", "W")


def distances(coarse: dict[str, np.ndarray], fine: dict[str, np.ndarray]
              ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(abs, rel, rel per probe) between two record sets with equal record times; per run."""
    abs_all, rel_all, by_probe = None, None, {}
    for name in CERTIFIED_PROBES:
        if name not in coarse:
            continue
        c = coarse[name].reshape(coarse[name].shape[0], -1).astype(float)
        f = fine[name].reshape(fine[name].shape[0], -1).astype(float)
        ok = np.isfinite(c) & np.isfinite(f)
        diff = np.where(ok, np.abs(c - f), 0.0).max(axis=1)
        scale = np.where(ok, np.abs(f), 0.0).max(axis=1)
        rel = np.where(scale > 0, diff / np.where(scale > 0, scale, 1.0), 0.0)
        by_probe[name] = rel
        abs_all = diff if abs_all is None else np.maximum(abs_all, diff)
        rel_all = rel if rel_all is None else np.maximum(rel_all, rel)
    if abs_all is None:
        raise ValueError(f"record.probes: the certificate needs one of {CERTIFIED_PROBES}")
    return abs_all, rel_all, by_probe


def verdict(rel: np.ndarray, tol: float | None) -> str:
    """A one-line summary of a certificate (rel: (run, level))."""
    worst = float(np.nanmax(rel[:, 0]))
    text = f"step-size certificate: max relative distance of the lr run to lr/2: {worst:.3g}"
    if rel.shape[1] > 1:
        ratio = np.nanmedian(rel[:, 0] / np.where(rel[:, 1] > 0, rel[:, 1], np.nan))
        text += f"; lr/2 to lr/4: {float(np.nanmax(rel[:, 1])):.3g} (median ratio {ratio:.2f}, " \
                "about 2 for first-order convergence)"
    if tol is not None:
        text += f"; tolerance {tol:g}: " + ("PASS" if worst <= tol else "FAIL")
    return text


def precision_verdict(rel: np.ndarray, tol: float | None) -> str:
    """A one-line summary of a precision certificate (``rel``: (run,), NaN for the runs that
    were not rerun in float64)."""
    sampled = np.isfinite(rel)
    worst = float(np.max(rel[sampled])) if sampled.any() else float("nan")
    text = (f"precision certificate: {int(sampled.sum())} of {rel.size} float32 runs rerun in "
            f"float64, max relative distance {worst:.3g}")
    if tol is not None:
        text += f"; tolerance {tol:g}: " + ("PASS" if worst <= tol else "FAIL")
    return text


@dataclass(frozen=True)
class Precision:
    """The precision every experiment of a job trains in: float64 (the default, experiments
    as given), or float32 with the first ``reruns`` runs of every batch rerun in float64 and
    their distances recorded (``tol``: the relative distance required to pass; docs/math.md
    §8.13). What ``shallowflow reproduce --dtype float32 --precision-certificate K`` sets."""

    dtype: Literal["float64", "float32"] = "float64"
    reruns: int = 0
    tol: float | None = None

    def __post_init__(self) -> None:
        if self.dtype not in ("float64", "float32"):
            raise ValueError(f"--dtype: must be float64 or float32, got {self.dtype!r}")
        if self.reruns < 0:
            raise ValueError(f"--precision-certificate: must be >= 0, got {self.reruns}")
        if self.reruns and self.dtype != "float32":
            raise ValueError(f"--precision-certificate: reruns float32 runs in float64; needs "
                             f"--dtype float32 (got {self.dtype})")
        if self.tol is not None and not (self.reruns and self.tol > 0):
            raise ValueError(f"--precision-certificate-tol: needs --precision-certificate >= 1 and a "
                             f"tolerance > 0 (got {self.tol:g})")

    @property
    def default(self) -> bool:
        return self == DEFAULT_PRECISION

    def apply(self, exp: Experiment) -> Experiment:
        """``exp`` trained in this precision (unchanged for the default)."""
        if self.default:
            return exp
        return exp.with_train(dtype=self.dtype, precision_certificate=self.reruns,
                              precision_certificate_tol=self.tol)

    def describe(self, rel: np.ndarray | None = None) -> str:
        """One line for a report: the dtype and, for certified float32, the verdict over the
        runs' distances ``rel`` (NaN: not rerun)."""
        if self.dtype == "float64":
            return "float64 (the default)."
        text = "float32"
        if not self.reruns:
            return text + ", not certified."
        if rel is None or not rel.size:
            return text + f"; {self.reruns} run(s) of every batch rerun in float64."
        return text + f"; {precision_verdict(rel, self.tol)}."


DEFAULT_PRECISION = Precision()
"""Experiments trained as given."""
