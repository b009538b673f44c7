"""The modules of shallowflow import each other without a cycle: every import statement (absolute
or relative, at module level, inside functions, under ``TYPE_CHECKING``) read with ``ast``, where a
package's ``__init__`` importing its own submodules (re-export) is not an edge."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules(src: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's ``__init__``), for every module under ``src``."""
    found = {}
    for path in sorted((src / "shallowflow").rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def _owner(name: str, modules: dict[str, tuple[Path, bool]]) -> str | None:
    """The module a dotted name lives in (the longest prefix that is a module), if any."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(name: str, path: Path, package: bool, modules: dict[str, tuple[Path, bool]]) -> set[str]:
    """The shallowflow modules that module ``name`` imports, anywhere in its file."""
    here = name if package else name.rpartition(".")[0]
    targets: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(_owner(alias.name, modules) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package ``level - 1`` steps above this one
                base = here.split(".")[:len(here.split(".")) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:  # ``from pkg import sub`` imports the submodule pkg.sub
                full = f"{origin}.{alias.name}"
                targets.add(full if full in modules else _owner(origin, modules))
    return {t for t in targets
            if t is not None and t != name and not (package and t.startswith(name + "."))}


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    """Each shallowflow module -> the shallowflow modules it imports."""
    modules = _modules(src)
    return {name: _imports(name, path, package, modules) for name, (path, package) in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of nodes (the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_graph_sees_every_kind_of_import(tmp_path):
    """The reader itself: absolute, relative, ``from pkg import submodule``, function-level and
    ``TYPE_CHECKING`` imports are edges; a package's import of its own submodules is not."""
    pkg = tmp_path / "shallowflow"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from shallowflow import a\n",
        "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from shallowflow.b import X\n",
        "b.py": "def f():\n    from . import c\n",
        "c.py": "from shallowflow.sub import d\n",
        "sub/__init__.py": "from .d import Y\n",
        "sub/d.py": "from ..a import Z\nimport shallowflow.b\n",
    }
    for rel, text in files.items():
        (pkg / rel).write_text(text)
    graph = import_graph(tmp_path)
    assert graph == {"shallowflow": set(), "shallowflow.a": {"shallowflow.b"},
                     "shallowflow.b": {"shallowflow.c"}, "shallowflow.c": {"shallowflow.sub.d"},
                     "shallowflow.sub": set(), "shallowflow.sub.d": {"shallowflow.a", "shallowflow.b"}}
    assert find_cycle(graph) == ["shallowflow.a", "shallowflow.b", "shallowflow.c", "shallowflow.sub.d",
                                 "shallowflow.a"]


def test_no_import_cycles():
    graph = import_graph()
    assert "shallowflow.model.network" in graph and "shallowflow.dynamics.step" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
