"""The command line: ``shallowflow run | sweep | reproduce | plot | demo | list | bench``."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated, Optional

import typer

from shallowflow.progress import console

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Simulate, measure and predict how one-hidden-layer ReLU networks learn.")

@app.callback()
def _main() -> None:
    """Simulate, measure and predict how one-hidden-layer ReLU networks learn."""
    import matplotlib

    from shallowflow import enable_float64

    # SIGTERM (kill, a batch scheduler) unwinds like Ctrl-C, so temporary output folders are
    # removed and nothing half-written is left behind
    signal.signal(signal.SIGTERM, _terminate)
    enable_float64()  # float64 is the default precision of every run
    matplotlib.use("Agg")  # figures are written to files; no display needed


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


SetOption = Annotated[Optional[list[str]],  # noqa: UP045 (typer needs Optional)
                      typer.Option("--set", "-s", help="override a field: key.path=value")]


def _fail(err: Exception) -> None:
    console.print(f"[bold red]error:[/] {err}", highlight=False)
    raise typer.Exit(2)


def _user_errors() -> tuple[type[Exception], ...]:
    from shallowflow.config import ConfigError
    from shallowflow.data.validate import DataError
    from shallowflow.store import OutputExistsError

    return (ConfigError, DataError, OutputExistsError, FileNotFoundError, ValueError)


@app.command()
def run(
    config: Annotated[Path, typer.Argument(help="experiment file (.toml or .yaml)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="run directory to create")],
    set_: SetOption = None,
    overwrite: Annotated[bool, typer.Option(help="replace an existing run directory")] = False,
    quiet: Annotated[bool, typer.Option(help="no progress bar")] = False,
) -> None:
    """Train an experiment and write its run directory (config, provenance, results.nc, ...)."""
    try:
        from shallowflow.config import load_experiment
        from shallowflow.runner import run_experiment

        exp = load_experiment(config, set_ or [])
        ds = run_experiment(exp, out, overwrite=overwrite, show_progress=not quiet)
    except _user_errors() as err:
        _fail(err)
        return
    for note in filter(None, ds.attrs.get("notes", "").split("\n")):
        console.print(f"[cyan]note:[/] {note}", highlight=False)
    if "certificate" in ds.attrs:
        console.print(ds.attrs["certificate"], highlight=False)
    loss = ds["loss"].values
    console.print(
        f"{exp.name}: {ds.sizes['run']} run(s), {int(ds.step[-1])} steps (flow time "
        f"{float(ds.time[-1]):g}); loss {float(loss[:, 0].mean()):.4g} -> "
        f"{float(loss[:, -1].mean()):.4g} (mean over runs); stopped {int(ds.stopped.sum())}, "
        f"diverged {int(ds.diverged.sum())}. Written to {out}", highlight=False)


@app.command()
def sweep(
    spec: Annotated[Path, typer.Argument(help="sweep file (.toml or .yaml)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="sweep folder")],
    resume: Annotated[bool, typer.Option(help="continue a sweep folder, skipping done batches")]
    = False,
    executor: Annotated[str, typer.Option(help="local or dask")] = "local",
    address: Annotated[Optional[str], typer.Option(help="dask scheduler address")] = None,  # noqa: UP045
    set_: SetOption = None,
    quiet: Annotated[bool, typer.Option(help="no progress bar")] = False,
) -> None:
    """Run a grid of experiments in batches of equal shapes; resumable after a crash."""
    try:
        from shallowflow.sweep import load_sweep, run_sweep

        if executor not in ("local", "dask"):
            raise ValueError(f"--executor: must be 'local' or 'dask', got {executor!r}")
        sw = load_sweep(spec, set_ or [])
        table = run_sweep(sw, out, resume=resume, executor=executor,  # type: ignore[arg-type]
                          address=address, show_progress=not quiet)
    except _user_errors() as err:
        _fail(err)
        return
    console.print(f"{sw.name}: {len(sw.points)} grid point(s), {len(table)} run(s); "
                  f"summary in {out / 'summary.parquet'}", highlight=False)


@app.command()
def reproduce(
    name: Annotated[str, typer.Argument(help="reproduction name (see `shallowflow list`), or 'all'")],
    out: Annotated[Path, typer.Option("--out", "-o", help="folder to create (one subfolder per "
                                                          "reproduction with 'all')")],
    preset: Annotated[str, typer.Option(help="quick (minutes on 2 cores) or paper (paper sizes)")]
    = "quick",
    from_: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--from", help="a saved reproduction folder: judge and draw it again, no training")]
    = None,
    set_: SetOption = None,
    overwrite: Annotated[bool, typer.Option(help="replace an existing folder")] = False,
    quiet: Annotated[bool, typer.Option(help="no progress bar")] = False,
) -> None:
    """Run a paper experiment: figures, claims.json (verdict per claim) and report.md; with
    --from, re-judge and redraw a saved one in seconds."""
    try:
        from shallowflow.reproductions import catalogue, rejudge, run_reproduction

        if from_ is not None and (name == "all" or set_):
            raise ValueError("--from: re-judges one saved reproduction as it was run; give one "
                             "NAME and no --set")
        names = list(catalogue()) if name == "all" else [name]
        for item in names:
            folder = out / item if name == "all" else out
            if from_ is not None:
                console.print(f"[bold]{item}[/] (re-judged from {from_})", highlight=False)
                _, claims = rejudge(item, from_, folder, overwrite=overwrite)
            else:
                console.print(f"[bold]{item}[/] (preset {preset})", highlight=False)
                _, claims = run_reproduction(item, folder, preset, set_ or [],
                                             overwrite=overwrite, show_progress=not quiet)
            for c in claims:
                console.print(f"  {c.verdict:15s} {c.id}: measured {c.measured}", highlight=False)
            console.print(f"  report: {folder / 'report.md'}", highlight=False)
    except _user_errors() as err:
        _fail(err)


@app.command()
def plot(
    run_dir: Annotated[Path, typer.Argument(help="a run directory")],
    probes: Annotated[str, typer.Option(help="comma-separated probe names")]
    = "loss,pl_curvature,balance_drift",
    out: Annotated[Optional[Path], typer.Option(help="PNG file (default RUN_DIR/probes.png)")]  # noqa: UP045
    = None,
) -> None:
    """Draw recorded probes of a run directory against flow time."""
    try:
        from shallowflow.plots import plot_probes
        from shallowflow.store import load_run

        ds = load_run(run_dir)
        fig = plot_probes(ds, [p.strip() for p in probes.split(",") if p.strip()])
        target = out or run_dir / "probes.png"
        fig.savefig(target, dpi=120)
    except _user_errors() as err:
        _fail(err)
        return
    console.print(f"figure written to {target}", highlight=False)


@app.command()
def demo(
    out: Annotated[Path, typer.Option("--out", "-o")] = Path("runs/demo"),
    overwrite: Annotated[bool, typer.Option(help="replace an existing folder")] = False,
    quiet: Annotated[bool, typer.Option(help="no progress bar")] = False,
) -> None:
    """The main demo: local PL curvature on orthogonal data, from order 1/n to 1/sqrt(n)."""
    try:
        from shallowflow.demo import run_demo

        summary = run_demo(out, overwrite=overwrite, show_progress=not quiet)
    except _user_errors() as err:
        _fail(err)
        return
    console.print(summary, highlight=False)
    console.print(f"Figure and data in {out}/", highlight=False)


@app.command(name="list")
def list_() -> None:
    """List data kinds, initialisation schemes, losses, probes and example configs."""
    import inspect

    from shallowflow.config import DATA_KINDS, INIT_SCHEMES
    from shallowflow.losses import LOSS_NAMES
    from shallowflow.probes import PROBES

    for title, registry in (("data kinds", DATA_KINDS), ("init schemes", INIT_SCHEMES)):
        console.print(f"[bold]{title}:[/]")
        for name, spec in registry.items():
            doc = (inspect.getdoc(spec) or "").split("\n")[0]
            console.print(f"  {name:14s} {doc}", highlight=False)
    console.print("[bold]losses:[/] " + ", ".join(LOSS_NAMES))
    console.print("[bold]probes:[/]")
    for p in PROBES.values():
        console.print(f"  {p.name:14s} {p.description}", highlight=False)
    from shallowflow.reproductions import catalogue

    console.print("[bold]reproductions:[/] (shallowflow reproduce NAME --preset quick|paper)")
    for rep in catalogue().values():
        console.print(f"  {rep.name:16s} {rep.title}", highlight=False)
    examples = Path.cwd() / "examples"
    if examples.is_dir():
        console.print("[bold]examples:[/] " + ", ".join(sorted(f.name for f in
                                                              examples.glob("*.toml"))))


@app.command(name="bench")
def bench_(
    names: Annotated[Optional[list[str]],  # noqa: UP045
                     typer.Argument(help="benchmarks to run (default: the whole suite)")] = None,
    list_only: Annotated[bool, typer.Option("--list", help="list the benchmarks")] = False,
    out: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--out", "-o", help="folder for the raw JSON (default ./bench-results)")] = None,
    max_wait: Annotated[float, typer.Option(
        help="seconds to wait before each benchmark for a quiet machine")] = 120.0,
    quick: Annotated[bool, typer.Option(
        help="small sizes (seconds); numbers not comparable with the full sizes")] = False,
) -> None:
    """Measure this machine: run the benchmark suite (or NAMES) and print the tables with their
    ratios against numpy's large-GEMM rate and the plain PyTorch loop."""
    try:
        from shallowflow.benchmarks.command import bench

        bench(names, list_only, out, max_wait, quick, echo=typer.echo)
    except ValueError as err:
        _fail(err)


if __name__ == "__main__":  # pragma: no cover
    app()
