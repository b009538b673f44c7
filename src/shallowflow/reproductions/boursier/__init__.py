"""Boursier, Flammarion: early alignment and spurious stationary points (docs/math.md §2).

Figures 2 and 3 of ``papers/002`` (bf-fig2, bf-fig3), the nature of the 3-point limit under the
three initialisations (bf-init) and the length of the early alignment phase against the initial
scale (bf-alignment). Each figure module registers itself when imported.
"""
