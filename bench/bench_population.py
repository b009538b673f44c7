"""The population step (docs/math.md §11): batched closed form against a numpy loop, and against
the finite-data step.

(1) 500 networks at k = 20 in the Safran-Shamir setting (d = k, student width k, output weights
fixed to 1, teacher the identity): one GD step of every network with the closed-form gradient,
timed side by side in one process as (a0) the COLT 2021 code's loop, one network at a time, with
its operations (both blocks of angles by arccos and their sines by sin, the gradient norm every
step); (a) a loop over the networks of a leaner numpy step of the same closed form (one arccos,
sines from the cosines; the baseline of the goal, the stricter of the two); (b) one
compiled step of all networks, called from Python each step; (c) one compiled program running
``fused_steps`` steps of all networks (lax.fori_loop, no Python between steps); (d) as (c) with
the networks taken one at a time inside the compiled program (lax.map: each network's arrays stay
in the cache), the networks split over one thread per core; (e) the engine
(``shallowflow.training.entry.train``, 500 runs, second layer frozen), per step from the
difference of two step budgets. Goal: (d) at least 50x faster than (a) on 2 cores.

(2) The closed form against the finite-data step in population-limit's setting (d = 9, teacher
k = 3, student p = 8, 8 runs): the engine's time per network and step on the population and on
N samples (difference of two step budgets), and the relative error of the N-sample gradient
against the closed form at the start (mean over draws); from the fitted error c N^(-1/2), the
N whose error equals the closed form's rounding (``closed_form_error``) and the time a step
would take there, and the N at which the finite-data step costs what the closed form costs.

    .venv/bin/python bench/bench_population.py

Raw numbers go to bench/out/population.json.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from shallowflow.benchmarks.common import (
    ForeignLoad,
    best_time,
    cpu_count,
    machine_info,
    run_with_options,
    with_foreign_load,
)

GOAL = 50.0
LR = 0.25  # 5 / k at k = 20
CLOSED_FORM_ERROR = 1e-15  # the closed form's relative accuracy (rounding; docs/math.md §11.7)
QUICK = {"networks": 50, "fused_steps": 20, "engine_steps": (20, 60), "n_values": (1000,),
         "runs": 2, "finite_steps": (10, 30)}
"""Keyword arguments of :func:`bench` for a quick run (seconds; not comparable numbers)."""


def numpy_gradient(W: np.ndarray, V: np.ndarray) -> np.ndarray:
    """The closed-form gradient of F(W) = 1/2 E[(sum_i relu(<w_i, x>) - sum_k relu(<v_k,
    x>))^2] for one network (docs/math.md §11.2), numpy: M_j = sum_m gamma_m grad_u K(w_j,
    d_m) over the directions D = (W, V), gamma = (1, .., 1, -1, .., -1)."""
    p = W.shape[0]
    D = np.vstack([W, V])
    g = np.r_[np.ones(p), -np.ones(V.shape[0])]
    nw, nd = np.sqrt((W * W).sum(1)), np.sqrt((D * D).sum(1))
    U = W / nw[:, None]
    C = np.clip(U @ (D / nd[:, None]).T, -1.0, 1.0)
    sine, theta = np.sqrt((1 - C) * (1 + C)), np.arccos(C)
    return (((sine * nd) @ g)[:, None] * U + ((np.pi - theta) * g) @ D) / (2 * np.pi)


def numpy_steps(W: np.ndarray, V: np.ndarray, steps: int) -> np.ndarray:
    """(a): ``steps`` GD steps of every network, one network at a time."""
    W = W.copy()
    for _ in range(steps):
        for r in range(W.shape[0]):
            W[r] -= LR * numpy_gradient(W[r], V)
    return W


def colt_gradient(Wc: np.ndarray) -> np.ndarray:
    """The same gradient with the operations of the COLT 2021 code (Safran, Yehudai and Shamir's
    ``local_minima.py``), written here from its description: neurons as the columns of Wc (d, p),
    the teacher the identity, both blocks of angles by ``arccos``, their sines by ``sin`` of the
    angles, the teacher's block by a product with the identity (docs/math.md §11.2)."""
    V = np.eye(Wc.shape[0])
    norms = np.linalg.norm(Wc, axis=0)
    Un = Wc / norms[None, :]
    t_ww = np.arccos(np.clip(Un.T @ Un, -1.0, 1.0))
    t_wv = np.arccos(np.clip(Un, -1.0, 1.0))
    g_ww = (norms @ np.sin(t_ww)) * Un + Wc @ (np.pi - t_ww)
    g_wv = np.ones(V.shape[1]) @ np.sin(t_wv) * Un + V @ (np.pi - t_wv)
    return (g_ww - g_wv) / (2 * np.pi)


def colt_steps(W: np.ndarray, steps: int) -> np.ndarray:
    """(a0): ``steps`` GD steps of every network, one network at a time, each step with the
    Frobenius norm of the gradient (the COLT 2021 loop's stop test)."""
    out = W.copy()
    for r in range(W.shape[0]):
        Wc = out[r].T.copy()
        for _ in range(steps):
            g = colt_gradient(Wc)
            np.linalg.norm(g, "fro")
            Wc -= LR * g
        out[r] = Wc.T
    return out


def start(networks: int, k: int, seed: int = 0) -> np.ndarray:
    """Xavier starts W_ij ~ N(0, 1/k) of ``networks`` networks, (R, k, k)."""
    return np.random.default_rng(seed).normal(size=(networks, k, k)) / math.sqrt(k)


def batched(networks: int, k: int, fused_steps: int, repeats: int) -> dict[str, Any]:
    """(a)-(c) of the module docstring, and the largest difference of (c) from (a) after
    ``fused_steps`` steps on the first networks."""
    import jax
    import jax.numpy as jnp

    import shallowflow
    from shallowflow.model.population import Teacher, population_gradient

    shallowflow.enable_full_precision()
    W0, V = start(networks, k), np.eye(k)
    teacher, ones = Teacher(jnp.ones(k), jnp.asarray(V)), jnp.ones((networks, k))

    def grad(W: Any) -> Any:
        return population_gradient(ones, W, teacher).grad_W

    one = jax.jit(lambda W: W - LR * grad(W))
    fused = jax.jit(lambda W: jax.lax.fori_loop(0, fused_steps, lambda _, W: W - LR * grad(W), W))
    Wj = jnp.asarray(W0)

    def stepwise() -> Any:
        W = Wj
        for _ in range(fused_steps):
            W = one(W)
        return W.block_until_ready()

    def grad1(W: Any) -> Any:  # one network
        return population_gradient(jnp.ones(k), W, teacher).grad_W

    mapped = jax.jit(lambda W: jax.lax.fori_loop(
        0, fused_steps, lambda _, W: W - LR * jax.lax.map(grad1, W), W))
    parts = [jnp.asarray(part) for part in np.array_split(W0, cpu_count())]
    pool = ThreadPoolExecutor(len(parts))

    def threaded() -> list[Any]:
        return list(pool.map(lambda part: mapped(part).block_until_ready(), parts))

    t_colt, _ = best_time(lambda: colt_steps(W0, 1), repeats, warmup=False)
    t_numpy, _ = best_time(lambda: numpy_steps(W0, V, 1), repeats, warmup=False)
    t_one, _ = best_time(stepwise, repeats)
    t_fused, W_fused = best_time(lambda: fused(Wj).block_until_ready(), repeats)
    t_mapped, W_mapped = best_time(threaded, repeats)
    pool.shutdown()
    check = min(networks, 5)
    reference = numpy_steps(W0[:check], V, fused_steps)
    diff = max(float(np.max(np.abs(np.asarray(W_fused)[:check] - reference))),
               float(np.max(np.abs(np.asarray(W_mapped[0])[:check] - reference))),
               float(np.max(np.abs(colt_steps(W0[:check], fused_steps) - reference))))
    return {"colt_step_s": t_colt, "numpy_step_s": t_numpy, "stepwise_step_s": t_one / fused_steps,
            "fused_step_s": t_fused / fused_steps, "mapped_step_s": t_mapped / fused_steps,
            "threads": len(parts), "fused_vs_numpy_max_abs": diff}


def experiment(kind: str, runs: int, steps: int, d: int, k: int, p: int, n: int | None = None,
               frozen: bool = False) -> Any:
    """An engine run on the population (``gaussian_teacher``) or on n samples."""
    from shallowflow.config import experiment_from_mapping

    data: dict[str, Any] = {"kind": kind, "d": d, "k": k}
    if n is not None:
        data["n"] = n
    return experiment_from_mapping({
        "name": f"bench-{kind}-{n}", "seed": 0, "runs": runs, "data": data,
        "model": {"width": p}, "init": {"scheme": "gaussian", "scale": 1 / math.sqrt(d)},
        "train": {"lr": LR if frozen else 0.2, "steps": steps,
                  "second_layer_rate": 0.0 if frozen else 1.0},
        "record": {"points": 2, "probes": ["loss"]}})


def engine_step(kind: str, runs: int, steps: tuple[int, int], d: int, k: int, p: int,
                n: int | None = None, frozen: bool = False, repeats: int = 2) -> float:
    """Seconds per step of the engine on ``runs`` networks: the difference of the best times of
    two step budgets (start, compilation and records cancel)."""
    from shallowflow.training.entry import train

    times = []
    for s in steps:
        exp = experiment(kind, runs, s, d, k, p, n, frozen)
        times.append(best_time(lambda e=exp: train(e, show_progress=False), repeats)[0])
    return (times[1] - times[0]) / (steps[1] - steps[0])


def gradient_error(n: int, draws: int = 5, d: int = 9, k: int = 3, p: int = 8) -> float:
    """Mean relative error |g_N - g| / |g| of the N-sample gradient (a, W) of the square loss at
    a Gaussian start against the closed form g (population-limit's setting)."""
    from shallowflow.model.population import Teacher, population_gradient

    rng = np.random.default_rng(1)
    a, W = rng.normal(size=p) / math.sqrt(d), rng.normal(size=(p, d)) / math.sqrt(d)
    b, V = np.ones(k), np.eye(d)[:k]
    pg = population_gradient(a, W, Teacher(b, V))
    g = np.concatenate([np.asarray(pg.grad_a), np.asarray(pg.grad_W).ravel()])
    errors = []
    for _ in range(draws):
        X = rng.normal(size=(n, d))
        Z = X @ W.T
        r = np.maximum(Z, 0) @ a - np.maximum(X @ V.T, 0) @ b
        ga = np.maximum(Z, 0).T @ r / n
        gW = ((Z > 0) * r[:, None] * a).T @ X / n
        errors.append(np.linalg.norm(np.concatenate([ga, gW.ravel()]) - g) / np.linalg.norm(g))
    return float(np.mean(errors))


def finite_data(n_values: Sequence[int], runs: int, finite_steps: tuple[int, int],
                engine_steps: tuple[int, int]) -> dict[str, Any]:
    """(2) of the module docstring."""
    d, k, p = 9, 3, 8
    closed = engine_step("gaussian_teacher", runs, engine_steps, d, k, p) / runs
    rows = [{"n": n, "step_s": engine_step("gaussian_teacher_samples", runs, finite_steps, d, k,
                                           p, n) / runs, "gradient_error": gradient_error(n)}
            for n in n_values]
    c = float(np.exp(np.mean([np.log(r["gradient_error"]) + 0.5 * np.log(r["n"]) for r in rows])))
    per_sample = float(np.median([r["step_s"] / r["n"] for r in rows]))
    n_equal = (c / CLOSED_FORM_ERROR) ** 2
    return {"d": d, "k": k, "p": p, "runs": runs, "closed_step_s": closed, "rows": rows,
            "error_constant": c, "n_equal_accuracy": n_equal,
            "step_s_at_equal_accuracy": per_sample * n_equal,
            "break_even_n": closed / per_sample,
            "error_at_break_even": c / math.sqrt(closed / per_sample)}


def bench(networks: int = 500, k: int = 20, fused_steps: int = 200,
          engine_steps: tuple[int, int] = (100, 600), n_values: Sequence[int] = (1000, 10000, 100000),
          runs: int = 8, finite_steps: tuple[int, int] = (50, 250), repeats: int = 3
          ) -> dict[str, Any]:
    """Both parts of the module docstring."""
    with ForeignLoad() as foreign:
        part1 = batched(networks, k, fused_steps, repeats)
        part1["engine_step_s"] = engine_step("gaussian_teacher", networks, engine_steps, k, k, k,
                                             frozen=True)
        part2 = finite_data(n_values, runs, finite_steps, engine_steps)
    return {"name": "population", "networks": networks, "k": k, "fused_steps": fused_steps,
            "engine_steps": list(engine_steps), "batched": part1, "finite": part2,
            "foreign_cpu_s": foreign.value, "machine": machine_info()}


def table(r: dict[str, Any]) -> str:
    """The markdown tables of :func:`bench`'s result."""
    b, f = r["batched"], r["finite"]
    base, colt = b["numpy_step_s"], b.get("colt_step_s")
    rows = ([("(a0) numpy, the COLT 2021 code's operations, one network at a time", colt)]
            if colt else []) + [
            ("(a) numpy, one network at a time (baseline)", base),
            ("(b) one compiled step of all networks, called each step", b["stepwise_step_s"]),
            (f"(c) one compiled program of {r['fused_steps']} steps (fori_loop)", b["fused_step_s"]),
            (f"(d) as (c), the networks one at a time inside it (lax.map), {b['threads']} "
             "threads", b["mapped_step_s"]),
            ("(e) the engine (train, second layer frozen)", b["engine_step_s"])]
    lines = [f"{r['networks']} networks at k = {r['k']} (d = k, width k, output weights fixed, "
             f"teacher the identity), one GD step of every network, float64, best of 3 after a "
             f"compiling call; (a0), (c) and (d) agree with (a) to "
             f"{b['fused_vs_numpy_max_abs']:.1e} after {r['fused_steps']} steps.", "",
             "| variant | s per step (all networks) | us per network-step | speed-up vs (a) | "
             "speed-up vs (a0) | goal | met |", "|---|---:|---:|---:|---:|---:|:---:|"]
    for name, t in rows:
        ratio = base / t
        goal = name.startswith("(d)")
        versus_colt = f"{colt / t:.1f}x" if colt else "-"
        lines.append(f"| {name} | {t:.4g} | {1e6 * t / r['networks']:.3g} | {ratio:.1f}x | "
                     f"{versus_colt} | "
                     f"{f'>= {GOAL:g}x' if goal else ''} | "
                     f"{('yes' if ratio >= GOAL else 'no') if goal else ''} |")
    lines += ["", f"Closed form against finite data (d = {f['d']}, teacher k = {f['k']}, student "
              f"p = {f['p']}, {f['runs']} runs; engine time per network and step; gradient "
              f"error at the start, relative, mean of 5 draws):", "",
              "| data | s per network-step | gradient error |", "|---|---:|---:|",
              f"| population (closed form) | {f['closed_step_s']:.3g} | rounding (~1e-15) |"]
    lines += [f"| N = {row['n']} samples | {row['step_s']:.3g} | {row['gradient_error']:.3g} |"
              for row in f["rows"]]
    lines += ["", f"Fitted error {f['error_constant']:.3g} N^(-1/2): the closed form's accuracy "
              f"({CLOSED_FORM_ERROR:g}) needs N = {f['n_equal_accuracy']:.1e} samples, a step of "
              f"{f['step_s_at_equal_accuracy']:.1e} s per network "
              f"({f['step_s_at_equal_accuracy'] / f['closed_step_s']:.1e} x the closed form). "
              f"The finite-data step costs the closed form's at N = {f['break_even_n']:.0f}, "
              f"where its gradient error is {f['error_at_break_even']:.2g}."]
    return with_foreign_load(lines, r["foreign_cpu_s"])


def main(argv: list[str] | None = None, out: Path | None = None) -> dict[str, Any]:
    """Run alone: print the tables, write the raw numbers to ``--out``/population.json."""
    return run_with_options("population", __doc__, bench, table,
                            {"networks": 500, "fused_steps": 200}, argv, out)


if __name__ == "__main__":
    main(out=Path(__file__).resolve().parent / "out")
