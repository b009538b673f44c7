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
from shallowflow.reproductions import rejudge, run_reproduction


def check_outputs(out: Path, ids: set[str]) -> None:
    claims, report = check_reproduction_folder(out, ids)
    for c in claims.values():
        assert c["interval"] is None or len(c["interval"]) == 2
    assert "## Cost" in report and "## Method" in report


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


def test_fig5_rejudge_gives_the_same_claims(fig5, tmp_path):
    rejudge("town-fig5", fig5, tmp_path / "again")
    assert (tmp_path / "again" / "claims.json").read_text() == (fig5 / "claims.json").read_text()


def test_fig5_norms_against_numpy(fig5):
    stop = json.loads((fig5 / "params.json").read_text())["params"]["stop_loss"]
    results = xr.load_dataset(fig5 / "results.nc")
    assert list(results.n.values) == [8, 16]
    interpolating = 0
    for n in (8, 16):
        ds = results.sel(n=n)
        m = int(ds.width)
        # one Dataset for every n: labels and weights NaN-padded beyond n and the width m
        assert np.all(np.isnan(ds.y.values[n:])) and np.all(np.isnan(ds.a_final.values[..., m:]))
        assert np.all(np.isnan(ds.W_final.values[..., m:, :]))
        assert np.all(np.isnan(ds.W_final.values[..., n:]))
        y = ds.y.values[:n]
        a, W = ds.a_final.values[..., :m], ds.W_final.values[..., :m, :n]
        assert y.shape == (n,) and np.all(np.isfinite(y))
        assert np.all(np.isfinite(a)) and np.all(np.isfinite(W))
        # ||theta*||^2 = 2(||y+|| + ||y-||), recomputed from the saved labels
        assert float(ds.min_norm_sq) == pytest.approx(min_norm_numpy(y), rel=1e-12)
        # the engine's squared-norm probe equals the norm of the saved final weights
        np.testing.assert_allclose(ds.sq_norm.values, sq_norm_numpy(a, W), rtol=1e-9)
        # width rule: smallest m with n (3/4)^m <= 0.01
        assert n * 0.75**m <= 0.01 < n * 0.75 ** (m - 1)
        # runs flagged as interpolating do interpolate (X = I: h_i = sum_j a_j relu(W_ji)), and
        # no interpolator can have a squared norm below the minimum-norm value
        h = np.einsum("lrj,lrji->lri", a, np.maximum(W, 0.0))
        mse = np.mean((h - y) ** 2, axis=-1)
        flagged = ds.interpolated.values
        assert np.all(mse[flagged] < stop)
        assert np.all(ds.sq_norm.values[flagged] >= min_norm_numpy(y) * (1 - 1e-3))
        interpolating += int(flagged.sum())
    assert interpolating > 0


def test_fig6_outputs(fig6):
    check_outputs(fig6, {"small_init_approaches_optimum", "he_init_keeps_increasing",
                         "runs_interpolate"})
    results = xr.load_dataset(fig6 / "results.nc")
    assert list(results.theory_width.values) == [8, 16, 32, 64]
    ratio = results.theory_ratio.values
    finite = ratio[np.isfinite(ratio)]
    assert finite.size and np.all(finite >= 1 - 1e-12)  # the limit interpolates: norm >= optimum


def test_fig6_rejudge_gives_the_same_claims(fig6, tmp_path):
    rejudge("town-fig6", fig6, tmp_path / "again")
    assert (tmp_path / "again" / "claims.json").read_text() == (fig6 / "claims.json").read_text()


def test_fig6_norms_and_initialisations(fig6):
    results = xr.load_dataset(fig6 / "results.nc")
    assert list(results.width.values) == [16, 64]
    y = results.y.values
    assert float(results.min_norm_sq) == pytest.approx(min_norm_numpy(y), rel=1e-12)
    for m in (16, 64):
        ds = results.sel(width=m)
        # one Dataset for every width: weights NaN-padded beyond m
        for k in ("a_final", "a_init"):
            assert np.all(np.isnan(ds[k].values[..., m:]))
        for k in ("W_final", "W_init"):
            assert np.all(np.isnan(ds[k].values[..., m:, :]))
        a_final, a_init = ds.a_final.values[..., :m], ds.a_init.values[..., :m]
        W_final, W_init = ds.W_final.values[..., :m, :], ds.W_init.values[..., :m, :]
        np.testing.assert_allclose(ds.sq_norm.values, sq_norm_numpy(a_final, W_final), rtol=1e-9)
        np.testing.assert_allclose(ds.sq_norm_init.values, sq_norm_numpy(a_init, W_init),
                                   rtol=1e-9)
        # He-uniform (PyTorch default): W entries U(-1/sqrt(32), 1/sqrt(32)), a U(-1/sqrt m, ..)
        W = ds.W_init.sel(scheme="he").values[..., :m, :]
        a = ds.a_init.sel(scheme="he").values[..., :m]
        bw, ba = 1 / math.sqrt(32), 1 / math.sqrt(m)
        assert np.all(np.abs(W) <= bw) and np.abs(W).max() > 0.95 * bw
        assert np.all(np.abs(a) <= ba) and np.abs(a).max() > 0.5 * ba
        assert abs(np.mean(W**2) - bw**2 / 3) < 0.15 * bw**2 / 3  # variance of U(-b, b)
        # balanced small init: ||w_j|| = |a_j| = lambda / sqrt(m), lambda = 1e-12
        Ws = ds.W_init.sel(scheme="small").values[..., :m, :]
        As = ds.a_init.sel(scheme="small").values[..., :m]
        np.testing.assert_allclose(np.linalg.norm(Ws, axis=-1), 1e-12 / math.sqrt(m), rtol=1e-10)
        np.testing.assert_allclose(np.abs(As), 1e-12 / math.sqrt(m), rtol=1e-10)
        assert set(np.sign(As).ravel()) <= {-1.0, 1.0}


def test_fig5_changed_verdict_constant_changes_only_the_verdict(fig5, tmp_path, monkeypatch):
    """Re-judging a saved folder with another verdict constant: the measured values, intervals
    and variants stay; only the verdict of the claim that uses the constant follows it."""
    from shallowflow.reproductions.town import fig5 as module

    folders = {}
    for share in (0.0, 1.01):  # every share passes / no share can pass
        monkeypatch.setattr(module, "LIMIT_SHARE", share)
        folders[share] = tmp_path / f"share{share}"
        rejudge("town-fig5", fig5, folders[share])
    lenient, strict = ({c["id"]: c for c in json.loads((folders[s] / "claims.json").read_text())}
                       for s in (0.0, 1.01))
    assert lenient.keys() == strict.keys()
    for cid in lenient:
        for field in ("statement", "reference", "measured", "interval", "variants"):
            assert lenient[cid][field] == strict[cid][field]
        if cid != "limit_approach":
            assert lenient[cid]["verdict"] == strict[cid]["verdict"]
    assert lenient["limit_approach"]["verdict"] == "reproduced"
    assert strict["limit_approach"]["verdict"] == "not reproduced"
