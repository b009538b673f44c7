"""The command line: ``shallowflow run | certify | sweep | reproduce | plot | animate | demo |
list | example | cite | bench`` (``example`` and ``cite``: :mod:`shallowflow.cli.handouts`).

Every command checks what it can before any work and reports a problem a user can cause as one
line per problem, ``error: <field or file>: <problem> (got <value>); <what is allowed>``, exit
code 2, no traceback (:mod:`shallowflow.errors`). Results go to stdout, notes, progress and
errors to stderr. Ctrl-C or SIGTERM stops cleanly (nothing half-written) and says what was
finished and how to go on; an internal error says it is one and asks for a report. This module
holds the commands; the process plumbing (signals, the error guard, exit codes, the quick exit)
is :mod:`shallowflow.cli.process`.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from rich.markup import escape

from shallowflow.cli.handouts import cite, example, examples
from shallowflow.cli.process import (
    Commands,
    fail,
    guard,
    handle_signals,
    owns_process,
    without_dask_arrays,
)
from shallowflow.cli.process import run as run_process
from shallowflow.errors import EXIT_INTERRUPTED, human
from shallowflow.runtime.progress import console, out

if TYPE_CHECKING:
    from shallowflow.config import Experiment

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  cls=Commands,
                  help="Simulate, measure and predict how one-hidden-layer ReLU networks learn.")


def _version(shown: bool) -> None:
    if shown:
        from shallowflow import __version__

        out.print(f"shallowflow {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(ctx: typer.Context, version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="print the version and exit")]
        = False) -> None:
    """Simulate, measure and predict how one-hidden-layer ReLU networks learn."""
    from shallowflow import enable_full_precision
    from shallowflow.runtime import compile_cache

    ctx.call_on_close(handle_signals())  # a command called in-process leaves no trace
    if owns_process():
        without_dask_arrays()
    enable_full_precision()  # float64 is the default precision of every run
    compile_cache.enable()  # compiled programs kept on disk, per machine type
    # figures are written to files; no display needed
    if owns_process() and "matplotlib" not in sys.modules:
        os.environ["MPLBACKEND"] = "Agg"  # read when a command first draws (0.1 s not imported)
    else:
        import matplotlib

        matplotlib.use("Agg")


SetOption = Annotated[Optional[list[str]],  # noqa: UP045 (typer needs Optional)
                      typer.Option("--set", "-s", help="override a field: key.path=value")]
LONG_S = 120.0  # jobs estimated longer than this get a note with the estimate
ForceOption = Annotated[bool, typer.Option(
    "--force", help="run even where the memory or disk estimate exceeds what the machine has")]
ExecutorOption = Annotated[str, typer.Option(help="where batches run: local or dask")]
AddressOption = Annotated[Optional[str], typer.Option(  # noqa: UP045
    help="dask: a running scheduler, e.g. tcp://127.0.0.1:8786")]
WorkersOption = Annotated[Optional[int], typer.Option(  # noqa: UP045
    help="dask without --address: worker processes of a local cluster (default: one per core)")]


def _announce(jobs: list[tuple[Experiment, int]], **options: Any) -> None:
    """A note on stderr with the estimated arithmetic of ``jobs`` (experiment, runs) when it is
    long (above :data:`LONG_S` at the reference rate): a rough guide, not a promise
    (:func:`shallowflow.training.preflight.estimate` with ``options``, which also refuses what
    cannot fit). Imported here: the engine (JAX) loads only for commands that train."""
    from shallowflow.training.preflight import REFERENCE_FLOPS, estimate

    est = estimate(jobs, **options)
    if est.seconds > LONG_S:
        console.print(f"[cyan]note:[/] estimated work {est.flops:.3g} flop, memory "
                      f"{human(est.memory)}, results {human(est.disk)}: roughly "
                      f"{est.seconds / 60:.0f} min at {REFERENCE_FLOPS / 1e9:g} GFLOP/s",
                      highlight=False)


def _nothing_written(out_dir: Path) -> Callable[[], str]:
    return lambda: (f"nothing was written to {out_dir} (results are written only when "
                    "complete); run the same command again to start over")


def _unfinished(out_dir: Path) -> str:
    """What an unfinished run or reproduction into ``out_dir`` left (its finished batches,
    :func:`~shallowflow.training.batch_store.beside` it) and how to go on."""
    from shallowflow.training.batch_store import BatchStore, beside

    kept = len(BatchStore(beside(out_dir)).files())
    again = (f"{kept} finished batch(es) are kept in {beside(out_dir)}: run the same command "
             "with --resume to go on, without it to start over" if kept else
             "run the same command again to start over")
    return (f"nothing was written to {out_dir} (results are written only when complete); "
            f"{again}")


ResumeOption = Annotated[bool, typer.Option(
    help="reuse the batches an interrupted run of the same command finished")]


@app.command()
def run(
    config: Annotated[Path, typer.Argument(help="experiment file (.toml or .yaml)")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="run directory to create")],
    set_: SetOption = None,
    overwrite: Annotated[bool, typer.Option(help="replace an existing run directory")] = False,
    quiet: Annotated[bool, typer.Option(help="no progress")] = False,
    force: ForceOption = False,
    resume: ResumeOption = False,
) -> None:
    """Train an experiment and write its run directory (config, provenance, results.nc, ...)."""
    with guard(lambda: _unfinished(out_dir)):
        from shallowflow.config import load_experiment
        from shallowflow.model.run_attrs import RunAttrs
        from shallowflow.runner import run_experiment

        exp = load_experiment(config, set_ or [])
        _announce([(exp, exp.runs)])
        ds = run_experiment(exp, out_dir, overwrite=overwrite, show_progress=not quiet,
                            force=force, resume=resume)
    attrs = RunAttrs.of(ds)
    for note in filter(None, attrs.notes.split("\n")):
        console.print(f"[cyan]note:[/] {escape(note)}", highlight=False)
    if attrs.step_certificate is not None:
        out.print(attrs.step_certificate, highlight=False)
    if "precision_rel" in ds:
        from shallowflow.training.certificates import precision_verdict

        out.print(precision_verdict(ds["precision_rel"].values, exp.train.precision_certificate_tol),
                  highlight=False)
    loss = ds["loss"].values
    out.print(
        f"{exp.name}: {ds.sizes['run']} run(s), {int(ds.step[-1])} steps (flow time "
        f"{float(ds.time[-1]):g}); loss {float(loss[:, 0].mean()):.4g} -> "
        f"{float(loss[:, -1].mean()):.4g} (mean over runs); ended by {_counts(ds['stop_reason'])}"
        + (f"; end states: {_counts(ds['end_label'])}" if "end_label" in ds else "")
        + f". Written to {out_dir}", highlight=False)


def _counts(values: object) -> str:
    """'a 3, b 1': how often each value occurs, most frequent first."""
    import pandas as pd

    counts = pd.Series(getattr(values, "values", values)).value_counts()
    return ", ".join(f"{k} {v}" for k, v in counts.items())


@app.command()
def certify(
    run_dir: Annotated[Path, typer.Argument(help="a run directory (shallowflow run --out)")],
    polish: Annotated[str, typer.Option(
        help="first polish each end point: none, newton (nearest stationary point), bfgs or "
        "lbfgs (nearest local minimum)")] = "none",
    at: Annotated[str, typer.Option(
        help="'final' or a record index of the snapshots a, W")] = "final",
    overwrite: Annotated[bool, typer.Option(help="replace end_state.nc / end_state.csv")]
    = False,
    quiet: Annotated[bool, typer.Option(help="no progress")] = False,
    force: ForceOption = False,
) -> None:
    """Certify each run's end state: global or strict local minimum, saddle (with its escape),
    degenerate or not stationary, with the numbers (docs/math.md §9). Writes end_state.nc and
    end_state.csv into RUN_DIR."""
    with guard(lambda: f"nothing was written to {run_dir}"):
        from shallowflow.runner import certify_run
        from shallowflow.stationary import end_table

        end = certify_run(run_dir, polish, at, overwrite, show_progress=not quiet, force=force)
    table = end_table(end)
    shown = [c for c in ("run", "stop_reason", "label", "loss", "grad_norm", "zero_neurons",
                         "dead_neurons", "kink_pairs", "eig_min", "escape_value",
                         "polish_stop", "polish_distance") if c in table]
    out.print(table[shown].to_string(index=False, float_format=lambda v: f"{v:.3g}"),
              highlight=False, soft_wrap=True)
    out.print(f"end states: {_counts(end['end_label'])}. Reasons and tolerances in "
              f"{run_dir / 'end_state.csv'} and {run_dir / 'end_state.nc'}", highlight=False)


def _sweep_state(spec: Path, out_dir: Path, set_: list[str]) -> Callable[[], str]:
    def state() -> str:
        from shallowflow.sweep import batch_ids, sweep_store

        sets = "".join(f" --set {v!r}" for v in set_)
        command = f"shallowflow sweep {spec} --out {out_dir} --resume{sets}"
        try:
            ids = batch_ids(out_dir)
        except (OSError, ValueError, KeyError):
            return f"nothing was written to {out_dir}; run the same command again"
        done = len(sweep_store(out_dir).files(ids))
        return (f"{done} of {len(ids)} batches are written in {out_dir}; finish with: {command}")
    return state


@app.command()
def sweep(
    spec: Annotated[Path, typer.Argument(help="sweep file (.toml or .yaml)")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="sweep folder")],
    resume: Annotated[bool, typer.Option(help="continue a sweep folder, skipping done batches")]
    = False,
    executor: ExecutorOption = "local",
    address: AddressOption = None,
    workers: WorkersOption = None,
    set_: SetOption = None,
    quiet: Annotated[bool, typer.Option(help="no progress")] = False,
    force: ForceOption = False,
) -> None:
    """Run a grid of experiments in batches of equal shapes; resumable after a crash."""
    with guard(_sweep_state(spec, out_dir, set_ or [])), contextlib.ExitStack() as stack:
        from shallowflow.runtime.executors import make_executor
        from shallowflow.sweep import load_sweep, run_sweep

        sw = load_sweep(spec, set_ or [])
        _announce([(p.experiment, p.experiment.runs) for p in sw.points],
                  max_batch=sw.max_batch, hold=False)
        runner = make_executor(executor, address, workers)  # refused before any work if unknown
        runner.check()
        stack.callback(runner.close)
        table = run_sweep(sw, out_dir, resume=resume, executor=runner, show_progress=not quiet,
                          force=force)
    ended = (f"; ended by {_counts(table['stop_reason'])}" if "stop_reason" in table else "")
    verdicts = f"; end states: {_counts(table['label'])}" if "label" in table else ""
    out.print(f"{sw.name}: {len(sw.points)} grid point(s), {len(table)} run(s){ended}{verdicts}; "
              f"summary in {out_dir / 'summary.parquet'}", highlight=False)


@app.command()
def reproduce(
    name: Annotated[str, typer.Argument(help="reproduction name (see `shallowflow list`), or 'all'")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="folder to create (one subfolder "
                                                              "per reproduction with 'all')")],
    preset: Annotated[str, typer.Option(help="quick (minutes on 2 cores) or paper (paper sizes)")]
    = "quick",
    from_: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--from", help="a saved reproduction folder: judge and draw it again, no training")]
    = None,
    set_: SetOption = None,
    overwrite: Annotated[bool, typer.Option(help="replace an existing folder")] = False,
    quiet: Annotated[bool, typer.Option(help="no progress")] = False,
    force: ForceOption = False,
    executor: ExecutorOption = "local",
    address: AddressOption = None,
    workers: WorkersOption = None,
    resume: ResumeOption = False,
    dtype: Annotated[str, typer.Option(
        help="float64 (default) or float32 for every run")] = "float64",
    precision_certificate: Annotated[int, typer.Option(
        "--precision-certificate", "--certify-precision",
        help="with --dtype float32: rerun this many runs of every batch in float64 and report "
             "their distance")] = 0,
    precision_certificate_tol: Annotated[Optional[float], typer.Option(  # noqa: UP045
        "--precision-certificate-tol", "--certify-precision-tol",
        help="the relative distance the float32 runs must stay within (PASS/FAIL)")] = None,
) -> None:
    """Run a paper experiment: figures, claims.json (verdict per claim) and report.md; with
    --from, re-judge and redraw a saved one in seconds. With --executor dask, the independent
    batches of each training call (grid points, seeds, initialisations) run on Dask workers.
    With --dtype float32 --precision-certificate K, every batch runs in float32 and its first K runs
    again in float64: the report states the precision and the largest distance."""
    finished: list[str] = []
    names: list[str] = [name]

    def state() -> str:
        done = f"finished: {', '.join(finished)}; " if finished else ""
        if not names[len(finished):]:
            return done.rstrip("; ")
        return done + _unfinished(out_dir / names[len(finished)] if name == "all" else out_dir)

    with guard(state), contextlib.ExitStack() as stack:
        from shallowflow.errors import shown
        from shallowflow.reproductions import catalogue, lookup, rejudge, run_reproduction
        from shallowflow.runtime.executors import make_executor
        from shallowflow.training.certificates import Precision

        precision = Precision(dtype, precision_certificate, precision_certificate_tol)  # type: ignore[arg-type]
        if from_ is not None and (name == "all" or set_ or not precision.default):
            raise ValueError("--from: re-judges one saved reproduction as it was run; give one "
                             "NAME and no --set, --dtype or --precision-certificate")
        names[:] = list(catalogue()) if name == "all" else [lookup(name).name]
        runner = make_executor(executor, address, workers)  # refused before any work if unknown
        if from_ is None:
            runner.check()
        stack.callback(runner.close)
        for item in names:
            folder = out_dir / item if name == "all" else out_dir
            if from_ is not None:
                console.print(f"[bold]{item}[/] (re-judged from {escape(shown(from_))})",
                              highlight=False)
                _, claims = rejudge(item, from_, folder, overwrite=overwrite,
                                    show_progress=not quiet)
            else:
                console.print(f"[bold]{item}[/] (preset {escape(shown(preset, bare=True))})",
                              highlight=False)
                _, claims = run_reproduction(item, folder, preset, set_ or [],
                                             overwrite=overwrite, show_progress=not quiet,
                                             executor=runner, force=force, resume=resume,
                                             precision=precision)
            out.print(f"{item}:", highlight=False)
            for c in claims:
                role = " (check)" if c.role == "check" else ""
                out.print(f"  {c.verdict:15s} {c.id}{role}: measured {c.measured}",
                          highlight=False)
            out.print(f"  report: {folder / 'report.md'}", highlight=False)
            finished.append(str(folder))


@app.command()
def plot(
    run_dir: Annotated[Path, typer.Argument(help="a run directory")],
    probes: Annotated[str, typer.Option(help="comma-separated probe names")]
    = "loss,pl_curvature,balance_drift",
    target: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--out", help="PNG file (default RUN_DIR/probes.png)")] = None,
    overwrite: Annotated[bool, typer.Option(help="replace a file shallowflow wrote")] = False,
    force: ForceOption = False,
) -> None:
    """Draw recorded probes of a run directory against flow time."""
    with guard(lambda: "no figure was written"):
        from shallowflow.plots.probe_plot import plot_run

        written = plot_run(run_dir, [p.strip() for p in probes.split(",") if p.strip()], target,
                           overwrite, force=force)
    out.print(f"figure written to {written}", highlight=False)


@app.command("animate")
def animate_(
    run_dir: Annotated[Path, typer.Argument(help="a run directory with snapshots "
                                            "(record.snapshots = true)")],
    target: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--out", help="a .gif (or .mp4 with the video extra); default RUN_DIR/animation.gif")]
    = None,
    run: Annotated[int, typer.Option(help="which run of the folder")] = 0,
    fps: Annotated[float, typer.Option(help="frames per second")] = 8.0,
    max_frames: Annotated[Optional[int], typer.Option(  # noqa: UP045
        help="at most this many frames, evenly spaced over the records")] = None,
    overwrite: Annotated[bool, typer.Option(help="replace a file shallowflow wrote")] = False,
    force: ForceOption = False,
    quiet: Annotated[bool, typer.Option(help="no progress")] = False,
) -> None:
    """Animate a run's neurons (polar plot) and network function over its recorded snapshots."""
    with guard(lambda: f"nothing was written to {target or run_dir / 'animation.gif'}"):
        from shallowflow.plots.animate import animate_run

        written = animate_run(run_dir, target, run, fps, max_frames, overwrite,
                              show_progress=not quiet, force=force)
    out.print(f"animation written to {written}", highlight=False)


@app.command()
def demo(
    out_dir: Annotated[Path, typer.Option("--out", "-o")] = Path("runs/demo"),
    overwrite: Annotated[bool, typer.Option(help="replace an existing folder")] = False,
    quiet: Annotated[bool, typer.Option(help="no progress")] = False,
) -> None:
    """The main demo: local PL curvature on orthogonal data, from order 1/n to 1/sqrt(n)."""
    with guard(_nothing_written(out_dir)):
        from shallowflow.demo import run_demo

        summary = run_demo(out_dir, overwrite=overwrite, show_progress=not quiet)
    out.print(summary, highlight=False)
    out.print(f"Figure and data in {out_dir}/", highlight=False)


@app.command(name="list")
def list_() -> None:
    """List data kinds, initialisation schemes, losses, probes and example configs."""
    import inspect

    from shallowflow.config import DATA_KINDS, INIT_SCHEMES
    from shallowflow.dynamics.probes import PROBES
    from shallowflow.model.losses import LOSS_NAMES

    for title, registry in (("data kinds", DATA_KINDS), ("init schemes", INIT_SCHEMES)):
        out.print(f"[bold]{title}:[/]")
        for name, spec in registry.items():
            doc = (inspect.getdoc(spec) or "").split("\n")[0]
            out.print(f"  {name:14s} {doc}", highlight=False)
    out.print("[bold]losses:[/] " + ", ".join(LOSS_NAMES))
    out.print("[bold]probes:[/]")
    for p in PROBES.values():
        out.print(f"  {p.name:14s} {p.description}", highlight=False)
    from shallowflow.reproductions import catalogue

    out.print("[bold]reproductions:[/] (shallowflow reproduce NAME --preset quick|paper)")
    for rep in catalogue().values():
        out.print(f"  {rep.name:16s} {rep.title}", highlight=False)
    out.print("[bold]examples:[/] (shallowflow example NAME --out FILE) "
              + ", ".join(examples()), highlight=False)


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
        fail(err)
    except KeyboardInterrupt:
        console.print("[bold yellow]interrupted:[/] the benchmarks finished so far are in their "
                      "JSON files", highlight=False)
        raise typer.Exit(EXIT_INTERRUPTED) from None


app.command(name="example")(example)
app.command(name="cite")(cite)


def main() -> None:
    """The ``shallowflow`` command (the console script): :data:`app` as this process, then a
    quick exit (:func:`shallowflow.cli.process.run`)."""
    run_process(app)


if __name__ == "__main__":  # pragma: no cover
    main()
