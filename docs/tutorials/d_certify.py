# %% [markdown]
# # Certifying where a run ended: minimum, saddle, escape direction
#
# A run that stops learning may sit at a global minimum, a strict local minimum or a saddle,
# or may simply not have converged. The end-state certificate tells them apart with numbers
# ([End states](../concepts/end-states.md), [Maths §9](../math.md)): it polishes the end point to
# the nearest stationary point (Newton's method), then reads the loss, the gradient, the Hessian
# spectrum of the smooth part and, at dead neurons and at kinks, the escape test, which returns a
# direction along which the loss decreases when there is one.
#
# Here: Town et al.'s orthonormal setting, where a 6-neuron network from a tiny initialisation
# learns in jumps and stops on a plateau. Is that plateau a minimum?

# %%
import os

import matplotlib.pyplot as plt
import numpy as np

import shallowflow as sf
from shallowflow.training.overlays import saddle_process_from_experiment

SMALL = os.environ.get("SHALLOWFLOW_TUTORIAL_SMALL") == "1"
WIDE_RUNS = 2 if SMALL else 8

# %% [markdown]
# ## Train until nothing moves
#
# At lambda = 1e-10 we train to 1.3 times the last jump of the limit process (see the tutorial
# on [tiny initialisation](b_tiny_init.md)): the loss has been flat for a long time.

# %%
base = sf.load_experiment("examples/tblel_orthonormal.toml", ["runs=1"])
limit = saddle_process_from_experiment(base, run=0)
scale = 1e-10
exp = sf.load_experiment("examples/tblel_orthonormal.toml",
                         ["runs=1", f"init.scale={scale}", "record.points=200",
                          f"train.duration={1.3 * limit.tau[-1] * np.log(1 / scale):.1f}"])
(ds,) = sf.train([exp], keep_data=True, show_progress=False)
print(f"final loss {float(ds.loss[0, -1]):.6f}; the limit process's last plateau "
      f"{limit.losses[-1]:.6f}")

# %% [markdown]
# ## The certificate
#
# `sf.end_states` judges every run of a results Dataset that holds its data
# (`keep_data=True`, or a run folder read with `sf.load_run`); `sf.end_table` is the table.

# %%
end = sf.end_states(ds, polish_method="newton")
table = sf.end_table(ds.merge(end))
print(table[["label", "loss", "grad_norm", "zero_neurons", "kink_pairs", "eig_min",
             "escape_value", "polish_distance"]].to_string())
print("why:", str(end.end_reason.values[0]))

# %% [markdown]
# The polish moved the point very little (`polish_distance`: the run had converged), the gradient
# is zero to rounding and the smooth part's Hessian has no negative eigenvalue beyond rounding
# (`eig_min`), but the escape test
# finds a negative value at the kink pairs of one neuron: the end point is a **saddle**, not a
# minimum. The escape direction is a unit vector of the input space, a direction in which a
# new (or split) neuron lowers the loss at first order:

# %%
u = end.end_escape_direction.values[0]
print("escape neuron:", int(end.end_escape_neuron.values[0]),
      "| order:", int(end.end_escape_order.values[0]))
print("escape direction (input coordinates):", np.round(u, 3))
X, y = ds.X.values, ds.y.values
active = X @ u > 1e-9
print("points it is active on:", np.flatnonzero(active), "with labels", np.round(y[active], 3))

# %% [markdown]
# ## Following the escape direction
#
# Add a seventh neuron along u with a tiny norm, to the polished saddle, and train again
# (`init.scheme = "given"` starts from any network). With a positive output weight the loss
# leaves the plateau and the certificate of the new end point is a global minimum; with a
# negative one nothing happens (the neuron dies), as the escape test's sign says.

# %%
a_saddle, W_saddle = end.a_polished.values[0], end.W_polished.values[0]
eps = 1e-4
follow = {}
for sign in (+1, -1):
    e = sf.experiment_from_mapping({
        "name": f"escape{sign:+d}", "runs": 1,
        "data": {"kind": "arrays", "X": X, "y": y},
        "model": {"width": 7},
        "init": {"scheme": "given", "a": np.append(a_saddle, sign * eps),
                 "W": np.vstack([W_saddle, eps * u])},
        "train": {"loss": "square", "lr": 0.05, "duration": 400.0},
        "record": {"points": 100},
    })
    (run,) = sf.train([e], keep_data=True, show_progress=False)
    follow[sign] = run
    label = str(sf.end_states(run, polish_method="newton").end_label.values[0])
    print(f"output weight {sign:+d} eps: loss {float(run.loss[0, 0]):.6f} -> "
          f"{float(run.loss[0, -1]):.2e}, end state: {label}")

fig, ax = plt.subplots(figsize=(7, 3.5))
ax.semilogy(ds.time, ds.loss[0], label="6 neurons from lambda = 1e-10")
t0 = float(ds.time[-1])
for sign, run in follow.items():
    ax.semilogy(t0 + run.time, run.loss[0], label=f"+ a neuron along u, a = {sign:+d} eps")
ax.axhline(limit.losses[-1], color="k", ls=":", lw=1, label="the limit's last plateau")
ax.set(xlabel="flow time", ylabel="loss", title="a saddle and its escape")
ax.legend(fontsize=8)

# %% [markdown]
# ## A wide network: global minima
#
# With 32 neurons from a moderate initial scale every run interpolates; the certificate says
# global minimum, with the loss at its floor to tolerance.

# %%
wide = sf.load_experiment("examples/tblel_orthonormal.toml",
                          [f"runs={WIDE_RUNS}", "model.width=32", "init.scale=0.1",
                           "train.duration=400"])
(dw,) = sf.train([wide], keep_data=True, show_progress=False)
print(sf.end_table(dw.merge(sf.end_states(dw, polish_method="newton")))[
    ["run", "label", "loss", "grad_norm", "eig_min"]].to_string())

# %% [markdown]
# ## From the command line
#
# `shallowflow certify RUN_DIR --polish newton` does the same on a run folder and writes
# `end_state.nc` and `end_state.csv` beside its results (`sf.certify_run` from Python);
# `train.end_state = true` certifies every run of an experiment or a sweep as it finishes.

# %%
sf.run_experiment(exp, "runs/plateau", overwrite=True, show_progress=False)
sf.certify_run("runs/plateau", polish="newton", overwrite=True)
print(open("runs/plateau/end_state.csv").read()[:400])

# %% [markdown]
# Next: [a new conjecture on 10⁴ networks](e_conjecture.md).
