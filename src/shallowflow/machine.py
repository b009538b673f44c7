"""This machine, as the rest of the package asks about it: cores, GPUs, memory, disk and the
processor model, each found without starting JAX (docs/architecture.md, "The rooms").

Every query of the machine goes through here, so it is read one way everywhere (``/proc/cpuinfo``
once per process)."""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import math
import os
import platform
import shutil
import subprocess
from pathlib import Path


def available_cores() -> list[int]:
    """The cores this process may run on (``os.sched_getaffinity``, else all of them)."""
    get = getattr(os, "sched_getaffinity", None)
    return sorted(get(0)) if get else list(range(os.cpu_count() or 1))


def jax_has_cuda() -> bool:
    """Whether JAX's CUDA plugin is installed (``pip install jax[cuda12]``), found without
    starting JAX."""
    return any(d.metadata["Name"].lower().replace("_", "-").startswith("jax-cuda")
               for d in importlib.metadata.distributions())


def visible_gpus() -> list[str]:
    """The NVIDIA GPUs local workers may be given, found without starting JAX in this process:
    the entries of ``CUDA_VISIBLE_DEVICES`` when it is set, else one index per ``GPU`` line of
    ``nvidia-smi -L`` (none where that program is missing or fails)."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [g.strip() for g in listed.split(",") if g.strip() and g.strip() != "-1"]
    try:
        text = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10,
                              check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(k) for k, _ in enumerate(ln for ln in text.splitlines() if ln.startswith("GPU"))]


def _read_int(path: str) -> int | None:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def available_memory() -> float:
    """Bytes of RAM this process can still use: MemAvailable, capped by a cgroup limit."""
    free = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                free = float(line.split()[1]) * 1024
    except OSError:
        pass
    if free is None:
        try:
            free = float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            return math.inf
    limit = _read_int("/sys/fs/cgroup/memory.max")
    used = _read_int("/sys/fs/cgroup/memory.current")
    if limit is not None and used is not None:
        free = min(free, float(limit - used))
    return free


def free_disk(folder: Path) -> float:
    """Bytes free on the file system of ``folder`` (an existing folder)."""
    return float(shutil.disk_usage(folder).free)


@functools.cache
def _cpuinfo() -> tuple[str, ...]:
    """The distinct lines of ``/proc/cpuinfo`` (empty where there is none), read once."""
    try:
        return tuple(dict.fromkeys(Path("/proc/cpuinfo").read_text().splitlines()))
    except OSError:
        return ()


def processor_model() -> str:
    """The processor's model name (``/proc/cpuinfo`` on Linux, else ``platform.processor()``)."""
    for line in _cpuinfo():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def machine_type() -> str:
    """A name for this machine's instruction set: the architecture and a hash of the processor
    model and feature flags (Linux ``/proc/cpuinfo``; elsewhere ``platform.processor()``)."""
    wanted = [ln for ln in _cpuinfo() if ln.split(":")[0].strip()
              in ("model name", "flags", "Features")]
    text = platform.processor() + "\n".join(wanted)
    return f"{platform.machine() or 'unknown'}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"
