"""The teacher-student probes (docs/math.md §11.9): R = W Sigma V^T, Q = W Sigma W^T and the
cosines recorded in the compiled loop against numpy on the recorded weights; the distance to the
embedded teachers against a brute-force search over every matching written here, its invariance
under permutations of the neurons and its zero at a permuted teacher; the distance between two
networks up to permutation against brute force; a teacher probe on finite data refused in one
line."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from typer.testing import CliRunner

from shallowflow.analysis.assignment import permutation_distance
from shallowflow.cli.commands import app
from shallowflow.config import ConfigError, experiment_from_mapping
from shallowflow.dynamics.teacher_probes import teacher_distance_of

TEACHER_PROBES = ["overlap", "student_overlap", "overlap_cos", "teacher_distance"]


def brute_distance(a, W, b, V, kappa=1.0):
    """min over partial matchings of students to teachers (the definition, by enumeration)."""
    z = kappa * np.abs(a)[:, None] * W
    t = np.abs(b)[:, None] * V
    p, k = len(a), len(b)
    best = np.inf
    for m in range(min(p, k) + 1):
        for students in itertools.permutations(range(p), m):
            for teachers in itertools.combinations(range(k), m):
                total = sum(np.sum(z[j] ** 2) for j in range(p) if j not in students)
                total += sum(np.sum(t[q] ** 2) for q in range(k) if q not in teachers)
                for j, q in zip(students, teachers, strict=True):
                    if np.sign(a[j]) == np.sign(b[q]):
                        total += np.sum((z[j] - t[q]) ** 2)
                    else:
                        total += np.sum(z[j] ** 2) + np.sum(t[q] ** 2)
                best = min(best, total)
    return np.sqrt(best)


def test_teacher_distance_against_brute_force():
    rng = np.random.default_rng(3)
    for p, k in ((4, 2), (3, 3), (2, 3), (5, 3)):
        b = rng.choice([-1.0, 1.0], k) * rng.uniform(0.5, 2, k)
        V = rng.normal(size=(k, 4))
        a, W = rng.normal(size=(6, p)), rng.normal(size=(6, p, 4))
        got = teacher_distance_of(a, W, b, V, kappa=0.7)
        ref = [brute_distance(a[r], W[r], b, V, kappa=0.7) for r in range(6)]
        assert np.allclose(got, ref, rtol=1e-12)


def test_teacher_distance_zero_at_a_permuted_teacher_and_invariant():
    rng = np.random.default_rng(4)
    b, V = np.array([1.0, -2.0, 0.5]), rng.normal(size=(3, 5))
    c = np.array([0.3, 2.0, 1.7])  # the rescaling a -> b/c, w -> c v keeps the function
    a = np.concatenate([b / c, [0.0, 0.0]])
    W = np.concatenate([c[:, None] * V, rng.normal(size=(2, 5))])  # silent: a_j = 0
    perm = rng.permutation(5)
    assert teacher_distance_of(a[perm], W[perm], b, V) == pytest.approx(0.0, abs=1e-12)
    a2, W2 = rng.normal(size=5), rng.normal(size=(5, 5))
    d = teacher_distance_of(a2, W2, b, V)
    assert d > 0
    assert teacher_distance_of(a2[perm], W2[perm], b, V) == pytest.approx(d, rel=1e-13)
    # and under the rescaling symmetry of each neuron
    s = rng.uniform(0.2, 5, 5)
    assert teacher_distance_of(a2 / s, W2 * s[:, None], b, V) == pytest.approx(d, rel=1e-12)


def test_permutation_distance_against_brute_force():
    rng = np.random.default_rng(5)
    a, W, a2, W2 = rng.normal(size=4), rng.normal(size=(4, 3)), rng.normal(size=4), rng.normal(size=(4, 3))
    ref = min(np.sqrt(np.sum((a - a2[list(q)]) ** 2) + np.sum((W - W2[list(q)]) ** 2))
              for q in itertools.permutations(range(4)))
    dist, pi = permutation_distance(a, W, a2, W2)
    assert dist == pytest.approx(ref, rel=1e-13)
    assert np.sqrt(np.sum((a - a2[pi]) ** 2) + np.sum((W - W2[pi]) ** 2)) == pytest.approx(ref)
    perm = rng.permutation(4)
    assert permutation_distance(a, W, a[perm], W[perm])[0] == pytest.approx(0.0, abs=1e-15)


def experiment(**data):
    return experiment_from_mapping({
        "name": "probes", "seed": 1, "runs": 3,
        "data": {"kind": "gaussian_teacher", "d": 4, "k": 2, "teacher": "gaussian", **data},
        "model": {"width": 3, "kappa": "1/p"}, "init": {"scheme": "gaussian", "scale": 0.5},
        "train": {"lr": 0.2, "steps": 40},
        "record": {"points": 4, "probes": ["loss", "a", *TEACHER_PROBES], "snapshots": True}})


def test_recorded_probes_equal_numpy_on_the_recorded_weights():
    from shallowflow.training.entry import train

    sigma = np.array([[2.0, 0.3, 0.0, 0.1], [0.3, 1.0, 0.2, 0.0], [0.0, 0.2, 0.5, 0.0],
                      [0.1, 0.0, 0.0, 1.5]])
    (ds,) = train(experiment(covariance="full", sigma=sigma.tolist()), show_progress=False,
                  keep_data=True)
    W, a = ds.W.values, ds.a.values  # (run, time, neuron, dim), (run, time, neuron)
    b, V = ds.teacher_b.values, ds.teacher_V.values
    R = W @ sigma @ V.T
    Q = W @ sigma @ np.swapaxes(W, -1, -2)
    nw = np.sqrt(np.einsum("rtjd,de,rtje->rtj", W, sigma, W))
    nv = np.sqrt(np.einsum("kd,de,ke->k", V, sigma, V))
    assert np.allclose(ds.overlap.values, R, rtol=1e-12, atol=1e-14)
    assert np.allclose(ds.student_overlap.values, Q, rtol=1e-12, atol=1e-14)
    assert np.allclose(ds.overlap_cos.values, R / nw[..., None] / nv, rtol=1e-10, atol=1e-13)
    ref = [[brute_distance(a[r, t], W[r, t], b, V, 1 / 3) for t in range(W.shape[1])]
           for r in range(W.shape[0])]
    assert np.allclose(ds.teacher_distance.values, ref, rtol=1e-10)


def test_teacher_probes_on_finite_data_are_refused():
    with pytest.raises(ConfigError, match=r"record\.probes: overlap read the population's teacher"):
        experiment_from_mapping({
            "name": "x", "data": {"kind": "gaussian_teacher_samples", "d": 3, "n": 10},
            "model": {"width": 2}, "init": {"scheme": "gaussian", "scale": 0.1},
            "train": {"lr": 0.1, "steps": 2}, "record": {"probes": ["loss", "overlap"]}})


def test_teacher_probe_on_finite_data_is_one_error_line(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('name = "x"\n[data]\nkind = "teacher"\nn = 5\nd = 3\n[model]\nwidth = 2\n'
                   '[init]\nscheme = "gaussian"\nscale = 0.1\n[train]\nlr = 0.1\nsteps = 2\n'
                   '[record]\nprobes = ["loss", "teacher_distance"]\n')
    result = CliRunner().invoke(app, ["run", str(cfg), "--out", str(tmp_path / "o"), "--quiet"])
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and "record.probes" in lines[0], result.output
