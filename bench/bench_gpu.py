"""The engine on a GPU (JAX's default device), against the device's own references.

Measured in one process on the device, every rate in GFLOP/s of useful work (4 n d p flops per
network and GD step, as the CPU benchmarks count):

- the device's large-GEMM rate: ``jnp.matmul`` of two ``size`` x ``size`` matrices at full
  precision (float64; float32 with matmul precision "highest", which shallowflow computes in),
  and, labelled as such, float32 at JAX's default precision (TF32 on NVIDIA GPUs since Ampere);
- the DPB Fig. 3 step (per-run data n = 3000, d = 100, p = p(n, 0.05) = 39): the difference of a
  330-step and a 30-step ``train`` (start-up cancels), for ``per_run`` batch sizes;
- shared data (n = 1000, d = 100, p = 40, as the throughput benchmark): ``simulate`` for
  ``shared`` batch sizes, compilation excluded;
- the authors' kind of PyTorch loop on the same device (one network of the DPB shape, autograd,
  SGD, in its own process; float32 in full precision, PyTorch's default).

    .venv/bin/python bench/bench_gpu.py [--quick]

Raw numbers go to bench/out/gpu.json.

On a machine without a GPU it records that and measures nothing. On a lent GPU machine,
bench/device_check.sh runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import bench_dana_fig3 as dana_fig3
from shallowflow.benchmarks import throughput
from shallowflow.benchmarks.common import best_time, finish, machine_info, parser, torch_loop_rate

DTYPES = ("float64", "float32")
PER_RUN = (25, 1000)
SHARED = (64, 16384)
DPB_N = 3000
LARGE_GEMM = 8192
QUICK = {"per_run": (4,), "shared": (64,), "steps": 20, "gemm_size": 1024, "torch_steps": 20}
"""Keyword arguments of :func:`bench` for a quick run (seconds; not comparable numbers)."""


def device_gemm_rate(dtype: str, size: int = LARGE_GEMM, precision: str | None = "highest",
                     repeats: int = 5) -> float:
    """GFLOP/s of ``jnp.matmul`` on two ``size`` x ``size`` matrices on JAX's default device
    (2 size^3 flops), best of ``repeats`` after a compiling call; ``precision`` None: JAX's
    default for the dtype."""
    import jax
    import jax.numpy as jnp

    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    A, B = (jax.random.normal(k, (size, size), dtype) for k in (k1, k2))
    product = jax.jit(lambda A, B: jnp.matmul(A, B, precision=precision))
    seconds, _ = best_time(lambda: product(A, B).block_until_ready(), repeats)
    return 2.0 * size**3 / seconds / 1e9


def shared_rate(runs: int, dtype: str, steps: int, repeats: int = 2) -> float:
    """GFLOP/s of ``simulate`` on ``runs`` networks of the throughput benchmark's shape."""
    cfg, net0, X, y = throughput.setup(runs)
    return throughput.run_engine(cfg, net0, X, y, dtype, steps, repeats)["gflops"]


def bench(per_run: Sequence[int] = PER_RUN, shared: Sequence[int] = SHARED, steps: int = 300,
          gemm_size: int = LARGE_GEMM, torch_steps: int = 200) -> dict[str, Any]:
    """Every rate of the module docstring in both dtypes (nothing without a GPU)."""
    import jax

    from shallowflow import enable_full_precision
    from shallowflow.theory.good_init import neurons_for

    enable_full_precision()
    info = machine_info()
    if jax.default_backend() == "cpu":
        return {"name": "gpu", "skipped": "JAX's default device is the CPU", "machine": info}
    p = neurons_for(DPB_N)
    rows: dict[str, Any] = {}
    for dtype in DTYPES:
        row: dict[str, Any] = {"large_gemm_gflops": device_gemm_rate(dtype, gemm_size)}
        if dtype == "float32":
            row["large_gemm_tf32_gflops"] = device_gemm_rate(dtype, gemm_size, precision=None)
        row["dpb_step_gflops"] = {R: dana_fig3.step_rate(R, DPB_N, dtype, repeats=2,
                                                         steps=(30, 30 + steps))
                                  for R in per_run}
        row["shared_gflops"] = {R: shared_rate(R, dtype, steps) for R in shared}
        row["torch_loop_gflops"] = torch_loop_rate(DPB_N, dana_fig3.D, p, dtype, torch_steps, "cuda")
        rows[dtype] = row
    return {"name": "gpu", "device": info.get("device"), "dpb_shape": [DPB_N, dana_fig3.D, p],
            "shared_shape": [throughput.N, throughput.D, throughput.P], "steps": steps,
            "gemm_size": gemm_size, "results": rows, "machine": info}


def table(r: dict[str, Any]) -> str:
    """The markdown table of :func:`bench`'s result."""
    if "skipped" in r:
        return f"GPU benchmark skipped: {r['skipped']}."
    n, d, p = r["dpb_shape"]
    lines = [f"Engine on {r['device']}: GFLOP/s (4 n d p per network and step) and the fraction "
             f"of the device's large GEMM ({r['gemm_size']}^3, full precision). DPB Fig. 3 step: "
             f"per-run data n = {n}, d = {d}, p = {p}, ({30 + r['steps']}) - (30) steps. Shared: "
             f"n, d, p = {tuple(r['shared_shape'])}, {r['steps']} steps. PyTorch: one network "
             "of the DPB shape on the same GPU (the authors' kind of loop).", "",
             "| dtype | large GEMM | what | networks | GFLOP/s | of large GEMM | vs PyTorch |",
             "|---|---:|---|---:|---:|---:|---:|"]
    for dtype, row in r["results"].items():
        gemm, torch_rate = row["large_gemm_gflops"], row["torch_loop_gflops"]
        cells = [("DPB step", R, rate) for R, rate in row["dpb_step_gflops"].items()]
        cells += [("shared", R, rate) for R, rate in row["shared_gflops"].items()]
        for what, R, rate in cells:
            vs = f"{rate / torch_rate:.1f}x" if torch_rate else "no torch"
            lines.append(f"| {dtype} | {gemm:.0f} | {what} | {R} | {rate:.0f} "
                         f"| {100 * rate / gemm:.0f} % | {vs} |")
        lines.append(f"| {dtype} | {gemm:.0f} | PyTorch loop | 1 | {torch_rate or float('nan'):.0f} "
                     f"| {100 * (torch_rate or float('nan')) / gemm:.0f} % | 1x |")
    if "large_gemm_tf32_gflops" in r["results"].get("float32", {}):
        lines += ["", f"float32 large GEMM at JAX's default precision (TF32, not used): "
                  f"{r['results']['float32']['large_gemm_tf32_gflops']:.0f} GFLOP/s."]
    return "\n".join(lines)


def main(argv: list[str] | None = None, out: Path | None = None) -> dict[str, Any]:
    """Run alone: print the table, write the raw numbers to ``--out``/gpu.json."""
    ap = parser(__doc__, out)
    ap.add_argument("--quick", action="store_true", help="seconds; numbers not comparable")
    args = ap.parse_args(argv)
    r = bench(**(QUICK if args.quick else {}))
    finish("gpu", r, table, args.out)
    return r


if __name__ == "__main__":
    main(out=Path(__file__).resolve().parent / "out")
