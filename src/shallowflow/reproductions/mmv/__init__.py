"""Min, Mallada, Vidal: early neuron alignment in two-layer ReLU networks with small
initialisation for binary classification (docs/math.md §4; paper 004).

Figures 5, 10, 11 (MNIST digit pairs: mmv-fig5, mmv-fig10, mmv-fig11, sharing ``digit_pairs``), 6
(the toy 2-D set: mmv-fig6), 7-9 (two positive points, mu = sin 0.1, sin 0.001, 0: one
reproduction mmv-two-point, ``twopoint``), 12-13 (A.5's two phases, both layers against the first
layer only: mmv-fig12) and the alignment time against mu and the initial scale
(mmv-alignment-time, beyond the paper). Shared builders and measurements live in
``alignment_curves``.
"""

REPRODUCTIONS: dict[str, str] = {
    "mmv-alignment-time": "shallowflow.reproductions.mmv.alignment_time:REPRODUCTION",
    "mmv-fig10": "shallowflow.reproductions.mmv.fig10:REPRODUCTION",
    "mmv-fig11": "shallowflow.reproductions.mmv.fig11:REPRODUCTION",
    "mmv-fig12": "shallowflow.reproductions.mmv.fig12:REPRODUCTION",
    "mmv-fig5": "shallowflow.reproductions.mmv.fig5:REPRODUCTION",
    "mmv-fig6": "shallowflow.reproductions.mmv.fig6:REPRODUCTION",
    "mmv-two-point": "shallowflow.reproductions.mmv.twopoint:REPRODUCTION",
}
"""This paper's reproductions: name -> ``"module:attribute"`` (read by
:func:`shallowflow.reproductions.catalogue`, imported only when the name is looked up)."""
