"""mmv-fig11: MNIST digits 1 and 7 (paper 004, App. A.4, Figure 11), "exactly the same
experimental setting" as Figure 5 with another pair: the panels and claims of mmv-fig5 (shared in
``digit_pairs``), digit 1 labelled +1. Every loss reading is run and reported; headline verdicts use
exponential-mean.
"""

from __future__ import annotations

import xarray as xr

from shallowflow.reproductions.base import Figure, Reproduction, Section
from shallowflow.reproductions.claims import Claim
from shallowflow.reproductions.mmv import digit_pairs
from shallowflow.training.entry import Trainer

DIGITS = (1, 7)
PRESETS = digit_pairs.presets()


def simulate(P: digit_pairs.MnistParams, train: Trainer) -> xr.Dataset:
    return digit_pairs.simulate_pair(P, train, DIGITS, "mmv-fig11")


def judge(ds: xr.Dataset, P: digit_pairs.MnistParams) -> list[Claim]:
    return digit_pairs.judge(ds, P)


def draw(ds: xr.Dataset, P: digit_pairs.MnistParams) -> list[Figure]:
    return digit_pairs.draw_pair(ds, P, "fig11", "Fig. 11")


def method(ds: xr.Dataset, P: digit_pairs.MnistParams) -> list[Section]:
    return digit_pairs.method_pair(ds, P)


REPRODUCTION = Reproduction(
    "mmv-fig11", "early alignment, growth and low rank on MNIST 1 vs 7",
    "Min, Mallada, Vidal (004), Figure 11", params=digit_pairs.MnistParams, presets=PRESETS,
    simulate=simulate, judge=judge, draw=draw, method=method,
    summary="Two-layer ReLU network from a small Gaussian start on centred MNIST digits 1 (+1) "
            "and 7 (-1): alignment with the class directions, then growth and a low-rank first "
            "layer (Figure 11 of Min, Mallada and Vidal).")
