"""Animation of a run from its recorded snapshots: one frame per recorded time (so a geometric
record schedule gives frames geometric in flow time), titled with the step and the flow time; the
picture is the polar neuron plot with the network function beside it (docs/math.md §2.6,
:mod:`shallowflow.plots.polar`).

Memory does not grow with the number of frames: the artists are drawn once and only their data
change per frame, and every frame is written to the file as soon as it is rendered. Only what
changes is drawn per frame (:class:`Blitter`: axes, ticks, labels and the data are rendered
once, the neurons, the network curve and the title over that background), pixel for pixel the
frame a full redraw gives. A GIF is written by :class:`StreamingGifWriter` (Pillow, no external
program; matplotlib's ``PillowWriter`` keeps every frame in memory until the end); an MP4 by
:class:`StreamingFFMpegWriter` (matplotlib's ``FFMpegWriter`` fed rendered frames) with the
ffmpeg binary of ``imageio-ffmpeg`` (the optional extra ``video``). The file appears atomically
(:func:`shallowflow.output.atomic_file`).
"""

from __future__ import annotations

from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from typing import IO, Any

import numpy as np
import xarray as xr
from matplotlib.animation import AbstractMovieWriter, FFMpegWriter
from matplotlib.artist import Artist
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from shallowflow.errors import UserError, shown
from shallowflow.output import atomic_file, claim_files
from shallowflow.plots.polar import RunPanels
from shallowflow.runtime.progress import Phases
from shallowflow.store import check_run_folder, load_run

FORMATS = (".gif", ".mp4")
MAX_FPS = {".gif": 50.0, ".mp4": 240.0}
"""The most frames per second each format shows: a GIF stores frame times in hundredths of a
second and viewers slow frames shorter than 2/100 s; an MP4 player shows up to about 240."""
VIDEO_EXTRA = "video"
"""The optional extra that brings the ffmpeg binary for MP4 (``imageio-ffmpeg``)."""


class StreamingGifWriter(AbstractMovieWriter):
    """A GIF writer that encodes each grabbed frame (own adaptive palette of at most 256 colours,
    by Pillow's fast octree quantizer: a seventh of median cut's time, which was three quarters
    of an animation's; looping forever) and appends it to the open file at once, so nothing
    accumulates in memory; identical frames are kept (one GIF frame per grab)."""

    _file: IO[bytes]
    frames: int

    def setup(self, fig: Any, outfile: str | Path, dpi: float | None = None) -> None:
        super().setup(fig, outfile, dpi=dpi)
        self._file = open(outfile, "wb")  # closed in finish
        self.frames = 0

    def grab_frame(self, **savefig_kwargs: Any) -> None:
        """Render the figure (a full redraw) and append it."""
        buf = BytesIO()
        self.fig.savefig(buf, **{**savefig_kwargs, "format": "rgba", "dpi": self.dpi})
        self.add_rgba(buf.getbuffer())

    def add_rgba(self, rgba: Any) -> None:
        """Append a frame already rendered: RGBA bytes of the figure's frame size."""
        from PIL import GifImagePlugin, Image

        rgb = Image.frombuffer("RGBA", self.frame_size, rgba, "raw", "RGBA", 0, 1).convert("RGB")
        frame = rgb.quantize(256, method=Image.Quantize.FASTOCTREE)
        duration = round(1000 / self.fps)
        if self.frames == 0:  # the first frame's palette is the global one
            header, _ = GifImagePlugin.getheader(frame, info={"loop": 0, "duration": duration})
            chunks = [*header, *GifImagePlugin.getdata(frame, duration=duration)]
        else:
            chunks = GifImagePlugin.getdata(frame, duration=duration, include_color_table=True)
        for chunk in chunks:
            self._file.write(chunk)
        # getdata returns the list of a class made per call; class objects are freed only by a
        # full garbage collection, so drop the encoded frame now rather than hold it until then
        chunks.clear()
        self.frames += 1

    def finish(self) -> None:
        self._file.write(b";")  # GIF trailer
        self._file.close()


class StreamingFFMpegWriter(FFMpegWriter):
    """matplotlib's ``FFMpegWriter`` that also takes frames already rendered (:meth:`add_rgba`)."""

    def add_rgba(self, rgba: Any) -> None:
        """Append a frame already rendered: RGBA bytes of the figure's frame size."""
        self._proc.stdin.write(rgba)


class Blitter:
    """Frames of a figure in which only ``changing`` artists change: everything else is rendered
    once into a background; :meth:`render` restores it and draws, in each axes (or the figure),
    the changing artists and every artist not below the lowest of them (zorder; in drawing order;
    all of these are left out of the background), so that a frame is pixel for pixel the full
    redraw (``test_blitted_frames_equal_full_redraws``). The figure gets an Agg canvas (it must be
    one that this code owns)."""

    def __init__(self, fig: Figure, changing: list[Artist]) -> None:
        self.fig = fig
        self.canvas = FigureCanvasAgg(fig)
        self.layers: list[Artist] = []
        owner = [a.axes or fig for a in changing]
        for parent in dict.fromkeys(owner):  # each axes (or the figure) once, in order
            mine = [a for a, o in zip(changing, owner, strict=True) if o is parent]
            low = min(a.get_zorder() for a in mine)
            above = [a for a in parent.get_children() if a.get_zorder() >= low]
            self.layers.extend(sorted(above, key=Artist.get_zorder))  # stable: drawing order
        for a in self.layers:
            a.set_animated(True)
        self.canvas.draw()
        self.background = self.canvas.copy_from_bbox(fig.bbox)

    def render(self) -> memoryview:
        """The current frame, RGBA bytes (valid until the next render)."""
        self.canvas.restore_region(self.background)
        for a in self.layers:
            self.fig.draw_artist(a)
        return self.canvas.buffer_rgba()


def frame_indices(count: int, max_frames: int | None = None) -> np.ndarray:
    """The recorded time indices to draw: all of them, or ``max_frames`` evenly spaced in index
    (so still geometric in time for a geometric schedule), the first and last included."""
    if max_frames is None or max_frames >= count:
        return np.arange(count)
    if max_frames < 1:
        raise UserError(f"max_frames: must be at least 1 (got {max_frames})")
    return np.unique(np.round(np.linspace(0, count - 1, max_frames)).astype(int))


def _writer(suffix: str, fps: float
            ) -> tuple[StreamingGifWriter | StreamingFFMpegWriter, dict[str, Any]]:
    """The movie writer for a file suffix and the rcParams it needs (:func:`check_movie` first)."""
    if suffix == ".gif":
        return StreamingGifWriter(fps=fps), {}
    import imageio_ffmpeg

    # the temporary name has no .mp4 suffix, so the container is named explicitly
    return (StreamingFFMpegWriter(fps=fps, codec="h264", extra_args=["-f", "mp4"]),
            {"animation.ffmpeg_path": imageio_ffmpeg.get_ffmpeg_exe()})


def check_movie(path: Path, fps: float, path_field: str = "path", fps_field: str = "fps") -> str:
    """The movie format of ``path`` (its suffix), refused before any work where the suffix is
    none of :data:`FORMATS`, ``fps`` is outside what the format shows, or an MP4 lacks the
    optional extra ``video``; errors name ``path_field`` and ``fps_field``."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise UserError(f"{path_field}: the movie format is chosen by the suffix, one of "
                        f"{', '.join(FORMATS)} (got {shown(path)})")
    if not 0 < fps <= MAX_FPS[suffix]:
        raise UserError(f"{fps_field}: must be in (0, {MAX_FPS[suffix]:g}] for a {suffix} "
                        f"(got {fps!r})")
    if suffix == ".mp4":
        try:
            import imageio_ffmpeg  # noqa: F401
        except ImportError:
            raise UserError(
                f"{path_field}: an MP4 needs the ffmpeg binary of the optional extra "
                f"'{VIDEO_EXTRA}' (pip install 'shallowflow[{VIDEO_EXTRA}]', or pip install "
                "imageio-ffmpeg) (got a .mp4 path); or write a .gif, which needs nothing more"
            ) from None
    return suffix


def check_snapshots(ds: xr.Dataset, field: str = "ds", where: str = "this Dataset") -> None:
    """Refuse a Dataset without what an animation draws: the snapshots 'a' and 'W' and the
    initial weights ``W_init`` (``field``, ``where``: how the error names it)."""
    if "W" not in ds or "a" not in ds:
        raise UserError(f"{field}: an animation needs the snapshots 'a' and 'W' (record 'a' in "
                        f"record.probes and set record.snapshots = true); {where} holds "
                        f"{sorted(map(str, ds.data_vars))}")
    if "W_init" not in ds:
        raise UserError(f"{field}: {where} holds no initial weights W_init; it must be what "
                        "shallowflow run wrote")


def frame_bytes(dpi: float = 100.0) -> float:
    """About the most bytes one frame adds to a file: half a byte per pixel of the largest
    picture (:class:`~shallowflow.plots.polar.RunPanels`, 9 x 4.2 inches); GIF frames of these
    pictures take a tenth of that."""
    return 0.5 * 9.0 * 4.2 * dpi * dpi


def write_frames(ds: xr.Dataset, file: Path, suffix: str, run: int, fps: float,
                 frames: np.ndarray, dpi: float = 100.0,
                 step: Callable[[], None] | None = None, **options: Any) -> None:
    """Write the frames ``frames`` (record indices) of run ``run`` to ``file`` as it is (not
    atomically) in the format ``suffix``, calling ``step()`` after each frame. The inputs are
    checked: :func:`check_movie`, :func:`check_snapshots`."""
    import matplotlib as mpl
    import matplotlib.pyplot as plt

    writer, rc = _writer(suffix, fps)
    panels = RunPanels(ds, run, dpi=dpi, **options)
    try:
        with mpl.rc_context(rc), writer.saving(panels.fig, str(file), dpi):
            blitter = Blitter(panels.fig, panels.changing)
            for k in frames:
                panels.show(int(k))
                writer.add_rgba(blitter.render())
                if step is not None:
                    step()
    finally:
        plt.close(panels.fig)


def animate(ds: xr.Dataset, path: str | Path, run: int = 0, fps: float = 8.0,
            max_frames: int | None = None, dpi: float = 100.0, **options: Any) -> Path:
    """Write the animation of run ``run`` of ``ds`` to ``path`` (.gif, or .mp4 with the extra
    ``video``) atomically and return the path: one frame per recorded snapshot ('a' in
    record.probes, 'W' with record.snapshots = true), at most ``max_frames``
    (:func:`frame_indices`). ``options``: the picture's, as for
    :func:`shallowflow.plots.polar.polar_figure` (radius, floor, basis, reference, ...). A run
    folder is animated by :func:`animate_run`."""
    path = Path(path)
    suffix = check_movie(path, fps)
    check_snapshots(ds)
    frames = frame_indices(ds.sizes["time"], max_frames)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path) as tmp:
        write_frames(ds, tmp, suffix, run, fps, frames, dpi, **options)
    return path


def animate_run(folder: str | Path, target: str | Path | None = None, run: int = 0,
                fps: float = 8.0, max_frames: int | None = None, overwrite: bool = False,
                show_progress: bool = False, field: str = "RUN_DIR", force: bool = False) -> Path:
    """``shallowflow animate``: the animation of run ``run`` of the run folder ``folder``
    written to ``target`` (default ``FOLDER/animation.gif``). Before any work: the run folder
    and its files (named as ``field``), the options (named as the command's), the output file
    (:func:`shallowflow.output.claim_files`: not a folder or a link, replaced only with
    ``overwrite`` and where shallowflow wrote it, room for its frames unless ``force``), held
    for the whole
    call. ``show_progress``: say on stderr what it does, a bar over the frames."""
    folder = check_run_folder(folder, field)
    target = Path(target) if target is not None else folder / "animation.gif"
    suffix = check_movie(target, fps, "--out", "--fps")
    if max_frames is not None and max_frames < 1:
        raise UserError(f"--max-frames: must be at least 1 (got {max_frames})")
    with claim_files([target], overwrite, field_name="--out",
                     remedy="pass a smaller --max-frames, or --force to try anyway",
                     force=force) as place:
        phases = Phases("animate", show_progress)
        ds = load_run(folder, field)
        if not 0 <= run < ds.sizes["run"]:
            raise UserError(f"--run: {folder} holds runs 0..{ds.sizes['run'] - 1} (got {run})")
        check_snapshots(ds, field, str(folder))
        frames = frame_indices(ds.sizes["time"], max_frames)
        place.check_disk(len(frames) * frame_bytes())
        phases.done(f"{ds.sizes['time']} snapshots read from {folder}")
        with place.writing() as (tmp,), phases.counting("frame(s) drawn", len(frames)) as step:
            write_frames(ds, tmp, suffix, run, fps, frames, step=step)
    return target
