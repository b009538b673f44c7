"""Town et al. reproductions town-fig1, town-fig3, town-fig4 and town-convergence, run with tiny
overrides. Besides the folder contents (claims.json, report.md and its figures), each test checks
one property of the saved simulation against a computation done here in plain numpy from the
saved inputs (labels, initial signs and directions), not against the code's own numbers."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
import xarray as xr

from shallowflow.reproductions import run_reproduction
from shallowflow.reproductions.claims import VERDICTS

FIELDS = {"id", "statement", "paper_value", "measured", "verdict", "interval", "notes", "variants"}


def check_folder(out):
    claims = json.loads((out / "claims.json").read_text())
    assert claims
    for c in claims:
        assert set(c) == FIELDS
        assert c["verdict"] in VERDICTS
    report = (out / "report.md").read_text()
    pngs = re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", report)
    assert pngs
    for png in pngs:
        assert (out / png).is_file() and (out / png).stat().st_size > 10_000
    return {c["id"]: c for c in claims}, report


def correct_sign_active(W0: np.ndarray, a0: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(n, m): x_i = e_i is active for neuron j with the sign of its label (MATH.md §3.3)."""
    return (W0.T > 0) & (np.sign(a0)[None, :] * y[:, None] > 0)


def test_town_fig1(tmp_path):
    out, _ = run_reproduction("town-fig1", tmp_path / "f1", "quick",
                              ["n=16", "m=4", "log10_lambdas=[-10.0, -60.0]", "epoch_draws=10"],
                              show_progress=False)
    claims, report = check_folder(out)
    assert {"one_neuron_per_jump", "jump_times", "plateau_losses"} <= set(claims)
    assert "Preset wall time" in report
    ds = xr.open_dataset(out / "simulation.nc")
    y = ds.y.values
    n = y.size
    r = int(np.argmin(ds.log_lambda.values))  # the smallest lambda
    A = correct_sign_active(ds.W_init.values[r], ds.a_init.values[r], y)
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
    out, _ = run_reproduction("town-fig3", tmp_path / "f3", "quick",
                              ["n=16", "m=4", "log10_lambdas=[-20.0, -60.0]", "record_dt=1.0"],
                              show_progress=False)
    claims, _ = check_folder(out)
    assert {"piecewise_linear", "slopes"} <= set(claims)
    ds = xr.open_dataset(out / "log_norms.nc")
    y = ds.y.values
    n = y.size
    A = correct_sign_active(ds.W_init.values, ds.a_init.values, y)
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
    out, _ = run_reproduction("town-fig4", tmp_path / "f4", "quick",
                              ["n=16", "m=4", "log10_lambda=-60.0", "record_dt=2.0"],
                              show_progress=False)
    claims, _ = check_folder(out)
    assert {"jump_direction", "alone_grows"} <= set(claims)
    ds = xr.open_dataset(out / "snapshots.nc")
    y = ds.y.values
    A = correct_sign_active(ds.W_init.values, ds.a_init.values, y)
    D = (A * np.abs(y)[:, None]).T  # (m, n): D_j = Σ_{A_j} |y_i| e_i
    first = int(np.argmax(np.linalg.norm(D, axis=1)))
    snaps = list(ds.snapshot.values)
    after = snaps.index("1.02 τ_1")
    assert int(np.argmax(ds.log_norm.values[after])) == first
    w = ds.W.values[snaps.index("0.98 τ_1"), first]
    cos = w @ D[first] / (np.linalg.norm(w) * np.linalg.norm(D[first]))
    assert cos > 0.99


def test_town_convergence(tmp_path):
    out, _ = run_reproduction("town-convergence", tmp_path / "c", "quick",
                              ["n=6", "m=3", "problems=1", "log10_lambdas=[-10.0, -30.0]",
                               "refine=2", "fit_max_log10=-10.0", "boot=50"], show_progress=False)
    claims, report = check_folder(out)
    assert {"jump_time_rate", "gd_step_bias", "final_weight_rate", "hand_vector"} <= set(claims)
    assert "| hand vector" in report
    ds = xr.open_dataset(out / "convergence.nc")
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
