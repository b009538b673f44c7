"""Town et al.: saddle-to-saddle dynamics on orthogonal data (docs/math.md §3).

Figures 1 and 3-6 of ``papers/003`` and a convergence study of the limit process (Algorithm 1).
Each figure module registers itself when imported (:func:`shallowflow.reproductions.catalogue`).
"""
