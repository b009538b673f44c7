"""Intervals are drawn from their bounds: an estimate outside its own (percentile bootstrap)
interval is drawn, not refused, and open bounds stay at the estimate."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from shallowflow.plots.intervals import interval_bars


def test_estimate_outside_its_interval_is_drawn_at_the_bounds():
    fig, ax = plt.subplots()
    interval_bars(ax, [0.0], [-0.3], [-0.2], [-0.1], horizontal=True)
    (seg,) = ax.collections[0].get_segments()
    np.testing.assert_array_equal(seg, [[-0.2, 0.0], [-0.1, 0.0]])
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), [-0.3])
    plt.close(fig)


def test_open_bounds_end_at_the_estimate():
    fig, ax = plt.subplots()
    interval_bars(ax, [1.0, 2.0], [1.0, 2.0], [0.5, np.nan], [np.inf, 2.5])
    a, b = ax.collections[0].get_segments()
    np.testing.assert_array_equal(a, [[1.0, 0.5], [1.0, 1.0]])
    np.testing.assert_array_equal(b, [[2.0, 2.0], [2.0, 2.5]])
    plt.close(fig)
