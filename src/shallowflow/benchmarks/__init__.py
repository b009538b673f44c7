"""Benchmarks of the engine (throughput against numpy's GEMM rate, a tiny run against plain
PyTorch, the reduced engine, Town et al. Fig. 1, Algorithm 1, the DPB Fig. 3 protocol and the
reproduction presets): ``shallowflow bench``, ``make bench`` (bench/run_all.py, which also writes
bench/RESULTS.md) or ``python -m shallowflow.benchmarks.NAME``.

:mod:`.suite` holds the registry and runs the suite, :mod:`.command` is what the command line
calls, :mod:`.common` the shared helpers (machine info, timing, roofline, JSON output).
"""
