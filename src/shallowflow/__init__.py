"""shallowflow: simulate, measure and predict how one-hidden-layer ReLU networks learn.

Importing shallowflow changes no global state. float64 is the default precision of every run:
the entry points (the command line, training, reproductions) switch it on with
:func:`enable_full_precision`; a library user who builds JAX arrays of their own calls it first
(who sets precision, and how: :mod:`shallowflow.precision`). The command line also keeps
compiled programs on disk (:func:`shallowflow.compile_cache.enable`); a library user may call it.
"""

from shallowflow.precision import enable_full_precision

__version__ = "0.1.0"

__all__ = ["enable_full_precision"]
