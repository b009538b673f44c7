"""The persistent compilation cache (shallowflow.runtime.compile_cache): where it lives, that it can be
switched off, and that a process reading programs another process compiled gives the same
numbers bit for bit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import xarray as xr

from conftest import TINY_EXPERIMENT
from shallowflow.runtime import compile_cache

EXE = str(Path(sys.executable).parent / "shallowflow")


def test_cache_folder_per_machine_type(monkeypatch, tmp_path):
    kind = compile_cache.machine_type()
    assert kind == compile_cache.machine_type() and "/" not in kind and " " not in kind
    monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "c"))
    assert compile_cache.folder() == tmp_path / "c" / kind
    monkeypatch.setenv(compile_cache.ENV, "off")
    assert compile_cache.folder() is None
    monkeypatch.delenv(compile_cache.ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert compile_cache.folder() == tmp_path / "xdg" / "shallowflow" / "xla" / kind


def run(tmp_path: Path, name: str, cache: str) -> xr.Dataset:
    config = tmp_path / "tiny.toml"
    config.write_text(TINY_EXPERIMENT.replace("steps = 5", "steps = 300"))
    env = {**os.environ, compile_cache.ENV: cache}
    done = subprocess.run([EXE, "run", str(config), "--out", str(tmp_path / name), "--quiet"],
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with xr.open_dataset(tmp_path / name / "results.nc") as ds:
        return ds.load()


def test_a_warm_cache_gives_the_same_numbers(tmp_path):
    """Cold (an empty cache folder), warm (programs read back) and without the cache: the same
    records bit for bit; the first process filled the folder."""
    cache = tmp_path / "cache"
    cold = run(tmp_path, "cold", str(cache))
    files = list(cache.rglob("*"))
    assert any(f.is_file() for f in files)
    warm = run(tmp_path, "warm", str(cache))
    assert sorted(cache.rglob("*")) == sorted(files)  # nothing new to compile
    off = run(tmp_path, "off", "off")
    for name in ("loss", "a", "neuron_norm"):
        assert (cold[name].values == warm[name].values).all(), name
        assert (cold[name].values == off[name].values).all(), name
