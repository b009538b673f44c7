"""Town et al. reproductions town-fig1, town-fig3, town-fig4 and town-convergence, run with tiny
overrides. Besides the folder contents (claims.json, report.md and its figures), each test checks
one property of the saved simulation against a computation done here in plain numpy from the
saved inputs (labels, initial signs and directions), not against the code's own numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import xarray as xr

from conftest import check_reproduction_folder
from shallowflow.reproductions import run_reproduction


def run_checked(name, out, overrides, ids):
    """Run ``name`` (quick preset with ``overrides``) into ``out``, check the folder and that the
    claims include ``ids``; returns (out, report text)."""
    run_reproduction(name, out, "quick", overrides, show_progress=False)
    claims, report = check_reproduction_folder(out)
    assert ids <= set(claims)
    return out, report


def correct_sign_active(ds: xr.Dataset, run: int | None = None) -> np.ndarray:
    """(n, m): x_i = e_i is active for neuron j with the sign of its label (MATH.md §3.3), from
    the saved labels and initial network (of run ``run`` when the file has a run dimension)."""
    W0, a0, y = ds.W_init.values, ds.a_init.values, ds.y.values
    if run is not None:
        W0, a0 = W0[run], a0[run]
    return (W0.T > 0) & (np.sign(a0)[None, :] * y[:, None] > 0)


def test_town_fig1(tmp_path):
    out, report = run_checked("town-fig1", tmp_path / "f1",
                              ["n=16", "m=4", "log10_lambdas=[-10.0, -60.0]", "epoch_draws=10"],
                              {"one_neuron_per_jump", "jump_times", "plateau_losses"})
    assert "Preset wall time" in report
    ds = xr.load_dataset(out / "simulation.nc")
    y = ds.y.values
    n = y.size
    r = int(np.argmin(ds.log_lambda.values))  # the smallest lambda
    A = correct_sign_active(ds, r)
    # loss floor: points no neuron can fit keep their loss, (1/n) Σ y_i² (MSE)
    floor = np.sum(y[~A.any(axis=1)] ** 2) / n
    assert float(ds.final_loss[r]) == pytest.approx(floor, rel=1e-6, abs=1e-9 * np.sum(y**2) / n)
    # first jump: neuron with the largest ||D_j|| = (Σ_{A_j} y²)^{1/2}, at τ_1 = 1/(c_L ||D||),
    # c_L = 2/n; after it the plateau drops by (1/n) Σ_{A_j} y²
    mass = (y[:, None] ** 2 * A).sum(axis=0)
    tau1 = 1.0 / (2.0 / n * math.sqrt(mass.max()))
    L0, L1 = np.sum(y**2) / n, (np.sum(y**2) - mass.max()) / n
    loss, t = ds.loss.values[r], ds.t.values
    t_cross = t[np.argmax(loss < 0.5 * (L0 + L1))]
    assert t_cross == pytest.approx(tau1, rel=0.03)


def test_town_fig3(tmp_path):
    out, _ = run_checked("town-fig3", tmp_path / "f3",
                         ["n=16", "m=4", "log10_lambdas=[-20.0, -60.0]", "record_dt=1.0"],
                         {"piecewise_linear", "slopes"})
    ds = xr.load_dataset(out / "log_norms.nc")
    y = ds.y.values
    n = y.size
    A = correct_sign_active(ds)
    beta = 2.0 / n * np.sqrt((y[:, None] ** 2 * A).sum(axis=0))  # β_j^(0), c_L = 2/n
    tau1 = 1.0 / beta.max()
    t = ds.t.values
    sel = (t > 0.3 * tau1) & (t < 0.8 * tau1)
    assert sel.sum() > 20
    e = ds.log_norm.values[sel] / -ds.attrs["log_lambda"]
    for j in np.flatnonzero(beta > 0):
        slope = np.polyfit(t[sel], e[:, j], 1)[0]
        assert slope == pytest.approx(beta[j], rel=0.02), j


def test_town_fig4(tmp_path):
    out, _ = run_checked("town-fig4", tmp_path / "f4",
                         ["n=16", "m=4", "log10_lambda=-60.0", "record_dt=2.0"],
                         {"jump_direction", "alone_grows"})
    ds = xr.load_dataset(out / "snapshots.nc")
    y = ds.y.values
    A = correct_sign_active(ds)
    D = (A * np.abs(y)[:, None]).T  # (m, n): D_j = Σ_{A_j} |y_i| e_i
    first = int(np.argmax(np.linalg.norm(D, axis=1)))
    snaps = list(ds.snapshot.values)
    after = snaps.index("1.02 τ_1")
    assert int(np.argmax(ds.log_norm.values[after])) == first
    w = ds.W.values[snaps.index("0.98 τ_1"), first]
    cos = w @ D[first] / (np.linalg.norm(w) * np.linalg.norm(D[first]))
    assert cos > 0.99


def test_town_convergence(tmp_path):
    out, report = run_checked("town-convergence", tmp_path / "c",
                              ["n=6", "m=3", "problems=1", "log10_lambdas=[-10.0, -30.0]",
                               "refine=2", "fit_max_log10=-10.0", "boot=50"],
                              {"jump_time_rate", "gd_step_bias", "final_weight_rate", "hand_vector"})
    assert "| hand vector" in report
    ds = xr.load_dataset(out / "convergence.nc")
    h = list(ds.problem.values).index("hand vector §3.6")
    # MATH.md §3.6 by hand: c_L = 1/4, ||D_1|| = 5, ||D_2|| = sqrt(21), then sqrt(5)
    tau1 = 1.0 / (0.25 * 5.0)
    tau2 = tau1 + (1.0 - 0.25 * math.sqrt(21) * tau1) / (0.25 * math.sqrt(5))
    L = -ds.log_lambda.values
    cross = ds.cross_fine.values[h][:, :2]
    err = np.abs(cross - [tau1, tau2]).max(axis=1)
    i = int(np.argmax(L))
    assert err[i] < 0.01 * tau2
    # O(1/log(1/lambda)): error x log(1/lambda) stays of the same size while log(1/lambda) doubles
    j = int(np.argsort(L)[-2])
    assert 0.5 < (err[i] * L[i]) / (err[j] * L[j]) < 2.0
