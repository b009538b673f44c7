"""mmv-fig5: MNIST digits 0 and 1 (paper 004, §4, Figure 5): neurons align with the class
directions x_+ and x_- within about 2000 iterations, then ||W|| grows and the loss falls from
about 3000, and the first layer ends with a stable rank near 1.

The protocol, the saved Dataset, the claims and the figures are shared with mmv-fig10 and
mmv-fig11 (``mnist``): digit 1 is labelled +1 (listed first in the paper's heatmap). Every loss
reading (exponential/logistic, sum/mean) is run and reported; headline verdicts use
exponential-mean.
"""

from __future__ import annotations

import xarray as xr

from shallowflow.reproductions.base import Figure, Reproduction, Section, register
from shallowflow.reproductions.claims import Claim
from shallowflow.reproductions.mmv import mnist
from shallowflow.training import Trainer

DIGITS = (1, 0)
PRESETS = mnist.presets()


def simulate(P: mnist.MnistParams, train: Trainer) -> xr.Dataset:
    return mnist.simulate_pair(P, train, DIGITS, "mmv-fig5")


def judge(ds: xr.Dataset, P: mnist.MnistParams) -> list[Claim]:
    return mnist.judge(ds, P)


def draw(ds: xr.Dataset, P: mnist.MnistParams) -> list[Figure]:
    return mnist.draw_pair(ds, P, "fig5", "Fig. 5")


def protocol(ds: xr.Dataset, P: mnist.MnistParams) -> list[Section]:
    return mnist.protocol_pair(ds, P)


register(Reproduction(
    "mmv-fig5", "early alignment, growth and low rank on MNIST 0 vs 1",
    "Min, Mallada, Vidal (004), Figure 5", params=mnist.MnistParams, presets=PRESETS,
    simulate=simulate, judge=judge, draw=draw, protocol=protocol,
    summary="Two-layer ReLU network from a small Gaussian start on centred MNIST digits 1 (+1) "
            "and 0 (-1): alignment with the class directions, then growth and a low-rank first "
            "layer (Figure 5 of Min, Mallada and Vidal)."))
