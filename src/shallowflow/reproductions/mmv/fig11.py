"""mmv-fig11: MNIST digits 1 and 7 (paper 004, App. A.4, Figure 11), "exactly the same
experimental setting" as Figure 5 with another pair: the panels and claims of mmv-fig5 (shared in
``mnist``), digit 1 labelled +1. Every loss reading is run and reported; headline verdicts use
exponential-mean.
"""

from __future__ import annotations

import xarray as xr

from shallowflow.reproductions.base import Figure, Reproduction, Section, register
from shallowflow.reproductions.claims import Claim
from shallowflow.reproductions.mmv import mnist
from shallowflow.training import Trainer

DIGITS = (1, 7)
PRESETS = mnist.presets()


def simulate(P: mnist.MnistParams, train: Trainer) -> xr.Dataset:
    return mnist.simulate_pair(P, train, DIGITS, "mmv-fig11")


def judge(ds: xr.Dataset, P: mnist.MnistParams) -> list[Claim]:
    return mnist.judge(ds, P)


def draw(ds: xr.Dataset, P: mnist.MnistParams) -> list[Figure]:
    return mnist.draw_pair(ds, P, "fig11", "Fig. 11")


def protocol(ds: xr.Dataset, P: mnist.MnistParams) -> list[Section]:
    return mnist.protocol_pair(ds, P)


register(Reproduction(
    "mmv-fig11", "early alignment, growth and low rank on MNIST 1 vs 7",
    "Min, Mallada, Vidal (004), Figure 11", params=mnist.MnistParams, presets=PRESETS,
    simulate=simulate, judge=judge, draw=draw, protocol=protocol,
    summary="Two-layer ReLU network from a small Gaussian start on centred MNIST digits 1 (+1) "
            "and 7 (-1): alignment with the class directions, then growth and a low-rank first "
            "layer (Figure 11 of Min, Mallada and Vidal)."))
