"""Precision is set at the entry points only (shallowflow.precision): importing shallowflow and
calling its library functions leaves JAX's process-wide settings as they were. Each check runs in
a fresh process (this test process switched float64 on in conftest.py)."""

import subprocess
import sys

SNAPSHOT = "import jax; before = dict(jax.config.values);"
UNCHANGED = ("changed = {k: (v, jax.config.values[k]) for k, v in before.items()"
             " if jax.config.values[k] != v};"
             "assert not changed, changed;")


def check(code: str) -> None:
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_import_changes_no_jax_flag():
    check(SNAPSHOT + "import shallowflow, shallowflow.precision;" + UNCHANGED)


def test_library_functions_compute_in_float64_and_leave_the_flags():
    check(SNAPSHOT
          + "import numpy as np;"
          "from shallowflow.data.boursier import assumption3, three_point;"
          "from shallowflow.stationary.derivatives import as_network, gradient, hessian, problem;"
          "from shallowflow.theory.extremal import residual_weights;"
          "X, y = three_point(); u = assumption3(0)[0];"
          "prob = problem(X, y); net = as_network([1.0, -0.5], [[0.3, 0.2], [-0.4, 0.1]]);"
          "value, grad, Z = gradient(net, prob); H = hessian(net, prob); c = residual_weights(y);"
          "assert {a.dtype for a in (X, u, grad.W, Z, H, c)} == {np.dtype('float64')};"
          + UNCHANGED)


def test_float64_block_is_scoped_and_an_entry_point_inside_it_stays():
    check("import jax, jax.numpy as jnp\n"
          "from shallowflow import precision\n"
          "with precision.float64():\n"
          "    assert jnp.zeros(1).dtype == jnp.float64\n"
          "assert not jax.config.jax_enable_x64 and jnp.zeros(1).dtype == jnp.float32\n"
          "assert jax.config.jax_default_matmul_precision is None\n"
          "with precision.float64():\n"
          "    precision.enable_full_precision()\n"
          "assert jax.config.jax_enable_x64\n"
          "assert jax.config.jax_default_matmul_precision == 'highest'\n")
