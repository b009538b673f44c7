"""The experiment: a batch of runs (data, model, initialisation, training, recording) validated
across its tables, with the numbers and choices derived from it, each computed once."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

from pydantic import Field, model_validator

from shallowflow.config.choices import EngineChoices, resolve
from shallowflow.config.data_kinds import DataSpec
from shallowflow.config.init_schemes import BalancedInit, InitSpec, _Scaled
from shallowflow.config.model_spec import ModelSpec
from shallowflow.config.record_spec import RecordSpec
from shallowflow.config.signature import signature_of
from shallowflow.config.spec_types import DIGEST, MAX_SEED, Label, StrictModel
from shallowflow.config.train_spec import CLASSIFICATION_LOSSES, TrainSpec
from shallowflow.dynamics.probes import PROBES, TEACHER


def resolve_choices(exp: Experiment) -> EngineChoices:
    """The automatic engine choices of ``exp`` made concrete
    (:func:`shallowflow.config.choices.resolve`)."""
    return resolve(exp.data, exp.model, exp.train, exp.log_lambda)


def batch_signature(exp: Experiment) -> str:
    """The batch signature of ``exp`` (:func:`shallowflow.config.signature.signature_of`)."""
    return signature_of(exp.model_dump(mode="json", context=DIGEST), exp.choices.settings())


_CACHED = ("choices", "signature")
"""The cached properties of an :class:`Experiment` (derived from its fields)."""


def _check_population(exp: Experiment) -> None:
    """What the population of a teacher (docs/math.md §11) cannot do, refused naming the field:
    a loss without a closed form, minibatches, a hidden bias, the paths that need samples, the
    polish, probes and init schemes that read samples."""
    kind, t = repr(getattr(exp.data, "kind", "?")), exp.train
    if t.loss != "square" or t.reduction != "mean":
        raise ValueError(f"train.loss: data.kind {kind} (the population) has a closed form only for "
                         f"the square loss; allowed: loss 'square' with reduction 'mean' (got "
                         f"{t.loss!r} with {t.reduction!r})")
    if t.optimizer != "gd":
        raise ValueError(f"train.optimizer: data.kind {kind} has no samples to draw minibatches "
                         f"from; allowed: 'gd' (got {t.optimizer!r})")
    if exp.model.bias:
        raise ValueError(f"model.bias: data.kind {kind} has Gaussian inputs without a constant "
                         "coordinate; allowed: false")
    for name in ("span", "activity_mask", "onedim"):
        if getattr(t, name) == "on":
            raise ValueError(f"train.{name}: 'on' needs samples, data.kind {kind} has none; "
                             "allowed: 'auto' or 'off'")
    if t.polish != "none":
        raise ValueError(f"train.polish: the polish (docs/math.md §9.5) needs samples, data.kind "
                         f"{kind} has none; allowed: 'none' (train.end_state judges the end "
                         f"points with the exact population derivatives, §11.3)")
    given = [p for p in exp.record.probes if PROBES[p].samples]
    if given and "probes" in exp.record.model_fields_set:
        raise ValueError(f"record.probes: {', '.join(given)} read the training samples, data.kind "
                         f"{kind} has none; leave them out")
    if exp.init.reads_samples:
        raise ValueError(f"init.scheme: {exp.init.scheme!r} reads the training samples, data.kind "
                         f"{kind} has none")


class Experiment(StrictModel):
    """A batch of ``runs`` independent networks; run r draws its keys from (seed, r)."""

    name: Label = "experiment"
    seed: int = Field(0, ge=0, le=MAX_SEED)
    runs: int = Field(1, gt=0)
    data: DataSpec
    model: ModelSpec
    init: InitSpec
    train: TrainSpec
    record: RecordSpec = RecordSpec()

    @model_validator(mode="after")
    def _cross(self) -> Experiment:
        n = self.data.n_samples
        if self.train.batch_size is not None and self.train.batch_size > n:
            raise ValueError(
                f"train.batch_size: must be <= n = {n}, got {self.train.batch_size}")
        if self.train.activity_mask == "on" and self.model.activation != "relu":
            raise ValueError("train.activity_mask: 'on' needs activation 'relu'")
        if self.train.balance == "tied" and (self.train.parametrisation == "plain"
                                             or not isinstance(self.init, BalancedInit)):
            raise ValueError("train.balance: 'tied' needs init.scheme 'balanced' and the "
                             "log-norm parametrisation")
        if self.train.onedim == "on" and (self.data.input_dim != 1 or not self.model.bias
                                          or self.model.activation != "relu"):
            raise ValueError("train.onedim: 'on' needs one input coordinate, model.bias = true "
                             "and activation 'relu'")
        if self.train.loss in CLASSIFICATION_LOSSES and not self.data.sign_labels:
            raise ValueError(
                f"train.loss: {self.train.loss!r} needs labels +1 or -1, but data.kind "
                f"{getattr(self.data, 'kind', '?')!r} has other label values; allowed: a "
                "square loss ('square', 'mse') for real labels, or data with labels +-1")
        self.init.check(self.model, self.data, self.input_dim)
        if self.data.population:
            _check_population(self)
        teacher = [p for p in self.record.probes if TEACHER in PROBES[p].needs]
        if teacher and not self.data.population:
            raise ValueError(f"record.probes: {', '.join(teacher)} read the population's teacher; "
                             f"allowed with data.kind 'gaussian_teacher' only (got "
                             f"{getattr(self.data, 'kind', '?')!r})")
        return self

    # resolved numbers ------------------------------------------------------------------------
    @property
    def probes(self) -> tuple[str, ...]:
        """The probes recorded: ``record.probes`` (+ 'W' with snapshots); on the population the
        default list without the probes that read samples (given ones are refused there)."""
        probes = tuple(self.record.probes)
        if self.data.population:
            probes = tuple(p for p in probes if not PROBES[p].samples)
        return probes + (("W",) if self.record.snapshots else ())

    @property
    def kappa(self) -> float:
        return 1.0 / self.model.width if self.model.kappa == "1/p" else 1.0

    @property
    def time_scale(self) -> float:
        ts = self.train.time_scale
        return float(self.model.width) if ts == "width" else float(ts)

    @property
    def input_dim(self) -> int:
        """d as the network sees it: the data's input dimension, + 1 with a hidden bias."""
        return self.data.input_dim + (1 if self.model.bias else 0)

    @property
    def log_lambda(self) -> float | None:
        """log lambda, the effective initial scale, for schemes homogeneous in it (else None):
        ``init.log_scale`` (or log ``init.scale``) - 1/2 log p with ``init.width_scaling``; the
        results' coordinate ``log_lambda``."""
        return self.init.log_lambda(self.model.width) if isinstance(self.init, _Scaled) else None

    def with_train(self, **fields: Any) -> Experiment:
        """This experiment with ``fields`` of its ``train`` table replaced (validated as a
        :class:`TrainSpec`)."""
        train = TrainSpec.model_validate({**self.train.model_dump(), **fields})
        return self.model_copy(update={"train": train})

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Experiment:
        """pydantic's copy, without the cached properties (``update`` may change their inputs)."""
        copy = super().model_copy(update=update, deep=deep)
        for name in _CACHED:
            copy.__dict__.pop(name, None)
        return copy

    # derived once ----------------------------------------------------------------------------
    @cached_property
    def choices(self) -> EngineChoices:
        """The automatic engine choices of ``train`` made concrete, with their notes
        (:func:`resolve_choices`); computed once."""
        return resolve_choices(self)

    @cached_property
    def signature(self) -> str:
        """The batch signature (:func:`batch_signature`); computed
        once."""
        return batch_signature(self)

    def resolved(self) -> tuple[dict[str, Any], list[str]]:
        """:attr:`choices` as (settings dict with keys ``parametrisation``, ``activity_mask``,
        ``span``, ``onedim``; list of notes)."""
        return self.choices.settings(), list(self.choices.notes)
