"""Dana, Pillaud-Vivien, Bach: convergence on weakly interacting data (docs/math.md §1).

Figures 2-6 of ``papers/000``: ``dana-fig2`` (phase transition), ``dana-fig3`` (convergence
probability against n), ``dana-fig4``/``dana-fig5`` (threshold against d and p), ``dana-fig6``
(PL measures on orthogonal data). Shared pieces: ``convergence_grids`` (the convergence protocol
and its grids) and ``threshold`` (the threshold scan of Figures 4 and 5); ``group_measures`` holds
the measurements on dana-fig2's group runs, ``dpb_sources`` where each claim's reference comes
from (audited in docs/claims/dana.md).
"""

REPRODUCTIONS: dict[str, str] = {
    "dana-fig2": "shallowflow.reproductions.dana.fig2:REPRODUCTION",
    "dana-fig3": "shallowflow.reproductions.dana.fig3:REPRODUCTION",
    "dana-fig4": "shallowflow.reproductions.dana.fig4:REPRODUCTION",
    "dana-fig5": "shallowflow.reproductions.dana.fig5:REPRODUCTION",
    "dana-fig6": "shallowflow.reproductions.dana.fig6:REPRODUCTION",
}
"""This paper's reproductions: name -> ``"module:attribute"`` (read by
:func:`shallowflow.reproductions.catalogue`, imported only when the name is looked up)."""
