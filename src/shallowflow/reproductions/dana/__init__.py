"""Dana, Pillaud-Vivien, Bach: convergence on weakly interacting data (docs/math.md §1).

Figures 2-6 of ``papers/000``: ``dana-fig2`` (phase transition), ``dana-fig3`` (convergence
probability against n), ``dana-fig4``/``dana-fig5`` (threshold against d and p), ``dana-fig6``
(PL measures on orthogonal data). Each figure module registers itself when imported
(:func:`shallowflow.reproductions.catalogue` imports them all).
"""
