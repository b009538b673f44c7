# %% [markdown]
# # A first experiment and its xarray results
#
# One experiment is a batch of independent networks trained on one data set
# ([Experiments](../concepts/experiments.md)). Here: Dana, Pillaud-Vivien and Bach's first
# experiment, random directions on the sphere, trained by gradient descent from their
# initialisation; the results come back as one `xarray.Dataset` with a `run` dimension, so
# medians over runs, a slice in time and a table are one line each.
#
# The test suite runs the small version of every tutorial (`SHALLOWFLOW_TUTORIAL_SMALL=1`:
# fewer runs); the site shows the full one.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

import shallowflow as sf

SMALL = os.environ.get("SHALLOWFLOW_TUTORIAL_SMALL") == "1"
RUNS = 4 if SMALL else 16

# %% [markdown]
# ## The experiment
#
# An experiment is a TOML file or a mapping with the same keys; `experiment_from_mapping`
# validates it (a wrong key or value is one readable error) and fills in every default.

# %%
exp = sf.experiment_from_mapping({
    "name": "first", "seed": 0, "runs": RUNS,
    "data": {"kind": "sphere", "n": 100, "d": 20},
    "model": {"width": 20, "kappa": "1/p"},
    "init": {"scheme": "dpb"},
    "train": {"loss": "square", "lr": 1.0, "duration": 300.0, "time_scale": "width",
              "stop_loss": 1 / 200},   # the paper's rule: L < 1/(2n)
    "record": {"points": 60, "probes": ["loss", "pl_curvature", "neuron_norm", "a"]},
})
print(exp.data.kind, exp.data.n, exp.data.d, "| width", exp.model.width, "| runs", exp.runs)

# %% [markdown]
# ## Training: `simulate`
#
# `sf.simulate` trains every run (all runs in one compiled batch) and returns the records.

# %%
ds = sf.simulate(exp, show_progress=False)
print(ds)

# %% [markdown]
# The dimensions: `run` (the independent networks), `time` (flow time of each record; `step` is
# the step index), `neuron`. Probes recorded at every record are variables: `loss`,
# `pl_curvature` over `(run, time)`, `neuron_norm` and `a` over `(run, time, neuron)`. Why each
# run stopped is in `stop_reason` and `end_step`.

# %%
print("stop reasons:", ds.stop_reason.to_series().value_counts().to_dict())
final = ds.loss.isel(time=-1)
print("final loss of each run:", np.round(final.values, 5))
print("converged (L < 1/(2n)):", int((final < 1 / 200).sum()), "of", ds.sizes["run"])

# %% [markdown]
# ## Working with the Dataset
#
# A run that stopped early keeps its last values in the later records (its `end_step` says when
# it stopped), so a median over runs is taken at every record time. `sel` picks by coordinate,
# `isel` by position.

# %%
fig, axes = plt.subplots(1, 3, figsize=(13, 3.5))
for r in range(ds.sizes["run"]):
    axes[0].semilogy(ds.time, ds.loss.isel(run=r), color="0.8", lw=0.8)
axes[0].semilogy(ds.time, ds.loss.median("run"), color="C0", lw=2, label="median over runs")
axes[0].set(xlabel="flow time", ylabel="loss", title="loss of every run")
axes[0].legend()
axes[1].loglog(ds.time, ds.pl_curvature.median("run"), color="C1")
axes[1].set(xlabel="flow time", ylabel="T ||grad L||^2 / L", title="local PL curvature (median)")
norms = ds.neuron_norm.isel(run=0)
axes[2].plot(ds.time, norms.transpose("time", "neuron"), lw=0.8)
axes[2].set(xlabel="flow time", ylabel="||w_j||", title="neuron norms, run 0")
fig.tight_layout()

# %% [markdown]
# The records as a table (pandas), and the last record of each run, are one line each; a
# Dataset also writes itself to netCDF (`ds.to_netcdf`), which is what a run folder holds.

# %%
table = ds[["loss", "pl_curvature"]].isel(run=slice(0, 2)).to_dataframe()[["loss", "pl_curvature"]]
print(table.head(8))
last = ds.loss.sel(time=100.0, method="nearest")
print("loss at flow time ~100:", np.round(last.values, 4))

# %% [markdown]
# ## The same from the command line
#
# `shallowflow run CONFIG --out DIR` trains the same experiment and writes a
# [run folder](../concepts/records.md) that `sf.load_run(DIR)` reads back as this Dataset, data and
# parameters included. Next: [tiny initialisation and the limit process](b_tiny_init.md).
