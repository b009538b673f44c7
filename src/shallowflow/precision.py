"""Who sets JAX's precision, and how (docs/math.md §8.13).

Importing shallowflow changes no global state. float64 is the default precision of every run, and
only the entry points switch it on for the whole process, with :func:`enable_full_precision`:

* the command line (every ``shallowflow`` command);
* training: :func:`shallowflow.training.entry.train` (and :func:`shallowflow.training.entry.simulate`) through
  the batch preparation every training task starts with,
  :func:`shallowflow.training.batches.prepare_batch` (in the executor's threads or worker processes
  too; so does a caller of ``prepare_batch`` such as
  :func:`shallowflow.training.overlays.saddle_process_from_experiment`);
* reproductions: :func:`shallowflow.reproductions.run_reproduction`.

Everything else (data generators, theory, the stationary analysis, plots) leaves the process's
settings alone. A library function that needs float64 for its own arithmetic computes inside
:func:`float64`, a scoped context that restores the caller's settings on exit, and returns numpy
arrays. A library user who builds JAX arrays of their own (before training, or to compute with
the library's JAX functions such as :mod:`shallowflow.model.network`) calls
:func:`enable_full_precision` first, as the entry points do::

    import shallowflow
    shallowflow.enable_full_precision()  # float64 on, float32 products in float32
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

HIGHEST = "highest"
"""JAX's matmul precision for full float32 products (no TF32 rounding)."""


def enable_full_precision() -> None:
    """Make JAX compute in the precision asked for, process-wide; idempotent (docs/math.md §8.13).

    - 64-bit arrays (``jax_enable_x64``): without it JAX silently computes in float32 even
      where float64 is asked for;
    - products of 32-bit arrays in full float32 (``jax_default_matmul_precision = "highest"``):
      on NVIDIA GPUs since Ampere JAX's default rounds their operands to TF32 (10 bits of
      mantissa), so a float32 run would not be float32 (on the CPU both settings compute the
      same). float64 products are exact float64 either way.

    For the entry points only (module docstring); a library function uses :func:`float64`. The
    process-wide values are set even where a :func:`float64` block already shows them in this
    thread (setting a value it has costs a microsecond and no compilation)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_default_matmul_precision", HIGHEST)


@contextlib.contextmanager
def float64() -> Iterator[None]:
    """The settings of :func:`enable_full_precision` inside the ``with`` block only, in this
    thread (JAX's thread-local configuration contexts): the caller's settings are back on exit.
    A process-wide switch made inside the block (an entry point called from it) stays. Arrays
    made inside keep their float64 dtype; compute with them inside the block, or return numpy
    arrays."""
    import jax

    with jax.enable_x64(True), jax.default_matmul_precision(HIGHEST):
        yield
