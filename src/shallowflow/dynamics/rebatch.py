"""Re-batching of stopped runs (docs/math.md §0.3): once at most half of a batch still runs, the
driver continues with the running runs only. Frozen runs keep their parameters, so their records
are exact copies of their last one and results are identical; the smaller shape compiles once.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from shallowflow.dynamics.state import RUNNING, run_axis

REBATCH_MULTIPLE = 4  # compacted batches are padded with frozen runs to a multiple of this
REBATCH_MIN_SAVING_S = 2.0  # compact only if the estimated saving exceeds a recompilation


def take_runs(tree, idx: np.ndarray):
    """Select runs ``idx`` from engine arrays (run axis 1 for (d|n, R, p) leaves, else 0)."""
    return jax.tree_util.tree_map(lambda x: jnp.take(x, idx, axis=run_axis(x)), tree)


def put_runs(full, part, idx: np.ndarray):
    """Write the runs of ``part`` back into ``full`` at positions ``idx``."""

    def put(f: Array, p: Array) -> Array:
        ax = run_axis(f)
        return f.at[(slice(None),) * ax + (idx,)].set(p)

    return jax.tree_util.tree_map(put, full, part)


def widen(part: dict[str, np.ndarray], last: dict[str, np.ndarray],
          current: np.ndarray) -> dict[str, np.ndarray]:
    """Records (S, R_current, ...) of the runs ``current`` as full-batch records (S, R, ...):
    runs left out of the batch are frozen, so they repeat their ``last`` record."""
    out = {}
    for name, values in part.items():
        full = np.repeat(last[name][None], values.shape[0], axis=0)
        full[:, current] = values
        out[name] = full
    return out


def compaction(code: np.ndarray, current: np.ndarray, multiple: int,
               saving_per_run: float = np.inf) -> np.ndarray | None:
    """Runs to keep when at most half of the batch still runs and leaving the frozen ones out
    saves more than REBATCH_MIN_SAVING_S (``saving_per_run``: estimated seconds the rest of the
    schedule costs per run): the running ones, padded with frozen ones to a multiple of
    ``multiple`` (stable shapes for the blocked paths); else None."""
    running = np.flatnonzero(code == RUNNING)
    if len(running) == 0 or 2 * len(running) > len(current):
        return None
    if (len(current) - len(running)) * saving_per_run < REBATCH_MIN_SAVING_S:
        return None
    size = min(len(current), -(-len(running) // multiple) * multiple)
    if size == len(current):  # already as small as the padding allows
        return None
    frozen = np.flatnonzero(code != RUNNING)[: size - len(running)]
    return np.sort(np.concatenate([running, frozen]))
