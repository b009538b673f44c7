"""Batched GD throughput against numpy's matmul roofline.

64 networks of width p = 40 on shared data (shallowflow.data.sphere, n = 1000, d = 100), DPB init
vmapped over keys, EngineConfig(kappa = 1/p, lr = 0.1, time_scale = p), probes recorded at the
first and last step only. One GD step of all runs costs two GEMMs over the 64 p = 2560 neurons,

    Z = X (n, d) @ W_all^T (d, 64 p)        and        G_all^T (64 p, n) @ X (n, d),

4 n d p 64 flops in all, so the engine's GFLOP/s = 4 n d p 64 steps / wall time (compilation
excluded). Two references, measured in the same run: the batched-small roofline, numpy's GFLOP/s on
exactly these two GEMMs (goal: >= 60 % of it, in float32 and float64), and the machine's
large-GEMM rate, numpy on one 2048 x 2048 matmul (goal: >= 85 %). Beside them, per core: the
PyTorch loop of one network of the same shape (autograd, SGD, one thread), as the authors ran it.

    shallowflow bench throughput      or      python -m shallowflow.benchmarks.throughput [--steps 300]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from shallowflow.benchmarks.common import (
    ForeignLoad,
    cpu_count,
    finish,
    large_gemm_rate,
    machine_info,
    matmul_roofline,
    parser,
    time_solve,
    torch_loop_rate,
    with_foreign_load,
)

RUNS, N, D, P, STEPS, LR = 64, 1000, 100, 40, 300, 0.1
GOAL_FRACTION = 0.6
GOAL_LARGE_GEMM = 0.85
QUICK = {"steps": 20, "repeats": 1, "torch_steps": 5}
"""Keyword arguments of :func:`bench` for a quick run (seconds; not comparable numbers)."""


def setup(runs: int = RUNS) -> tuple[Any, Any, Any, Any]:
    """(cfg, net0, X, y) of ``runs`` networks, in float64."""
    import jax

    from shallowflow import enable_full_precision
    from shallowflow.data import sphere
    from shallowflow.dynamics import EngineConfig
    from shallowflow.model.initialisation import dpb

    enable_full_precision()
    X, y = sphere(jax.random.PRNGKey(0), N, D)
    keys = jax.random.split(jax.random.PRNGKey(1), runs)
    net0 = jax.vmap(lambda k: dpb(k, P, D))(keys)
    cfg = EngineConfig(kappa=1.0 / P, lr=LR, time_scale=float(P))
    return cfg, net0, X, y


def run_engine(cfg: Any, net0: Any, X: Any, y: Any, dtype: str, steps: int,
               repeats: int) -> dict[str, Any]:
    """Best wall time of ``solve`` over ``repeats`` calls, after a short call that compiles;
    GFLOP/s = 4 n d p runs steps / best time (runs: those of ``net0``)."""
    import jax

    net = jax.tree_util.tree_map(lambda v: v.astype(dtype), net0)
    compile_s, best, res = time_solve(cfg, net, X.astype(dtype), y.astype(dtype), steps,
                                         repeats)
    flops = 4.0 * N * D * P * net0.a.shape[0] * steps
    loss = res.records["loss"]
    return {
        "seconds": best,
        "seconds_compile_call": compile_s,
        "seconds_per_step": best / steps,
        "gflops": flops / best / 1e9,
        "loss_start_mean": float(np.mean(loss[:, 0])),
        "loss_end_mean": float(np.mean(loss[:, -1])),
        "diverged": int(np.sum(res.status["diverged"])),
    }


def bench(steps: int = STEPS, repeats: int = 2, torch_steps: int = 200) -> dict[str, Any]:
    """Engine, numpy references and the PyTorch loop in float32 and float64; ratio = engine
    GFLOP/s / numpy's."""
    cfg, net0, X, y = setup()
    rows = {}
    with ForeignLoad() as foreign:
        for dtype in ("float32", "float64"):
            eng = run_engine(cfg, net0, X, y, dtype, steps, repeats)
            roof = matmul_roofline(N, D, RUNS * P, np.dtype(dtype))
            eng["numpy_roofline"] = roof
            eng["fraction_of_roofline"] = eng["gflops"] / roof["gflops"]
            eng["large_gemm_gflops"] = large_gemm_rate(np.dtype(dtype))
            eng["fraction_of_large_gemm"] = eng["gflops"] / eng["large_gemm_gflops"]
            eng["torch_loop_gflops_per_core"] = torch_loop_rate(N, D, P, dtype, torch_steps)
            rows[dtype] = eng
    return {
        "name": "throughput",
        "config": {"runs": RUNS, "n": N, "d": D, "p": P, "steps": steps, "lr": LR,
                   "kappa": f"1/{P}", "time_scale": P, "init": "dpb gaussian", "data": "sphere",
                   "gemm_shapes": [[N, D, RUNS * P], [RUNS * P, N, D]]},
        "results": rows,
        "goal_fraction": GOAL_FRACTION,
        "goal_large_gemm": GOAL_LARGE_GEMM,
        "cores": cpu_count(),
        "foreign_load": foreign.value,
        "machine": machine_info(),
    }


def table(r: dict[str, Any]) -> str:
    """The markdown table of :func:`bench`'s result."""
    c = r["config"]
    lines = [
        f"Batched throughput: {c['runs']} runs x p = {c['p']} on shared data n = {c['n']}, "
        f"d = {c['d']}; {c['steps']} GD steps, records at the first and last step only. "
        f"Flops = 4 n d p runs steps; roofline = numpy on X ({c['n']}, {c['d']}) @ "
        f"W_all^T ({c['d']}, {c['runs'] * c['p']}) and G_all^T ({c['runs'] * c['p']}, {c['n']}) "
        f"@ X.",
        "",
        "| dtype | engine s/step | engine GFLOP/s | numpy GFLOP/s (fwd / bwd) | ratio | goal "
        "| met |",
        "|---|---:|---:|---:|---:|---:|:---:|",
    ]
    for dtype, e in r["results"].items():
        roof = e["numpy_roofline"]
        ok = e["fraction_of_roofline"] >= r["goal_fraction"]
        lines.append(
            f"| {dtype} | {e['seconds_per_step'] * 1e3:.2f} ms | {e['gflops']:.1f} "
            f"| {roof['gflops']:.1f} ({roof['gflops_forward']:.1f} / "
            f"{roof['gflops_backward']:.1f}) | {100 * e['fraction_of_roofline']:.0f} % "
            f"| >= {100 * r['goal_fraction']:.0f} % | {'yes' if ok else 'no'} |"
        )
    if all("large_gemm_gflops" in e for e in r["results"].values()):
        cores = r["cores"]
        lines += ["", f"Against the machine's large-GEMM rate (numpy, 2048 x 2048, {cores} cores) "
                  "and, per core, the authors' kind of PyTorch loop (one network of this shape, "
                  "one thread):", "",
                  "| dtype | large-GEMM GFLOP/s | engine / large GEMM | goal | met "
                  "| engine GFLOP/s per core | PyTorch loop GFLOP/s per core | engine / PyTorch, "
                  "per core |", "|---|---:|---:|---:|:---:|---:|---:|---:|"]
        for dtype, e in r["results"].items():
            ok = e["fraction_of_large_gemm"] >= r["goal_large_gemm"]
            torch_rate = e["torch_loop_gflops_per_core"]
            per_core = e["gflops"] / cores
            vs = f"{per_core / torch_rate:.2f}x" if torch_rate else "no torch"
            lines.append(
                f"| {dtype} | {e['large_gemm_gflops']:.1f} | "
                f"{100 * e['fraction_of_large_gemm']:.0f} % | >= "
                f"{100 * r['goal_large_gemm']:.0f} % | {'yes' if ok else 'no'} | {per_core:.1f} | "
                f"{torch_rate or float('nan'):.1f} | {vs} |")
    return with_foreign_load(lines, r["foreign_load"])


def main(argv: list[str] | None = None, out: Path | None = None) -> dict[str, Any]:
    """Run alone: print the table, write the raw numbers to ``--out``/throughput.json."""
    ap = parser(__doc__, out)
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--torch-steps", type=int, default=200)
    args = ap.parse_args(argv)
    r = bench(args.steps, args.repeats, args.torch_steps)
    finish("throughput", r, table, args.out)
    return r


if __name__ == "__main__":
    main()
