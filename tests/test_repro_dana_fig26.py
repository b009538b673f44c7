"""dana-fig2 and dana-fig6 at tiny sizes: folder structure, and their numbers against independent
numpy computations (closed form eq. 69 at c_0 = 1, L_inf levels, the initial loss, the
Experiment-2 measures recomputed from the saved loss record); a re-judged folder gives the same
claims."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from conftest import check_reproduction_folder
from shallowflow.reproductions import rejudge, run_reproduction
from shallowflow.reproductions.dana.fig2 import gd_run
from shallowflow.reproductions.dana.fig6 import runs_of


@pytest.fixture(scope="module")
def fig2(tmp_path_factory):
    out = tmp_path_factory.mktemp("repro") / "fig2"
    run_reproduction("dana-fig2", out, "quick", ["ns=[16, 64]", "records=120", "span=1.3"],
                     show_progress=False)
    return out


@pytest.fixture(scope="module")
def fig6(tmp_path_factory):
    out = tmp_path_factory.mktemp("repro") / "fig6"
    run_reproduction("dana-fig6", out, "quick",
                     ["d=32", "n_min=16", "n_max=32", "n_step=16", "runs=3", "variant_runs=1",
                      "bootstrap=100", "avg_epochs=10"], show_progress=False)
    return out


def test_fig2_structure_and_limit_levels(fig2):
    claims, _ = check_reproduction_folder(fig2, ["closed_form_vs_gd", "limit_step_function",
                                  "transition_window"])
    assert claims["closed_form_vs_gd"]["verdict"] == "reproduced"
    cf = xr.load_dataset(fig2 / "results.nc")
    s, Linf = cf.s.values, cf.limit_loss.values
    # L_inf = (1/(2p)) sum_j ||D_j||^2 1{s < 1/||D_j||} with ||D|| = 1, 2, p = 2
    expected = np.where(s < 0.5, (1 + 4) / 4, np.where(s < 1.0, 1 / 4, 0.0))
    np.testing.assert_array_equal(Linf, expected)


def test_fig2_closed_form_matches_eq69(fig2):
    """At c_0 = 1, N(t) = p g N0 e^{ct}/(p g + N0 (e^{ct} - 1)) (DPB eq. 69), cos = 1."""
    cf = xr.load_dataset(fig2 / "results.nc")
    p, N0 = 2, 1.0
    for n in cf.n_closed.values:
        s = cf.s.values
        t = s * math.sqrt(n * p) / 4 * math.log(n * p)
        L = 0.0
        for D in (1.0, 2.0):
            g = math.sqrt(n / p) * D
            c = 2 * g / n
            e = np.exp(c * t)
            N = p * g * N0 * e / (p * g + N0 * (e - 1))
            L = L + 0.5 * (D - N / math.sqrt(n * p)) ** 2 / p
        np.testing.assert_allclose(cf.closed_loss.sel(n_closed=n).values, L, rtol=1e-6,
                                   atol=1e-12)


def test_fig2_simulation_initial_loss_and_first_order(fig2):
    errors = {}
    results = xr.load_dataset(fig2 / "results.nc")
    for lr in (0.5, 0.25):
        ds = gd_run(results, 64, lr)
        assert int(ds["span"]) == 1
        # X = I, w_j = (1/sqrt k) 1_group, a_j = 1: h(x_i) = 1/(p sqrt k) on every point
        n, p = 64, 2
        k = n // p
        y = np.repeat([1.0, 2.0], k)
        L0 = np.mean((y - 1 / (p * math.sqrt(k))) ** 2) / 2
        assert ds.loss.values[0] == pytest.approx(L0, rel=1e-12)
        errors[lr] = np.max(np.abs(ds.loss.values - ds.loss_closed.values)
                            / ds.loss_closed.values)
    assert errors[0.25] < 0.05
    assert 1.6 < errors[0.5] / errors[0.25] < 2.4  # GD error is first order in lr


def test_fig6_structure_and_measures_from_loss_record(fig6):
    claims, _ = check_reproduction_folder(fig6, ["slope_mu_t_inf", "slope_mu_avg", "slope_mu_low",
                                  "slope_mu_upp", "theorem1_rate", "lemma7_bracket"])
    g = runs_of(xr.load_dataset(fig6 / "results.nc"), "gaussian")
    assert set(g.n.values) == {16, 32}
    assert np.all(g["span"].values == 1)  # orthogonal fast path
    for n in g.n.values:
        p = math.floor(math.log(n / 0.05) / math.log(4 / 3)) + 1
        assert int(g.p.sel(n=n)) == p
        t_budget = 1.5 * math.sqrt(n * p) / 4 * math.log(n * p)
        assert int(g.epochs.sel(n=n)) == math.floor(t_budget) + 1
        for r in g.run.values:
            row = g.sel(n=n, run=r)
            t = int(row.t_inf)
            L = row.loss_record.values
            assert np.all(np.isfinite(L[: t + 1])) and np.all(np.isnan(L[t + 1:]))
            assert float(row.mu_avg) == pytest.approx(np.log(L[0] / L[t]) / t, rel=1e-10)
            assert float(row.mu_t_inf) == pytest.approx(np.log(L[t - 1] / L[t]), rel=1e-10)
            assert float(row.mu_t_inf_avg) == pytest.approx(np.log(L[t - 10] / L[t]) / 10,
                                                            rel=1e-10)
    # the reported slope is the log-log least-squares slope of the per-n mean
    means = [g.mu_upp.sel(n=n).values for n in g.n.values]
    means = [v[v > 0].mean() for v in means]
    slope = np.polyfit(np.log(g.n.values.astype(float)), np.log(means), 1)[0]
    assert claims["slope_mu_upp"]["measured"] == pytest.approx(slope, abs=1e-3)
    lo, hi = claims["slope_mu_upp"]["interval"]
    assert lo <= hi


@pytest.mark.parametrize(("name", "fixture"), [("dana-fig2", "fig2"), ("dana-fig6", "fig6")])
def test_rejudge_gives_the_same_claims(name, fixture, request, tmp_path):
    folder = request.getfixturevalue(fixture)
    out, _ = rejudge(name, folder, tmp_path / "again")
    assert (out / "claims.json").read_text() == (folder / "claims.json").read_text()
