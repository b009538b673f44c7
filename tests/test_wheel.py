"""The package as a user installs it: ``python -m build`` makes an sdist and, from it, a wheel;
the wheel installed into a fresh virtual environment, run from a folder outside the repository,
lists, writes and runs an example, loads the embedded MNIST subset, runs a quick reproduction
and cites it. Also: the version comes from one place, and every embedded data file ships with
its licence.

The fresh environment gets the dependencies already installed here (JAX, xarray, ...) without
downloading them again: a ``.pth`` file adds a folder of links to this environment's installed
packages, every one except shallowflow itself, so ``import shallowflow`` can only find the
installed wheel (asserted), and pip resolves the wheel's declared dependencies against them
(``--no-index``: nothing is fetched)."""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import check_reproduction_folder
from shallowflow import __version__
from shallowflow.cli.commands import app
from shallowflow.config import tomllib

pytestmark = pytest.mark.heavy  # make test-all and CI (pyproject.toml markers)

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("pyproject.toml", "README.md", "LICENSE", "src", "examples")
"""What the build reads (the package, its metadata, the examples the package links to)."""
DATA_SUFFIXES = {".npz", ".csv", ".gz", ".idx", ".npy", ".parquet", ".nc"}
QUICK = "town-fig4"
"""The fastest quick preset (about 11 s on 2 cores, bench/NOTES.md)."""


def test_the_version_comes_from_one_place():
    """pyproject reads ``shallowflow.__version__``; the command line prints it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "shallowflow.__version__"}
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"shallowflow {__version__}"
    assert (ROOT / "CHANGELOG.md").read_text().count(f"## {__version__}") == 1


def notices_missing(files: dict[str, str]) -> list[str]:
    """The data files of ``files`` (path -> text of the notices, '' for others) that no notice
    (``*NOTICE*.md``) in their folder names."""
    missing = []
    for path in files:
        if Path(path).suffix in DATA_SUFFIXES:
            folder = str(Path(path).parent)
            notices = [t for p, t in files.items() if str(Path(p).parent) == folder
                       and fnmatch.fnmatch(Path(p).name, "*NOTICE*.md")]
            if not any(Path(path).name in t for t in notices):
                missing.append(path)
    return missing


def test_every_embedded_data_file_has_its_licence():
    """Every data file the package data ships (pyproject's patterns) is named by a notice
    shipped beside it, and every notice is shipped."""
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["shallowflow"]
    package = ROOT / "src" / "shallowflow"
    shipped = {str(p.relative_to(package)): p for pattern in patterns for p in package.glob(pattern)
               if p.is_file()}
    assert any(Path(p).suffix in DATA_SUFFIXES for p in shipped)
    texts = {p: (f.read_text() if "NOTICE" in p else "") for p, f in shipped.items()}
    assert not notices_missing(texts)


# ------------------------------------------------------------------------- the installed wheel
@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(wheel, sdist) built by ``python -m build`` from a copy of the shipped files."""
    pytest.importorskip("build", reason="the `build` package (dev extra) builds the wheel")
    base = tmp_path_factory.mktemp("build")
    tree, dist = base / "tree", base / "dist"
    for name in SHIPPED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, symlinks=True, ignore=shutil.ignore_patterns(
                "__pycache__", "*.egg-info", "build", "dist"))
        else:
            tree.mkdir(exist_ok=True)
            shutil.copy2(source, tree / name)
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(tree)],
                          capture_output=True, text=True, env=_clean_env())
    if done.returncode and ("No matching distribution" in done.stdout + done.stderr
                            or "Could not find a version" in done.stdout + done.stderr):
        pytest.skip("the build backend (setuptools) could not be installed: no package index")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return next(dist.glob("*.whl")), next(dist.glob("*.tar.gz"))


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without what points at the repository's sources."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return {**env, **extra}


@pytest.fixture(scope="module")
def venv(built, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel installed and this environment's other
    packages linked in (never shallowflow: not its files, metadata or editable hooks)."""
    base = tmp_path_factory.mktemp("venv")
    env, deps = base / "env", base / "deps"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    deps.mkdir()
    for folder in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        for entry in Path(folder).iterdir():
            name = entry.name.lower()
            if ("shallowflow" in name or name.endswith(".pth")
                    or (deps / entry.name).exists()):
                continue
            (deps / entry.name).symlink_to(entry)
    python = env / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; "
                           "print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "_test_deps.pth").write_text(f"{deps}\n")
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                           "--no-index", "--quiet", str(built[0])],
                          capture_output=True, text=True, env=_clean_env())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return env


def _in(venv: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    """Run ``argv`` (a command of the environment's bin/) in ``cwd``, as a user would."""
    env = _clean_env(PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
                     VIRTUAL_ENV=str(venv))
    done = subprocess.run([str(venv / "bin" / argv[0]), *argv[1:]], cwd=cwd,
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, (argv, done.stdout[-3000:], done.stderr[-3000:])
    return done


@pytest.mark.slow
def test_the_wheel_and_sdist_hold_the_package_examples_and_licences(built):
    wheel, sdist = built
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        texts = {n: (z.read(n).decode() if "NOTICE" in n else "") for n in names}
    examples = {p.name for p in (ROOT / "examples").rglob("*") if p.is_file()}
    assert examples <= {Path(n).name for n in names if n.startswith("shallowflow/examples/")}
    assert not notices_missing(texts)
    assert any(n.endswith("licenses/LICENSE") for n in names), names
    assert any(n.endswith("licenses/src/shallowflow/data/MNIST_5K_NOTICE.md") for n in names)
    assert sdist.name == f"shallowflow-{__version__}.tar.gz"


@pytest.mark.slow
def test_the_installed_wheel_runs_outside_the_repository(venv, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    where = _in(venv, work, "python", "-c", "import importlib.metadata as m, shallowflow; "
                "print(shallowflow.__file__); print(shallowflow.__version__, "
                "m.version('shallowflow'))").stdout.split("\n")
    assert Path(where[0]).resolve().is_relative_to(venv.resolve()), where
    assert where[1].split() == [__version__, __version__]
    assert _in(venv, work, "shallowflow", "--version").stdout.strip() == \
        f"shallowflow {__version__}"

    listing = _in(venv, work, "shallowflow", "list").stdout
    assert QUICK in listing and "tiny_init" in listing

    _in(venv, work, "shallowflow", "example", "tiny_init", "--out", "tiny.toml")
    run = _in(venv, work, "shallowflow", "run", "tiny.toml", "--out", "r", "--quiet")
    assert "tiny-init: 1 run(s)" in run.stdout and (work / "r" / "results.nc").is_file()

    mnist = _in(venv, work, "python", "-c", "import numpy as np; "
                "from shallowflow.data.mnist import load_mnist; m = load_mnist(); "
                "print(*m.images.shape, *np.bincount(m.labels), "
                "int(m.images[m.labels == 5][0].sum()))").stdout
    # 500 images per digit; the first 5 is the official training set's first image (a 5)
    assert mnist.split() == ["5000", "28", "28", *["500"] * 10, "27525"]

    _in(venv, work, "shallowflow", "reproduce", QUICK, "--out", "rep", "--quiet")
    _, report = check_reproduction_folder(work / "rep")
    assert "## Cite" in report and f"`shallowflow cite {QUICK}`" in report
    cited = _in(venv, work, "shallowflow", "cite", QUICK).stdout
    assert "@misc{town2026mildly," in cited and "@software{jax2018github," in cited
