"""Polar neuron plots and run animations (shallowflow.plots.polar, shallowflow.plots.animate) on a
small synthetic results Dataset: coordinates and the function curve against numpy, frame counts of
the written GIF, and memory that does not grow with the number of frames."""

import itertools

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr
from PIL import Image

from shallowflow.errors import UserError
from shallowflow.plots import draw_function, draw_polar, polar_figure
from shallowflow.plots.animate import animate, frame_indices
from shallowflow.plots.polar import plane_basis, polar_coordinates

matplotlib.use("Agg")

X3 = np.array([[-0.75, 1.0], [-0.5, 1.0], [0.125, 1.0]])  # BF's three points with the bias column
Y3 = np.array([1.1, 0.1, 0.8])


def synthetic(T=5, p=10, kappa=0.5, seed=0):
    """A results Dataset in experiment.to_dataset's layout: neurons (w, b) of norm ~1e-3 at the
    start growing to ~1, a fixed sign per neuron, the data kept (keep_data=True)."""
    rng = np.random.default_rng(seed)
    W0 = 1e-3 * rng.normal(size=(p, 2))
    growth = np.geomspace(1.0, 1e3, T)
    turn = np.linspace(0.0, 0.6, T)
    rot = np.stack([np.stack([np.cos(turn), -np.sin(turn)], -1),
                    np.stack([np.sin(turn), np.cos(turn)], -1)], -2)  # (T, 2, 2)
    W = growth[:, None, None] * np.einsum("tij,pj->tpi", rot, W0)
    sign = np.where(np.arange(p) % 3 == 0, -1.0, 1.0)
    a = sign * np.linalg.norm(W, axis=-1)
    steps = np.concatenate([[0], np.geomspace(100, 10**5, T - 1).astype(int)])  # geometric
    return xr.Dataset(
        {"a": (("run", "time", "neuron"), a[None]),
         "W": (("run", "time", "neuron", "dim"), W[None]),
         "loss": (("run", "time"), np.geomspace(1, 0.1, T)[None]),
         "a_init": (("run", "neuron"), a[None, 0]), "W_init": (("run", "neuron", "dim"), W0[None]),
         "a_final": (("run", "neuron"), a[None, -1]),
         "W_final": (("run", "neuron", "dim"), W[None, -1]),
         "X": (("sample", "dim"), X3), "y": (("sample",), Y3)},
        coords={"run": [0], "time": steps * 1e-3, "step": ("time", steps),
                "neuron": np.arange(p), "dim": [0, 1]},
        attrs={"kappa": kappa, "lr": 1e-3})


def test_polar_coordinates_match_numpy():
    ds = synthetic()
    W = ds.W.values[0, 2]
    floor = float(np.median(np.linalg.norm(ds.W_init.values[0], axis=1)))
    theta, r = polar_coordinates(W, radius="log", floor=floor)
    np.testing.assert_allclose(theta, np.arctan2(W[:, 1], W[:, 0]), rtol=0, atol=1e-14)
    np.testing.assert_allclose(r, np.log10(1 + np.hypot(W[:, 0], W[:, 1]) / floor), rtol=1e-14)
    _, raw = polar_coordinates(W, radius="norm")
    np.testing.assert_allclose(raw, np.hypot(W[:, 0], W[:, 1]), rtol=1e-14)
    # the figure's scatter: the run's floor (median initial norm), the same numbers
    fig = polar_figure(ds, run=0, time=2)
    offsets = fig.axes[1].collections[0].get_offsets()
    np.testing.assert_allclose(offsets[:, 0], np.arctan2(W[:, 1], W[:, 0]), atol=1e-14)
    np.testing.assert_allclose(offsets[:, 1], np.log10(1 + np.hypot(*W.T) / floor), rtol=1e-12)
    colours = fig.axes[1].collections[0].get_facecolors()
    neg = ds.a.values[0, 2] < 0
    assert len({tuple(c) for c in colours[neg]}) == 1 and len({tuple(c) for c in colours[~neg]}) == 1
    assert not np.allclose(colours[neg][0], colours[~neg][0])
    assert "step" in fig.texts[0].get_text() and "flow time" in fig.texts[0].get_text()
    plt.close(fig)


def test_plane_for_higher_dimensions():
    rng = np.random.default_rng(1)
    W = rng.normal(size=(7, 4))
    B = np.linalg.qr(rng.normal(size=(4, 2)))[0].T  # two orthonormal rows
    theta, r = polar_coordinates(W, basis=B, radius="norm")
    np.testing.assert_allclose(theta, np.arctan2(W @ B[1], W @ B[0]), atol=1e-14)
    np.testing.assert_allclose(r, np.linalg.norm(W, axis=1), rtol=1e-14)
    np.testing.assert_array_equal(plane_basis(4), np.eye(2, 4))  # no data: first two coordinates
    X = rng.normal(size=(9, 2)) @ B  # data spanning the plane of B: its principal plane is B's
    P = plane_basis(4, X)
    np.testing.assert_allclose(P @ P.T, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(X @ P.T @ P, X, atol=1e-12)
    with pytest.raises(UserError, match="basis"):
        plane_basis(4, basis=np.ones((2, 4)))
    fig = plt.figure()
    art = draw_polar(fig.add_subplot(projection="polar"), np.ones(7), W, X=X)
    np.testing.assert_allclose(art.scatter.get_offsets()[:, 0], np.arctan2(W @ P[1], W @ P[0]),
                               atol=1e-12)
    plt.close(fig)


def test_function_panel_matches_numpy():
    ds = synthetic(kappa=0.5)
    fig = polar_figure(ds, time=-1)
    line = fig.axes[0].lines[0]
    x, h = line.get_xdata(), line.get_ydata()
    a, W = ds.a.values[0, -1], ds.W.values[0, -1]
    expected = 0.5 * np.maximum(np.outer(x, W[:, 0]) + W[:, 1], 0) @ a
    assert x.min() == -1 and x.max() == 1
    np.testing.assert_allclose(h, expected, rtol=1e-12, atol=1e-15)
    plt.close(fig)
    # the low-level panel, a reference given as a callable and inputs beyond [-1, 1]
    fig, ax = plt.subplots()
    Xw = np.array([[-2.0, 1.0], [0.5, 1.0]])
    art = draw_function(ax, a, W, Xw, np.array([0.0, 1.0]), kappa=2.0, reference=lambda t: 0 * t + 1)
    x = art.line.get_xdata()
    assert x.min() == -2 and x.max() == 1
    np.testing.assert_allclose(art.line.get_ydata(),
                               2.0 * np.maximum(np.outer(x, W[:, 0]) + W[:, 1], 0) @ a, rtol=1e-12)
    assert len(ax.lines) == 3  # network, reference, data
    plt.close(fig)


def test_final_state_without_snapshots():
    ds = synthetic().drop_vars(["a", "W"])
    fig = polar_figure(ds)
    np.testing.assert_allclose(fig.axes[1].collections[0].get_offsets()[:, 0],
                               np.arctan2(ds.W_final.values[0, :, 1], ds.W_final.values[0, :, 0]))
    plt.close(fig)
    with pytest.raises(UserError, match="snapshots"):
        polar_figure(ds, time=0)
    with pytest.raises(UserError, match="snapshots"):
        animate(ds, "unused.gif")


def gif_frames(path):
    with Image.open(path) as im:
        return im.n_frames


def test_animate_writes_one_frame_per_snapshot(tmp_path):
    ds = synthetic(T=6)
    out = animate(ds, tmp_path / "run.gif", fps=5, dpi=40)
    assert out == tmp_path / "run.gif"
    assert gif_frames(out) == 6
    assert gif_frames(animate(ds, tmp_path / "sub" / "few.gif", max_frames=4, dpi=40)) == 4
    assert frame_indices(6, 4).tolist() == [0, 2, 3, 5]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["few.gif", "run.gif", "sub"]
    with pytest.raises(UserError, match="suffix"):
        animate(ds, tmp_path / "run.avi")


def test_mp4_without_imageio_ffmpeg_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "imageio_ffmpeg", None)
    with pytest.raises(UserError, match=r"shallowflow\[video\]"):
        animate(synthetic(), tmp_path / "run.mp4")
    assert not list(tmp_path.iterdir())


def test_frames_update_the_same_artists_and_go_straight_to_the_file(tmp_path, monkeypatch):
    """Memory flat in the number of frames, checked structurally (a traced-memory bound was
    flaky under load): every frame leaves the figure with the same artists (updated, not added),
    and each grabbed frame is written to the open file at once (the file grows frame by frame
    before the writer finishes; nothing is kept for the end)."""
    import shallowflow.plots.animate as anim

    counts, sizes = [], []
    add = anim.StreamingGifWriter.add_rgba

    def counting_add(self, rgba):
        add(self, rgba)
        counts.append(sum(len(ax.get_children()) for ax in self.fig.axes))
        sizes.append(self._file.tell())

    monkeypatch.setattr(anim.StreamingGifWriter, "add_rgba", counting_add)
    animate(synthetic(T=12, p=50), tmp_path / "run.gif", dpi=30)
    assert len(counts) == 12 and len(set(counts)) == 1, counts
    assert all(b > a for a, b in itertools.pairwise(sizes)), sizes
    assert gif_frames(tmp_path / "run.gif") == 12


@pytest.mark.parametrize("options", [{}, {"size_by_a": True, "radius": "norm"}])
def test_blitted_frames_equal_full_redraws(options):
    """Drawing only what changes over a background rendered once gives, pixel for pixel, the
    frame of a full redraw of the same figure (the neurons sit below the data markers of the
    polar panel, the curve below the legend: the artists above the changing ones are redrawn in
    order too)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from shallowflow.plots.animate import Blitter
    from shallowflow.plots.polar import RunPanels

    ds = synthetic(T=4, p=60)
    blitted = RunPanels(ds, dpi=50, **options)
    full = RunPanels(ds, dpi=50, **options)
    FigureCanvasAgg(full.fig)
    blitter = Blitter(blitted.fig, blitted.changing)
    assert len(blitter.layers) > len(blitted.changing)  # data markers, legend: redrawn as well
    try:
        for k in (3, 0, 2):
            blitted.show(k)
            full.show(k)
            frame = np.asarray(blitter.render()).copy()
            full.fig.canvas.draw()
            reference = np.asarray(full.fig.canvas.buffer_rgba())
            assert frame.shape == reference.shape
            assert np.array_equal(frame, reference), int(np.sum(frame != reference))
    finally:
        plt.close(blitted.fig)
        plt.close(full.fig)


def test_mp4_has_one_frame_per_snapshot(tmp_path):
    """With the optional extra ``video``: the MP4 holds one frame per snapshot (counted by
    decoding it with ffmpeg)."""
    import re
    import subprocess

    imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
    out = animate(synthetic(T=7), tmp_path / "run.mp4", fps=5, dpi=40)
    log = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-i", str(out), "-map", "0:v:0",
                          "-f", "null", "-"], capture_output=True, text=True, check=True).stderr
    assert int(re.findall(r"frame=\s*(\d+)", log)[-1]) == 7


def test_gif_frames_keep_the_picture(tmp_path):
    """Each GIF frame, decoded, is the rendered frame up to its 256-colour palette: few pixels
    move by more than a faint shade, and none of the picture's few solid colours is lost."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from shallowflow.plots.polar import RunPanels

    ds = synthetic(T=3, p=60)
    out = animate(ds, tmp_path / "run.gif", dpi=40)
    panels = RunPanels(ds, dpi=40)
    FigureCanvasAgg(panels.fig)
    with Image.open(out) as im:
        for k in range(3):
            panels.show(k)
            panels.fig.canvas.draw()
            rendered = np.asarray(panels.fig.canvas.buffer_rgba())[..., :3].astype(int)
            im.seek(k)
            decoded = np.asarray(im.convert("RGB")).astype(int)
            assert decoded.shape == rendered.shape
            error = np.abs(decoded - rendered).max(axis=-1)
            assert np.mean(error > 24) < 0.01, np.mean(error > 24)
            assert np.mean(error) < 4, np.mean(error)
    plt.close(panels.fig)
