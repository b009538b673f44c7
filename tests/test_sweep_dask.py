"""The dask executor runs batches in worker processes and gives the local executor's results."""

from __future__ import annotations

import pandas as pd
import pytest

from shallowflow.sweep import load_batches, run_sweep, sweep_from_mapping

pytest.importorskip("dask.distributed")

SWEEP = {
    "name": "dask", "max_batch": 2,
    "base": {
        "runs": 2,
        "data": {"kind": "orthonormal", "n": 4, "d": 4},
        "model": {"width": 2},
        "init": {"scheme": "balanced", "scale": 0.1},
        "train": {"lr": 0.1, "steps": 20},
        "record": {"every": 10, "points": 0},
    },
    "grid": {"model.width": [2, 3]},
}


def test_dask_executor_matches_local(tmp_path):
    sw = sweep_from_mapping(SWEEP)
    local = run_sweep(sw, tmp_path / "local", show_progress=False)
    remote = run_sweep(sw, tmp_path / "dask", executor="dask", show_progress=False)
    pd.testing.assert_frame_equal(local, remote)
    for a, b in zip(load_batches(tmp_path / "local"), load_batches(tmp_path / "dask"), strict=True):
        assert a.drop_attrs().equals(b.drop_attrs())
