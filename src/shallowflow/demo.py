"""The main demo: the local PL curvature on orthogonal data rises from order 1/n to order 1/sqrt(n).

DPB setting (docs/math.md §1.1-1.4): orthogonal inputs x_i = rho_i e_i (d = n), labels
eps U[1, 2], h = (1/p) sum a_j sigma(<w_j, x>), time scale T = p, GD with lr = 1 (one step = one
unit of flow time), paper initialisation, p = p(n, 0.05) = floor(log(n/0.05)/log(4/3)) + 1
neurons, the budget t_inf = 1.5 (sqrt(np)/4) log(np) and the stop rule L < 1e-6/(2n) of
Experiment 2.

At initialisation n mu(0) converges (Lemma 4), so mu(0) ~ 1/n; at the end of training DPB's
Figure 6 and Conjecture 1 give mu ~ 1/sqrt(n). The demo measures both log-log slopes
(:func:`shallowflow.analysis.fits.loglog_slope` of the median mu against n).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from shallowflow.analysis.fits import loglog_slope
from shallowflow.config import Experiment, experiment_from_mapping
from shallowflow.output import claim
from shallowflow.store import provenance, write_netcdf
from shallowflow.theory.good_init import neurons_for  # p(n, eps), docs/math.md §1.4(5)
from shallowflow.theory.training_budget import budget, threshold  # docs/math.md §1.4(12)
from shallowflow.training.entry import train
from shallowflow.training.preflight import estimate

DEMO_SIZES = (64, 128, 256, 512, 1024)
DEMO_RUNS = 16


def demo_experiment(n: int, runs: int = DEMO_RUNS, seed: int = 0) -> Experiment:
    """n = d orthogonal points, p = p(n, 0.05) neurons, GD for t_inf, stop at 1e-6/(2n)."""
    p = neurons_for(n)
    return experiment_from_mapping({
        "name": f"demo-n{n}", "seed": seed, "runs": runs,
        "data": {"kind": "orthogonal", "n": n, "d": n, "per_run": True},
        "model": {"width": p, "kappa": "1/p"},
        "init": {"scheme": "dpb"},
        "train": {"lr": 1.0, "duration": budget(n, p), "time_scale": "width",
                  "stop_loss": threshold(n, "exp2")},
        "record": {"points": 150, "probes": ["loss", "pl_curvature", "dead_neurons"]},
    })


@dataclass(frozen=True)
class DemoMeasures:
    """Per n: median mu(0), median final mu over converged runs (final L < 1/(2n), DPB Fig. 3
    rule, docs/math.md §1.4(12); NaN if none), the converged and strictly stopped fractions;
    the log-log slopes of both medians against n."""

    converged: dict[int, np.ndarray]
    mu0: np.ndarray
    mu_end: np.ndarray
    rate: dict[int, float]
    strict: dict[int, float]
    slope0: float
    slope_end: float


def measure(results: dict[int, xr.Dataset]) -> DemoMeasures:
    """The demo's measures (:class:`DemoMeasures`) from the trained runs at every n."""
    sizes = list(results)
    ns = np.array(sizes, dtype=float)
    mu0 = np.array([float(results[n].pl_curvature.isel(time=0).median()) for n in sizes])
    # the strict stop threshold 1e-6/(2n) is reported separately; mu(end) is the last record
    converged = {n: results[n].loss.isel(time=-1).values < threshold(n, "code") for n in sizes}
    mu_end = np.array([float(np.median(results[n].pl_curvature.isel(time=-1).values[converged[n]]))
                       if converged[n].any() else np.nan for n in sizes])
    finite = np.isfinite(mu_end)
    return DemoMeasures(converged, mu0, mu_end,
                        {n: float(converged[n].mean()) for n in sizes},
                        {n: float(results[n].stopped.values.mean()) for n in sizes},
                        loglog_slope(ns, mu0), loglog_slope(ns[finite], mu_end[finite]))


def draw_demo(results: dict[int, xr.Dataset], m: DemoMeasures, path: Path) -> None:
    """Save to ``path``: n mu(t) against t/t_inf (median over converged runs), and mu(0),
    mu(end) against n."""
    import matplotlib.pyplot as plt

    sizes = list(results)
    ns = np.array(sizes, dtype=float)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
    for k, n in enumerate(sizes):
        ds = results[n]
        t = ds.time.values
        med = np.nanmedian(ds.pl_curvature.values[m.converged[n]] if m.converged[n].any()
                           else ds.pl_curvature.values, axis=0)
        ax1.plot(t[1:] / t[-1], n * med[1:], color=f"C{k}", label=f"n = {n}")
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlabel("t / t_inf")
    ax1.set_ylabel("n * mu(t)   (median, converged runs)")
    ax1.set_title("n mu(0) = O(1); at the end n mu grows with n", fontsize=9)
    ax1.legend(fontsize=8)
    ax1.grid(alpha=0.3)
    ax2.loglog(ns, m.mu0, "o-", label=f"mu(0): slope {m.slope0:.2f} (theory -1)")
    ax2.loglog(ns, m.mu_end, "s-", label=f"mu(end): slope {m.slope_end:.2f} (theory -1/2)")
    ax2.loglog(ns, m.mu0[0] * (ns / ns[0]) ** -1.0, "k:", lw=1)
    ax2.loglog(ns, m.mu_end[0] * (ns / ns[0]) ** -0.5, "k--", lw=1)
    ax2.set_xlabel("n")
    ax2.set_ylabel("mu")
    ax2.legend(fontsize=8)
    ax2.grid(alpha=0.3, which="both")
    fig.suptitle("Local PL curvature on orthogonal data (DPB setting, float64, lr = 1)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def demo_summary(sizes: Sequence[int], runs: int, m: DemoMeasures) -> str:
    """The printed summary of the demo."""
    return (
        f"Demo: {runs} networks per n trained by GD (float64, step 1 = one unit of flow time) on "
        f"orthogonal data with n = d in {list(sizes)} and p = p(n, 0.05) neurons "
        f"({[neurons_for(n) for n in sizes]}) for t_inf = 1.5 (sqrt(np)/4) log(np). Fraction converged "
        "(final L < 1/(2n)): " + ", ".join(f"n={n}: {m.rate[n]:.2f}" for n in sizes)
        + "; fraction reaching the strict stop L < 1e-6/(2n) within t_inf: "
        + ", ".join(f"{m.strict[n]:.2f}" for n in sizes)
        + f". Median local PL curvature mu = T||grad L||^2/L: at initialisation it scales as "
        f"n^{m.slope0:.2f} (theory: n mu(0) -> const, slope -1); at t_inf, over converged runs, "
        f"as n^{m.slope_end:.2f} (DPB report slope about -1/2 at n = 1000-2000, Figure 6). The "
        f"curvature rises during training from order 1/n towards order 1/sqrt(n) as neurons "
        f"align with their points. Figure: pl_curvature.png."
    )


def run_demo(out: str | Path = "runs/demo", sizes: Sequence[int] = DEMO_SIZES,
             runs: int = DEMO_RUNS, overwrite: bool = False, show_progress: bool = True) -> str:
    """Train the demo, write its folder (figure, per-n results, summary) and return the summary.
    An existing ``out`` is refused before any work unless ``overwrite`` and shallowflow made it
    (:func:`shallowflow.output.claim`)."""
    sizes = list(sizes)
    exps = [demo_experiment(n, runs) for n in sizes]
    with claim(out, "demo", overwrite, estimate([(e, e.runs) for e in exps]).disk) as place:
        trained = train(exps, label="demo", show_progress=show_progress)
        results = dict(zip(sizes, trained, strict=True))
        m = measure(results)
        summary = demo_summary(sizes, runs, m)
        with place.writing() as folder:
            draw_demo(results, m, folder / "pl_curvature.png")
            for n, ds in results.items():
                write_netcdf(ds, folder / f"results_n{n}.nc")
            (folder / "summary.txt").write_text(summary + "\n")
            (folder / "provenance.json").write_text(json.dumps(provenance(seeds=[0]), indent=2)
                                                    + "\n")
    return summary
