"""Polar neuron plots with the network function beside (Boursier–Flammarion Figs. 2–3;
docs/math.md §2.6).

A hidden neuron w̃_j = (w_j, b_j) (the last input coordinate is the bias, x̃ = (x, 1)) is a point
at angle atan2(⟨w̃_j, v⟩, ⟨w̃_j, u⟩) in a fixed plane (u, v) and at a radius that is a function of
its norm ν_j = ‖w̃_j‖: by default the shifted log ρ(ν) = log10(1 + ν/ν_0), so that the initial
scale (λ = 1e-3) and norms of order 1 are both visible, or the raw norm. Radius 0 (ν = 0) is drawn
as an inner circle of radius ``shift * rmax`` (the paper's shifted origin). Neurons are purple
where a_j > 0, red where a_j < 0 (grey at 0). Data directions are black crosses on the rim and the
activation-cone boundaries (the normals of the x̃_k) dotted green lines.

The function panel shows h(x) = kappa sum_j a_j relu(⟨w̃_j, (x, 1)⟩) (docs/math.md §0.3) on
[-1, 1] widened to the data, with the data and an optional reference curve (an OLS line, a
teacher: a callable or arrays).

The drawing functions return small artist holders with an ``update(a, W)`` method, so that an
animation (:mod:`shallowflow.plots.animate`) changes the data of the same artists from frame to
frame. matplotlib is imported inside the drawing code only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import xarray as xr

from shallowflow.analysis import vectors
from shallowflow.errors import UserError
from shallowflow.model.run_attrs import RunAttrs

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.collections import PathCollection
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.text import Text

Radius = Literal["log", "norm"]
Reference = Callable[[np.ndarray], np.ndarray] | tuple[np.ndarray, np.ndarray]

POSITIVE, NEGATIVE, ZERO = "tab:purple", "tab:red", "0.5"
"""Neuron colours by the sign of a_j (BF Figs. 2–3: purple positive, red negative)."""
CONE_MAX_POINTS = 20
"""Cone boundaries are drawn by default only up to this many data points (BF omit them for the
40 Stewart points)."""
NEURON_CHUNK = 8192
"""Neurons per evaluation of the network on the grid (bounds the grid-by-neuron temporary)."""


# --- coordinates --------------------------------------------------------------------------------


def shifted_log_radius(norm: np.ndarray, floor: float) -> np.ndarray:
    """ρ(ν) = log10(1 + ν/ν_0) with ν_0 = ``floor`` (docs/math.md §2.6): 0 at ν = 0, about
    log10(ν/ν_0) for ν ≫ ν_0."""
    if not floor > 0:
        raise UserError(f"floor: must be positive (got {floor!r})")
    return np.log10(1.0 + np.asarray(norm, dtype=float) / floor)


def default_floor(W: np.ndarray) -> float:
    """The default ν_0 of the shifted log radius: the median positive neuron norm of ``W``
    (p, dim), normally the initial weights, so the initial scale sits near ρ = log10 2; 1 when no
    neuron has a positive norm (docs/math.md §2.6)."""
    norms = vectors.norms(W).ravel()
    norms = norms[np.isfinite(norms) & (norms > 0)]
    return float(np.median(norms)) if norms.size else 1.0


def plane_basis(dim: int, X: np.ndarray | None = None,
                basis: np.ndarray | None = None) -> np.ndarray:
    """The plane (u, v) the neurons are drawn on, as a (2, dim) array with orthonormal rows
    (docs/math.md §2.6): ``basis`` when given (checked), else the first two coordinates when
    dim = 2 (for inputs (x, 1): u = the input, v = the bias) or when no data is given, else the top
    two right singular vectors of the (uncentred) data X̃, each signed so that its largest entry is
    positive."""
    if basis is not None:
        B = np.asarray(basis, dtype=float)
        if B.shape != (2, dim) or not np.allclose(B @ B.T, np.eye(2), atol=1e-8):
            raise UserError(f"basis: must be two orthonormal rows of length {dim} "
                            f"(got shape {B.shape})")
        return B
    if dim < 2:
        raise UserError(f"W: a polar plot needs neurons of dimension >= 2 (got {dim})")
    if dim == 2 or X is None:
        return np.eye(2, dim)
    _, _, Vt = np.linalg.svd(np.asarray(X, dtype=float), full_matrices=False)
    B = Vt[:2]
    B = B * np.sign(B[np.arange(2), np.argmax(np.abs(B), axis=1)])[:, None]
    return B


def polar_coordinates(W: np.ndarray, basis: np.ndarray | None = None, radius: Radius = "log",
                      floor: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(angle, radius) of the neurons W (p, dim) (docs/math.md §2.6): angle
    atan2(⟨w̃, v⟩, ⟨w̃, u⟩) in the plane ``basis`` (default :func:`plane_basis`), radius
    log10(1 + ‖w̃‖/floor) (``radius="log"``, floor default :func:`default_floor` of W) or ‖w̃‖
    (``"norm"``); the radius uses the full norm, also for dim > 2."""
    W = np.asarray(W, dtype=float)
    B = plane_basis(W.shape[-1]) if basis is None else basis
    P = W @ B.T
    theta = np.arctan2(P[:, 1], P[:, 0])
    if radius == "log" and floor is None:
        floor = default_floor(W)
    return theta, _radius(vectors.norms(W), radius, floor)


def _radius(norm: np.ndarray, radius: Radius, floor: float | None) -> np.ndarray:
    """The plotted radius of norms: ρ(ν) with ν_0 = ``floor`` (needed) or ν itself."""
    if radius == "norm":
        return np.asarray(norm, dtype=float)
    if radius == "log":
        if floor is None:
            raise UserError("floor: needed for the log radius")
        return shifted_log_radius(norm, floor)
    raise UserError(f"radius: must be 'log' or 'norm' (got {radius!r})")


def _colours(a: np.ndarray) -> np.ndarray:
    """RGBA rows (p, 4) by the sign of a_j."""
    from matplotlib.colors import to_rgba_array

    pos, neg, zero = to_rgba_array([POSITIVE, NEGATIVE, ZERO])
    a = np.asarray(a, dtype=float)[:, None]
    return np.where(a > 0, pos, np.where(a < 0, neg, zero))


# --- the polar panel ----------------------------------------------------------------------------


@dataclass
class PolarArtists:
    """The artists of a polar panel and the fixed choices they were drawn with; ``update`` moves
    the same scatter to another snapshot."""

    scatter: PathCollection
    basis: np.ndarray
    radius: Radius
    floor: float
    rmax: float
    size_by_a: bool

    def update(self, a: np.ndarray, W: np.ndarray) -> None:
        theta, r = polar_coordinates(W, self.basis, self.radius, self.floor)
        self.scatter.set_offsets(np.column_stack([theta, r]))
        self.scatter.set_facecolor(_colours(a))
        if self.size_by_a:
            self.scatter.set_sizes(self.sizes(a))

    def sizes(self, a: np.ndarray) -> np.ndarray:
        """Marker areas 6 + 40 min(1, ρ(|a_j|)/rmax): |a| on the radius' own scale, so sizes
        compare across snapshots drawn with the same floor and rmax."""
        s = _radius(np.abs(np.asarray(a, dtype=float)), self.radius, self.floor)
        return 6.0 + 40.0 * np.minimum(1.0, s / self.rmax)


def draw_polar(ax: Axes, a: np.ndarray, W: np.ndarray, *, X: np.ndarray | None = None,
               basis: np.ndarray | None = None, radius: Radius = "log", floor: float | None = None,
               rmax: float | None = None, shift: float = 0.1, size_by_a: bool = False,
               data_directions: bool = True, cones: bool | None = None) -> PolarArtists:
    """Draw the neurons (a (p,), W (p, dim)) on the polar axes ``ax`` (docs/math.md §2.6).

    ``X`` (n, dim): the data with its bias column, for the data directions (black crosses on the
    rim) and the activation-cone boundaries (dotted green lines, the normals of the projected
    x̃_k; drawn by default up to :data:`CONE_MAX_POINTS` points) and for the default plane of
    dim > 2. ``floor`` defaults to :func:`default_floor` of W; pass the run's value (as
    :func:`polar_figure` does) to compare snapshots. ``rmax``: the outer radius (default: the
    largest radius of this snapshot); radius 0 is drawn as a circle of radius ``shift * rmax``.
    """
    a = np.asarray(a, dtype=float)
    W = np.asarray(W, dtype=float)
    B = plane_basis(W.shape[-1], X, basis)
    if radius == "log" and floor is None:
        floor = default_floor(W)
    theta, r = polar_coordinates(W, B, radius, floor)
    if rmax is None:
        finite = r[np.isfinite(r)]
        rmax = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    artists = PolarArtists(ax.scatter(theta, r, s=12, c=_colours(a), marker="*", lw=0, zorder=3),
                           B, radius, 1.0 if floor is None else floor, rmax, size_by_a)
    if size_by_a:
        artists.scatter.set_sizes(artists.sizes(a))
    if X is not None:
        P = np.asarray(X, dtype=float) @ B.T
        phi = np.arctan2(P[:, 1], P[:, 0])
        if cones if cones is not None else len(phi) <= CONE_MAX_POINTS:
            ends = np.concatenate([phi + np.pi / 2, phi - np.pi / 2])
            rays_t = np.column_stack([ends, ends, np.full_like(ends, np.nan)]).ravel()
            rays_r = np.tile([0.0, rmax, np.nan], len(ends))
            ax.plot(rays_t, rays_r, ls=":", lw=0.8, color="tab:green", zorder=1)
        if data_directions:
            ax.plot(phi, np.full_like(phi, rmax), "x", color="k", ms=6, zorder=4)
    ax.set_rorigin(-shift * rmax)
    ax.set_rlim(0.0, 1.04 * rmax)
    _radial_ticks(ax, artists)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    return artists


def _radial_ticks(ax: Axes, art: PolarArtists) -> None:
    """Radial ticks labelled with norms: decades on the log radius, plain ticks on the raw one."""
    if art.radius != "log":
        return
    lo = int(np.floor(np.log10(art.floor)))
    hi = int(np.ceil(np.log10(art.floor) + art.rmax)) + 1  # rho(nu) <= rmax: nu < floor 10^rmax
    norms = 10.0 ** np.arange(lo, hi, dtype=float)
    rho = shifted_log_radius(norms, art.floor)
    keep = (rho > 0.1 * art.rmax) & (rho <= art.rmax * 1.04)
    norms, rho = norms[keep], rho[keep]
    step = max(1, int(np.ceil(len(norms) / 5)))
    ax.set_yticks([0.0, *rho[::step]], ["0", *[f"$10^{{{np.log10(v):.0f}}}$" for v in norms[::step]]])


# --- the function panel -------------------------------------------------------------------------


def network_function(a: np.ndarray, W: np.ndarray, x: np.ndarray, kappa: float = 1.0,
                     leak: float = 0.0) -> np.ndarray:
    """h(x) = kappa sum_j a_j sigma(⟨w̃_j, x̃⟩), sigma(z) = max(z, leak z) (ReLU for leak = 0), on
    one-dimensional inputs x (m,), with x̃ = (x, 1) when W has two columns (the bias last) and
    x̃ = x when it has one (docs/math.md §0.3).

    The formula of :func:`shallowflow.model.network.forward`, evaluated here in numpy over chunks of
    neurons: a picture is computed on the host in float64 whatever JAX's precision mode, and each
    frame of an animation frees its temporaries at once (JAX's eager dispatch keeps some alive
    until a garbage collection, which shows as memory growing with the frames)."""
    a = np.asarray(a, dtype=float)
    W = np.asarray(W, dtype=float)
    x = np.asarray(x, dtype=float)
    if W.shape[-1] not in (1, 2):
        raise UserError(f"W: the function panel needs one input coordinate plus an optional bias "
                        f"(got neurons of dimension {W.shape[-1]})")
    bias = W[:, 1] if W.shape[-1] == 2 else np.zeros(len(W))
    out = np.zeros_like(x)
    for j in range(0, len(a), NEURON_CHUNK):
        z = np.outer(x, W[j:j + NEURON_CHUNK, 0]) + bias[j:j + NEURON_CHUNK]
        out += np.maximum(z, leak * z) @ a[j:j + NEURON_CHUNK]
    return kappa * out


@dataclass
class FunctionArtists:
    """The network curve of a function panel; ``update`` redraws it for another snapshot."""

    line: Line2D
    grid: np.ndarray
    kappa: float
    leak: float = 0.0

    def update(self, a: np.ndarray, W: np.ndarray) -> None:
        self.line.set_ydata(network_function(a, W, self.grid, self.kappa, self.leak))


def _inputs(X: np.ndarray | None) -> np.ndarray | None:
    """The input coordinate x_k of data given as (n, 2) with bias, (n, 1) or (n,)."""
    if X is None:
        return None
    X = np.asarray(X, dtype=float)
    return X if X.ndim == 1 else X[:, 0]


def draw_function(ax: Axes, a: np.ndarray, W: np.ndarray, X: np.ndarray | None = None,
                  y: np.ndarray | None = None, *, kappa: float = 1.0, leak: float = 0.0,
                  reference: Reference | None = None, reference_label: str = "reference",
                  xlim: tuple[float, float] | None = None, num: int = 401,
                  ylim: tuple[float, float] | None = None) -> FunctionArtists:
    """Draw h on a grid of ``num`` points of ``xlim`` (default [-1, 1] widened to the data) with
    the data (X (n, 2) with its bias column, or the inputs (n,); y (n,)) and an optional
    ``reference`` curve, a callable x -> y or arrays (x, y) (docs/math.md §2.6)."""
    xd = _inputs(X)
    if xlim is None:
        lo, hi = -1.0, 1.0
        if xd is not None and xd.size:
            lo, hi = min(lo, float(xd.min())), max(hi, float(xd.max()))
        xlim = (lo, hi)
    grid = np.linspace(xlim[0], xlim[1], num)
    (line,) = ax.plot(grid, network_function(a, W, grid, kappa, leak), color="C0", lw=1.6,
                      label="network $h_\\theta$", zorder=3)
    if reference is not None:
        rx, ry = (grid, reference(grid)) if callable(reference) else reference
        ax.plot(rx, ry, ls="--", color="0.4", lw=1.0, label=reference_label, zorder=2)
    if xd is not None and y is not None:
        ax.plot(xd, np.asarray(y, dtype=float), "o", color="k", ms=3.5, label="data", zorder=4)
    ax.set_xlim(*xlim)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.set_xlabel("x")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return FunctionArtists(line, grid, kappa, leak)


# --- a run of a Dataset -------------------------------------------------------------------------


def _snapshot_count(ds: xr.Dataset) -> int:
    return ds.sizes["time"] if "W" in ds and "a" in ds else 0


def _data(ds: xr.Dataset, run: int) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The run's data X (n, dim) and y (n,), or None when the Dataset holds none."""
    if "X" not in ds:
        return None, None
    X, y = ds["X"], ds["y"] if "y" in ds else None
    if "run" in X.dims:
        X = X.isel(run=run)
    if y is not None and "run" in y.dims:
        y = y.isel(run=run)
    return X.values, None if y is None else y.values


class RunPanels:
    """The polar panel (with the function panel beside it when the inputs are one coordinate
    plus bias) of one run of a results Dataset, drawn once; :meth:`show` moves the artists to a
    recorded snapshot. The floor (:func:`default_floor` of the run's initial weights ``W_init``),
    the plane and the outer radius (the largest over the run's snapshots) are fixed for the run, so
    snapshots compare. Without the snapshots 'a' and 'W' only the final state (``time=-1``) can be
    shown."""

    def __init__(self, ds: xr.Dataset, run: int = 0, *, radius: Radius = "log",
                 floor: float | None = None, basis: np.ndarray | None = None,
                 reference: Reference | None = None, reference_label: str = "reference",
                 size_by_a: bool = False, cones: bool | None = None,
                 data_directions: bool = True, figsize: tuple[float, float] = (9.0, 4.2),
                 dpi: float = 100.0) -> None:
        import matplotlib.pyplot as plt

        if not 0 <= run < ds.sizes["run"]:
            raise UserError(f"run: must lie in [0, {ds.sizes['run']}) (got {run})")
        self.ds, self.run = ds, run
        attrs = RunAttrs.of(ds)
        self.kappa, self.leak = attrs.kappa, attrs.leak
        X, y = _data(ds, run)
        W0 = ds["W_init"].isel(run=run).values
        if radius == "log" and floor is None:
            floor = default_floor(W0)
        a, W = self.state(-1 if _snapshot_count(ds) == 0 else 0)
        dim = W.shape[-1]
        bias = dim == 2 and (X is None or np.allclose(X[:, -1], 1.0))
        self.fig: Figure = plt.figure(figsize=figsize if bias else (figsize[1] * 1.1, figsize[1]),
                                      dpi=dpi)
        self.function: FunctionArtists | None = None
        if bias:
            ax_f = self.fig.add_subplot(1, 2, 1)
            lo, hi = self._output_range(X, y)
            self.function = draw_function(ax_f, a, W, X, y, kappa=self.kappa, leak=self.leak,
                                          reference=reference,
                                          reference_label=reference_label, ylim=(lo, hi))
            ax_p = self.fig.add_subplot(1, 2, 2, projection="polar")
        else:
            ax_p = self.fig.add_subplot(1, 1, 1, projection="polar")
        self.polar = draw_polar(ax_p, a, W, X=X, basis=basis, radius=radius, floor=floor,
                                rmax=self._rmax(radius, floor), size_by_a=size_by_a, cones=cones,
                                data_directions=data_directions)
        self.title: Text = self.fig.suptitle("", fontsize=10)
        self.fig.tight_layout()
        self.fig.set_layout_engine(None)  # a fixed layout: no layout draw before each frame

    @property
    def changing(self) -> list[Artist]:
        """The artists :meth:`show` changes: the neurons, the network curve and the title."""
        return [self.polar.scatter, self.title,
                *([] if self.function is None else [self.function.line])]

    @property
    def count(self) -> int:
        """The number of recorded snapshots (0 when 'a' and 'W' were not recorded)."""
        return _snapshot_count(self.ds)

    def state(self, time: int) -> tuple[np.ndarray, np.ndarray]:
        """(a, W) at the recorded time index ``time`` (negative counts from the end); without
        snapshots, the final parameters for ``time=-1``."""
        T = self.count
        if T == 0:
            if time != -1:
                raise UserError("time: this Dataset holds no snapshots (record 'a' in record.probes "
                                "and set record.snapshots = true for 'W'); only time=-1, the final "
                                f"state (got {time})")
            return (self.ds["a_final"].isel(run=self.run).values,
                    self.ds["W_final"].isel(run=self.run).values)
        if not -T <= time < T:
            raise UserError(f"time: an index in [{-T}, {T}) (got {time})")
        return (self.ds["a"].isel(run=self.run, time=time).values,
                self.ds["W"].isel(run=self.run, time=time).values)

    def label(self, time: int) -> str:
        """'step 1,000   t = 0.1' for a snapshot, 'final' without snapshots."""
        if self.count == 0:
            return "final state"
        k = time % self.count
        step = int(self.ds["step"].values[k])
        return f"step {step:,}    flow time t = {float(self.ds['time'].values[k]):.4g}"

    def show(self, time: int) -> None:
        """Move the artists to the snapshot ``time`` (a recorded time index)."""
        a, W = self.state(time)
        self.polar.update(a, W)
        if self.function is not None:
            self.function.update(a, W)
        self.title.set_text(self.label(time))

    def _weights(self) -> xr.DataArray:
        return (self.ds["W"] if self.count else self.ds["W_final"].expand_dims("time")
                ).isel(run=self.run)

    def _rmax(self, radius: Radius, floor: float | None) -> float:
        norms = vectors.norms(self._weights().transpose(..., "dim").values)
        top = np.nanmax(norms) if np.isfinite(norms).any() else 0.0
        r = float(_radius(np.array(top), radius, floor))
        return r if r > 0 else 1.0

    def _output_range(self, X: np.ndarray | None,
                      y: np.ndarray | None) -> tuple[float, float]:
        """A y-range holding the data and the network at the first and last snapshots."""
        vals = [0.0] if y is None else [0.0, *np.asarray(y, dtype=float)]
        grid = np.linspace(-1, 1, 101) if X is None else np.linspace(
            min(-1.0, float(X[:, 0].min())), max(1.0, float(X[:, 0].max())), 101)
        for t in ((0, -1) if self.count else (-1,)):
            a, W = self.state(t)
            vals.extend(network_function(a, W, grid, self.kappa, self.leak))
        v = np.asarray(vals)
        v = v[np.isfinite(v)]
        lo, hi = float(v.min()), float(v.max())
        pad = 0.08 * (hi - lo) if hi > lo else 1.0
        return lo - pad, hi + pad


def polar_figure(ds: xr.Dataset, run: int = 0, time: int = -1, **options: Any) -> Figure:
    """The polar neuron plot of run ``run`` at the recorded time index ``time`` (default the last),
    with the network function beside it when the inputs are one coordinate plus bias (BF Figs. 2–3,
    docs/math.md §2.6). ``options``: those of :class:`RunPanels` (radius, floor, basis, reference,
    reference_label, size_by_a, cones, data_directions, figsize, dpi)."""
    panels = RunPanels(ds, run, **options)
    panels.show(time)
    return panels.fig
