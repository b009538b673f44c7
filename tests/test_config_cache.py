"""An experiment's automatic engine choices and batch signature are computed once, however many
runs and batches read them; copies with other fields compute their own."""

from __future__ import annotations

import collections

import pytest

from shallowflow.config import experiment_from_mapping, spec
from shallowflow.training.entry import train


def tiny(seed: int, scale: float = 0.1):
    return experiment_from_mapping({
        "runs": 4, "seed": seed, "data": {"kind": "orthogonal", "n": 3, "d": 4},
        "model": {"width": 2}, "init": {"scheme": "balanced", "scale": scale},
        "train": {"lr": 0.1, "steps": 3}, "record": {"points": 2}})


@pytest.fixture
def counts(monkeypatch):
    """Calls of the resolving and signing functions, per experiment (by id)."""
    calls: collections.Counter[tuple[str, int]] = collections.Counter()
    for name in ("resolve_choices", "batch_signature"):
        original = getattr(spec, name)

        def counted(exp, name=name, original=original):
            calls[name, id(exp)] += 1
            return original(exp)

        monkeypatch.setattr(spec, name, counted)
    return calls


def test_choices_and_signature_computed_once_per_experiment(counts):
    exps = [tiny(0), tiny(1)]
    dss = train(exps, show_progress=False, max_batch=3)  # 8 runs, one signature, 3 batches
    assert [ds.sizes["run"] for ds in dss] == [4, 4]
    assert counts == {(name, id(e)): 1 for name in ("resolve_choices", "batch_signature")
                      for e in exps}


def test_a_copy_with_other_fields_resolves_its_own_choices(counts):
    """lambda^2 = 1e-60 is a normal float64 but below the float32 range: the float32 copy of an
    experiment whose choices are cached chooses the log-norm parametrisation."""
    exp = tiny(0, scale=1e-30)
    assert exp.choices.parametrisation == "plain" and exp.signature
    low = exp.with_train(dtype="float32")
    assert low.choices.parametrisation == "lognorm" and low.signature != exp.signature
    assert counts[("resolve_choices", id(low))] == 1
    assert exp == tiny(0, scale=1e-30) and exp.signature == tiny(0, scale=1e-30).signature
