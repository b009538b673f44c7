"""The one training entry point: grouping into batches, per-experiment results, explicit record
points, executors, and no import-time side effects."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import RecordingExecutor
from shallowflow.config import experiment_from_mapping
from shallowflow.runtime.executors import LocalExecutor, make_executor
from shallowflow.training.batches import RunRef
from shallowflow.training.entry import plan, train


def spec(seed: int = 0, scale: float = 0.1, width: int = 4, runs: int = 2, **record) -> dict:
    return {"name": f"t{seed}", "seed": seed, "runs": runs,
            "data": {"kind": "sphere", "n": 6, "d": 3},
            "model": {"width": width}, "init": {"scheme": "gaussian", "scale": scale},
            "train": {"lr": 0.05, "steps": 40},
            "record": {"points": 5, "probes": ["loss", "param_norm_sq"], **record}}


def test_plan_groups_by_signature_and_cuts_batches():
    a = experiment_from_mapping(spec(0))
    b = experiment_from_mapping(spec(1, scale=0.2))  # batchable difference: same batch
    c = experiment_from_mapping(spec(2, width=5))  # other shapes: other batch
    refs = [RunRef(e, r) for e in (a, b, c) for r in range(e.runs)]
    batches = plan(refs, max_batch=3)
    assert [bt.size for bt in batches] == [3, 1, 2]
    assert [r.experiment.model.width for bt in batches for r in bt.refs] == [4, 4, 4, 4, 5, 5]
    assert len({bt.id for bt in batches}) == 3
    assert [bt.id for bt in plan(refs, max_batch=3)] == [bt.id for bt in batches]  # deterministic
    with pytest.raises(ValueError, match="max_batch"):
        plan(refs, max_batch=0)


def test_train_returns_one_dataset_per_experiment_equal_to_solo_runs():
    a = experiment_from_mapping(spec(0))
    b = experiment_from_mapping(spec(1, scale=0.2, runs=3))
    together = train([a, b], show_progress=False, max_batch=2)  # b's runs split over batches
    solo_a, = train(a, show_progress=False)
    solo_b1, = train(b, runs=[1], show_progress=False)
    assert [ds.sizes["run"] for ds in together] == [2, 3]
    assert together[1].run.values.tolist() == [0, 1, 2]
    assert together[1].run_index.values.tolist() == [0, 1, 2]
    np.testing.assert_array_equal(together[0].loss.values, solo_a.loss.values)
    np.testing.assert_array_equal(together[1].loss.values[1], solo_b1.loss.values[0])


def test_explicit_record_steps_and_times_and_batch_union():
    a = experiment_from_mapping(spec(0, points=0, at_steps=[7, 100], at_times=[0.5]))
    b = experiment_from_mapping(spec(1, points=0, at_times=[1.0]))
    ds_a, = train(a, show_progress=False)
    # steps 0 and 40 always; 7 given; 100 past the end ignored; time 0.5 = step 10 (lr 0.05)
    assert ds_a.step.values.tolist() == [0, 7, 10, 40]
    np.testing.assert_allclose(ds_a.time.values, ds_a.step.values * 0.05)
    both = train([a, b], show_progress=False)  # one batch: the union of the schedules
    assert both[0].step.values.tolist() == [0, 7, 10, 20, 40]
    assert both[1].step.values.tolist() == [0, 7, 10, 20, 40]


def test_keep_data_attaches_the_training_data():
    exp = experiment_from_mapping(spec(0))
    ds, = train(exp, keep_data=True, show_progress=False)
    assert ds.X.dims == ("sample", "dim") and ds.X.shape == (6, 3)
    norms = np.linalg.norm(ds.X.values, axis=1)
    assert np.all((norms >= 1 - 1e-12) & (norms <= 2 + 1e-12))  # sphere data: radius in [1, 2]


def test_executor_seam_runs_every_batch_through_the_given_executor():
    calls = []

    class Recording(LocalExecutor):
        def run(self, task, batches, bar, describe):
            calls.append(len(batches))
            yield from super().run(task, batches, bar, describe)

    a = experiment_from_mapping(spec(0))
    c = experiment_from_mapping(spec(2, width=5))
    out = train([a, c], executor=Recording(), show_progress=False)
    assert calls == [2] and [ds.sizes["neuron"] for ds in out] == [4, 5]
    with pytest.raises(ValueError, match="executor"):
        make_executor("slurm")


def test_import_has_no_global_side_effects():
    code = ("import jax, matplotlib; before = matplotlib.get_backend();"
            "import shallowflow, shallowflow.training.entry, shallowflow.cli.commands;"
            "import shallowflow.reproductions;"
            "shallowflow.reproductions.catalogue();"
            "assert not jax.config.jax_enable_x64, 'x64 switched on at import';"
            "assert jax.config.jax_default_matmul_precision is None, 'precision set at import';"
            "assert matplotlib.get_backend() == before, 'backend changed at import'")
    env = {**os.environ, "MPLBACKEND": "svg"}  # not the Agg a stray matplotlib.use would pick
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_batch_store_keeps_finished_batches_and_reads_them_back(tmp_path, monkeypatch):
    """With a store every batch is written as <id>.nc; a second call reads them instead of
    training (training would raise here) and gives the same arrays as training without one."""
    from shallowflow.training import entry as training

    exps = [experiment_from_mapping(spec(0)), experiment_from_mapping(spec(2, width=5))]
    plain = train(exps, show_progress=False)
    first = train(exps, show_progress=False, store=tmp_path)
    refs = [RunRef(e, r) for e in exps for r in range(e.runs)]
    ids = {b.id for b in plan(refs, tags=[k for k, e in enumerate(exps) for _ in range(e.runs)])}
    assert {p.stem for p in tmp_path.glob("*.nc")} == ids

    def never(*args, **kwargs):
        raise AssertionError("a stored batch was trained again")

    monkeypatch.setattr(training, "train_batch", never)
    again = train(exps, show_progress=False, store=tmp_path)
    for p, f, a in zip(plain, first, again, strict=True):
        for name in ("loss", "param_norm_sq"):
            np.testing.assert_array_equal(p[name].values, f[name].values)
            np.testing.assert_array_equal(p[name].values, a[name].values)


def _chain(seed: int, steps: int, widths: tuple[int, ...] = (4,)):
    """A chain whose next step depends on its results: each step trains one experiment per
    width, the next step's init scale is the last final loss (rounded), and it returns the
    final losses of every step."""
    scale, finals = 0.1, []
    for s in range(steps):
        dss = yield [experiment_from_mapping(spec(seed + s, scale=scale, width=w))
                     for w in widths]
        finals.append([float(ds.loss.values[0, -1]) for ds in dss])
        scale = round(0.05 + finals[-1][0], 3)
    return finals


def _one_by_one(chain, **options):
    """A chain run alone, each step a call of :func:`train` (an independent driver)."""
    try:
        exps = next(chain)
        while True:
            exps = chain.send(train(exps, show_progress=False, **options))
    except StopIteration as end:
        return end.value


def test_chains_run_side_by_side_as_they_would_alone(tmp_path, monkeypatch):
    """train_chains gives each chain what it gets alone step by step through train; a
    chain's next step goes out as soon as its step is back (before the other chains'
    batches have run); with a store a second call trains nothing and returns the same."""
    from shallowflow.training import entry as training
    from shallowflow.training.entry import train_chains

    make = [lambda: _chain(0, 3), lambda: _chain(10, 1, (4, 5)), lambda: _chain(20, 2)]
    alone = [_one_by_one(m()) for m in make]
    ex = RecordingExecutor()
    together = train_chains([m() for m in make], show_progress=False, executor=ex,
                               store=tmp_path)
    assert together == alone
    # 4 first batches (widths 4 and 5 are two batches); after the first is back the first
    # chain's second step is out, so 5 are known when the second finishes
    assert ex.known[:2] == [4, 5]
    assert len(ex.known) == ex.known[-1] == 3 + 2 + 2  # every step's batches ran once

    def never(*args, **kwargs):
        raise AssertionError("a stored batch was trained again")

    monkeypatch.setattr(training, "train_batch", never)
    assert train_chains([m() for m in make], show_progress=False, store=tmp_path) == alone
