"""Why a run ended and what it ended at (docs/math.md §0.3, §9): the stop reasons (loss,
gradient, steps, wall-clock time, diverged) against a plain numpy gradient and an uninterrupted
run, ``train.polish`` / ``train.end_state`` against numpy losses and distances,
``shallowflow certify RUN_DIR`` and the sweep summary's columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from typer.testing import CliRunner

from shallowflow.cli.commands import app
from shallowflow.config import Experiment
from shallowflow.sweep import run_sweep, sweep_from_mapping
from shallowflow.training.entry import train

BASE = {"data": {"kind": "sphere", "n": 6, "d": 3}, "model": {"width": 8},
        "init": {"scheme": "dpb"}, "runs": 3}


def experiment(record: dict | None = None, **train_fields) -> Experiment:
    spec = {**BASE, "train": {"lr": 0.1, **train_fields},
            "record": record or {"every": 50, "snapshots": True}}
    return Experiment.model_validate(spec)


def np_gradient_norm(a, W, X, y):
    """||grad L||_2 of L = 1/(2n) sum (h - y)^2, h = sum_j a_j relu(<w_j, x>), in plain numpy."""
    Z = X @ W.T
    r = np.maximum(Z, 0.0) @ a - y
    g_a = np.maximum(Z, 0.0).T @ r / len(y)
    g_W = ((Z > 0) * r[:, None] * a[None, :]).T @ X / len(y)
    return float(np.sqrt(np.sum(g_a**2) + np.sum(g_W**2)))


def np_loss(a, W, X, y):
    return float(np.sum((np.maximum(X @ W.T, 0.0) @ a - y) ** 2) / (2 * len(y)))


@pytest.fixture(scope="module")
def free_runs():
    (ds,) = train(experiment(steps=3000), show_progress=False, keep_data=True)
    return ds


def test_gradient_stop_at_the_first_record_below_the_threshold(free_runs):
    tol = 1e-3
    (ds,) = train(experiment(steps=3000, stop_grad=tol), show_progress=False, keep_data=True)
    X, y = ds["X"].values, ds["y"].values
    free = free_runs
    for r in range(ds.sizes["run"]):
        norms = [np_gradient_norm(free["a"].values[r, t], free["W"].values[r, t], X, y)
                 for t in range(free.sizes["time"])]
        below = [t for t in range(1, len(norms)) if norms[t] < tol]  # tested after step 0
        assert below, "the free run must cross the threshold for this test to mean anything"
        first = below[0]
        assert str(ds["stop_reason"].values[r]) == "gradient"
        assert int(ds["end_step"].values[r]) == int(free["step"].values[first])
        # identical to the free run up to there, frozen afterwards
        np.testing.assert_array_equal(ds["loss"].values[r, : first + 1],
                                      free["loss"].values[r, : first + 1])
        assert np.all(ds["loss"].values[r, first:] == ds["loss"].values[r, first])
        assert np_gradient_norm(ds["a_final"].values[r], ds["W_final"].values[r], X, y) < tol


def test_wall_clock_budget_ends_runs_with_their_results_so_far(free_runs):
    """A budget that has run out after the first compiled segment (1e-9 s): every run ends
    "time" at that segment's last record, equal to the free run up to there."""
    (ds,) = train(experiment(steps=3000, max_seconds=1e-9), show_progress=False)
    end = int(ds["end_step"].values[0])
    assert set(ds["stop_reason"].values.tolist()) == {"time"}
    assert np.all(ds["end_step"].values == end) and 0 < end < 3000
    t = int(np.flatnonzero(ds["step"].values == end)[0])
    np.testing.assert_array_equal(ds["loss"].values[:, : t + 1], free_runs["loss"].values[:, : t + 1])
    assert np.all(ds["loss"].values[:, t:] == ds["loss"].values[:, t : t + 1])
    assert not ds["stopped"].values.any() and not ds["diverged"].values.any()


def test_cli_run_stopped_by_its_budget_writes_results_and_says_so(tmp_path):
    cfg = tmp_path / "exp.toml"
    cfg.write_text('runs = 2\n[data]\nkind = "sphere"\nn = 6\nd = 3\n[model]\nwidth = 4\n'
                   '[init]\nscheme = "dpb"\n[train]\nlr = 0.1\nsteps = 100000\n'
                   'max_seconds = 1e-9\n')
    result = CliRunner().invoke(app, ["run", str(cfg), "--out", str(tmp_path / "run"),
                                      "--quiet"])
    assert result.exit_code == 0, result.output
    assert "ended by time 2" in result.stdout
    saved = xr.open_dataset(tmp_path / "run" / "results.nc")
    assert saved["stop_reason"].values.tolist() == ["time", "time"]
    assert 0 < int(saved["end_step"].values[0]) < 100000


def test_loss_steps_and_divergence_reasons():
    (ds,) = train(experiment(steps=400, stop_loss=0.5, record={"every": 20}),
                  show_progress=False)
    for r in range(ds.sizes["run"]):
        loss = ds["loss"].values[r]
        if str(ds["stop_reason"].values[r]) == "loss":
            assert ds["stopped"].values[r]
            assert int(ds["end_step"].values[r]) == int(ds["stop_step"].values[r])
            assert loss[-1] < 0.5
        else:
            assert str(ds["stop_reason"].values[r]) == "steps" and loss[-1] >= 0.5
            assert int(ds["end_step"].values[r]) == 400
    (blown,) = train(experiment(steps=200, lr=1e3, record={"every": 10}), show_progress=False)
    assert set(blown["stop_reason"].values.tolist()) == {"diverged"}
    np.testing.assert_array_equal(blown["end_step"].values, blown["diverge_step"].values)


def test_train_polish_and_end_state_against_numpy():
    """Over-parametrised (8 neurons, 6 points): Newton polishes the end points to interpolating
    ones; the verdict, the polished loss and the distance moved are checked in numpy."""
    (ds,) = train(experiment(steps=3000, polish="newton", end_state=True,
                             record={"points": 10}), show_progress=False, keep_data=True)
    X, y = ds["X"].values, ds["y"].values
    labels = ds["end_label"].values.tolist()
    assert set(labels) <= {"global minimum", "strict local minimum", "saddle", "degenerate",
                           "not stationary"}
    for r in range(ds.sizes["run"]):
        a, W = ds["a_polished"].values[r], ds["W_polished"].values[r]
        moved = np.sqrt(np.sum((a - ds["a_final"].values[r]) ** 2)
                        + np.sum((W - ds["W_final"].values[r]) ** 2))
        assert ds["end_polish_distance"].values[r] == pytest.approx(moved, rel=1e-9, abs=1e-15)
        assert ds["end_loss"].values[r] == pytest.approx(np_loss(a, W, X, y), rel=1e-9,
                                                          abs=1e-25)
        if labels[r] == "global minimum":
            assert np_loss(a, W, X, y) <= 1e-10
        if labels[r] == "not stationary":
            assert np_gradient_norm(a, W, X, y) > 1e-8
    assert "global minimum" in labels


def test_certify_command_writes_a_table_beside_the_results(tmp_path):
    cfg = tmp_path / "exp.toml"
    cfg.write_text('runs = 2\n[data]\nkind = "sphere"\nn = 6\nd = 3\n[model]\nwidth = 8\n'
                   '[init]\nscheme = "dpb"\n[train]\nlr = 0.1\nsteps = 2000\n')
    run = tmp_path / "run"
    runner = CliRunner()
    assert runner.invoke(app, ["run", str(cfg), "--out", str(run), "--quiet"]).exit_code == 0
    result = runner.invoke(app, ["certify", str(run), "--polish", "newton"])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(run / "end_state.csv")
    end = xr.open_dataset(run / "end_state.nc")
    assert table["run"].tolist() == [0, 1]
    assert table["label"].tolist() == end["end_label"].values.tolist()
    assert table["stop_reason"].tolist() == ["steps", "steps"]
    data = xr.open_dataset(run / "data.nc")
    for r in range(2):
        assert table["loss"][r] == pytest.approx(
            np_loss(end["a_polished"].values[r], end["W_polished"].values[r], data["X"].values,
                    data["y"].values), rel=1e-9, abs=1e-25)
        assert table["label"][r] in result.stdout
    before = (run / "end_state.csv").read_bytes()
    again = runner.invoke(app, ["certify", str(run)])
    assert again.exit_code == 2 and "--overwrite" in again.stderr
    assert (run / "end_state.csv").read_bytes() == before


def test_sweep_summary_holds_stop_reasons_and_verdicts(tmp_path):
    base = experiment(steps=2000, end_state=True, stop_grad=1e-6, record={"points": 10})
    sweep = sweep_from_mapping({"name": "sw", "base": base.model_dump(mode="json"),
                                "grid": {"model.width": [4, 8]}}, tmp_path)
    table = run_sweep(sweep, tmp_path / "sw", show_progress=False)
    assert {"stop_reason", "end_step", "label", "grad_norm", "eig_min"} <= set(table.columns)
    batches = [xr.open_dataset(p) for p in sorted((tmp_path / "sw" / "batches").glob("*.nc"))]
    labels = sorted(lab for b in batches for lab in b["end_label"].values.tolist())
    assert sorted(table["label"]) == labels
    assert set(table["stop_reason"]) <= {"gradient", "steps"}


def test_a_dataset_without_data_is_refused_naming_what_to_do():
    """A population run's Dataset holds no samples: the verdict says how to judge it instead of
    failing on a missing variable."""
    import xarray as xr

    from shallowflow.stationary.verdict import end_states

    with pytest.raises(ValueError, match=r"^X: the Dataset holds no data.*train.end_state"):
        end_states(xr.Dataset({"loss": ("run", [0.0])}))
