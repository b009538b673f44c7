"""The kernel's float64 arccos (fdlibm's rational approximation in array operations,
model/arccos_kernel.arccos) against numpy's arccos to 1 ulp on a dense grid, random points, the
ends and the branch points; float32 falls back to jnp.arccos."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from shallowflow.model.arccos_kernel import arccos
from shallowflow.precision import float64


def test_arccos_within_one_ulp_of_numpy():
    near = np.geomspace(1e-300, 0.1, 2000)
    x = np.concatenate([np.linspace(-1, 1, 200_001), [-1.0, 1.0, 0.0, -0.0, 0.5, -0.5],
                        np.nextafter([0.5, -0.5, 1.0, -1.0], 0.0), 1 - near, -1 + near, near,
                        -near, np.random.default_rng(0).uniform(-1, 1, 100_000)])
    with float64():
        got = np.asarray(jax.jit(arccos)(jnp.asarray(x, jnp.float64)))
    ref = np.arccos(x)
    ends = {v: got[np.flatnonzero(x == v)[0]] for v in (-1.0, 1.0)}
    assert ends == {-1.0: np.pi, 1.0: 0.0}
    assert np.all(np.abs(got - ref) <= np.spacing(ref))


def test_float32_uses_jnp_arccos():
    x = jnp.linspace(-1, 1, 101, dtype=jnp.float32)
    assert np.array_equal(np.asarray(arccos(x)), np.asarray(jnp.arccos(x)))
