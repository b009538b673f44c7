# %% [markdown]
# # Your own data from a CSV, and a sweep with resume
#
# Your data set is a CSV file (one sample a row, the label last, an optional header line;
# [Your own data](../guides/your-data.md)). This tutorial writes one, trains networks on it, then
# runs a sweep over the width and the initial scale, interrupts it, and resumes it: the resumed
# sweep trains only what was missing and gives exactly the results of an uninterrupted one
# ([Sweeps and resume](../guides/sweeps.md)).

# %%
import os
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import shallowflow as sf

SMALL = os.environ.get("SHALLOWFLOW_TUTORIAL_SMALL") == "1"
RUNS = 2 if SMALL else 8
STEPS = 1500 if SMALL else 6000

# %% [markdown]
# ## The data: a CSV file
#
# 40 points of the plane labelled by a small ReLU "teacher" (two kinks), written as `x1,x2,y`.

# %%
rng = np.random.default_rng(0)
X = rng.uniform(-1, 1, size=(40, 2))
y = np.maximum(X @ [1.0, 0.5], 0) - np.maximum(X @ [-0.5, 1.0] - 0.2, 0)
folder = Path("own-data")
folder.mkdir(exist_ok=True)
pd.DataFrame({"x1": X[:, 0], "x2": X[:, 1], "y": y}).to_csv(folder / "points.csv", index=False)
print((folder / "points.csv").read_text().splitlines()[:4])

# %% [markdown]
# ## One experiment on it
#
# `data.kind = "file"` reads it (the path is relative to the folder the command runs in). The
# experiment is a TOML file, as on the command line (`shallowflow run own-data/experiment.toml`).

# %%
(folder / "experiment.toml").write_text(f"""
name = "own-data"
seed = 0
runs = {RUNS}

[data]
kind = "file"
path = "own-data/points.csv"

[model]
width = 8
bias = true

[init]
scheme = "gaussian"
scale = 0.01

[train]
loss = "square"
lr = 0.2
steps = {STEPS}

[record]
points = 60
""")
exp = sf.load_experiment(folder / "experiment.toml")
(ds,) = sf.train([exp], keep_data=True, show_progress=False)
print("data in the results:", ds.X.shape, ds.y.shape)
print("final losses:", [f"{v:.1e}" for v in ds.loss.isel(time=-1).values])

# %% [markdown]
# ## A sweep: width x initial scale
#
# A sweep file names the base experiment (relative to the sweep file) and a grid of dotted keys.
# Points that differ only in `init.scale` (or seed) share one compiled batch; every finished
# batch is written at once to `batches/`.

# %%
(folder / "sweep.toml").write_text("""
name = "own-data-sweep"
base = "experiment.toml"
max_batch = 64

[grid]
"model.width" = [2, 4, 8]
"init.scale" = [1e-3, 1e-1]
""")
sweep = sf.load_sweep(folder / "sweep.toml")
print(len(sweep.points), "grid points")
out = Path("runs/own-sweep")
shutil.rmtree(out, ignore_errors=True)

# %% [markdown]
# We interrupt it on purpose: `after_batch` (a hook the tests use) raises after the first batch
# is written, as a Ctrl-C or a lost job would stop it.

# %%
class Stop(Exception):
    pass

def stop_after_first(batch_id):
    raise Stop(batch_id)

try:
    sf.run_sweep(sweep, out, show_progress=False, after_batch=stop_after_first)
except Stop as stop:
    print("interrupted after batch", stop)
print("batch files on disk:", sorted(p.name for p in (out / "batches").glob("*.nc")))

# %% [markdown]
# `resume=True` (`--resume` on the command line) checks that the folder holds the same sweep and
# that the CSV has not changed (its SHA-256), then trains only the missing batches.

# %%
trained = []
table = sf.run_sweep(sweep, out, resume=True, show_progress=False, after_batch=trained.append)
print("trained on resume:", trained)
print(table[["point", "model.width", "init.scale", "loss_final", "stop_reason"]]
      .groupby(["model.width", "init.scale"]).loss_final.median())

# %% [markdown]
# The same sweep, uninterrupted, into a second folder: the summaries are identical.

# %%
whole = sf.run_sweep(sweep, "runs/own-sweep-whole", show_progress=False)
cols = ["point", "run_index", "seed", "loss_init", "loss_final", "loss_min", "stop_step"]
same = whole.sort_values(cols)[cols].reset_index(drop=True).equals(
    table.sort_values(cols)[cols].reset_index(drop=True))
print("identical to the uninterrupted sweep:", same)
assert same

# %% [markdown]
# ## The final loss against the width
#
# `summary.parquet` holds one row per run (grid values, seed, initial and final loss, why it
# stopped); with `train.end_state = true` it would hold each run's end-state verdict too
# ([certifying where a run ended](d_certify.md)).

# %%
summary = pd.read_parquet(out / "summary.parquet")
fig, ax = plt.subplots(figsize=(6, 3.5))
for scale, rows in summary.groupby("init.scale"):
    med = rows.groupby("model.width").loss_final.median()
    ax.semilogy(med.index, med.values, "o-", label=f"init scale {scale:g}")
ax.set(xlabel="width", ylabel="final loss (median over runs)", title="own data: width sweep")
ax.legend()

# %% [markdown]
# Next: [certifying where a run ended](d_certify.md).
