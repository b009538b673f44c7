"""Min, Mallada, Vidal: early neuron alignment in two-layer ReLU networks with small
initialisation for binary classification (docs/math.md §4; paper 004).

Figures 5, 10, 11 (MNIST digit pairs: mmv-fig5, mmv-fig10, mmv-fig11, sharing ``mnist``), 6 (the
toy 2-D set: mmv-fig6), 7-9 (two positive points, mu = sin 0.1, sin 0.001, 0: one reproduction
mmv-two-point), 12-13 (A.5's two phases, both layers against the first layer only: mmv-fig12)
and the alignment time against mu and the initial scale (mmv-alignment-time, beyond the paper).
Shared builders and measurements live in ``setup``. Each figure module registers itself when
imported.
"""
