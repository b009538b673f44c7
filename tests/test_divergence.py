"""A diverged run is frozen at its parameters of the last record point where they and their loss
were finite (docs/concepts/records.md): the loss of its final parameters, computed here with numpy, is
finite and equals its last recorded loss, whatever the record schedule (records every step, or a
geometric schedule whose compiled segments carry padding slots)."""

from __future__ import annotations

import numpy as np
import pytest

from shallowflow.config import experiment_from_mapping
from shallowflow.training.entry import train


@pytest.mark.parametrize("record", [{"every": 1, "points": 0}, {"points": 20}, {"points": 3}])
def test_diverged_runs_keep_their_last_finite_parameters(record):
    exp = experiment_from_mapping({
        "runs": 3, "data": {"kind": "sphere", "n": 20, "d": 5}, "model": {"width": 8},
        "init": {"scheme": "dpb"}, "train": {"lr": 50.0, "steps": 200},
        "record": {**record, "probes": ["loss"]}})
    (ds,) = train(exp, keep_data=True, show_progress=False)
    assert ds.diverged.values.all()
    X, y = ds.X.values, ds.y.values
    for r in range(3):
        a, W = ds.a_final.values[r], ds.W_final.values[r]
        loss = 0.5 * np.mean((np.maximum(X @ W.T, 0) @ a - y) ** 2)  # square loss, kappa = 1
        assert np.isfinite(loss)
        np.testing.assert_allclose(ds.loss.values[r, -1], loss, rtol=1e-9)
