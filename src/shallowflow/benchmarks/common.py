"""Shared helpers of the benchmarks: machine info, timing, a numpy matmul roofline, JSON output."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from shallowflow.machine import available_cores, processor_model

DEFAULT_OUT = Path("bench-results")
"""Where raw numbers go by default: a folder of the current directory (never the package)."""


def cpu_count() -> int:
    """Cores this process may use (:func:`shallowflow.machine.available_cores`)."""
    return len(available_cores())


def load_average() -> tuple[float, float, float] | None:
    """The 1/5/15-minute load averages, None where the OS does not tell."""
    try:
        return os.getloadavg()
    except (AttributeError, OSError):
        return None


def _busy_cpu_seconds() -> float | None:
    """CPU seconds all processes have spent busy since boot (Linux /proc/stat), else None."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(v) for v in fields[1:]]
    busy = sum(ticks[:8]) - ticks[3] - ticks[4]  # user nice system [idle iowait] irq softirq steal
    return busy / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class ForeignLoad:
    """Context manager measuring how busy *other* processes kept the CPUs meanwhile:
    (busy CPU seconds of the whole machine - this process's CPU seconds) / wall seconds, i.e.
    roughly how many cores were taken from the benchmark (0 on an idle machine). None off Linux.
    """

    def __enter__(self) -> ForeignLoad:
        self.value: float | None = None
        self._busy0, self._own0 = _busy_cpu_seconds(), _own_cpu_seconds()
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        busy1, own1 = _busy_cpu_seconds(), _own_cpu_seconds()
        wall = time.perf_counter() - self._t0
        if self._busy0 is not None and busy1 is not None and wall > 0:
            self.value = max(0.0, ((busy1 - self._busy0) - (own1 - self._own0)) / wall)


def foreign_load_line(value: float | None) -> str:
    """A sentence for the result tables about :class:`ForeignLoad`'s ``value``."""
    if value is None:
        return "CPU time used by other processes meanwhile: not measured (not Linux)."
    return (f"CPU time used by other processes meanwhile: {value:.2f} cores on average "
            "(0 = the benchmark had the machine to itself).")


def with_foreign_load(lines: list[str], value: float | None) -> str:
    """A result table's markdown: ``lines``, then :func:`foreign_load_line` after an empty line."""
    return "\n".join([*lines, "", foreign_load_line(value)])


def machine_info() -> dict[str, Any]:
    """Machine and library versions, for the result files (``device``: the kind of JAX's first
    device, e.g. the GPU model, where the backend is not the CPU)."""
    import jax

    backend = jax.default_backend()
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": processor_model(),
        "cpu_count": cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "jax": jax.__version__,
        "jax_backend": backend,
        "device": None if backend == "cpu" else jax.devices()[0].device_kind,
        "load_average": load_average(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    try:
        import torch

        info["torch"] = torch.__version__
    except ImportError:
        info["torch"] = None
    return info


def machine_line(info: dict[str, Any]) -> str:
    """One-line machine description for tables."""
    backend = info["jax_backend"] + (f": {info['device']}" if info.get("device") else "")
    return (
        f"{info['cpu']}, {info['cpu_count']} cores, {info['platform']}; python {info['python']}, "
        f"numpy {info['numpy']}, jax {info['jax']} ({backend})"
        + (f", torch {info['torch']}" if info.get("torch") else "")
    )


def best_time(fn: Callable[[], Any], repeats: int = 3, warmup: bool = True) -> tuple[float, Any]:
    """Best wall time (time.perf_counter, seconds) of ``repeats`` calls of ``fn`` and its last
    result. ``fn`` must synchronise itself (block_until_ready / np.asarray). With ``warmup`` one
    untimed call runs first, so that compilation is excluded."""
    out = fn() if warmup else None
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def time_solve(cfg: Any, net0: Any, X: Any, y: Any, steps: int,
               repeats: int) -> tuple[float, float, Any]:
    """Time ``solve`` for ``steps`` steps with records at 0 and ``steps`` only: (seconds of a
    first 1-step call on the same shapes, which compiles the loop; best wall time of ``repeats``
    timed calls, which reuse it; the last result). ``solve`` returns numpy arrays, so every
    call is synchronised."""
    from shallowflow.dynamics import SaveAt, record_schedule, solve

    t0 = time.perf_counter()
    solve(cfg, net0, X, y, saveat=SaveAt(record_schedule(1, every=1)))
    compile_s = time.perf_counter() - t0
    sched = record_schedule(steps, every=steps)
    best, res = best_time(lambda: solve(cfg, net0, X, y, saveat=SaveAt(sched)), repeats, warmup=False)
    return compile_s, best, res


def matmul_roofline(
    n: int, d: int, cols: int, dtype: Any, repeats: int = 7, seed: int = 0
) -> dict[str, float]:
    """numpy's speed on the two GEMMs of one batched GD step with shared data:

        Z = X @ W^T     X (n, d), W (cols, d)   -> (n, cols)
        M = G^T @ X     G (n, cols)             -> (cols, d)

    each 2 n d cols flops. Best of ``repeats`` for each, after one warm-up; returns seconds per
    pair and GFLOP/s (4 n d cols flops per pair).
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)).astype(dtype)
    W = rng.standard_normal((cols, d)).astype(dtype)
    G = rng.standard_normal((n, cols)).astype(dtype)
    t_fwd, _ = best_time(lambda: X @ W.T, repeats)
    t_bwd, _ = best_time(lambda: G.T @ X, repeats)
    flops = 4.0 * n * d * cols
    return {
        "seconds_forward": t_fwd,
        "seconds_backward": t_bwd,
        "seconds_pair": t_fwd + t_bwd,
        "gflops": flops / (t_fwd + t_bwd) / 1e9,
        "gflops_forward": 2.0 * n * d * cols / t_fwd / 1e9,
        "gflops_backward": 2.0 * n * d * cols / t_bwd / 1e9,
    }


LARGE_GEMM = 2048  # the side of the square matmul that measures the machine's GEMM rate


def large_gemm_rate(dtype: Any, size: int = LARGE_GEMM, repeats: int = 3) -> float:
    """numpy's GFLOP/s on one large square matmul (``size`` x ``size``, 2 size^3 flops), best of
    ``repeats`` after a warm-up: the machine's GEMM rate on all its cores, the roofline that
    issue-14 ratios are taken against (the batched-small-shape rate of
    :func:`matmul_roofline` is the other reference, labelled as such)."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((size, size)).astype(dtype)
    B = rng.standard_normal((size, size)).astype(dtype)
    seconds, _ = best_time(lambda: A @ B, repeats)
    return 2.0 * size**3 / seconds / 1e9


TORCH_LOOP = """
import sys, time, torch
n, d, p, steps, name = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
dev = torch.device(sys.argv[6])
if dev.type == "cpu":
    torch.set_num_threads(1)
sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
dt = getattr(torch, name)
g = torch.Generator(device=dev).manual_seed(0)
X = torch.randn(n, d, generator=g, dtype=dt, device=dev) / d ** 0.5
y = torch.randn(n, generator=g, dtype=dt, device=dev)
W = (torch.randn(p, d, generator=g, dtype=dt, device=dev) / d ** 0.5).requires_grad_()
a = (torch.randn(p, generator=g, dtype=dt, device=dev) / p).requires_grad_()
opt = torch.optim.SGD([W, a], lr=1e-3)
def step():
    opt.zero_grad()
    loss = 0.5 * ((torch.relu(X @ W.T) @ a - y) ** 2).mean()
    loss.backward()
    opt.step()
for _ in range(10):
    step()
sync()
t = time.perf_counter()
for _ in range(steps):
    step()
sync()
print((time.perf_counter() - t) / steps)
"""


def torch_loop_rate(n: int, d: int, p: int, dtype: str, steps: int = 200,
                    device: str = "cpu") -> float | None:
    """GFLOP/s of the authors' kind of loop (one network, autograd, ``torch.optim.SGD``, in its
    own process; on the CPU one thread) on data (n, d) and width p on ``device`` ("cpu",
    "cuda"), counting the same 4 n d p flops per step as the engine's rates; None without torch
    (or, on "cuda", without its CUDA build)."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("torch") is None:
        return None
    done = subprocess.run([sys.executable, "-c", TORCH_LOOP, str(n), str(d), str(p), str(steps),
                           dtype, device], capture_output=True, text=True, check=device == "cpu")
    if done.returncode != 0:
        return None
    return 4.0 * n * d * p / float(done.stdout.split()[-1]) / 1e9


def write_json(out: Path, name: str, payload: dict[str, Any]) -> Path:
    """Write ``payload`` to ``out/<name>.json`` (the folder is created if needed) and return the
    path."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=_jsonable) + "\n")
    return path


def read_json(out: Path, name: str) -> dict[str, Any] | None:
    """The raw numbers :func:`write_json` wrote to ``out/<name>.json``, None if there are none."""
    path = out / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


def parser(doc: str, out: Path | None) -> argparse.ArgumentParser:
    """A benchmark's command line, described by the first line of ``doc`` (its module docstring),
    with ``--out`` (where the raw JSON goes; default ``out``, else ./bench-results)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    default = out if out is not None else DEFAULT_OUT
    ap.add_argument("--out", type=Path, default=default,
                    help=f"folder for the raw numbers (default {default})")
    return ap


def finish(name: str, result: dict[str, Any], table: Callable[[dict[str, Any]], str],
           out: Path) -> None:
    """What a benchmark run alone does at the end: print its table, write its raw numbers."""
    print(table(result))
    print(f"wrote {write_json(out, name, result)}")


def run_with_options(name: str, doc: str, bench: Callable[..., dict[str, Any]],
                     table: Callable[[dict[str, Any]], str], options: dict[str, Any],
                     argv: list[str] | None, out: Path | None) -> dict[str, Any]:
    """``main`` of a benchmark whose keyword arguments are options: ``options`` maps each
    keyword of ``bench`` to its default (``--max-batch`` for ``max_batch``, typed like the
    default; empty: ``--out`` only); parse ``argv``, run, then :func:`finish` under ``name``;
    returns the result."""
    ap = parser(doc, out)
    for key, default in options.items():
        ap.add_argument("--" + key.replace("_", "-"), type=type(default), default=default)
    args = vars(ap.parse_args(argv))
    folder = args.pop("out")
    result = bench(**args)
    finish(name, result, table, folder)
    return result

