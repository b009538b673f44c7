"""Stationary points and end-state verdicts of one network (docs/math.md §9).

One concept per module:

* :mod:`~shallowflow.stationary.derivatives`: loss, gradient (``network.loss_and_gradient``), the
  Hessian of the smooth part and Hessian-vector products (§9.1);
* :mod:`~shallowflow.stationary.spectrum`: the smooth-part spectrum, dense or by Lanczos, with the
  rescaling-symmetry modes projected out (§9.2);
* :mod:`~shallowflow.stationary.escape`: the residual correlation function G and its extrema on
  the sphere, the escape test for zero neurons and kink pairs (§9.3);
* :mod:`~shallowflow.stationary.polish`: Newton or BFGS to the nearest stationary point (§9.5);
* :mod:`~shallowflow.stationary.verdict`: the local-minimum test and the verdict per network and
  per run of a results Dataset (§9.4, §9.6).

Everything computes in float64: the functions that build JAX arrays do so inside
:func:`shallowflow.precision.float64`, a scoped context (neither importing nor calling this package
changes JAX's process-wide settings).

    from shallowflow.stationary import end_states, end_state, problem
    table = end_states(ds, polish_method="newton")      # ds from train(..., keep_data=True)
"""

from __future__ import annotations

from shallowflow.stationary.derivatives import Problem, as_network, problem
from shallowflow.stationary.escape import Extrema, extrema
from shallowflow.stationary.polish import Polished, polish
from shallowflow.stationary.spectrum import Spectrum, smooth_spectrum
from shallowflow.stationary.verdict import (
    VERDICTS,
    Escape,
    Tolerances,
    Verdict,
    end_state,
    end_states,
    end_table,
)

__all__ = ["VERDICTS", "Escape", "Extrema", "Polished", "Problem", "Spectrum", "Tolerances",
           "Verdict", "as_network", "end_state", "end_states", "end_table", "extrema",
           "polish", "problem", "smooth_spectrum"]
