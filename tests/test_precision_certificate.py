"""The precision certificate (docs/math.md §8.13): a float32 batch reruns its first k runs in
float64; their distances are those of an independent float64 run of the same experiment."""

from __future__ import annotations

import numpy as np
import pytest

from shallowflow.config import experiment_from_mapping
from shallowflow.training.certificates import CERTIFIED_PROBES, precision_verdict
from shallowflow.training.entry import simulate

SPEC = {"name": "p", "seed": 3, "runs": 4,
        "data": {"kind": "sphere", "n": 12, "d": 5},
        "model": {"width": 6}, "init": {"scheme": "gaussian", "scale": 0.5},
        "train": {"lr": 0.05, "steps": 400},
        "record": {"points": 9, "probes": ["loss", "neuron_norm", "a", "pl_curvature"]}}


def with_train(**train) -> dict:
    return {**SPEC, "train": {**SPEC["train"], **train}}


def test_distances_are_those_of_an_independent_float64_run():
    f32 = simulate(experiment_from_mapping(with_train(dtype="float32", precision_certificate=2)))
    f64 = simulate(experiment_from_mapping(SPEC))  # the same runs, trained in float64
    assert f32["loss"].dtype == np.float32 and f64["loss"].dtype == np.float64
    probes = [name for name in CERTIFIED_PROBES if name in f64]
    assert list(f32.certified_probe.values) == probes  # the PL curvature (discontinuous) takes no part
    for r in range(2):
        rel = {}
        for name in probes:
            a = f32[name].values[r].astype(np.float64)
            b = f64[name].values[r]
            rel[name] = np.max(np.abs(a - b)) / np.max(np.abs(b))
            np.testing.assert_allclose(f32.precision_rel_by_probe.values[r, probes.index(name)],
                                       rel[name], rtol=1e-12)
        np.testing.assert_allclose(f32.precision_rel.values[r], max(rel.values()), rtol=1e-12)
        assert 0 < f32.precision_rel.values[r] < 1e-4  # float32 rounding: visible and small
    assert np.isnan(f32.precision_rel.values[2:]).all()  # not rerun
    assert np.isnan(f32.precision_abs.values[2:]).all()


def test_every_batch_reruns_its_first_runs_and_the_verdict_reads_them_all():
    exp = experiment_from_mapping(with_train(dtype="float32", precision_certificate=1))
    from shallowflow.training.entry import train

    ds = train(exp, max_batch=2, show_progress=False)[0]  # two batches of 2 runs
    assert list(np.isfinite(ds.precision_rel.values)) == [True, False, True, False]
    worst = float(np.nanmax(ds.precision_rel.values))
    assert precision_verdict(ds.precision_rel.values, None).endswith(f"{worst:.3g}")
    assert "2 of 4" in precision_verdict(ds.precision_rel.values, None)
    assert precision_verdict(ds.precision_rel.values, worst * 2).endswith("PASS")
    assert precision_verdict(ds.precision_rel.values, worst / 2).endswith("FAIL")


def test_float64_runs_cannot_ask_for_it():
    with pytest.raises(ValueError, match="precision_certificate"):
        experiment_from_mapping(with_train(precision_certificate=1))


def test_a_reproduction_in_certified_float32_says_so_and_agrees_with_float64(tmp_path):
    """reproduce --dtype float32 --precision-certificate 1: every batch in float32, its first run
    again in float64; the report and params.json state the precision and the verdict, and the
    claims come out as in float64."""
    import json

    from shallowflow.reproductions import run_reproduction
    from shallowflow.training.certificates import Precision

    over = ["steps=1500", "runs=2", "widths=[20]", "points=10"]
    _, c64 = run_reproduction("bf-init", tmp_path / "f64", "quick", over, show_progress=False)
    _, c32 = run_reproduction("bf-init", tmp_path / "f32", "quick", over, show_progress=False,
                              precision=Precision("float32", 1, 1e-3))
    assert "Precision: float64 (the default)." in (tmp_path / "f64" / "report.md").read_text()
    line = next(ln for ln in (tmp_path / "f32" / "report.md").read_text().splitlines()
                if ln.startswith("Precision:"))
    assert line.startswith("Precision: float32; precision certificate:") and line.endswith("PASS.")
    saved = json.loads((tmp_path / "f32" / "params.json").read_text())
    assert saved["precision"] == line.removeprefix("Precision: ")
    assert [(c.id, c.verdict, c.measured) for c in c32] == [(c.id, c.verdict, c.measured)
                                                             for c in c64]


@pytest.mark.parametrize(("args", "fragment"), [
    (["--dtype", "float16"], "--dtype"),
    (["--precision-certificate", "2"], "--precision-certificate"),
    (["--dtype", "float32", "--precision-certificate", "-1"], "--precision-certificate"),
    (["--dtype", "float32", "--precision-certificate-tol", "0.1"], "--precision-certificate-tol"),
    # the old spellings name the same options
    (["--certify-precision", "2"], "--precision-certificate"),
    (["--dtype", "float32", "--certify-precision-tol", "0.1"], "--precision-certificate-tol"),
])
def test_reproduce_refuses_bad_precision_options(tmp_path, args, fragment):
    from typer.testing import CliRunner

    from shallowflow.cli.commands import app

    result = CliRunner().invoke(app, ["reproduce", "dana-fig2", "--out", str(tmp_path / "r"),
                                      *args])
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and "Traceback" not in text and fragment in text, text
    assert not (tmp_path / "r").exists()


def test_run_prints_the_precision_verdict(tmp_path):
    from typer.testing import CliRunner

    from shallowflow.cli.commands import app

    cfg = tmp_path / "f32.toml"
    cfg.write_text('name = "f32"\nruns = 3\n[data]\nkind = "sphere"\nn = 8\nd = 3\n'
                   '[model]\nwidth = 4\n[init]\nscheme = "gaussian"\nscale = 0.5\n'
                   '[train]\nlr = 0.05\nsteps = 50\ndtype = "float32"\nprecision_certificate = 2\n'
                   'precision_certificate_tol = 0.01\n')
    result = CliRunner().invoke(app, ["run", str(cfg), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    line = next(ln for ln in result.output.splitlines() if "precision certificate" in ln)
    assert "2 of 3 float32 runs rerun in float64" in line and line.endswith("PASS")


def test_a_batch_of_several_experiments_reruns_each_run_as_its_own():
    """Runs of experiments that differ in seed share a batch; each sampled run is rerun from
    its own experiment (another seed's run would be far from it)."""
    from shallowflow.training.entry import train

    exps = [experiment_from_mapping({**with_train(dtype="float32", precision_certificate=2),
                                     "seed": seed, "runs": 1}) for seed in (3, 4)]
    a, b = train(exps, show_progress=False)
    assert a.precision_rel.values[0] < 1e-4 and b.precision_rel.values[0] < 1e-4


@pytest.mark.parametrize("per_run", [False, True])
def test_the_rerun_reuses_the_batch_s_own_draws(per_run):
    """A certified float32 batch keeps its first k runs' data and initial networks as drawn
    (float64, before the cast); the float64 rerun prepared from them equals the rerun drawn
    anew, array for array, and the float32 batch trained their cast."""
    from shallowflow.training.batches import RunRef, prepare_batch

    data = {**SPEC["data"], "per_run": per_run}
    exp32 = experiment_from_mapping({**with_train(dtype="float32", precision_certificate=2),
                                     "data": data})
    exp64 = experiment_from_mapping({**SPEC, "data": data})
    batch = prepare_batch([RunRef(exp32, r) for r in range(4)])
    assert batch.drawn is not None and batch.drawn.net0.W.shape[0] == 2
    assert batch.drawn.X.dtype == np.float64 and batch.drawn.X.ndim == (3 if per_run else 2)
    refs = [RunRef(exp64, r) for r in range(2)]
    fresh, reused = prepare_batch(refs), prepare_batch(refs, batch.drawn)
    assert reused.drawn is None  # a float64 batch keeps nothing
    for name in ("X", "y", "stop_loss", "stop_grad", "schedule", "keys"):
        np.testing.assert_array_equal(np.asarray(getattr(reused, name)),
                                      np.asarray(getattr(fresh, name)), err_msg=name)
    np.testing.assert_array_equal(reused.net0.a, fresh.net0.a)
    np.testing.assert_array_equal(reused.net0.W, fresh.net0.W)
    assert reused.config == fresh.config and reused.dtype == "float64"
    np.testing.assert_array_equal(batch.X[:2] if per_run else batch.X,
                                  reused.X.astype(np.float32))
    np.testing.assert_array_equal(batch.net0.W[:2], reused.net0.W.astype(np.float32))


def test_a_certified_batch_draws_once(monkeypatch):
    """Training a certified float32 batch draws its data and networks once: the float64 rerun
    takes the batch's own draws."""
    from shallowflow.training import batches as experiment

    calls = []
    draw = experiment._draw
    monkeypatch.setattr(experiment, "_draw", lambda *a: calls.append(1) or draw(*a))
    ds = simulate(experiment_from_mapping(with_train(dtype="float32", precision_certificate=2)))
    assert np.isfinite(ds.precision_rel.values[:2]).all()
    assert len(calls) == 1


def test_the_float64_rerun_trains_beside_the_batch(monkeypatch):
    """The precision certificate's reference (the first k runs in float64) depends on the batch
    alone, so it trains in a thread of its own while the float32 batch trains: it starts before
    the batch's own training has ended, and its distances are those of a rerun after it."""
    import threading
    import time

    from shallowflow.training import batch_run as experiment

    spans: list[tuple[str, str, float, float]] = []
    real = experiment._run_engine

    def timed(batch, *args, **kw):
        t0 = time.perf_counter()
        out = real(batch, *args, **kw)
        spans.append((batch.dtype, threading.current_thread().name, t0, time.perf_counter()))
        return out

    monkeypatch.setattr(experiment, "_run_engine", timed)
    ds = simulate(experiment_from_mapping(with_train(dtype="float32", precision_certificate=2)))
    (main,) = [s for s in spans if s[0] == "float32"]
    (rerun,) = [s for s in spans if s[0] == "float64"]
    assert rerun[1] != main[1] and rerun[1].startswith("shallowflow-certificate")
    assert rerun[2] < main[3]  # started before the batch finished
    f64 = simulate(experiment_from_mapping(SPEC))  # the same runs, trained after, in float64
    for r in range(2):
        a = ds["loss"].values[r].astype(np.float64)
        b = f64["loss"].values[r]
        rel = np.max(np.abs(a - b)) / np.max(np.abs(b))
        assert rel <= ds.precision_rel.values[r] * (1 + 1e-12)


def test_a_failing_batch_stops_the_rerun_beside_it(monkeypatch):
    """When the float32 batch fails (or is interrupted), the float64 rerun beside it stops at
    its next segment instead of training to its end, and the batch's error is what the caller
    gets."""
    import threading

    from shallowflow.training import batch_run as experiment

    real = experiment._run_engine
    segments: list[int] = []
    rerun_started, outcome = threading.Event(), []

    def engine(batch, level=0, progress=None, cancel=None):
        if batch.dtype == "float32":
            assert rerun_started.wait(60)
            raise RuntimeError("the batch failed")

        def counted(done, total):
            segments.append(done)
            rerun_started.set()
            progress(done, total)

        try:
            return real(batch, level, counted, cancel)
        except BaseException as err:
            outcome.append(err)
            raise

    monkeypatch.setattr(experiment, "_run_engine", engine)
    exp = experiment_from_mapping({**with_train(dtype="float32", precision_certificate=1),
                                   "record": {"points": 400, "probes": ["loss"]},
                                   "train": {**SPEC["train"], "steps": 20000,
                                             "dtype": "float32", "precision_certificate": 1}})
    batch = experiment.prepare_batch([experiment.RunRef(exp, r) for r in range(2)])
    with pytest.raises(RuntimeError, match="the batch failed"):
        experiment.run_batch(batch)
    assert outcome and type(outcome[0]).__name__ == "Cancelled"
    assert segments and max(segments) < 20000  # stopped before its end


@pytest.mark.parametrize("layout", ["shared", "per_run", "run"])
def test_float32_products_are_full_float32(layout):
    """Every product of a float32 step asks for float32 operands: JAX's default precision is TF32
    on NVIDIA GPUs since Ampere (docs/math.md §8.13). The lowered program names each product's
    precision on any device, so this is checked here on the CPU too."""
    import jax
    import jax.numpy as jnp

    from shallowflow.model.activations import RELU
    from shallowflow.model.inputs import PerRunInputs, RunInputs, SharedInputs
    from shallowflow.model.losses import Loss
    from shallowflow.model.network import batch_loss_and_gradient

    runs, n, d, p = (1 if layout == "run" else 3), 50, 40, 6  # d > inputs.SMALL: real products
    rng = np.random.default_rng(0)
    X = rng.normal(size=(runs, n, d)).astype(np.float32)
    inputs = {"shared": lambda: SharedInputs.of(X[0]),
              "per_run": lambda: PerRunInputs(jnp.asarray(X)),
              "run": lambda: RunInputs(jnp.asarray(X[0]), jnp.asarray(X[0].T.copy()))}[layout]()
    y = jnp.asarray(rng.normal(size=(n,) if layout == "shared" else (runs, n)).astype(np.float32))
    a = jnp.asarray(rng.normal(size=(runs, p)).astype(np.float32))
    Wt = jnp.asarray(rng.normal(size=(d, runs, p)).astype(np.float32))

    def step(a, Wt):
        bg = batch_loss_and_gradient(a, Wt, inputs, y, 1.0 / p, RELU, Loss("square", "mean"))
        return bg.loss, bg.grad_Wt

    text = jax.jit(step).lower(a, Wt).as_text()
    products = [line for line in text.splitlines() if "dot_general" in line]
    assert len(products) >= 2  # the forward product and the back-projection
    assert all("precision = [HIGHEST, HIGHEST]" in line for line in products), products


def test_a_caller_that_stops_stops_the_certificate_reruns():
    """The caller's cancellation (the local executor stopping) reaches the reruns after the
    batch: the step-size certificate's reruns at lr/2 and lr/4 stop at their first segment
    instead of training to their end."""
    from shallowflow.errors import Cancelled
    from shallowflow.runtime.cancel import CancelToken
    from shallowflow.training import batch_run as experiment

    calls: list[tuple[int, int]] = []
    cancel = CancelToken()

    def progress(done, total):
        calls.append((done, total))
        if len(calls) > 1 and calls[-2] == (total, total):  # called again after the batch's end
            cancel.cancel()

    exp = experiment_from_mapping({**SPEC, "train": {**SPEC["train"], "steps": 20000,
                                                     "step_certificate": 2}})
    batch = experiment.prepare_batch([experiment.RunRef(exp, r) for r in range(2)])
    with pytest.raises(Cancelled):
        experiment.run_batch(batch, progress, cancel)
    assert calls[-1] == calls[-2] == (20000, 20000)  # the bar kept the batch's position
