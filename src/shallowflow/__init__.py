"""shallowflow: simulate, measure and predict how one-hidden-layer ReLU networks learn.

The public face: a short list of names, each loaded when first used, so ``import shallowflow``
stays cheap (it imports neither JAX's engine, matplotlib, Dask nor any reproduction)::

    import shallowflow as sf

    exp = sf.load_experiment("examples/dpb_sphere.toml", ["runs=4"])
    ds = sf.simulate(exp)                   # xarray.Dataset (run, time, neuron, dim)
    a, b = sf.train([exp, exp.with_train(lr=0.05)])
    sf.run_experiment(exp, "runs/sphere")   # a run folder, written atomically
    ds = sf.load_run("runs/sphere")
    end = sf.end_states(ds)                 # minimum, saddle or not stationary, per run
    sf.reproduce("town-fig5", "runs/town-fig5")

Everything else lives in the rooms (docs/architecture.md, "Rooms"): ``config``, ``model``,
``data``, ``dynamics``, ``training``, ``runtime``, ``stationary``, ``theory``, ``analysis``,
``plots``, ``reproductions``.

Importing shallowflow changes no global state. float64 is the default precision of every run:
the entry points (the command line, training, reproductions) switch it on with
:func:`enable_full_precision`; a library user who builds JAX arrays of their own calls it first
(who sets precision, and how: :mod:`shallowflow.precision`). The command line also keeps
compiled programs on disk (:func:`shallowflow.runtime.compile_cache.enable`); a library user may
call it.
"""

from __future__ import annotations

import importlib
from typing import Any

from shallowflow.precision import enable_full_precision

__version__ = "0.1.0"  # the one place: pyproject.toml reads it, `shallowflow --version` prints it

_PUBLIC = {
    "Experiment": "shallowflow.config:Experiment",
    "load_experiment": "shallowflow.config:load_experiment",
    "experiment_from_mapping": "shallowflow.config:experiment_from_mapping",
    "train": "shallowflow.training.entry:train",
    "simulate": "shallowflow.training.entry:simulate",
    "run_experiment": "shallowflow.runner:run_experiment",
    "load_run": "shallowflow.store:load_run",
    "end_states": "shallowflow.stationary.verdict:end_states",
    "end_table": "shallowflow.stationary.verdict:end_table",
    "certify_run": "shallowflow.runner:certify_run",
    "load_sweep": "shallowflow.sweep:load_sweep",
    "run_sweep": "shallowflow.sweep:run_sweep",
    "reproduce": "shallowflow.reproductions.reproduce:run_reproduction",
    "catalogue": "shallowflow.reproductions.index:catalogue",
}
"""Public name -> ``module:attribute``, imported on first use (PEP 562)."""

__all__ = ["__version__", "enable_full_precision", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'shallowflow' has no attribute {name!r}")
    module, _, attribute = _PUBLIC[name].partition(":")
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
