"""Figure helpers (matplotlib; the backend is the caller's choice, the CLI picks Agg). The run
animation is ``shallowflow.plots.animate.animate`` (not re-exported here, so that the name
``shallowflow.plots.animate`` stays the module)."""

from shallowflow.plots.polar import draw_function, draw_polar, polar_figure
from shallowflow.plots.probe_plot import plot_probes

__all__ = ["draw_function", "draw_polar", "plot_probes", "polar_figure"]
