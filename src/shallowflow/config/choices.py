"""The automatic engine choices of an experiment ('auto' settings of ``[train]``) made concrete,
once per experiment (:attr:`shallowflow.config.Experiment.choices`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shallowflow.model import onedim as onedim_path

if TYPE_CHECKING:
    from shallowflow.config.data_kinds import DataSpec
    from shallowflow.config.model_spec import ModelSpec
    from shallowflow.config.train_spec import TrainSpec


@dataclass(frozen=True)
class EngineChoices:
    """The engine settings an experiment trains with, and a note for each choice made
    automatically (docs/math.md §0.3)."""

    parametrisation: str
    """'plain' or 'lognorm' (the log-norm parametrisation)."""
    activity_mask: bool
    """The persistent activity mask."""
    span: bool
    """Training in the span of the data."""
    onedim: bool
    """The exact bucketed step for one input coordinate plus a bias (docs/math.md §10)."""
    notes: tuple[str, ...] = ()
    """One line per automatic choice, for the user."""

    def settings(self) -> dict[str, Any]:
        """The four settings as a dict (keys ``parametrisation``, ``activity_mask``, ``span``,
        ``onedim``), as batch signatures and :meth:`Experiment.resolved` show them."""
        return {"parametrisation": self.parametrisation, "activity_mask": self.activity_mask,
                "span": self.span, "onedim": self.onedim}


def resolve(data: DataSpec, model: ModelSpec, t: TrainSpec,
            log_lambda: float | None) -> EngineChoices:
    """The 'auto' choices of the train table ``t`` made concrete for ``data`` and ``model``
    (``log_lambda``: the log of the initial scale, None where it has none), each with its note: the log-norm
    parametrisation when lambda^2 is below the smallest normal float or the balance is tied; the
    activity mask for orthogonal data under ReLU full-batch GD; the span of the data when the rows
    are orthogonal or n < d under full-batch GD; the one-dimensional path when it pays. The
    population (no samples, docs/math.md §11) takes none of the three."""
    notes = []
    if data.population:  # no samples: no span, mask or 1-D path (refused when 'on', config.spec)
        t = t.model_copy(update={"span": "off", "activity_mask": "off", "onedim": "off"})
    parametrisation = t.parametrisation
    if parametrisation == "auto":
        tiny = 2.2250738585072014e-308 if t.dtype == "float64" else 1.1754944e-38
        lam = log_lambda
        parametrisation = "plain"
        if (lam is not None and 2 * lam < math.log(tiny)) or t.balance == "tied":
            parametrisation = "lognorm"
            if t.balance != "tied":
                notes.append(
                    f"parametrisation: lambda^2 = exp({2 * lam:.4g}) is below the smallest "
                    f"normal {t.dtype} ({tiny:.3g}): using the log-norm parametrisation "
                    f"(docs/math.md §0.3)")
    setting = "off" if t.onedim == "auto" and "on" in (t.activity_mask, t.span) else t.onedim
    onedim, note = onedim_path.resolve(
        setting, input_dim=data.input_dim, bias=model.bias, n=data.n_samples,
        width=model.width, gd=t.optimizer == "gd", relu=model.activation == "relu")
    if note:
        notes.append(note)
    orthogonal = data.orthogonal_rows
    mask = t.activity_mask
    if mask == "auto":
        mask = "on" if (not onedim and orthogonal and model.activation == "relu"
                        and t.optimizer == "gd") else "off"
        if mask == "on":
            notes.append("activity_mask: on (orthogonal data: dead pairs never revive, "
                         "docs/math.md §0.3)")
    span = t.span
    if span == "auto":
        n, d = data.n_samples, data.input_dim + (1 if model.bias else 0)
        span = "on" if not onedim and t.optimizer == "gd" and (orthogonal or n < d) else "off"
        if span == "on":
            notes.append("span: training in the span of the data (lossless)")
    return EngineChoices(parametrisation, mask == "on", span == "on", onedim, tuple(notes))
