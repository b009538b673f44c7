"""Start-up: whole-process wall time of ``shallowflow run`` with a cold, a warm and no compilation
cache, against a whole PyTorch script of the authors' kind.

The run: BF's 3-point data with a bias, width p = 20 000, balanced init at lambda = 1e-3, GD lr =
1e-3, float64, one run, two records; once with ``steps`` steps and once with a single step (the
start-up alone: imports, data, compilation, writing the run folder). Each is timed as a fresh
process: without the cache (``SHALLOWFLOW_CACHE_DIR=off``), with an empty cache folder (cold: the
process compiles and writes its programs) and again with that folder (warm: it reads them back).
The baseline is a whole ``python -c`` process that imports torch and runs the same steps in float32
with autograd and ``torch.optim.SGD``, as the authors' script does (skipped without torch). Also
the time of ``import shallowflow.cli.commands`` alone. Best of ``repeats`` for each.

    .venv/bin/python bench/bench_startup.py

Raw numbers go to bench/out/startup.json.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from shallowflow.benchmarks.common import (
    ForeignLoad,
    machine_info,
    run_with_options,
    with_foreign_load,
)
from shallowflow.runtime.compile_cache import ENV

P, STEPS = 20_000, 5_000
QUICK = {"p": 2_000, "steps": 200, "repeats": 1}
"""Keyword arguments of :func:`bench` for a quick run (seconds; not comparable numbers)."""

CONFIG = """name = "startup"
runs = 1
[data]
kind = "three_point"
[model]
width = {p}
bias = true
[init]
scheme = "balanced"
radial = "gaussian"
scale = 1e-3
width_scaling = true
[train]
loss = "mse"
lr = 1e-3
steps = {steps}
[record]
points = 2
"""

TORCH = """
import torch
torch.manual_seed(0)
X = torch.tensor([[-0.75, 1.0], [-0.5, 1.0], [0.125, 1.0]])
y = torch.tensor([1.1, 0.1, 0.8])
W = (torch.randn({p}, 2) * 1e-3 / {p} ** 0.5).requires_grad_()
a = (W.detach().norm(dim=1) * torch.where(torch.rand({p}) < 0.5, 1.0, -1.0)).requires_grad_()
opt = torch.optim.SGD([a, W], lr=1e-3)
for _ in range({steps}):
    opt.zero_grad()
    loss = ((torch.relu(X @ W.T) @ a - y) ** 2).mean()
    loss.backward()
    opt.step()
print(float(loss))
"""


def _exe() -> str:
    return str(Path(sys.executable).parent / "shallowflow")


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr.strip()[-500:]}")
    return seconds


def _run(folder: Path, p: int, steps: int, cache: str, name: str) -> float:
    config = folder / f"{name}.toml"
    config.write_text(CONFIG.format(p=p, steps=steps))
    env = {**os.environ, ENV: cache}
    return _timed([_exe(), "run", str(config), "--out", str(folder / name), "--quiet"], env)


def _cache_runs(folder: Path, p: int, steps: int, repeats: int) -> dict[str, float]:
    """Best whole-process seconds without the cache, cold (an empty folder) and warm."""
    off, cold, warm = [], [], []
    for k in range(repeats):
        off.append(_run(folder, p, steps, "off", f"off-{steps}-{k}"))
        cache = folder / f"cache-{steps}-{k}"
        cold.append(_run(folder, p, steps, str(cache), f"cold-{steps}-{k}"))
        warm.append(_run(folder, p, steps, str(cache), f"warm-{steps}-{k}"))
    return {"off": min(off), "cold": min(cold), "warm": min(warm)}


def _torch(p: int, steps: int, repeats: int) -> float | None:
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    code = TORCH.format(p=p, steps=steps)
    return min(_timed([sys.executable, "-c", code], dict(os.environ)) for _ in range(repeats))


def bench(p: int = P, steps: int = STEPS, repeats: int = 2) -> dict[str, Any]:
    """Whole-process times (seconds) of the run with ``steps`` steps and of a 1-step run."""
    with tempfile.TemporaryDirectory(prefix="shallowflow-startup-") as tmp, ForeignLoad() as load:
        folder = Path(tmp)
        imp = min(_timed([sys.executable, "-c", "import shallowflow.cli.commands"], dict(os.environ))
                  for _ in range(repeats))
        one = _cache_runs(folder, p, 1, repeats)
        full = _cache_runs(folder, p, steps, repeats)
        tor = _torch(p, steps, repeats)
    return {"name": "startup", "config": {"p": p, "steps": steps, "repeats": repeats,
                                          "dtype": "float64", "torch_dtype": "float32"},
            "import_s": imp, "one_step": one, "run": full, "torch_s": tor,
            "foreign_load": load.value, "machine": machine_info()}


def table(r: dict[str, Any]) -> str:
    """The markdown table of :func:`bench`'s result."""
    c, one, full = r["config"], r["one_step"], r["run"]
    lines = [
        f"Whole-process wall time (s), 3 points + bias, p = {c['p']}, best of {c['repeats']}; "
        f"`import shallowflow.cli.commands` alone: {r['import_s']:.2f} s.",
        "",
        "| process | no cache | cold cache | warm cache |",
        "|---|---:|---:|---:|",
        f"| `shallowflow run`, 1 step (start-up) | {one['off']:.2f} | {one['cold']:.2f} "
        f"| {one['warm']:.2f} |",
        f"| `shallowflow run`, {c['steps']} steps | {full['off']:.2f} | {full['cold']:.2f} "
        f"| {full['warm']:.2f} |",
    ]
    if r["torch_s"] is None:
        lines += ["", "PyTorch script skipped: torch is not installed (`pip install -e .[bench]`)."]
    else:
        lines.append(f"| PyTorch script (float32, autograd), {c['steps']} steps | "
                     f"{r['torch_s']:.2f} | - | - |")
    return with_foreign_load(lines, r["foreign_load"])


def main(argv: list[str] | None = None, out: Path | None = None) -> dict[str, Any]:
    """Run alone: print the table, write the raw numbers to ``--out``/startup.json."""
    options = {"p": P, "steps": STEPS, "repeats": 2}
    return run_with_options("startup", __doc__, bench, table, options, argv, out)


if __name__ == "__main__":
    main(out=Path(__file__).resolve().parent / "out")
