"""The reproduction catalogue is data: looking a name up imports exactly that reproduction's
module (and the shared helpers it uses), and importing the package imports none."""

from __future__ import annotations

import json
import subprocess
import sys

from shallowflow.reproductions import catalogue, lookup
from shallowflow.reproductions.index import PAPERS

NAMES = ["bf-alignment", "bf-fig2", "bf-fig3", "bf-init", "dana-fig2", "dana-fig3", "dana-fig4",
         "dana-fig5", "dana-fig6", "mmv-alignment-time", "mmv-fig10", "mmv-fig11", "mmv-fig12",
         "mmv-fig5", "mmv-fig6", "mmv-two-point", "population-limit", "safran-minima",
         "town-convergence",
         "town-fig1", "town-fig3",
         "town-fig4", "town-fig5", "town-fig6"]


def _modules() -> dict[str, str]:
    """name -> the module its catalogue entry names."""
    targets = {}
    for paper in PAPERS:
        package = __import__(f"shallowflow.reproductions.{paper}", fromlist=["REPRODUCTIONS"])
        targets.update({name: t.partition(":")[0] for name, t in package.REPRODUCTIONS.items()})
    return targets


def _imported(code: str) -> list[str]:
    """The reproduction modules of the catalogue that a fresh interpreter running ``code`` has
    imported."""
    report = ("import json, sys; print(json.dumps(sorted(m for m in sys.modules if m in "
              f"{sorted(set(_modules().values()))!r})))")
    out = subprocess.run([sys.executable, "-c", f"{code}\n{report}"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])


def test_catalogue_lists_the_names_in_order_without_importing_them():
    assert list(catalogue()) == NAMES
    assert _imported("import shallowflow.reproductions as r; list(r.catalogue())") == []


def test_importing_shallowflow_imports_no_reproduction():
    code = ("import json, sys, shallowflow; print(json.dumps([m for m in sys.modules "
            "if m.startswith('shallowflow.reproductions')]))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    assert json.loads(out.splitlines()[-1]) == []


def test_lookup_imports_exactly_its_module():
    """Every name in turn, in one fresh interpreter: looking a name up adds exactly its own
    module to the catalogue's modules imported so far (one that imported another name's module
    would add two; the names' modules are distinct, so each is new when its turn comes)."""
    code = ("import json, sys\nfrom shallowflow.reproductions import lookup\n"
            f"mods = {sorted(set(_modules().values()))!r}\nadded = {{}}\n"
            f"for name in {NAMES!r}:\n"
            "    before = {m for m in mods if m in sys.modules}\n"
            "    lookup(name)\n"
            "    added[name] = sorted({m for m in mods if m in sys.modules} - before)\n"
            "print(json.dumps(added))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    assert json.loads(out.splitlines()[-1]) == {name: [_modules()[name]] for name in NAMES}


def test_every_entry_holds_the_reproduction_of_its_name():
    assert all(lookup(name).name == name for name in NAMES)
    assert all(rep.name == name for name, rep in catalogue().items())
