"""Theory from an experiment: the adapters that build the predictions of :mod:`shallowflow.theory`
from a validated :class:`~shallowflow.config.Experiment` or a prepared batch, so that a prediction
can be overlaid on the runs it describes.

Theory takes plain arrays and parameters and never imports the training side; this module reads
what theory needs (data, initial networks, loss conventions) off the experiment.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shallowflow.config import Experiment
from shallowflow.theory.saddle_process import SaddleProcess, from_network
from shallowflow.training.batches import BatchInputs, RunRef, prepare_batch
from shallowflow.training.preflight import check_memory, estimate


def saddle_process_from_experiment(exp: Experiment, run: int = 0, **kwargs: Any) -> SaddleProcess:
    """Algorithm 1 (:mod:`shallowflow.theory.saddle_process`) for run ``run`` of a validated
    experiment, built from its data and its unit-scale initial network (no training; works at any
    lambda). Extra keyword arguments go to :func:`~shallowflow.theory.saddle_process.limit_process`.
    Its memory is checked first, as a training call's is
    (:func:`~shallowflow.training.preflight.check_memory`): an absurd size is refused, not drawn."""
    check_memory(estimate([(exp, 1)], hold=False), forceable=False)
    return saddle_process_from_batch(prepare_batch([RunRef(exp, int(run))]), 0, **kwargs)


def saddle_process_from_batch(batch: BatchInputs, run: int = 0, **kwargs: Any) -> SaddleProcess:
    """Algorithm 1 for run ``run`` of a prepared batch (:func:`shallowflow.training.batches.prepare_batch`):
    its data and unit-scale initial network, so many problems of one shape are set up together."""
    exp = batch.refs[run].experiment
    if exp.kappa != 1.0:
        raise ValueError(f"exp: Algorithm 1 is for output scale kappa = 1, got {exp.kappa}")
    X, y = np.asarray(batch.X, np.float64), np.asarray(batch.y, np.float64)
    if X.ndim == 3:
        X, y = X[run], y[run]
    a0 = np.asarray(batch.net0.a[run], dtype=np.float64)
    W0 = np.asarray(batch.net0.W[run], dtype=np.float64)
    return from_network(a0, W0, X, y, exp.train.loss, exp.train.reduction, exp.time_scale, **kwargs)
