"""The typed results attributes (shallowflow.model.run_attrs): what to_dataset writes comes back
through a netCDF file into RunAttrs.of unchanged, and an old file without an attribute reads the
documented default."""

from __future__ import annotations

import dataclasses
import math

import xarray as xr

from shallowflow.config import experiment_from_mapping
from shallowflow.model.run_attrs import RunAttrs, log_lambda_of
from shallowflow.training.entry import simulate


def test_to_dataset_attrs_round_trip_through_netcdf(tmp_path):
    exp = experiment_from_mapping({
        "runs": 2, "data": {"kind": "sphere", "n": 6, "d": 3},
        "model": {"width": 4, "activation": "leaky_relu", "leak": 0.1, "kappa": "1/p"},
        "init": {"scheme": "dpb"},
        "train": {"lr": 0.05, "steps": 20, "loss": "mse", "reduction": "sum",
                  "time_scale": "width", "second_layer_rate": 0.5, "step_certificate": 1},
        "record": {"points": 4}})
    ds = simulate(exp)
    written = RunAttrs.of(ds)
    assert (written.kappa, written.leak, written.loss_name, written.reduction) == (
        0.25, 0.1, "mse", "sum")
    assert (written.time_scale, written.lr, written.second_layer_rate) == (4.0, 0.05, 0.5)
    assert written.step_certificate is not None and written.step_certificate.startswith("step")
    ds.to_netcdf(tmp_path / "r.nc")
    with xr.open_dataset(tmp_path / "r.nc") as back:
        read = RunAttrs.of(back)
    assert read == written
    for f in dataclasses.fields(RunAttrs):
        assert type(getattr(read, f.name)) is type(getattr(written, f.name)), f.name


def test_an_absent_attribute_reads_its_default():
    attrs = RunAttrs.of(xr.Dataset(attrs={"lr": 0.1, "kappa": 0.5, "unrelated": "x"}))
    assert (attrs.lr, attrs.kappa) == (0.1, 0.5)
    assert (attrs.leak, attrs.loss_name, attrs.reduction, attrs.time_scale) == (
        0.0, "square", "mean", 1.0)
    assert attrs.step_certificate is None and "step_certificate" not in attrs.to_attrs()
    assert math.isnan(RunAttrs.of({}).lr)


def test_log_lambda_of_reads_the_old_coordinate_name():
    old = xr.Dataset(coords={"run": [0, 1], "log_scale": ("run", [-3.0, -4.0])})
    new = old.rename({"log_scale": "log_lambda"})
    assert log_lambda_of(old).values.tolist() == log_lambda_of(new).values.tolist() == [-3.0, -4.0]
