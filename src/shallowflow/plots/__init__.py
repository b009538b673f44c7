"""Figure helpers (matplotlib, Agg backend by default for headless use)."""

from shallowflow.plots.curves import plot_probes

__all__ = ["plot_probes"]
