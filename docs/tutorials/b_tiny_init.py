# %% [markdown]
# # Tiny initialisation and the saddle-to-saddle limit process
#
# Started from a tiny initial scale lambda, a shallow ReLU network on orthonormal data learns in
# jumps: long plateaus near saddles, then one neuron grows and fits new points. Town et al. give
# the limit of this dynamics as lambda -> 0 in closed form (their Algorithm 1,
# [Maths §3.4](../math.md)): the jump times, which neuron jumps, and the plateau losses, in the
# accelerated time t / log(1/lambda). This tutorial trains the same network at smaller and
# smaller lambda and draws the limit process over the simulations.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

import shallowflow as sf
from shallowflow.training.overlays import saddle_process_from_experiment

SMALL = os.environ.get("SHALLOWFLOW_TUTORIAL_SMALL") == "1"
SCALES = [1e-4, 1e-10] if SMALL else [1e-4, 1e-10, 1e-30]

# %% [markdown]
# ## The limit process first
#
# `examples/tblel_orthonormal.toml` is Town et al.'s setting: 16 orthonormal points with labels
# |N(0, 1)|, 6 neurons, balanced initialisation. The limit process of run 0 depends on its data
# and its initial directions and signs only (not on lambda), so it is computed before any
# training; it says how long to train.

# %%
base = sf.load_experiment("examples/tblel_orthonormal.toml", ["runs=1"])
limit = saddle_process_from_experiment(base, run=0)
print(limit)
print("jump times (accelerated):", np.round(limit.tau, 4))
print("neuron of each jump:", limit.sequence)
print("plateau losses:", np.round(limit.losses, 4))

# %% [markdown]
# ## Simulations at smaller and smaller lambda
#
# The experiments differ only in `init.scale`, so `sf.train` runs them in one compiled batch.
# Each trains until 1.3 times the last jump, in flow time t = tau log(1/lambda).

# %%
end = 1.3 * float(limit.tau[-1])
exps = [sf.load_experiment("examples/tblel_orthonormal.toml",
                           ["runs=1", f"init.scale={s}", f"train.duration={end * np.log(1 / s):.1f}",
                            "record.points=400"]) for s in SCALES]
results = sf.train(exps, show_progress=False)
for s, ds in zip(SCALES, results, strict=True):
    print(f"lambda = {s:.0e}: {ds.sizes['time']} records, final loss {float(ds.loss[0, -1]):.2e}")

# %% [markdown]
# ## The limit drawn over the simulations
#
# `limit.curves(times, log_lambda=...)` evaluates the limit at the simulation's times, in its
# coordinates: the plateau loss, and each neuron's log-norm (log ||w_j|| = e_j(t) log(1/lambda)
# before its jump). The simulated losses approach the limit's staircase as lambda falls.

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 4))
tau = np.linspace(0, end, 800)
axes[0].plot(tau, limit.curves(tau).loss, color="k", lw=2, label="limit process")
for s, ds in zip(SCALES, results, strict=True):  # time_accelerated = flow time / log(1/lambda), per run
    axes[0].plot(ds.time_accelerated[0], ds.loss[0], lw=1, label=f"lambda = {s:.0e}")
axes[0].set(xlabel="accelerated time t / log(1/lambda)", ylabel="loss",
            title="loss: simulations and the limit")
axes[0].legend()
ds, s = results[-1], SCALES[-1]
t_acc = ds.time_accelerated[0].values
pred = limit.curves(t_acc, log_lambda=np.log(s))
for j in range(limit.m):
    line, = axes[1].plot(t_acc, np.log(ds.neuron_norm[0, :, j]), lw=1)
    axes[1].plot(t_acc, pred.log_norm[:, j], ls="--", color=line.get_color())
axes[1].set(xlabel="accelerated time", ylabel="log ||w_j||",
            title=f"log-norms at lambda = {s:.0e} (dashed: the limit)")
fig.tight_layout()

# %% [markdown]
# ## How close: the jump times
#
# A jump of the simulation is where its loss crosses halfway between two plateaus of the limit.
# The distance to the limit's jump times shrinks as lambda falls (the `town-convergence`
# reproduction measures the rate; see the [gallery](../gallery/town-convergence.md)).

# %%
def crossings(ds, levels):
    t, loss = ds.time_accelerated[0].values, ds.loss[0].values
    return [float(t[np.argmax(loss < level)]) if (loss < level).any() else np.nan
            for level in levels]

halfway = (limit.losses[:-1] + limit.losses[1:]) / 2
for s, ds in zip(SCALES, results, strict=True):
    err = np.abs(np.array(crossings(ds, halfway)) - limit.tau)
    print(f"lambda = {s:.0e}: largest jump-time error {np.nanmax(err):.4f} (accelerated time)")

# %% [markdown]
# ## Below float64: lambda = 1e-300
#
# lambda^2 underflows float64, so the engine switches to the log-norm parametrisation
# ([The engine's exact modes](../concepts/exact-modes.md)). `examples/tiny_init.toml` is the hand
# example of docs/math.md §3.6: 4 points, 2 neurons, lambda = 1e-300, whose limit process jumps at
# accelerated times 0.8 and 0.949342.

# %%
tiny = sf.load_experiment("examples/tiny_init.toml")
(run,) = sf.train([tiny], show_progress=False)
hand = saddle_process_from_experiment(tiny, run=0)
print("parametrisation:", run.attrs.get("parametrisation"), "| limit jumps:", np.round(hand.tau, 6))
t_acc = run.time_accelerated[0].values
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(t_acc, run.loss[0], label="simulation, lambda = 1e-300")
ax.plot(t_acc, hand.curves(t_acc).loss, "k--", label="limit process")
ax.set(xlabel="accelerated time", ylabel="loss", title="the hand example at lambda = 1e-300")
ax.legend()
print("final loss:", float(run.loss[0, -1]))

# %% [markdown]
# Next: [your own data and a sweep with resume](c_own_data_sweep.md).
