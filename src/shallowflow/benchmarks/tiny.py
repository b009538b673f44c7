"""Long tiny run: BF's 3-point problem, width p = 20000, 20000 GD steps, against plain PyTorch.

Data: shallowflow.data.three_point with the bias column (d = 2); mse loss L = mean((h - y)^2),
kappa = 1, time_scale = 1, lr = 1e-3; balanced init (radial gaussian, scale 1e-3, width scaling);
probes recorded at the start and the end only. The baseline is a plain float64 PyTorch loop
(nn.Linear-free: two parameter tensors, ReLU, torch.optim.SGD) from the same initial parameters;
speed-up = PyTorch wall time / engine wall time. Goals: engine >= 10x faster than the PyTorch
loop; final losses equal to 1e-6. Without torch (the optional ``bench`` extra) the baseline is
skipped with a note.

    shallowflow bench tiny      or      python -m shallowflow.benchmarks.tiny [--p 20000 --steps 20000]
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from shallowflow.benchmarks.common import (
    ForeignLoad,
    cpu_count,
    machine_info,
    run_with_options,
    time_solve,
    with_foreign_load,
)

P, STEPS, LR, SCALE, SEED = 20_000, 20_000, 1e-3, 1e-3, 0
GOAL_SPEEDUP, GOAL_LOSS_DIFF = 10.0, 1e-6
QUICK = {"p": 2_000, "steps": 2_000, "repeats": 1}
"""Keyword arguments of :func:`bench` for a quick run (seconds; not comparable numbers)."""


def problem(p: int = P) -> tuple[Any, Any, Any, Any]:
    """(cfg, net0, X, y) of the tiny run, float64."""
    import jax

    from shallowflow import enable_full_precision
    from shallowflow.data import three_point
    from shallowflow.dynamics import EngineConfig
    from shallowflow.model.initialisation import balanced
    from shallowflow.model.losses import Loss
    from shallowflow.model.network import Network, add_bias_column

    enable_full_precision()
    X, y = three_point()
    X = add_bias_column(X)
    net = balanced(jax.random.PRNGKey(SEED), p, X.shape[1], SCALE, width_scaling=True,
                   radial="gaussian")
    net0 = Network(net.a[None], net.W[None])  # a batch of one run
    cfg = EngineConfig(loss=Loss("mse"), kappa=1.0, lr=LR, time_scale=1.0)
    return cfg, net0, X, y


def run_engine(cfg: Any, net0: Any, X: Any, y: Any, steps: int, repeats: int) -> dict[str, Any]:
    """Best wall time of ``solve`` over ``repeats`` calls, after a 1-step call that compiles
    (same shapes, so the timed calls reuse the compiled loop)."""
    first, best, res = time_solve(cfg, net0, X, y, steps, repeats)
    return {
        "seconds": best,
        "seconds_compile_call": first,
        "loss_start": float(res.records["loss"][0, 0]),
        "loss_end": float(res.records["loss"][0, -1]),
        "final_a": res.final.a[0],
        "final_W": res.final.W[0],
    }


def run_torch(net0: Any, X: Any, y: Any, steps: int, lr: float) -> dict[str, Any] | None:
    """The plain PyTorch float64 loop (h = relu(X W^T) a, L = mean((h - y)^2), SGD); None if
    torch is not installed."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(cpu_count())
    dt = torch.float64
    Xt = torch.tensor(np.asarray(X), dtype=dt)
    yt = torch.tensor(np.asarray(y), dtype=dt)
    W = torch.tensor(np.asarray(net0.W[0]), dtype=dt, requires_grad=True)  # (p, d)
    a = torch.tensor(np.asarray(net0.a[0]), dtype=dt, requires_grad=True)  # (p,)
    opt = torch.optim.SGD([a, W], lr=lr)

    def loss_fn() -> Any:
        out = torch.relu(Xt @ W.T) @ a  # kappa = 1
        return torch.mean((out - yt) ** 2)

    with torch.no_grad():
        loss_start = float(loss_fn())
    t0 = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn()
        loss.backward()
        opt.step()
    seconds = time.perf_counter() - t0
    with torch.no_grad():
        loss_end = float(loss_fn())
    return {
        "seconds": seconds,
        "loss_start": loss_start,
        "loss_end": loss_end,
        "threads": torch.get_num_threads(),
        "version": torch.__version__,
        "final_a": a.detach().numpy(),
        "final_W": W.detach().numpy(),
    }


def bench(p: int = P, steps: int = STEPS, repeats: int = 2) -> dict[str, Any]:
    """The engine and (where torch is installed) the PyTorch loop from the same parameters."""
    cfg, net0, X, y = problem(p)
    with ForeignLoad() as foreign:
        eng = run_engine(cfg, net0, X, y, steps, repeats)
        tor = run_torch(net0, X, y, steps, LR)
    out: dict[str, Any] = {
        "name": "tiny",
        "config": {"n": 3, "d": int(X.shape[1]), "p": p, "steps": steps, "lr": LR, "loss": "mse",
                   "kappa": 1.0, "init": f"balanced gaussian scale {SCALE} width_scaling",
                   "dtype": "float64"},
        "engine": {k: v for k, v in eng.items() if not k.startswith("final")},
        "torch": None,
        "goals": {"speedup": GOAL_SPEEDUP, "loss_diff": GOAL_LOSS_DIFF},
        "foreign_load": foreign.value,
        "machine": machine_info(),
    }
    if tor is not None:
        out["torch"] = {k: v for k, v in tor.items() if not k.startswith("final")}
        out["speedup"] = tor["seconds"] / eng["seconds"]
        out["loss_abs_diff"] = abs(tor["loss_end"] - eng["loss_end"])
        out["param_max_abs_diff"] = max(
            float(np.max(np.abs(tor["final_a"] - eng["final_a"]))),
            float(np.max(np.abs(tor["final_W"] - eng["final_W"]))),
        )
    return out


def table(r: dict[str, Any]) -> str:
    """The markdown table of :func:`bench`'s result (the PyTorch rows only where it ran)."""
    c, e, t = r["config"], r["engine"], r["torch"]
    lines = [
        f"Tiny run: 3 points + bias (d = {c['d']}), p = {c['p']}, {c['steps']} GD steps, "
        f"mse, lr = {c['lr']}, {c['dtype']}.",
        "",
        "| engine | wall time (s) | compile call (s) | final loss |",
        "|---|---:|---:|---:|",
        f"| shallowflow solve | {e['seconds']:.3f} | {e['seconds_compile_call']:.3f} "
        f"| {e['loss_end']:.10g} |",
    ]
    if t is None:
        lines += ["", "PyTorch baseline skipped: torch is not installed "
                  "(`pip install -e .[bench]`)."]
        return with_foreign_load(lines, r["foreign_load"])
    lines += [
        f"| PyTorch {t['version']} loop ({t['threads']} threads) | {t['seconds']:.3f} | - "
        f"| {t['loss_end']:.10g} |",
        "",
        "| metric | value | goal | met |",
        "|---|---:|---:|:---:|",
        f"| speed-up vs PyTorch | {r['speedup']:.1f}x | >= {GOAL_SPEEDUP:g}x "
        f"| {'yes' if r['speedup'] >= GOAL_SPEEDUP else 'no'} |",
        f"| abs. difference of final losses | {r['loss_abs_diff']:.2e} | <= {GOAL_LOSS_DIFF:g} "
        f"| {'yes' if r['loss_abs_diff'] <= GOAL_LOSS_DIFF else 'no'} |",
        f"| max abs. difference of final parameters | {r['param_max_abs_diff']:.2e} | - | - |",
    ]
    return with_foreign_load(lines, r["foreign_load"])


def main(argv: list[str] | None = None, out: Path | None = None) -> dict[str, Any]:
    """Run alone: print the table, write the raw numbers to ``--out``/tiny.json."""
    options = {"p": P, "steps": STEPS, "repeats": 2}
    return run_with_options("tiny", __doc__, bench, table, options, argv, out)


if __name__ == "__main__":
    main()
