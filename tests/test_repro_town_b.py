"""town-fig5 and town-fig6 reproductions at tiny sizes: outputs, and properties of the saved data
checked against independent numpy computations (minimum norm from the labels, squared norm and
interpolation from the final weights, the initialisation laws)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from conftest import check_reproduction_folder
from shallowflow.reproductions import run_reproduction


def check_outputs(out: Path, ids: set[str]) -> None:
    claims, report = check_reproduction_folder(out, ids)
    for c in claims.values():
        assert c["interval"] is None or len(c["interval"]) == 2
    assert "## Cost" in report and "## Protocol" in report


def min_norm_numpy(y: np.ndarray) -> float:
    return 2.0 * (math.sqrt(float(np.sum(y[y > 0] ** 2))) + math.sqrt(float(np.sum(y[y < 0] ** 2))))


def sq_norm_numpy(a: np.ndarray, W: np.ndarray) -> np.ndarray:
    return np.sum(a**2, axis=-1) + np.sum(W**2, axis=(-2, -1))


@pytest.fixture(scope="module")
def fig5(tmp_path_factory):
    out = tmp_path_factory.mktemp("town") / "fig5"
    run_reproduction("town-fig5", out, "quick",
                     ["n_values=[8, 16]", "runs=2", "log10_lambdas=[-8, -20]",
                      "max_epochs=200000"], show_progress=False)
    return out


@pytest.fixture(scope="module")
def fig6(tmp_path_factory):
    out = tmp_path_factory.mktemp("town") / "fig6"
    run_reproduction("town-fig6", out, "quick",
                     ["widths=[16, 64]", "runs=2", "max_epochs_small=100000",
                      "max_epochs_he=20000", "theory_max_log2_width=6", "theory_draws=4"],
                     show_progress=False)
    return out


def test_fig5_outputs(fig5):
    check_outputs(fig5, {"norm_slope", "constant_factor", "interpolation", "limit_approach"})


def test_fig5_norms_against_numpy(fig5):
    stop = json.loads((fig5 / "params.json").read_text())["params"]["stop_loss"]
    interpolating = 0
    for n in (8, 16):
        ds = xr.load_dataset(fig5 / f"n{n:04d}.nc")
        y = ds.y.values
        assert y.shape == (n,)
        # ||theta*||^2 = 2(||y+|| + ||y-||), recomputed from the saved labels
        assert float(ds.min_norm_sq) == pytest.approx(min_norm_numpy(y), rel=1e-12)
        # the engine's squared-norm probe equals the norm of the saved final weights
        np.testing.assert_allclose(ds.sq_norm.values,
                                   sq_norm_numpy(ds.a_final.values, ds.W_final.values), rtol=1e-9)
        # width rule: smallest m with n (3/4)^m <= 0.01
        m = ds.sizes["neuron"]
        assert n * 0.75**m <= 0.01 < n * 0.75 ** (m - 1)
        # runs flagged as interpolating do interpolate (X = I: h_i = sum_j a_j relu(W_ji)), and
        # no interpolator can have a squared norm below the minimum-norm value
        h = np.einsum("lrj,lrji->lri", ds.a_final.values, np.maximum(ds.W_final.values, 0.0))
        mse = np.mean((h - y) ** 2, axis=-1)
        flagged = ds.interpolated.values
        assert np.all(mse[flagged] < stop)
        assert np.all(ds.sq_norm.values[flagged] >= min_norm_numpy(y) * (1 - 1e-3))
        interpolating += int(flagged.sum())
    assert interpolating > 0


def test_fig6_outputs(fig6):
    check_outputs(fig6, {"small_init_approaches_optimum", "he_init_keeps_increasing",
                         "runs_interpolate"})
    theory = xr.load_dataset(fig6 / "theory.nc")
    assert list(theory.width.values) == [8, 16, 32, 64]
    finite = theory.ratio.values[np.isfinite(theory.ratio.values)]
    assert finite.size and np.all(finite >= 1 - 1e-12)  # the limit interpolates: norm >= optimum


def test_fig6_norms_and_initialisations(fig6):
    for m in (16, 64):
        ds = xr.load_dataset(fig6 / f"m{m:04d}.nc")
        y = ds.y.values
        assert float(ds.min_norm_sq) == pytest.approx(min_norm_numpy(y), rel=1e-12)
        np.testing.assert_allclose(ds.sq_norm.values,
                                   sq_norm_numpy(ds.a_final.values, ds.W_final.values), rtol=1e-9)
        np.testing.assert_allclose(ds.sq_norm_init.values,
                                   sq_norm_numpy(ds.a_init.values, ds.W_init.values), rtol=1e-9)
        # He-uniform (PyTorch default): W entries U(-1/sqrt(32), 1/sqrt(32)), a U(-1/sqrt m, ..)
        W = ds.W_init.sel(scheme="he").values
        a = ds.a_init.sel(scheme="he").values
        bw, ba = 1 / math.sqrt(32), 1 / math.sqrt(m)
        assert np.all(np.abs(W) <= bw) and np.abs(W).max() > 0.95 * bw
        assert np.all(np.abs(a) <= ba) and np.abs(a).max() > 0.5 * ba
        assert abs(np.mean(W**2) - bw**2 / 3) < 0.15 * bw**2 / 3  # variance of U(-b, b)
        # balanced small init: ||w_j|| = |a_j| = lambda / sqrt(m), lambda = 1e-12
        Ws = ds.W_init.sel(scheme="small").values
        As = ds.a_init.sel(scheme="small").values
        np.testing.assert_allclose(np.linalg.norm(Ws, axis=-1), 1e-12 / math.sqrt(m), rtol=1e-10)
        np.testing.assert_allclose(np.abs(As), 1e-12 / math.sqrt(m), rtol=1e-10)
        assert set(np.sign(As).ravel()) <= {-1.0, 1.0}
