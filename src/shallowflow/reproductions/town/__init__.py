"""Town et al.: saddle-to-saddle dynamics on orthogonal data (docs/math.md §3).

Figures 1 and 3-6 of ``papers/003`` and a convergence study of the limit process (Algorithm 1,
``town-convergence``). Shared pieces: ``scale_runs`` (the paper's protocol, runs at several
initial scales and their limit processes; town-fig1, town-fig3, town-fig4, town-convergence) and
``interpolation`` (the interpolator's squared norm; town-fig5, town-fig6); ``tblel_sources`` says
where each claim's reference comes from (audited in docs/claims/town.md).
"""

REPRODUCTIONS: dict[str, str] = {
    "town-convergence": "shallowflow.reproductions.town.limit_convergence:REPRODUCTION",
    "town-fig1": "shallowflow.reproductions.town.fig1:REPRODUCTION",
    "town-fig3": "shallowflow.reproductions.town.fig3:REPRODUCTION",
    "town-fig4": "shallowflow.reproductions.town.fig4:REPRODUCTION",
    "town-fig5": "shallowflow.reproductions.town.fig5:REPRODUCTION",
    "town-fig6": "shallowflow.reproductions.town.fig6:REPRODUCTION",
}
"""This paper's reproductions: name -> ``"module:attribute"`` (read by
:func:`shallowflow.reproductions.catalogue`, imported only when the name is looked up)."""
