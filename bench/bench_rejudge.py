"""Wall time of re-judging saved reproductions (`shallowflow reproduce NAME --from DIR --out NEW`):
the whole command in a fresh process (start-up, reading results.nc, judging the claims, drawing
every figure, writing the folder), one saved folder after the other.

    .venv/bin/shallowflow reproduce all --out runs/quick --quiet     # once: the saved folders
    .venv/bin/python bench/bench_rejudge.py runs/quick [--keep runs/rejudged]

Prints one line per reproduction (seconds) and the largest. With ``--keep`` the re-judged
folders stay there (``bench/compare_reproductions.py runs/quick runs/rejudged`` then says
whether every claim came out the same).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def rejudge_seconds(source: Path, out: Path) -> float:
    """Seconds of `shallowflow reproduce NAME --from source --out out --quiet` (NAME: the
    folder's name), as a user waits for it."""
    exe = Path(sys.executable).parent / "shallowflow"
    start = time.perf_counter()
    subprocess.run([str(exe), "reproduce", source.name, "--from", str(source), "--out", str(out),
                    "--quiet"], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("saved", type=Path, help="a folder of saved reproduction folders")
    ap.add_argument("--keep", type=Path, help="a new folder to keep the re-judged folders in")
    args = ap.parse_args()
    folders = sorted(p for p in args.saved.iterdir() if (p / "claims.json").is_file())
    times = {}
    with tempfile.TemporaryDirectory() as tmp:
        into = args.keep or Path(tmp)
        into.mkdir(parents=True, exist_ok=args.keep is None)
        for folder in folders:
            times[folder.name] = rejudge_seconds(folder, into / folder.name)
            print(f"{folder.name:22s} {times[folder.name]:6.1f} s", flush=True)
    worst = max(times, key=times.get)
    print(f"{len(times)} reproductions; largest {times[worst]:.1f} s ({worst})")


if __name__ == "__main__":
    main()
