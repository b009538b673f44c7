"""Same numbers before and after a change: compare the claims of two sets of reproductions.

    # outputs of the last landed commit (a second checkout with its own venv) and of this tree
    OLD_VENV/bin/shallowflow reproduce all --out runs/before --quiet
    .venv/bin/shallowflow reproduce all --out runs/after --quiet
    .venv/bin/python bench/compare_reproductions.py runs/before runs/after

or ``--run runs/after`` to produce the second set with this tree first. For every reproduction
folder present in both, every claim is compared field by field (id, verdict, reference, source, role,
measured value, interval, variants, notes): numbers must agree to ``--rtol`` (default 0: bit for
bit as printed in claims.json), text exactly. Prints one line per reproduction and each
difference; exits 1 if any claim differs.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any


def differences(old: Any, new: Any, rtol: float, where: str = "") -> list[str]:
    """Paths at which two JSON values differ (numbers within ``rtol`` count as equal)."""
    if isinstance(old, bool) or isinstance(new, bool):
        return [] if old == new else [f"{where}: {old!r} -> {new!r}"]
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        same = old == new or (math.isfinite(old) and math.isfinite(new)
                              and abs(old - new) <= rtol * max(abs(old), abs(new)))
        return [] if same else [f"{where}: {old!r} -> {new!r}"]
    if isinstance(old, dict) and isinstance(new, dict):
        out = [f"{where}.{k}: only in {'old' if k in old else 'new'}"
               for k in sorted(set(old) ^ set(new))]
        for k in sorted(set(old) & set(new)):
            out += differences(old[k], new[k], rtol, f"{where}.{k}")
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{where}: length {len(old)} -> {len(new)}"]
        return [d for i, (a, b) in enumerate(zip(old, new, strict=True))
                for d in differences(a, b, rtol, f"{where}[{i}]")]
    return [] if old == new else [f"{where}: {old!r} -> {new!r}"]


def compare(before: Path, after: Path, rtol: float = 0.0) -> int:
    """Print the comparison of every reproduction in both folders; return the number that differ."""
    names = sorted(p.name for p in before.iterdir() if (p / "claims.json").is_file()
                   and (after / p.name / "claims.json").is_file())
    differing = 0
    for name in names:
        old = {c["id"]: c for c in json.loads((before / name / "claims.json").read_text())}
        new = {c["id"]: c for c in json.loads((after / name / "claims.json").read_text())}
        diffs = differences(old, new, rtol, name)
        status = "identical" if not diffs else f"{len(diffs)} difference(s)"
        print(f"{name:18s} {len(old):2d} claims  {status}")
        for d in diffs:
            print(f"    {d}")
        differing += bool(diffs)
    missing = sorted(p.name for p in before.iterdir() if (p / "claims.json").is_file()
                     and p.name not in names)
    if missing:
        print(f"not in {after}: {', '.join(missing)}")
    return differing


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path, help="folder of reproduction folders (old code)")
    ap.add_argument("after", type=Path, help="folder of reproduction folders (new code)")
    ap.add_argument("--run", action="store_true",
                    help="first run every quick preset of this tree into AFTER")
    ap.add_argument("--rtol", type=float, default=0.0, help="relative tolerance on numbers")
    args = ap.parse_args(argv)
    if args.run:
        cli = Path(sys.executable).with_name("shallowflow")
        subprocess.run([str(cli), "reproduce", "all", "--out", str(args.after), "--quiet"],
                       check=True)
    return 1 if compare(args.before, args.after, args.rtol) else 0


if __name__ == "__main__":
    sys.exit(main())
