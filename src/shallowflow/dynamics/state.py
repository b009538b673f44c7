"""The engine state of a batch and per-run status (docs/math.md §0.3).

Per-run status, updated every step; the code says why a run ended (``STOP_REASONS``):
- "loss": once L(theta_k) < stop_loss (GD; for SGD tested with the full loss at record points)
  the run freezes and ``stop_step`` = k;
- "gradient": once ||grad L(theta_k)||_2 < stop_grad, tested at record points (the norm over the
  trained parameters, plain units);
- "time": the batch's wall-clock budget ran out (tested on the host between compiled segments);
  the runs still running freeze at the last record step;
- "steps": the run reached the last step (it was still running at the end);
- divergence: once L(theta_k) is non-finite (tested every step), or the parameters are
  non-finite at a record point (tested there), the run is flagged ``diverged`` with
  ``diverge_step`` = that step, and it is frozen at its parameters of the last record point where
  they and their loss were finite; its batch goes on.
Frozen runs keep their parameters, so their records after freezing are exact copies.

Engine arrays are run-major per leaf: the run axis is 1 for (d|n, R, p) leaves, else 0.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from shallowflow.dynamics.parametrisation import Coordinates

RUNNING, STOPPED, DIVERGED, GRADIENT, TIMEOUT = 0, 1, 2, 3, 4
STOP_REASONS = {RUNNING: "steps", STOPPED: "loss", DIVERGED: "diverged", GRADIENT: "gradient",
                TIMEOUT: "time"}
"""Why a run ended, by its final code (a run still running at the end used its step budget)."""


class Stop(NamedTuple):
    """Per-run early-stop thresholds (R,): the loss and the squared gradient norm (-inf: never)."""

    loss: Array
    grad_sq: Array


class EngineState(NamedTuple):
    params: Coordinates
    code: Array  # (R,) RUNNING, STOPPED or DIVERGED
    event_step: Array  # (R,) step at which the run froze, -1 while running
    mask: Array | None  # persistent activity mask (n, R, p), or None
    backup: Coordinates  # the parameters at the last record point where they and their loss were
    # finite: a diverged run is put back to them (kept across segments and re-batching)


class Reference(NamedTuple):
    """Constants of the batch the probes compare against."""

    perp_sq: Array  # ||w_j||^2 outside the data span (constant), (R, p)
    log_perp_sq: Array  # its log, exact also when perp_sq underflows (tiny lambda)
    params0: Coordinates  # the initial parameters
    # computed only when a recorded probe needs them (probes.Probe.needs), else None:
    class_dirs: Array | None = None  # x_+ = sum_{y_i > 0} x_i, x_- (engine basis), (d, R, 2)
    label_sign: Array | None = None  # sign(y_i), (n, R, 1)
    perp_gram: Array | None = None  # <w_perp_k, w_perp_j> (span basis only), (p, R, p)


def freeze(st: EngineState, stop_now: Array, diverge_now: Array, step: Array):
    """Status after this step's tests: a running run stops or diverges at ``step``."""
    running = st.code == RUNNING
    code = jnp.where(running & stop_now, STOPPED,
                     jnp.where(running & diverge_now, DIVERGED, st.code))
    event = jnp.where(running & (code != RUNNING), step, st.event_step)
    return code, event


def time_out(st: EngineState, step: int) -> EngineState:
    """The wall-clock budget ran out: every running run ends at ``step`` ("time")."""
    running = st.code == RUNNING
    return st._replace(code=jnp.where(running, TIMEOUT, st.code),
                       event_step=jnp.where(running, step, st.event_step))


def status_arrays(code: np.ndarray, event_step: np.ndarray,
                  last_step: int) -> dict[str, np.ndarray]:
    """The public per-run status: ``stop_reason`` (``STOP_REASONS``), ``end_step`` (the step of
    the end state: where the run froze, else ``last_step``), and the older views ``stopped``
    (reason "loss"), ``stop_step``, ``diverged``, ``diverge_step`` (-1 if none)."""
    stopped, diverged = code == STOPPED, code == DIVERGED
    reason = np.array([STOP_REASONS[int(c)] for c in code], dtype=object)
    return {"stop_reason": reason.astype(str),
            "end_step": np.where(code == RUNNING, last_step, event_step),
            "stopped": stopped, "stop_step": np.where(stopped, event_step, -1),
            "diverged": diverged, "diverge_step": np.where(diverged, event_step, -1)}


def select(move: Array, new, old):
    """Per-run choice between two parameter pytrees (leaves (R, p) or (d, R, p)). Written with
    explicit broadcast shapes: a reshape of ``move`` made the tiny run ~10 % slower."""

    def pick(n: Array, o: Array) -> Array:
        m = move[:, None] if n.ndim == 2 else move[None, :, None]
        return jnp.where(m, n, o)

    return jax.tree_util.tree_map(pick, new, old)


def run_axis(leaf: Array) -> int:
    """Position of the run axis in engine arrays: 1 for (d|n, R, p), else 0."""
    return 1 if leaf.ndim == 3 else 0
