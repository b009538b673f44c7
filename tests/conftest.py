"""Shared test setup: importing shallowflow first switches JAX to float64."""

import shallowflow  # noqa: F401  (enables jax_enable_x64 before any array is built)
