"""The population loss (Gaussian inputs, a teacher; docs/math.md §11): the reproductions of the
setting itself rather than of one paper's figure. ``population-limit`` (issue 35, item 5): the
finite-sample flow against the flow on the population, from one start, as the sample count grows
(docs/math.md §11.9).
"""

REPRODUCTIONS: dict[str, str] = {
    "population-limit": "shallowflow.reproductions.population.limit:REPRODUCTION",
}
"""This package's reproductions: name -> ``"module:attribute"`` (read by
:func:`shallowflow.reproductions.catalogue`, imported only when the name is looked up)."""
