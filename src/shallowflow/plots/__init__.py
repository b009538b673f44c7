"""Figure helpers (matplotlib; the backend is the caller's choice, the CLI picks Agg)."""

from shallowflow.plots.curves import plot_probes

__all__ = ["plot_probes"]
