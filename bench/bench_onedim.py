"""One-dimensional inputs with a bias: the exact bucketed step against the dense one, and against a
plain PyTorch loop of the authors' kind (docs/math.md §10).

Data: n points x_k ~ U[-1, 1] with the bias column (d = 2), labels from BF's Stewart teacher
(docs/math.md §2.5); unbalanced Gaussian start of scale 1e-3 / sqrt(m) (BF Fig. 3), mse loss,
kappa = 1, lr = 1e-3; one run, records at the start and the end only. For every width m, number of
points n and precision, the per-step wall time of ``simulate`` on the dense path
(``EngineConfig(onedim=False)``: two elementwise contractions over an (n, m) array) and on the
bucketed path (``onedim=True``: O((n + m) log n)), each the best of ``repeats`` calls after a compiling call,
with as many steps as take about ``target_s`` seconds; the losses of the two paths after 20 steps
are compared (equal to rounding: ~1e-15 relative in float64, ~1e-6 in float32). The PyTorch
baseline is BF's loop as they ran it: two parameter tensors, ReLU, ``MSELoss``,
``torch.optim.SGD`` (float32 and float64), at the largest m and n = 40, where torch is installed.
Goals: the bucketed step >= 10x faster than the dense one at m = 200 000, n = 40 (2 cores), and
>= 20x faster than the PyTorch loop there.

    .venv/bin/python bench/bench_onedim.py [--quick]

Raw numbers go to bench/out/onedim.json.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from shallowflow.benchmarks.common import (
    ForeignLoad,
    cpu_count,
    finish,
    machine_info,
    parser,
    time_solve,
    with_foreign_load,
)

M_VALUES, N_VALUES, DTYPES = (2_000, 20_000, 200_000), (3, 40, 400), ("float64", "float32")
LR, SCALE, SEED = 1e-3, 1e-3, 0
TARGET_S = 1.0  # seconds of stepping per timed call (steps chosen from the compiling call)
GOAL_DENSE, GOAL_TORCH, GOAL_SHAPE = 10.0, 20.0, (200_000, 40)
QUICK = {"m_values": (2_000, 20_000), "n_values": (3, 40), "dtypes": ("float64",),
         "target_s": 0.2, "repeats": 1, "torch": False}
"""Keyword arguments of :func:`bench` for a quick run (seconds; not comparable numbers)."""


def problem(m: int, n: int, dtype: str) -> tuple[Any, Any, Any]:
    """(net0, X, y) for width m and n points in ``dtype``."""
    import jax

    from shallowflow import enable_full_precision
    from shallowflow.data import stewart
    from shallowflow.model.initialisation import gaussian
    from shallowflow.model.network import Network, add_bias_column

    enable_full_precision()
    X, y = stewart(jax.random.PRNGKey(SEED), n)
    X = np.asarray(add_bias_column(X)).astype(dtype)
    net = gaussian(jax.random.PRNGKey(SEED + 1), m, 2, SCALE, width_scaling=True)
    net0 = Network(np.asarray(net.a[None]).astype(dtype), np.asarray(net.W[None]).astype(dtype))
    return net0, X, np.asarray(y).astype(dtype)


def _config(onedim: bool) -> Any:
    from shallowflow.dynamics import EngineConfig
    from shallowflow.model.losses import Loss

    return EngineConfig(loss=Loss("mse"), kappa=1.0, lr=LR, time_scale=1.0, probes=("loss",),
                        onedim=onedim)


CHECK_STEPS = 20
"""Both paths' losses are compared after this many steps."""


def time_path(onedim: bool, net0: Any, X: Any, y: Any, target_s: float,
              repeats: int) -> dict[str, Any]:
    """Per-step seconds of one path: a 1-step compiling call, a call of ``CHECK_STEPS`` steps
    (its loss is compared across the paths; it sizes the timed call), then the best of
    ``repeats`` calls of about ``target_s`` seconds."""
    cfg = _config(onedim)
    compile_s, probe_s, res = time_solve(cfg, net0, X, y, CHECK_STEPS, 1)
    steps = int(max(4, min(100_000, target_s / max(probe_s / CHECK_STEPS, 1e-7))))
    _, best, _ = time_solve(cfg, net0, X, y, steps, repeats)
    return {"seconds_per_step": best / steps, "steps": steps, "seconds_compile_call": compile_s,
            "loss_check": float(res.records["loss"][0, -1])}


def run_torch(net0: Any, X: Any, y: Any, steps: int, dtype: str) -> dict[str, Any] | None:
    """BF's loop: h = relu(X W^T) a, MSELoss, torch.optim.SGD; None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(cpu_count())
    dt = getattr(torch, dtype)
    Xt = torch.tensor(np.asarray(X), dtype=dt)
    yt = torch.tensor(np.asarray(y), dtype=dt)
    W = torch.tensor(np.asarray(net0.W[0]), dtype=dt, requires_grad=True)
    a = torch.tensor(np.asarray(net0.a[0]), dtype=dt, requires_grad=True)
    opt = torch.optim.SGD([a, W], lr=LR)
    mse = torch.nn.MSELoss()

    def step() -> Any:
        opt.zero_grad(set_to_none=True)
        loss = mse(torch.relu(Xt @ W.T) @ a, yt)
        loss.backward()
        opt.step()
        return loss

    step()  # warm-up
    t0 = time.perf_counter()
    for _ in range(steps):
        loss = step()
    seconds = time.perf_counter() - t0
    return {"seconds_per_step": seconds / steps, "steps": steps, "loss": float(loss),
            "threads": torch.get_num_threads(), "version": torch.__version__}


def bench(m_values: tuple[int, ...] = M_VALUES, n_values: tuple[int, ...] = N_VALUES,
          dtypes: tuple[str, ...] = DTYPES, target_s: float = TARGET_S, repeats: int = 2,
          torch: bool = True) -> dict[str, Any]:
    """Per-step times of both paths on every (m, n, dtype), and the PyTorch loop."""
    rows, torch_rows = [], []
    with ForeignLoad() as foreign:
        for dtype in dtypes:
            for m in m_values:
                for n in n_values:
                    net0, X, y = problem(m, n, dtype)
                    dense = time_path(False, net0, X, y, target_s, repeats)
                    one = time_path(True, net0, X, y, target_s, repeats)
                    rows.append({"m": m, "n": n, "dtype": dtype, "dense": dense, "onedim": one,
                                 "speedup": dense["seconds_per_step"] / one["seconds_per_step"],
                                 "loss_rel_diff": abs(dense["loss_check"] - one["loss_check"])
                                 / abs(dense["loss_check"])})
        m, n = max(m_values), GOAL_SHAPE[1]
        if torch and n in n_values:
            for dtype in dtypes:
                net0, X, y = problem(m, n, dtype)
                t = run_torch(net0, X, y, 20, dtype)
                if t is None:
                    break
                ours = next(r for r in rows if (r["m"], r["n"], r["dtype"]) == (m, n, dtype))
                t["speedup"] = t["seconds_per_step"] / ours["onedim"]["seconds_per_step"]
                torch_rows.append({"m": m, "n": n, "dtype": dtype, **t})
    goal = next((r for r in rows if (r["m"], r["n"]) == GOAL_SHAPE and r["dtype"] == dtypes[0]),
                None)
    return {
        "name": "onedim",
        "config": {"lr": LR, "loss": "mse", "kappa": 1.0, "init": f"gaussian scale {SCALE} "
                   "width_scaling (unbalanced)", "data": "stewart (x ~ U[-1, 1], bias)",
                   "target_s": target_s, "repeats": repeats},
        "rows": rows,
        "torch": torch_rows,
        "goals": {"dense_speedup": GOAL_DENSE, "torch_speedup": GOAL_TORCH,
                  "shape": list(GOAL_SHAPE)},
        "goal_speedup": None if goal is None else goal["speedup"],
        "foreign_load": foreign.value,
        "machine": machine_info(),
    }


def table(r: dict[str, Any]) -> str:
    """The markdown tables of :func:`bench`'s result."""
    lines = [
        "One-dimensional inputs with a bias: per-step time of the dense and the bucketed (exact) "
        "step, one run, mse, lr = 1e-3.",
        "",
        "| dtype | m | n | dense (ms/step) | bucketed (ms/step) | speed-up | loss at step 20, rel. diff. |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in r["rows"]:
        lines.append(
            f"| {row['dtype']} | {row['m']} | {row['n']} | {1e3 * row['dense']['seconds_per_step']:.4g} "
            f"| {1e3 * row['onedim']['seconds_per_step']:.4g} | {row['speedup']:.1f}x "
            f"| {row['loss_rel_diff']:.1e} |")
    m, n = r["goals"]["shape"]
    if r["goal_speedup"] is not None:
        ok = r["goal_speedup"] >= r["goals"]["dense_speedup"]
        lines += ["", f"Goal: bucketed >= {r['goals']['dense_speedup']:g}x faster than dense at "
                  f"m = {m}, n = {n}: {r['goal_speedup']:.1f}x ({'met' if ok else 'not met'})."]
    if r["torch"]:
        lines += ["", "| PyTorch loop | m | n | ms/step | bucketed speed-up over it |",
                  "|---|---:|---:|---:|---:|"]
        for t in r["torch"]:
            lines.append(f"| torch {t['version']} {t['dtype']} ({t['threads']} threads) | {t['m']} "
                         f"| {t['n']} | {1e3 * t['seconds_per_step']:.4g} | {t['speedup']:.1f}x |")
        lines += ["", f"Goal: >= {r['goals']['torch_speedup']:g}x faster than the PyTorch loop."]
    else:
        lines += ["", "PyTorch baseline skipped (torch not installed, or not asked for)."]
    return with_foreign_load(lines, r["foreign_load"])


def main(argv: list[str] | None = None, out: Path | None = None) -> dict[str, Any]:
    """Run alone: print the tables, write the raw numbers to ``--out``/onedim.json."""
    ap = parser(__doc__, out)
    ap.add_argument("--quick", action="store_true", help="small shapes, seconds")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--target-s", type=float, default=TARGET_S)
    ap.add_argument("--m", type=int, nargs="+", default=list(M_VALUES), help="widths")
    ap.add_argument("--n", type=int, nargs="+", default=list(N_VALUES), help="numbers of points")
    ap.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES)
    args = ap.parse_args(argv)
    kwargs = dict(QUICK) if args.quick else {
        "repeats": args.repeats, "target_s": args.target_s, "m_values": tuple(args.m),
        "n_values": tuple(args.n), "dtypes": tuple(args.dtypes)}
    r = bench(**kwargs)
    finish("onedim", r, table, args.out)
    return r


if __name__ == "__main__":
    main(out=Path(__file__).resolve().parent / "out")
