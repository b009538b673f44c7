"""The cones a neuron can lie in for binary labels (MMV, docs/math.md §4.2): their codes and names.

With activity A_i = 1{<x_i, w> > 0} and labels y_i in {-1, +1}: S_+ iff A_i = 1{y_i > 0} for all i,
S_- iff A_i = 1{y_i < 0} for all i, S_dead iff no A_i (dead takes precedence, then S_+), "other"
otherwise. The probe ``mmv_cone_counts`` (:mod:`shallowflow.dynamics.probes`) counts the neurons of each cone
in this order, along its dimension ``cone`` labelled by :data:`CONE_NAMES`;
:func:`shallowflow.theory.alignment.cone_membership` returns the codes.
"""

from __future__ import annotations

OTHER, S_PLUS, S_MINUS, S_DEAD = 0, 1, 2, 3
"""The code of each cone, its index in :data:`CONE_NAMES`."""

CONE_NAMES: tuple[str, ...] = ("other", "S_+", "S_-", "S_dead")
"""The cones' names, in code order."""
