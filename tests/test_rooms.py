"""The shape of the house (docs/architecture.md, "Rooms"), counted from the code's own imports and
files: rooms import only rooms below their own, few modules stay loose at the top, no two modules
share a basename (except the reproductions' figN.py), no module is long, and importing the package
loads nothing heavy."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "shallowflow"

LEVELS = {
    "ground": 0, "analysis": 1, "runtime": 1, "model": 2, "data": 2, "stationary": 3,
    "dynamics": 4, "theory": 5, "config": 6, "training": 7, "plots": 8, "reproductions": 9,
    "benchmarks": 9, "front": 10, "cli": 10, "output": 0,
}
"""The rooms from the bottom up: a module may import its own room and the rooms below it.
Ground is the package root and the loose modules that everything stands on; the front doors
are the loose modules a user calls (they may import anything)."""
GROUND = {"shallowflow", "errors", "machine", "precision", "store", "citations"}
FRONT = {"runner", "sweep", "demo"}
MAX_LOOSE = 8
MAX_LINES = 500


def modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def room(name: str) -> str:
    parts = name.split(".")
    if len(parts) == 1:
        return "ground"
    if len(parts) == 2 and not (SRC / parts[1]).is_dir():
        return "ground" if parts[1] in GROUND else "front" if parts[1] in FRONT else parts[1]
    return parts[1]


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The shallowflow modules ``name`` imports (anywhere in it, TYPE_CHECKING blocks too)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module in known:
                found.add(node.module)
            for alias in node.names:
                if f"{node.module}.{alias.name}" in known:
                    found.add(f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in known}
    return found - {name}


def test_no_room_imports_a_room_above_its_own():
    known = modules()
    rooms = {room(n) for n in known}
    assert rooms <= set(LEVELS), sorted(rooms - set(LEVELS))
    wrong = []
    for name, path in known.items():
        for target in imports(name, path, known):
            if LEVELS[room(target)] > LEVELS[room(name)]:
                wrong.append(f"{name} ({room(name)}) imports {target} ({room(target)})")
    assert not wrong, "\n".join(sorted(wrong))


def test_few_modules_are_loose_at_the_top():
    loose = sorted(p.stem for p in SRC.glob("*.py") if p.stem != "__init__")
    assert len(loose) <= MAX_LOOSE, loose
    assert set(loose) <= GROUND | FRONT, sorted(set(loose) - GROUND - FRONT)


def test_no_two_modules_share_a_basename():
    names = Counter(p.name for p in SRC.rglob("*.py") if p.name != "__init__.py"
                    and not (p.parent.parent.name == "reproductions" and p.stem.startswith("fig")))
    assert not [n for n, c in names.items() if c > 1], sorted(n for n, c in names.items() if c > 1)


def test_no_module_is_long():
    long = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, long


@pytest.mark.parametrize("heavy", ["matplotlib", "dask", "shallowflow.reproductions.base"])
def test_importing_the_package_loads_nothing_heavy(heavy):
    code = ("import sys, shallowflow; import jax; "
            f"print({heavy!r} in sys.modules, jax.config.jax_enable_x64)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"], out.stdout


def test_the_public_face_resolves_every_name_lazily():
    """Every public name is listed in ``__all__``, imported only when used, and is the object of
    the module that owns it."""
    import importlib

    import shallowflow

    for name, target in shallowflow._PUBLIC.items():
        module, _, attribute = target.partition(":")
        assert name in shallowflow.__all__ and name in dir(shallowflow)
        assert getattr(shallowflow, name) is getattr(importlib.import_module(module), attribute)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        shallowflow.nope  # noqa: B018
    code = "import sys, shallowflow; print('shallowflow.training.entry' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"]
