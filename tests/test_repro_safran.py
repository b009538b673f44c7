"""safran-minima end to end at a tiny size (docs/math.md §11.8): census.csv counts every run once,
its fractions recount to the claims', its global and spurious rows are told apart by their
loss, the per-run results agree with it; a re-judge writes the same census; bad parameters are
one error line with exit 2."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from typer.testing import CliRunner

from shallowflow.cli import app
from shallowflow.reproductions import rejudge, run_reproduction

SETTINGS = ["k_values=[3, 4]", "runs=4", "extra_values=[0, 1]", "lr_scale=2.0", "steps=20000",
            "stop_loss=1e-11"]


def test_a_tiny_census_recounts(tmp_path):
    folder, claims = run_reproduction("safran-minima", tmp_path / "out", overrides=SETTINGS,
                                      show_progress=False)
    census = pd.read_csv(folder / "census.csv")
    assert list(census.columns) == ["k", "n", "runs", "converged", "loss", "eig_min",
                                    "multiplicity", "global"]
    assert set(zip(census.k, census.n, strict=True)) == {(3, 3), (3, 4), (4, 4), (4, 5)}
    ds = xr.load_dataset(folder / "results.nc")
    for (k, n), rows in census.groupby(["k", "n"]):
        assert (rows.runs == 4).all() and rows.multiplicity.sum() == 4  # every run once
        assert rows.loc[rows["global"], "loss"].lt(1e-10).all()
        assert rows.loc[~rows["global"] & rows.converged, "loss"].gt(1e-10).all()
        runs = (ds.run_k.values == k) & (ds.run_n.values == n)
        assert rows.loc[rows.converged, "multiplicity"].sum() == ds.run_converged.values[runs].sum()
        # the per-run losses recount the global rows (converged or not)
        conv = ds.run_converged.values[runs]
        loss = ds.run_loss.values[runs]
        assert rows.loc[rows["global"] & rows.converged, "multiplicity"].sum() == \
            np.sum(conv & (loss <= 1e-10))
        assert rows.loc[rows["global"], "multiplicity"].sum() == np.sum(loss <= 1e-10)
        # a run stopped by the loss threshold is at a global minimum, not converged
        by_loss = ds.run_stop.values[runs] == "loss"
        assert np.all(loss[by_loss] < 1e-10) and not np.any(conv[by_loss])
    # the fractions the claim reports, recounted from census.csv
    fraction = {c["id"]: c for c in json.loads((folder / "claims.json").read_text())}
    measured = fraction["spurious-fraction-grows"]["measured"]
    own = census[census.k == census.n]
    for k, rows in own.groupby("k"):
        decided = rows.loc[rows.converged | rows["global"], "multiplicity"].sum()
        spur = rows.loc[rows.converged & ~rows["global"], "multiplicity"].sum()
        if decided:
            assert measured[str(k)][0] == pytest.approx(spur / decided, abs=1e-4)
    assert {c.id for c in claims} >= {"spurious-fraction-grows", "spurious-are-strict-minima",
                                      "overparameterization-helps", "census-recount"}
    assert (folder / "spurious_fraction.png").is_file() and (folder / "census.png").is_file()
    again, _ = rejudge("safran-minima", folder, tmp_path / "again", show_progress=False)
    assert (again / "census.csv").read_text() == (folder / "census.csv").read_text()


@pytest.mark.parametrize(("setting", "field"), [("k_values=[1, 3]", "k_values"),
                                                ("k_values=[41]", "k_values"),
                                                ("runs=0", "runs"),
                                                ("extra_values=[-1]", "extra_values"),
                                                ("stop_loss=1e-10", "stop_loss"),
                                                ("stop_loss=-1.0", "stop_loss")])
def test_bad_parameters_are_one_error_line(tmp_path, setting, field):
    result = CliRunner().invoke(app, ["reproduce", "safran-minima", "--out",
                                      str(tmp_path / "out"), "--set", setting])
    errors = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1 and field in errors[0], result.output
    assert not (tmp_path / "out").exists()


def test_work_shares_weigh_steps_by_the_step_cost():
    """work_shares against a hand count: steps x n (n + k) k per (k, n), the budget's steps apart."""
    from shallowflow.reproductions.safran.minima import work_shares

    ds = xr.Dataset({"run_k": ("run", [2, 2, 3]), "run_n": ("run", [2, 3, 3]),
                     "run_steps": ("run", [100, 50, 10])})
    g = work_shares(ds, budget=50)
    work = {(2, 2): 100 * 2 * 4 * 2, (2, 3): 50 * 3 * 5 * 2, (3, 3): 10 * 3 * 6 * 3}
    total = sum(work.values())
    got = {(int(r.k), int(r.n)): r.share for r in g.itertuples()}
    assert got == pytest.approx({key: w / total for key, w in work.items()})
    assert list(g["share"]) == sorted(g["share"], reverse=True)
    assert dict(zip(zip(g.k, g.n, strict=True), g.at_budget, strict=True)) == \
        {(2, 2): 100, (2, 3): 50, (3, 3): 0}


def _ends(eig0, eig1, conv1):
    """Synthetic global end points: eig_min values at n = k and at n = k + 1 (k = 5)."""
    eig = [*eig0, *eig1]
    n = [5] * len(eig0) + [6] * len(eig1)
    return xr.Dataset({"run_k": ("run", [5] * len(eig)), "run_n": ("run", n),
                       "run_global": ("run", [True] * len(eig)),
                       "run_converged": ("run", [True] * len(eig0) + list(conv1)),
                       "run_eig_min": ("run", eig), "run_eig_max": ("run", [1.0] * len(eig))})


@pytest.mark.parametrize(("eig0", "eig1", "conv1", "verdict"), [
    ([0.09, 0.09], [1e-12, 5e-9], [True, True], "reproduced"),      # singular at the minima
    ([0.09], [1e-4, -3e-3], [False, False], "reproduced"),          # negative curvature nearby
    ([0.09], [1e-4, 2e-4], [False, False], "not reproduced"),       # strictly convex everywhere
    ([-1e-3], [1e-12], [True], "not reproduced"),                   # n = k not strongly convex
    ([0.09], [1e-4, 1e-9], [False, False], "inconclusive"),         # neither reading
    ([0.09], [], [], "inconclusive"),                               # no end point at n = k + 1
])
def test_the_convexity_rule(eig0, eig1, conv1, verdict):
    """global-minima-convexity's rule (docs/claims/safran.md), tol = 1e-7 here."""
    from shallowflow.reproductions.safran.minima import _convexity_claim

    assert _convexity_claim(_ends(eig0, eig1, conv1)).verdict == verdict
