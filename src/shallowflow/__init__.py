"""shallowflow: simulate, measure and predict how one-hidden-layer ReLU networks learn.

Importing shallowflow changes no global state. float64 is the default precision of every run:
the entry points that train (:func:`shallowflow.training.train`, :func:`shallowflow.experiment.simulate`,
the command line) switch JAX's float64 mode on with :func:`enable_float64`. A library user who
builds JAX arrays of their own before training calls it first. The command line also keeps
compiled programs on disk (:func:`shallowflow.compile_cache.enable`); a library user may call it.
"""

__version__ = "0.1.0"


def enable_float64() -> None:
    """Switch JAX to 64-bit arrays (``jax_enable_x64``); idempotent. Without it JAX silently
    computes in float32 even where float64 is asked for."""
    import jax

    if not jax.config.jax_enable_x64:
        jax.config.update("jax_enable_x64", True)
