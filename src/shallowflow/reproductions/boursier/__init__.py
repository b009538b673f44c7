"""Boursier, Flammarion: early alignment and spurious stationary points (docs/math.md §2).

Figures 2 and 3 of ``papers/002`` (bf-fig2, bf-fig3), the nature of the 3-point limit under the
three initialisations (bf-init, ``init_limits``) and the length of the early alignment phase
against the initial scale (bf-alignment, ``alignment_length``). Shared pieces: ``phases`` (the
paper's protocol and the phase measurements of a recorded run).
"""

REPRODUCTIONS: dict[str, str] = {
    "bf-alignment": "shallowflow.reproductions.boursier.alignment_length:REPRODUCTION",
    "bf-fig2": "shallowflow.reproductions.boursier.fig2:REPRODUCTION",
    "bf-fig3": "shallowflow.reproductions.boursier.fig3:REPRODUCTION",
    "bf-init": "shallowflow.reproductions.boursier.init_limits:REPRODUCTION",
}
"""This paper's reproductions: name -> ``"module:attribute"`` (read by
:func:`shallowflow.reproductions.catalogue`, imported only when the name is looked up)."""
