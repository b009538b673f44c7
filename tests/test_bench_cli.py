"""``shallowflow bench``: the benchmark registry, name checking, the tables' ratio columns, and a
quick run of the smallest benchmark (Algorithm 1, numpy only). No timed assertions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import bench_gpu as gpu
from dev_suite import BENCHMARKS, bench
from shallowflow.benchmarks import throughput, tiny

NAMES = ["throughput", "tiny", "reduced", "town_fig1", "limit_process", "dana_fig3", "presets",
         "onedim", "stationary", "startup", "executors", "gpu", "population"]


def test_list_names_and_titles() -> None:
    assert list(BENCHMARKS) == NAMES
    lines = bench(None, list_only=True).splitlines()
    assert [line.split()[0] for line in lines] == NAMES
    for line, bm in zip(lines, BENCHMARKS.values(), strict=True):
        assert line.endswith(bm.title)
    assert bench(["tiny", "reduced"], list_only=True).splitlines()[0].startswith("tiny ")


@pytest.mark.parametrize("list_only", [False, True])
def test_unknown_name_names_the_allowed_ones(tmp_path: Path, list_only: bool) -> None:
    with pytest.raises(ValueError, match="unknown benchmark 'nope'") as err:
        bench(["tiny", "nope"], list_only=list_only, out=tmp_path, max_wait=0)
    assert all(name in str(err.value) for name in NAMES)
    assert not any(tmp_path.iterdir())  # nothing ran


def _roofline(gflops: float) -> dict[str, float]:
    return {"gflops": gflops, "gflops_forward": gflops, "gflops_backward": gflops}


def test_throughput_table_has_the_ratio_to_numpy() -> None:
    engine = {"seconds_per_step": 0.02, "gflops": 30.0, "numpy_roofline": _roofline(40.0),
              "fraction_of_roofline": 0.75}
    result = {"config": {"runs": 64, "n": 1000, "d": 100, "p": 40, "steps": 300},
              "results": {"float64": engine}, "goal_fraction": 0.6, "foreign_load": 0.0}
    md = throughput.table(result)
    header = next(line for line in md.splitlines() if line.startswith("| dtype"))
    assert "| ratio |" in header
    assert "| float64 | 20.00 ms | 30.0 | 40.0 (40.0 / 40.0) | 75 % | >= 60 % | yes |" in md


def test_throughput_table_against_the_large_gemm_and_pytorch_per_core() -> None:
    """Ratios to the machine's large-GEMM rate and, per core, to the PyTorch loop: 30 GFLOP/s
    on 2 cores against 50 (60 %) and 15 per core against 10 (1.5x)."""
    engine = {"seconds_per_step": 0.02, "gflops": 30.0, "numpy_roofline": _roofline(40.0),
              "fraction_of_roofline": 0.75, "large_gemm_gflops": 50.0,
              "fraction_of_large_gemm": 0.6, "torch_loop_gflops_per_core": 10.0}
    result = {"config": {"runs": 64, "n": 1000, "d": 100, "p": 40, "steps": 300},
              "results": {"float64": engine}, "goal_fraction": 0.6, "goal_large_gemm": 0.85,
              "cores": 2, "foreign_load": 0.0}
    assert "| float64 | 50.0 | 60 % | >= 85 % | no | 15.0 | 10.0 | 1.50x |" in \
        throughput.table(result)


def test_large_gemm_and_pytorch_loop_rates_are_measured() -> None:
    from shallowflow.benchmarks.common import large_gemm_rate, torch_loop_rate

    assert large_gemm_rate(np.float64, size=64, repeats=1) > 0
    rate = torch_loop_rate(16, 4, 3, "float64", steps=3)
    assert rate is None or rate > 0


def test_tiny_table_speedup_against_pytorch_or_a_note() -> None:
    result = {"config": {"d": 2, "p": 10, "steps": 5, "lr": 1e-3, "dtype": "float64"},
              "engine": {"seconds": 1.0, "seconds_compile_call": 2.0, "loss_end": 0.5},
              "torch": None, "foreign_load": None}
    assert "PyTorch baseline skipped: torch is not installed" in tiny.table(result)
    result.update(torch={"version": "2", "threads": 2, "seconds": 12.0, "loss_end": 0.5},
                  speedup=12.0, loss_abs_diff=0.0, param_max_abs_diff=0.0)
    assert "| speed-up vs PyTorch | 12.0x | >= 10x | yes |" in tiny.table(result)


def test_quick_run_of_the_smallest_benchmark(tmp_path: Path) -> None:
    pieces: list[str] = []
    text = bench(["limit_process"], out=tmp_path / "res", max_wait=0, quick=True,
                 echo=pieces.append)
    assert "## Algorithm 1 (limit process)" in text
    assert "| n | m | X | jumps | seconds | goal | met |" in text
    assert "Quick mode" in text and len(pieces) == 3  # header, the section, the total
    raw = json.loads((tmp_path / "res" / "limit_process.json").read_text())
    assert [row["n"] for row in raw["rows"]] == [1000, 200]
    assert raw["machine"]["cpu_count"] >= 1


def test_startup_bench_runs_the_processes_it_names(monkeypatch) -> None:
    """The start-up benchmark's processes (not run here: tests/test_compile_cache.py runs real
    cold and warm processes): without the cache, then cold on a new folder, then warm on the
    same folder, for the 1-step and the full run; the table names each (no timed assertion)."""
    import bench_startup as startup
    from shallowflow.runtime.compile_cache import ENV

    calls: list[tuple[list[str], str | None]] = []

    def fake(cmd: list[str], env: dict[str, str]) -> float:
        calls.append((cmd, env.get(ENV)))
        return 1.0 + len(calls)

    monkeypatch.setattr(startup, "_timed", fake)
    r = startup.bench(p=50, steps=3, repeats=1)
    runs = [(cmd, cache) for cmd, cache in calls if "run" in cmd]
    assert len(runs) == 6
    for first in (0, 3):
        (_, off), (_, cold), (_, warm) = runs[first:first + 3]
        assert off == "off" and cold not in (None, "off") and warm == cold
    assert runs[0][0][runs[0][0].index("run") + 1].endswith(".toml")
    for part in ("one_step", "run"):
        assert set(r[part]) == {"off", "cold", "warm"}
    text = startup.table(r)
    assert "warm cache" in text and "1 step" in text


def test_executors_bench_runs_and_tabulates(tmp_path: Path) -> None:
    """The many-networks benchmark at a tiny size: every executor ran all networks with equal
    results (no timed assertion)."""
    pytest.importorskip("dask.distributed")
    import bench_executors as executors

    r = executors.bench(networks=16, steps=5, max_batch=4, fig4=0, overhead_batches=3)
    assert r["sweep"]["equal_results"] is True
    for key in ("local", "dask_1", "dask_2"):
        assert r["sweep"][key]["networks"] == 16 and r["sweep"][key]["resume_s"] >= 0
    assert r["overhead"]["batches"] == 2
    text = executors.table(r)
    assert "2 workers" in text and "ms per batch" in text
    with pytest.raises(ValueError, match="--only"):
        executors.bench(only="ray")


def test_benchmark_options_refuse_bad_values_before_any_work(capsys) -> None:
    """An unknown dana-fig4 preset is refused before the sweeps run; the dana_fig3 script's
    --dtype names the option and what is allowed (argparse: exit code 2)."""
    import bench_dana_fig3 as dana_fig3
    import bench_executors as executors

    with pytest.raises(ValueError, match=r"--fig4-preset.*quick.*got 'huge'"):
        executors.bench(networks=10**9, only="local", fig4_preset="huge")
    with pytest.raises(SystemExit) as exit_:
        dana_fig3.main(["--dtype", "float16"])
    assert exit_.value.code == 2
    assert "--dtype" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        dana_fig3.main(["--rounds", "-1"])
    assert exit_.value.code == 2
    assert "--rounds: must be >= 0, got -1" in capsys.readouterr().err


def test_dana_fig3_table_against_the_large_gemm_and_pytorch_per_core() -> None:
    """20 useful GFLOP/s on 2 cores: 40 % of a 50 GFLOP/s large GEMM; 10 per core against a
    PyTorch loop's 8: 1.25x."""
    import bench_dana_fig3 as dana_fig3

    row = {"n": 100, "p": 10, "converged": 1.0, "mean_steps": 5, "budget": 10, "wall_s": 1.0}
    r = {"ns": [100], "runs": 4, "rebatch": {"rows": [row], "wall_s": 1.0, "gflops": 20.0},
         "no_rebatch": {"rows": [row], "wall_s": 1.0, "gflops": 20.0}, "saving": 1.0,
         "roofline_gflops": 25.0, "roofline_shape": [4, 100, 100, 10],
         "large_gemm_gflops": 50.0, "torch_loop_gflops_per_core": 8.0, "cores": 2,
         "foreign_cpu_s": 0.0}
    text = dana_fig3.table(r)
    assert "80% of the roofline" in text and "GFLOP/s): 40% (goal 85%)" in text
    assert "products alone" not in text  # results written before that reference existed
    text = dana_fig3.table({**r, "xla_products_gflops": 40.0})  # 80 % of 50; 20 / 40 = 50 %
    assert "40.0 GFLOP/s, 80% of the large GEMM; the engine reaches 50% of it" in text
    assert "Per core 10.0 GFLOP/s, against 8.0" in text and "1.25x" in text
    assert "per-run data, float64" in text
    assert "per-run data, float32" in dana_fig3.table({**r, "dtype": "float32"})
    # the step alone at its own n, against the PyTorch loop at that n: 45 / 2 / 9 = 2.5x
    text = dana_fig3.table({**r, "step_gflops": {"sharded": 45.0, "one_thread": 30.0},
                            "step_n": 3000, "torch_loop_step_n": 9.0})
    assert "runs at n = 3000" in text and "45.0 GFLOP/s with a shard" in text
    assert "90% of the large GEMM, 2.50x the PyTorch loop per core at that n" in text
    # rounds of the step alone and the large GEMM in turn: 45 / 50 = 90 %, 30 / 60 = 50 %
    turns = [{"step_gflops": 45.0, "large_gemm_gflops": 50.0},
             {"step_gflops": 30.0, "large_gemm_gflops": 60.0}]
    text = dana_fig3.table({**r, "step_n": 3000, "alternated": turns})
    assert "n = 3000 and the large GEMM measured in turn, 2 round(s)" in text
    assert "45.0 / 50.0 GFLOP/s (90%), 30.0 / 60.0 GFLOP/s (50%)" in text
    assert "from 50% to 90% of the large GEMM" in text
    assert "in turn" not in dana_fig3.table({**r, "alternated": []})


def test_gpu_table_ratios_and_its_skip_on_the_cpu() -> None:
    """The GPU table's ratios: 40 of a 50 GFLOP/s large GEMM is 80 %, 4x a 10 GFLOP/s PyTorch
    loop; on a machine whose JAX device is the CPU the benchmark measures nothing."""
    row = {"large_gemm_gflops": 50.0, "dpb_step_gflops": {25: 40.0}, "shared_gflops": {64: 20.0},
           "torch_loop_gflops": 10.0}
    result = {"device": "H100", "dpb_shape": [3000, 100, 39], "shared_shape": [1000, 100, 40],
              "steps": 300, "gemm_size": 8192, "results": {"float64": row}}
    md = gpu.table(result)
    assert "| float64 | 50 | DPB step | 25 | 40 | 80 % | 4.0x |" in md
    assert "| float64 | 50 | shared | 64 | 20 | 40 % | 2.0x |" in md
    skipped = gpu.bench(**gpu.QUICK)
    assert skipped["skipped"] and "results" not in skipped
    assert gpu.table(skipped).startswith("GPU benchmark skipped")


def test_the_package_measures_the_machine_and_names_where_the_others_went(tmp_path: Path) -> None:
    """``shallowflow bench`` runs the package's benchmarks (the machine measurement); a
    development benchmark is refused, before anything runs, with the script that runs it; every
    development benchmark is one of bench/ (and the package imports no reproduction)."""
    from typer.testing import CliRunner

    from shallowflow.benchmarks import suite
    from shallowflow.cli.commands import app

    assert list(suite.BENCHMARKS) == ["throughput", "tiny"]
    assert [n for n in BENCHMARKS if n not in suite.BENCHMARKS] == list(suite.DEVELOPMENT)
    listed = CliRunner().invoke(app, ["bench", "--list"])
    assert listed.exit_code == 0
    assert [line.split()[0] for line in listed.output.splitlines()] == ["throughput", "tiny"]
    moved = CliRunner().invoke(app, ["bench", "tiny", "dana_fig3", "--out", str(tmp_path / "r")])
    assert moved.exit_code == 2
    assert "dana_fig3 is a development benchmark: run bench/bench_dana_fig3.py" in \
        " ".join(moved.output.split())
    assert not (tmp_path / "r").exists()
    package = Path(suite.__file__).parent
    assert not any("shallowflow.reproductions" in f.read_text() for f in package.glob("*.py"))
