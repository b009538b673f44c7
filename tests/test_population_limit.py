"""population-limit (docs/math.md §11.9): a tiny run whose folder passes the common checks, whose
distances the test recomputes from the saved end points and whose fitted slope it recomputes
from the saved distances; the same-minimum rule on hand-made roles; re-judging gives the same
claims; bad parameters are one error line."""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

from conftest import check_reproduction_folder
from shallowflow.config import ConfigError
from shallowflow.reproductions import rejudge, run_reproduction
from shallowflow.reproductions.population.limit import same_minimum

TINY = ["d=4", "teacher_width=2", "width=3", "n_values=[200, 800, 3200]", "runs=4",
        "steps=400", "bootstrap=200"]


def test_tiny_run_and_its_slope_from_the_written_data(tmp_path):
    folder, _ = run_reproduction("population-limit", tmp_path / "lim", "quick", TINY,
                                 show_progress=False)
    claims, _ = check_reproduction_folder(
        folder, {"slope_distance_sq", "slope_distance", "same_minimum", "population_converged"})
    ds = xr.load_dataset(folder / "results.nc")
    dist = np.sqrt(((ds.a_n - ds.a_pop) ** 2).sum("neuron")
                   + ((ds.W_n - ds.W_pop) ** 2).sum(("neuron", "dim")))
    assert np.allclose(dist.values, ds.distance.values, rtol=1e-12)
    same = ds.same_minimum.values
    assert same.any(axis=1).all()
    for key, power in (("slope_distance", 1), ("slope_distance_sq", 2)):
        mid = [np.median(ds.distance.values[i][same[i]] ** power) for i in range(ds.sizes["n"])]
        slope = np.polyfit(np.log(ds.n.values), np.log(mid), 1)[0]
        assert claims[key]["measured"] == pytest.approx(slope, abs=1e-3)
        lo, hi = claims[key]["interval"]
        assert lo <= claims[key]["measured"] <= hi
    again, _ = rejudge("population-limit", folder, tmp_path / "again")
    assert (json.loads((again / "claims.json").read_text())
            == json.loads((folder / "claims.json").read_text()))


def test_same_minimum_rule():
    role = np.array([[0, 1, -1, -1], [0, 1, -1, -1], [0, 1, -1, -1]])
    strength = np.array([[1.0, 1.0, 0.01, 0.0], [1.0, 1.0, 0.01, 0.0], [1.0, 1.0, 0.01, 0.0]])
    role2 = np.array([[0, 1, -1, -1], [0, 1, 0, -1], [0, 1, 0, -1]])
    strength2 = np.array([[0.9, 1.1, 0.0, 0.0], [1.0, 1.0, 0.1, 0.0], [1.0, 0.5, 0.5, 0.0]])
    # equal roles; a neuron fading (0.1 < ROLE_CARRY) where the other is silent; one carrying
    # half a teacher neuron where the other has it silent
    assert same_minimum(role, strength, role2, strength2).tolist() == [True, True, False]


@pytest.mark.parametrize("override, field", [
    ("n_values=[1000, 100]", "n_values"), ("teacher_width=10", "teacher_width"),
    ("runs=0", "runs"), ("n_values=[1000]", "n_values")])
def test_bad_parameters_name_the_field(override, field, tmp_path):
    with pytest.raises(ConfigError, match=f"population-limit.{field}"):
        run_reproduction("population-limit", tmp_path / "x", "quick", [override],
                         show_progress=False)
