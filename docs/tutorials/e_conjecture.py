# %% [markdown]
# # Testing a new conjecture on 10⁴ networks
#
# **The conjecture.** On orthogonal data (Dana, Pillaud-Vivien and Bach's second experiment), a
# network of width p trained by gradient descent from their initialisation converges when every
# data point is seen by at least one neuron with a positive output weight that is active on it
# at initialisation. Each neuron does so for a given point with probability 1/4 (a_j > 0, and
# <w_j, x_i> > 0), independently over neurons and nearly so over orthogonal points, so
#
#     P(converge) = (1 - (3/4)^p)^n   and the threshold   N(p) = ln 2 (4/3)^p
#
# (the n at which P = 1/2, for (3/4)^p small). A prediction with two numbers in it: the growth
# rate r = 4/3 per neuron and the constant c = ln 2. We test it with a threshold search on a
# grid, 10⁴ networks in all, a fitted law and its interval.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

import shallowflow as sf
from shallowflow.analysis.fits import logistic_threshold

SMALL = os.environ.get("SHALLOWFLOW_TUTORIAL_SMALL") == "1"
WIDTHS = [8, 12] if SMALL else [8, 10, 12, 14]
NS = [6, 16, 45] if SMALL else [6, 8, 11, 16, 23, 32, 45, 64, 90, 128]
RUNS = 20 if SMALL else 250
D = max(NS)  # orthogonal data needs n <= d

# %% [markdown]
# ## The grid
#
# One experiment per (p, n), `RUNS` networks each (fresh data and initialisation per run, from
# the seed). A run has converged when its loss falls below 1e-3/(2n) within flow time 1000.
# `sf.train` groups the experiments into compiled batches, one per shape.

# %%
def experiment(p, n):
    return sf.experiment_from_mapping({
        "name": f"p{p}-n{n}", "seed": 1000 * p + n, "runs": RUNS,
        "data": {"kind": "orthogonal", "n": n, "d": D},
        "model": {"width": p, "kappa": "1/p"},
        "init": {"scheme": "dpb", "first_layer": "uniform"},
        "train": {"lr": 1.0, "duration": 1000.0, "time_scale": "width",
                  "stop_loss": 1e-3 / (2 * n)},
        "record": {"points": 2, "probes": ["loss"]},
    })

grid = [(p, n) for p in WIDTHS for n in NS]
results = sf.train([experiment(p, n) for p, n in grid], show_progress=False)
converged = {(p, n): int((ds.stop_reason.values == "loss").sum())
             for (p, n), ds in zip(grid, results, strict=True)}
print(f"{len(grid)} grid points, {sum(ds.sizes['run'] for ds in results)} networks trained")

# %% [markdown]
# ## The threshold of each width
#
# At each p, a binomial maximum-likelihood logistic fit of P(converge) against log n
# (`logistic_threshold`: the threshold with its 95 % profile-likelihood interval).

# %%
thresholds = {}
for p in WIDTHS:
    k = [converged[p, n] for n in NS]
    fit = logistic_threshold(np.log(NS), k, [RUNS] * len(NS))
    thresholds[p] = (np.exp(fit.threshold), np.exp(fit.interval[0]), np.exp(fit.interval[1]))
    print(f"p = {p:2d}: converged {k} of {RUNS} each; N = {thresholds[p][0]:.2f} "
          f"[{thresholds[p][1]:.2f}, {thresholds[p][2]:.2f}]; "
          f"predicted ln2 (4/3)^p = {np.log(2) * (4 / 3) ** p:.2f}")

# %% [markdown]
# ## The law and its interval
#
# The conjecture says log N = log c + p log r. A least-squares line through (p, log N) gives r and
# c with 95 % intervals (Student t, from the fit's standard errors).

# %%
ps = np.array(WIDTHS, float)
logN = np.log([thresholds[p][0] for p in WIDTHS])
line = stats.linregress(ps, logN)
tq = stats.t.ppf(0.975, len(ps) - 2) if len(ps) > 2 else np.inf
r = np.exp(line.slope)
r_lo, r_hi = np.exp(line.slope - tq * line.stderr), np.exp(line.slope + tq * line.stderr)
c = np.exp(line.intercept)
print(f"rate r = {r:.3f}, 95 % interval [{r_lo:.3f}, {r_hi:.3f}]  (conjecture: 4/3 = {4 / 3:.3f})")
print(f"constant c = {c:.3f}  (conjecture: ln 2 = {np.log(2):.3f})")
inside = r_lo <= 4 / 3 <= r_hi
print("4/3 inside the interval:", inside)

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 4))
for p in WIDTHS:
    frac = [converged[p, n] / RUNS for n in NS]
    line_, = axes[0].semilogx(NS, frac, "o", label=f"p = {p}")
    nn = np.geomspace(min(NS), max(NS), 200)
    axes[0].semilogx(nn, (1 - 0.75 ** p) ** nn, color=line_.get_color(), lw=1)
axes[0].set(xlabel="n (points)", ylabel="fraction converged",
            title="convergence (dots) and (1 - (3/4)^p)^n (lines)")
axes[0].legend(fontsize=8)
est = np.array([thresholds[p] for p in WIDTHS])
axes[1].errorbar(ps, est[:, 0], yerr=[est[:, 0] - est[:, 1], est[:, 2] - est[:, 0]], fmt="o",
                 capsize=3, label="threshold N(p), 95 % interval")
pp = np.linspace(ps.min(), ps.max(), 100)
axes[1].semilogy(pp, c * r ** pp, label=f"fit: {c:.2f} x {r:.3f}^p")
axes[1].semilogy(pp, np.log(2) * (4 / 3) ** pp, "k--", label="conjecture: ln 2 (4/3)^p")
axes[1].set(xlabel="width p", ylabel="N(p)", title="the threshold grows geometrically")
axes[1].legend(fontsize=8)
fig.tight_layout()

# %% [markdown]
# ## What it says
#
# The printed interval decides: if 4/3 lies inside it, the data do not contradict the
# conjecture's rate at these sizes; the constant and the curves on the left say how well the
# coverage picture describes the whole probability, not only its midpoint. A paper-grade test
# would push p further (N grows like (4/3)^p: p = 20 means n near 220, d >= n) and could run on a
# cluster unchanged ([Clusters and SLURM](../guides/clusters.md)); `dana-fig5` runs the paper's
# own threshold scan against p on sphere data ([gallery](../gallery/dana-fig5.md)).
