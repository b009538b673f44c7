"""mmv-fig5: MNIST digits 0 and 1 (paper 004, §4, Figure 5): neurons align with the class
directions x_+ and x_- within about 2000 iterations, then ||W|| grows and the loss falls from
about 3000, and the first layer ends with a stable rank near 1.

The protocol, the saved Dataset, the claims and the figures are shared with mmv-fig10 and
mmv-fig11 (``digit_pairs``): digit 1 is labelled +1 (listed first in the paper's heatmap). Every loss
reading (exponential/logistic, sum/mean) is run and reported; headline verdicts use
exponential-mean.
"""

from __future__ import annotations

import xarray as xr

from shallowflow.reproductions.base import Figure, Reproduction, Section
from shallowflow.reproductions.claims import Claim
from shallowflow.reproductions.mmv import digit_pairs
from shallowflow.training.entry import Trainer

DIGITS = (1, 0)
PRESETS = digit_pairs.presets()


def simulate(P: digit_pairs.MnistParams, train: Trainer) -> xr.Dataset:
    return digit_pairs.simulate_pair(P, train, DIGITS, "mmv-fig5")


def judge(ds: xr.Dataset, P: digit_pairs.MnistParams) -> list[Claim]:
    return digit_pairs.judge(ds, P)


def draw(ds: xr.Dataset, P: digit_pairs.MnistParams) -> list[Figure]:
    return digit_pairs.draw_pair(ds, P, "fig5", "Fig. 5")


def method(ds: xr.Dataset, P: digit_pairs.MnistParams) -> list[Section]:
    return digit_pairs.method_pair(ds, P)


REPRODUCTION = Reproduction(
    "mmv-fig5", "early alignment, growth and low rank on MNIST 0 vs 1",
    "Min, Mallada, Vidal (004), Figure 5", params=digit_pairs.MnistParams, presets=PRESETS,
    simulate=simulate, judge=judge, draw=draw, method=method,
    summary="Two-layer ReLU network from a small Gaussian start on centred MNIST digits 1 (+1) "
            "and 0 (-1): alignment with the class directions, then growth and a low-rank first "
            "layer (Figure 5 of Min, Mallada and Vidal).")
