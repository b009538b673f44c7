"""``shallowflow bench``: measure this machine (the engine's batched throughput against numpy's
GEMM rates, a long tiny run against plain PyTorch), or ``python -m shallowflow.benchmarks.NAME``.

:mod:`.suite` holds the registry and runs the suite, :mod:`.command` is what the command line
calls, :mod:`.common` the shared helpers (machine info, timing, roofline, JSON output). The
development benchmarks (paper presets, the DPB Fig. 3 step study, executors, the GPU, ...) live in
the repository's bench/ (bench/bench_NAME.py; all of them: ``make bench``), on these helpers.
"""
