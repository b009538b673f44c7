"""shallowflow: simulate, measure and predict how one-hidden-layer ReLU networks learn.

Importing shallowflow changes no global state. float64 is the default precision of every run:
the entry points that train (:func:`shallowflow.training.train`, :func:`shallowflow.experiment.simulate`,
the command line) switch JAX's float64 mode and full-precision float32 products on with
:func:`enable_full_precision`. A library user who
builds JAX arrays of their own before training calls it first. The command line also keeps
compiled programs on disk (:func:`shallowflow.compile_cache.enable`); a library user may call it.
"""

__version__ = "0.1.0"


def enable_full_precision() -> None:
    """Make JAX compute in the precision asked for; idempotent (docs/math.md §8.13).

    - 64-bit arrays (``jax_enable_x64``): without it JAX silently computes in float32 even
      where float64 is asked for;
    - products of 32-bit arrays in full float32 (``jax_default_matmul_precision = "highest"``):
      on NVIDIA GPUs since Ampere JAX's default rounds their operands to TF32 (10 bits of
      mantissa), so a float32 run would not be float32 (on the CPU both settings compute the
      same). float64 products are exact float64 either way."""
    import jax

    if not jax.config.jax_enable_x64:
        jax.config.update("jax_enable_x64", True)
    if jax.config.jax_default_matmul_precision != "highest":
        jax.config.update("jax_default_matmul_precision", "highest")
