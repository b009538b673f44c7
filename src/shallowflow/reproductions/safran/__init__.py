"""Safran and Shamir (ICML 2018), Safran, Yehudai and Shamir (COLT 2021): spurious minima of the
population loss of a ReLU student against the orthonormal teacher (docs/math.md §11.8).

``safran-minima``: the census of gradient descent's end points up to permutation, against k and
with one extra neuron. Shared pieces: ``census_runs`` (the protocol and the census of its end
points), ``safran_sources`` (where each claim's reference comes from, audited in
docs/claims/safran.md).
"""

REPRODUCTIONS: dict[str, str] = {
    "safran-minima": "shallowflow.reproductions.safran.minima:REPRODUCTION",
}
"""This paper's reproductions: name -> ``"module:attribute"`` (read by
:func:`shallowflow.reproductions.catalogue`, imported only when the name is looked up)."""
