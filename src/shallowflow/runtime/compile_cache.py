"""The persistent compilation cache: compiled XLA programs kept on disk, so that a process that
trains a shape another process already compiled starts at once (docs/architecture.md).

JAX writes one file per compiled program, keyed by the program, the compile options, the JAX
version and the device. Compiled CPU code also depends on the processor's instruction set, so the
cache is kept per machine type: ``<root>/<machine>``, root ``$SHALLOWFLOW_CACHE_DIR`` (the word
``off`` switches the cache off), else ``$XDG_CACHE_HOME/shallowflow/xla``, else
``~/.cache/shallowflow/xla``. Deleting the folder is always safe: programs are compiled again.
"""

from __future__ import annotations

import os
from pathlib import Path

from shallowflow.machine import machine_type

ENV = "SHALLOWFLOW_CACHE_DIR"
MIN_COMPILE_S = 0.0  # every program: the many small ones add up to a second of start-up


def folder() -> Path | None:
    """The cache folder of this machine type, or None when ``$SHALLOWFLOW_CACHE_DIR`` is off."""
    root = os.environ.get(ENV, "")
    if root.strip().lower() == "off":
        return None
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        root = str(Path(xdg) / "shallowflow" / "xla")
    return Path(root).expanduser() / machine_type()


def enable() -> Path | None:
    """Point JAX's persistent compilation cache at :func:`folder` (created if needed) and return
    it; None when the cache is off, the folder cannot be created, or the caller already chose a
    cache folder of its own (left as it is). Idempotent."""
    import jax

    if jax.config.jax_compilation_cache_dir:
        current = Path(jax.config.jax_compilation_cache_dir)
        return current if current == folder() else None
    path = folder()
    if path is None:
        return None
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # a read-only home: run without the cache
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_S)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path
