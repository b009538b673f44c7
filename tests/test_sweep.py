"""Sweeps: batching by shape, atomic batch files, resume after an interruption."""

from __future__ import annotations

import pandas as pd
import pytest

from shallowflow.config import ConfigError
from shallowflow.sweep import load_batches, plan, run_sweep, sweep_from_mapping

BASE = {
    "runs": 2,
    "data": {"kind": "orthonormal", "n": 6, "d": 6},
    "model": {"width": 3},
    "init": {"scheme": "balanced", "scale": 0.1},
    "train": {"lr": 0.1, "steps": 30},
    "record": {"every": 10, "points": 0},
}
SWEEP = {"name": "t", "base": BASE, "max_batch": 3,
         "grid": {"model.width": [3, 5], "init.scale": [0.1, 0.01]}}


class Interrupt(Exception):
    pass


def test_plan_groups_equal_shapes():
    sw = sweep_from_mapping(SWEEP)
    batches = plan(sw)
    # 4 points x 2 runs; widths differ in shape -> 2 groups of 4 runs, cut at max_batch = 3
    assert [b.size for b in batches] == [3, 1, 3, 1]
    assert len({b.id for b in batches}) == 4
    assert plan(sweep_from_mapping(SWEEP)) == batches  # deterministic


def test_resume_gives_exactly_the_uninterrupted_results(tmp_path):
    sw = sweep_from_mapping(SWEEP)
    full = run_sweep(sw, tmp_path / "full", show_progress=False)

    def stop_after_two(batch_id, count=[0]):  # noqa: B006
        count[0] += 1
        if count[0] == 2:
            raise Interrupt

    with pytest.raises(Interrupt):
        run_sweep(sw, tmp_path / "cut", show_progress=False, after_batch=stop_after_two)
    # the two batches before the interrupt are kept, and a batch in flight beside them if it
    # finished (executors.LocalExecutor), never all of them
    assert 2 <= len(list((tmp_path / "cut" / "batches").glob("*.nc"))) < len(plan(sw))
    with pytest.raises(ConfigError, match="--resume"):
        run_sweep(sw, tmp_path / "cut", show_progress=False)
    resumed = run_sweep(sw, tmp_path / "cut", resume=True, show_progress=False)
    assert len(resumed) == 8 and not resumed.duplicated(["point", "run_index"]).any()
    pd.testing.assert_frame_equal(full, resumed)
    for a, b in zip(load_batches(tmp_path / "full"), load_batches(tmp_path / "cut"), strict=True):
        assert a.identical(b)
    assert not list((tmp_path / "cut").rglob(".*tmp*"))  # nothing half-written


def test_summary_reuses_its_rows_and_reads_only_new_batch_files(tmp_path, monkeypatch):
    """A resume that finds everything done reads no batch file (the summary's rows are reused);
    a batch whose file is gone loses its rows; a batch written again after the summary is read
    again. The table always equals one built from every file (an independent rebuild: the
    summary deleted first)."""
    from shallowflow import sweep as sweep_module

    sw = sweep_from_mapping(SWEEP)
    out = tmp_path / "s"
    full = run_sweep(sw, out, show_progress=False)
    rebuilt = _rebuilt(out, monkeypatch)
    pd.testing.assert_frame_equal(full, rebuilt)
    read = []
    real = sweep_module._summary_part
    monkeypatch.setattr(sweep_module, "_summary_part", lambda path: read.append(path.stem)
                        or real(path))
    pd.testing.assert_frame_equal(run_sweep(sw, out, resume=True, show_progress=False), full)
    assert read == []
    batches = sorted((out / "batches").glob("*.nc"))
    gone = batches[1].stem
    batches[1].unlink()
    fewer = sweep_module.summarise(out)
    assert read == [] and gone not in set(fewer["batch"])
    pd.testing.assert_frame_equal(fewer, full[full["batch"] != gone].reset_index(drop=True))
    again = run_sweep(sw, out, resume=True, show_progress=False)
    assert read == [gone]
    pd.testing.assert_frame_equal(again, full)


def _rebuilt(out, monkeypatch):
    """The summary of ``out`` built from every batch file (no summary to reuse)."""
    from shallowflow import sweep as sweep_module

    keep = (out / "summary.parquet").read_bytes()
    (out / "summary.parquet").unlink()
    table = sweep_module.summarise(out)
    (out / "summary.parquet").write_bytes(keep)
    return table


def test_resume_refuses_a_changed_spec(tmp_path):
    run_sweep(sweep_from_mapping(SWEEP), tmp_path / "s", show_progress=False)
    changed = dict(SWEEP, grid={"model.width": [3, 7]})
    with pytest.raises(ConfigError, match="different spec"):
        run_sweep(sweep_from_mapping(changed), tmp_path / "s", resume=True, show_progress=False)


def test_bad_grid_point_is_named_before_work(tmp_path):
    bad = dict(SWEEP, grid={"model.width": [3, -1]})
    with pytest.raises(ConfigError,
                       match=r"model.width: .*\(got -1\) \[sweep grid point 1: \{'model.width': -1\}\]"):
        sweep_from_mapping(bad)


def test_sweep_rows_match_solo_runs(tmp_path):
    """A run inside a sweep batch gives the same numbers as the same run simulated alone."""
    from shallowflow.training.entry import simulate

    sw = sweep_from_mapping(SWEEP)
    table = run_sweep(sw, tmp_path / "s", show_progress=False)
    pt = sw.points[3]
    solo = simulate(pt.experiment, runs=[1])
    row = table[(table.point == 3) & (table.run_index == 1)].iloc[0]
    assert row.loss_final == pytest.approx(float(solo.loss.values[0, -1]), rel=1e-12)


def test_scales_needing_different_parametrisations_are_not_batched_together():
    """init.scale is batchable, but lambda = 1e-200 needs the log-norm parametrisation and 1e-3
    does not."""
    sw = sweep_from_mapping({"name": "s", "base": BASE, "grid": {"init.scale": [1e-3, 1e-200]}})
    batches = plan(sw)
    assert len(batches) == 2
    chosen = {b.refs[0].experiment.resolved()[0]["parametrisation"] for b in batches}
    assert chosen == {"plain", "lognorm"}
