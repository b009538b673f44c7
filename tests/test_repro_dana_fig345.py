"""dana-fig3/4/5 on tiny grids: folder contents, and the fitted thresholds against the raw
convergence flags (read back from the saved runs and checked with numpy here); a re-judged
folder gives the same claims."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import RecordingExecutor, check_reproduction_folder
from shallowflow.reproductions import catalogue, rejudge, run_reproduction
from shallowflow.reproductions.base import RESULTS, resolve_params
from shallowflow.reproductions.dana.convergence_grids import grid_part
from shallowflow.reproductions.dana.threshold import grid_threshold, read_scan
from shallowflow.store import read_netcdf


def crossing_bracket(n: np.ndarray, prob: np.ndarray, step: float) -> tuple[float, float]:
    """n range where the empirical probability (decreasing in n) passes 1/2, widened by a step."""
    above = n[prob >= 0.5]
    below = n[prob < 0.5]
    return float(above.min()) - step, float(below.max()) + step


def same_claims_when_rejudged(name, folder, tmp_path):
    """Judging the saved folder again gives the same claims.json, byte for byte."""
    again, _ = rejudge(name, folder, tmp_path / f"{name}-again")
    assert (again / "claims.json").read_text() == (folder / "claims.json").read_text()


def test_dana_fig3_tiny(tmp_path):
    folder, claims = run_reproduction(
        "dana-fig3", tmp_path / "f3", "quick",
        ["d=6", "n_min=15", "n_max=45", "n_step=10", "runs=6", "variant_runs=0"],
        show_progress=False)
    check_reproduction_folder(folder)
    saved = read_netcdf(folder / RESULTS)
    assert list(saved.grid.values) == ["gaussian_0"]  # no extension, no uniform variant
    runs = grid_part(saved, 0)
    n = runs.n.values
    # the recorded flags follow the rules: final loss below 1/(2n) for the code's rule
    np.testing.assert_array_equal(runs.converged_code.values,
                                  runs.final_loss.values < 1 / (2 * n[:, None]))
    assert np.all(runs.C_y_minus.values >= 1) and np.all(runs.C_y_minus.values <= 2)
    prob = runs.converged_text.mean("run").values
    claim = {c.id: c for c in claims}["transition_n"]
    if 0 < prob.min() and prob.max() > 0.5 > prob.min():
        lo, hi = crossing_bracket(n, prob, 6)
        assert lo <= claim.measured <= hi
    same_claims_when_rejudged("dana-fig3", folder, tmp_path)


@pytest.mark.parametrize("name,overrides,axis", [
    ("dana-fig4", ["d_values=[3, 6]", "p=10", "runs=4", "coarse_runs=3", "span=2.0",
                   "step=2.0"], "d"),
    ("dana-fig5", ["p_values=[6, 10]", "d=3", "runs=4", "coarse_runs=3", "span=2.0",
                   "step=2.0"], "p"),
])
def test_threshold_scan_tiny(tmp_path, name, overrides, axis):
    """dana-fig4 and dana-fig5 run the same code (threshold.ThresholdScan) along d and p."""
    folder, _ = run_reproduction(name, tmp_path / name, "quick", overrides,
                                 show_progress=False)
    check_reproduction_folder(folder)
    scan = read_scan(read_netcdf(folder / RESULTS), axis)
    assert scan.axis == axis and len(scan.grids) == 2
    for k, N in zip(scan.ok, scan.N, strict=True):
        grid = scan.grids[k]
        prob = grid.converged_text.mean("run").values
        step = float(np.diff(grid.n.values).max()) if grid.sizes["n"] > 1 else 1.0
        if prob.max() >= 0.5 > prob.min():
            lo, hi = crossing_bracket(grid.n.values, prob, step)
            assert lo <= N <= hi
        # the code's rule (L < 1/(2n)), the variant reported beside the text's, read from the
        # final losses saved in the grid
        code = (grid.final_loss < 1.0 / (2 * grid.n)).mean("run").values
        fit = grid_threshold(grid, "code")
        if code.max() >= 0.5 > code.min() and fit is not None:
            lo, hi = crossing_bracket(grid.n.values, code, step)
            assert lo <= fit.threshold <= hi
    same_claims_when_rejudged(name, folder, tmp_path)


def test_overrides_are_checked():
    rep = catalogue()["dana-fig3"]
    with pytest.raises(ValueError, match="not a parameter"):
        resolve_params(rep, "quick", ["dd=3"])
    with pytest.raises(ValueError, match="d: must be a number, not the text 'abc'"):
        resolve_params(rep, "quick", ["d=abc"])
    with pytest.raises(ValueError, match="preset"):
        resolve_params(rep, "huge", [])
    with pytest.raises(ValueError, match="n_max"):
        resolve_params(rep, "quick", ["n_max=10"])
    fig4 = catalogue()["dana-fig4"]
    assert resolve_params(fig4, "quick", ["span=1e1", "step=2"]).span == 10.0  # TOML: 1e1
    assert resolve_params(fig4, "quick", ["step=2"]).step == 2.0


def test_unknown_reproduction_leaves_no_folder(tmp_path):
    with pytest.raises(ValueError, match="unknown reproduction"):
        run_reproduction("dana-fig99", tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_thresholds_side_by_side_equal_one_by_one():
    """find_thresholds searches several (d, p) points side by side, each a chain whose steps
    go to the executor as soon as they are known: each point's grid is exactly what
    find_threshold gives it alone, and while the first point's coarse search runs, the other
    points' steps are already out (no round waits for the slowest point)."""
    import xarray as xr

    from shallowflow.reproductions.dana.threshold import find_threshold, find_thresholds
    from shallowflow.training.entry import trainer

    ex = RecordingExecutor()
    points = [(3, 8, 0), (4, 6, 20_000)]
    together = find_thresholds(points, 3, 2, 1.0, 2.0, trainer(False, ex))
    alone = [find_threshold(d, p, 3, 2, 1.0, 2.0, seed, trainer(False)) for d, p, seed in points]
    for a, b in zip(together, alone, strict=True):
        xr.testing.assert_identical(a, b)
    # the first coarse step of each point is out at once; the first point's next step is
    # out as soon as its first step is back, before the other points' first steps have run
    # (in rounds, nothing would be added until the third batch is back)
    assert ex.known[0] == len(points) and ex.known[1] > len(points)
    assert len(ex.known) == ex.known[-1]  # every known batch ran, once
