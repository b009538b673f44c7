"""shallowflow: simulate, measure and predict how one-hidden-layer ReLU networks learn.

Importing shallowflow enables JAX's float64 mode: float64 is the default precision of every run.
"""

import jax

jax.config.update("jax_enable_x64", True)

__version__ = "0.1.0"
