"""Town et al. reproductions town-fig1, town-fig3, town-fig4 and town-convergence, run with tiny
overrides. Besides the folder contents (claims.json, report.md and its figures), each test checks
one property of the saved simulation (results.nc) against a computation done here in plain numpy
from the saved inputs (labels, initial signs and directions), not against the code's own numbers;
and re-judging the folder (:func:`rejudge`) gives the same claims."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from conftest import check_reproduction_folder
from shallowflow.reproductions import rejudge, run_reproduction

TINY = {
    "town-fig1": (["n=16", "m=4", "log10_lambdas=[-10.0, -60.0]", "epoch_draws=10"],
                  {"one_neuron_per_jump", "jump_times", "plateau_losses"}),
    "town-fig3": (["n=16", "m=4", "log10_lambdas=[-20.0, -60.0]", "record_dt=1.0"],
                  {"piecewise_linear", "slopes"}),
    "town-fig4": (["n=16", "m=4", "log10_lambda=-60.0", "record_dt=2.0"],
                  {"jump_direction", "alone_grows"}),
    "town-convergence": (["n=6", "m=3", "problems=1", "log10_lambdas=[-10.0, -30.0]", "refine=2",
                          "fit_max_log10=-10.0", "boot=50"],
                         {"jump_time_rate", "gd_step_bias", "final_weight_rate", "hand_vector"}),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Callable[[str], Path]:
    """Each reproduction's tiny configuration, run once when a test asks for it."""
    root, done = tmp_path_factory.mktemp("town_a"), {}

    def get(name: str) -> Path:
        if name not in done:
            out = root / name
            run_reproduction(name, out, "quick", TINY[name][0], show_progress=False)
            done[name] = out
        return done[name]

    return get


def checked(runs, name: str) -> tuple[xr.Dataset, str]:
    """Check the folder and that the claims include the expected ids; (results, report)."""
    out = runs(name)
    claims, report = check_reproduction_folder(out)
    assert TINY[name][1] <= set(claims)
    return xr.load_dataset(out / "results.nc"), report


def correct_sign_active(ds: xr.Dataset, run: int | None = None) -> np.ndarray:
    """(n, m): x_i = e_i is active for neuron j with the sign of its label (docs/math.md §3.3),
    from the saved labels and initial network (of run ``run`` when the file has a run
    dimension)."""
    W0, a0, y = ds.W_init.values, ds.a_init.values, ds.y.values
    if run is not None:
        W0, a0 = W0[run], a0[run]
    return (W0.T > 0) & (np.sign(a0)[None, :] * y[:, None] > 0)


@pytest.mark.parametrize("name", list(TINY))
def test_rejudge_gives_the_same_claims(runs, name, tmp_path):
    out = runs(name)
    rejudge(name, out, tmp_path / "again")
    assert (tmp_path / "again" / "claims.json").read_text() == (out / "claims.json").read_text()


def test_town_fig1(runs):
    ds, report = checked(runs, "town-fig1")
    assert "Preset wall time" in report
    y = ds.y.values
    n = y.size
    r = int(np.argmin(ds.log10_lambda.values))  # the smallest lambda
    A = correct_sign_active(ds, r)
    # loss floor: points no neuron can fit keep their loss, (1/n) Σ y_i² (MSE)
    floor = np.sum(y[~A.any(axis=1)] ** 2) / n
    assert float(ds.final_loss[r]) == pytest.approx(floor, rel=1e-6, abs=1e-9 * np.sum(y**2) / n)
    # first jump: neuron with the largest ||D_j|| = (Σ_{A_j} y²)^{1/2}, at τ_1 = 1/(c_L ||D||),
    # c_L = 2/n; after it the plateau drops by (1/n) Σ_{A_j} y²
    mass = (y[:, None] ** 2 * A).sum(axis=0)
    tau1 = 1.0 / (2.0 / n * math.sqrt(mass.max()))
    L0, L1 = np.sum(y**2) / n, (np.sum(y**2) - mass.max()) / n
    loss, t = ds.loss.values[r], ds.time_accelerated.values[r]
    t_cross = t[np.argmax(loss < 0.5 * (L0 + L1))]
    assert t_cross == pytest.approx(tau1, rel=0.03)


def test_town_fig3(runs):
    ds, _ = checked(runs, "town-fig3")
    r = int(np.argmin(ds.log10_lambda.values))  # the smallest lambda
    y = ds.y.values
    n = y.size
    A = correct_sign_active(ds, r)
    beta = 2.0 / n * np.sqrt((y[:, None] ** 2 * A).sum(axis=0))  # β_j^(0), c_L = 2/n
    tau1 = 1.0 / beta.max()
    t = ds.time_accelerated.values[r]
    sel = (t > 0.3 * tau1) & (t < 0.8 * tau1)
    assert sel.sum() > 20
    e = ds.log_norm.values[r][sel] / -float(ds.log_lambda[r])
    for j in np.flatnonzero(beta > 0):
        slope = np.polyfit(t[sel], e[:, j], 1)[0]
        assert slope == pytest.approx(beta[j], rel=0.02), j


def test_town_fig4(runs):
    ds, _ = checked(runs, "town-fig4")
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


def test_town_convergence(runs):
    ds, report = checked(runs, "town-convergence")
    assert "| hand vector" in report
    h = list(ds.problem.values).index("hand vector §3.6")
    # docs/math.md §3.6 by hand: c_L = 1/4, ||D_1|| = 5, ||D_2|| = sqrt(21), then sqrt(5)
    tau1 = 1.0 / (0.25 * 5.0)
    tau2 = tau1 + (1.0 - 0.25 * math.sqrt(21) * tau1) / (0.25 * math.sqrt(5))
    L = -ds.log_lambda.values
    cross = ds.cross.values[1, h][:, :2]  # the fine step
    err = np.abs(cross - [tau1, tau2]).max(axis=1)
    i = int(np.argmax(L))
    assert err[i] < 0.01 * tau2
    # O(1/log(1/lambda)): error x log(1/lambda) stays of the same size while log(1/lambda) doubles
    j = int(np.argsort(L)[-2])
    assert 0.5 < (err[i] * L[i]) / (err[j] * L[j]) < 2.0
