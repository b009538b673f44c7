"""Re-batching: runs that stop early leave the compiled batch; nothing else may change."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from shallowflow.data import orthogonal, sphere
from shallowflow.dynamics import (
    EngineConfig,
    EngineOptions,
    SaveAt,
    StopWhen,
    rebatch,
    record_schedule,
    solve,
)
from shallowflow.dynamics.state import RUNNING, STOPPED
from shallowflow.model.initialisation import dpb
from shallowflow.model.network import Network

compaction = rebatch.compaction

def nets(R: int, p: int, d: int, seed: int = 0) -> Network:
    keys = jax.random.split(jax.random.PRNGKey(seed), R)
    ns = [dpb(k, p, d) for k in keys]
    return Network(np.stack([n.a for n in ns]), np.stack([n.W for n in ns]))


def compare(a, b):
    for name in a.records:
        np.testing.assert_array_equal(a.records[name], b.records[name], err_msg=name)
    for name in a.status:
        np.testing.assert_array_equal(a.status[name], b.status[name], err_msg=name)
    np.testing.assert_array_equal(a.final.W, b.final.W)
    np.testing.assert_array_equal(a.final.a, b.final.a)


@pytest.mark.parametrize("layout", ["shared", "per_run", "diagonal", "diagonal_mask"])
def test_rebatching_changes_nothing(layout, monkeypatch):
    """Stop thresholds spread so that runs freeze at many different segments: the records,
    statuses and final parameters with re-batching equal those without, bit for bit."""
    R, n, d, p = 11, 12, 16, 6
    if layout == "shared":
        X, y = sphere(jax.random.PRNGKey(1), n, d)
    else:
        data = [orthogonal(jax.random.PRNGKey(10 + r), n, d) for r in range(R)]
        X = np.stack([np.asarray(x) for x, _ in data])
        y = np.stack([np.asarray(t) for _, t in data])
    net0 = nets(R, p, d)
    cfg = EngineConfig(lr=1.0, kappa=1 / p, time_scale=p, activity_mask=layout == "diagonal_mask",
                       probes=("loss", "pl_curvature", "neuron_norm", "a"))
    sched = record_schedule(600, every=10)
    span = layout.startswith("diagonal")
    # thresholds crossed at spread-out times (from a free run): runs freeze at many segments
    free = solve(cfg, net0, X, y, saveat=SaveAt(sched), options=EngineOptions(span=span)).records["loss"]
    at = np.linspace(3, len(sched) - 3, R - 2).astype(int)
    stop = np.array([free[r, k] * (1 + 1e-9) for r, k in enumerate(at)] + [-np.inf, -np.inf])
    sizes = []

    def counting(code, current, multiple, saving=np.inf):
        keep = compaction(code, current, multiple)  # always worth it here: exercise compaction
        if keep is not None:
            sizes.append(len(keep))
        return keep

    monkeypatch.setattr(rebatch, "compaction", counting)
    with_rb = solve(cfg, net0, X, y, saveat=SaveAt(sched), stop=StopWhen(loss=stop),
                       options=EngineOptions(span=span, records_per_call=4))
    without = solve(cfg, net0, X, y, saveat=SaveAt(sched), stop=StopWhen(loss=stop),
                       options=EngineOptions(span=span, records_per_call=4, rebatch=False))
    assert len(sizes) >= 1 and sizes[-1] < R, sizes  # the batch was compacted
    compare(with_rb, without)


def test_rebatching_keeps_diverged_runs_frozen():
    """A diverging run leaves the batch with its last finite parameters; the others go on."""
    R, n, d, p = 6, 10, 8, 5
    X, y = sphere(jax.random.PRNGKey(3), n, d)
    net0 = nets(R, p, d, seed=4)
    a = np.array(net0.a)
    a[:4] *= 1e3  # these runs blow up at lr = 0.1
    net0 = Network(a, net0.W)
    cfg = EngineConfig(lr=0.1, probes=("loss",))
    sched = record_schedule(300, every=5)
    out = solve(cfg, net0, X, y, saveat=SaveAt(sched), options=EngineOptions(records_per_call=2))
    ref = solve(cfg, net0, X, y, saveat=SaveAt(sched),
                   options=EngineOptions(records_per_call=2, rebatch=False))
    assert out.status["diverged"][:4].all() and not out.status["diverged"][4:].any()
    assert np.isfinite(out.final.W).all()
    compare(out, ref)


def test_compaction_never_keeps_the_whole_batch():
    """A compaction that would keep every run (the running ones padded up to the multiple fill
    the batch) is no compaction: None, so the driver moves nothing."""
    code = np.array([RUNNING, RUNNING, STOPPED, STOPPED])
    assert compaction(code, np.arange(4), 4) is None
    code8 = np.array([RUNNING] * 2 + [STOPPED] * 6)
    keep = compaction(code8, np.arange(8), 4)
    assert keep is not None and len(keep) == 4 and {0, 1} <= set(keep.tolist())
