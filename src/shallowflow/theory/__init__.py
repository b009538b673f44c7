"""Closed forms and predictions, one concept per module (docs/architecture.md; docs/math.md §1 and §3).

Theory speaks the simulation's language: functions that return curves return xarray objects with
the simulation's dimension and coordinate names (run, time, neuron, sample), so an overlay on a
run is one line. Import the submodules directly, e.g. ``from shallowflow.theory import pl_bounds``.
"""
