"""Validated experiment specifications (pydantic v2), loaded from TOML or YAML.

An :class:`Experiment` is everything needed to reproduce a batch of runs: data, model,
initialisation, training and recording. Unknown keys, wrong types, non-finite numbers and
out-of-range values are refused before any work with :class:`ConfigError`, whose message names
each field, the value given and what is allowed.

One concept per module, every public name re-exported here: :mod:`.spec_types` (base model,
error, array fields), :mod:`.data_kinds` (``data.kind``, registry :data:`DATA_KINDS`),
:mod:`.model_spec`, :mod:`.init_schemes` (``init.scheme``, registry :data:`INIT_SCHEMES`),
:mod:`.train_spec`, :mod:`.record_spec`, :mod:`.spec` (the :class:`Experiment`),
:mod:`.choices` (its automatic engine choices, :class:`EngineChoices`), :mod:`.signature` (its
batch signature), :mod:`.messages` (readable validation errors), :mod:`.overrides` (``--set``
and sweep grid paths) and :mod:`.spec_io` (files). The registries are read by
``shallowflow list``; adding a data kind is a spec class in :mod:`.data_kinds` (with its
``shape`` and ``generate``) plus its generator in :mod:`shallowflow.data`; adding a scheme is a
spec class in :mod:`.init_schemes` with its ``draw`` plus the pure function in
:mod:`shallowflow.model.initialisation`.
"""

from shallowflow.config.choices import EngineChoices
from shallowflow.config.data_kinds import (
    DATA_KINDS,
    ArrayData,
    DataSpec,
    FileData,
    MnistData,
    OrthogonalData,
    OrthonormalData,
    SphereData,
    StewartData,
    TeacherData,
    ThreePointData,
    TwoPointData,
)
from shallowflow.config.init_schemes import (
    INIT_SCHEMES,
    BalancedInit,
    DominatedInit,
    DpbInit,
    GaussianInit,
    GivenInit,
    GroupInit,
    InitSpec,
    PytorchInit,
    XavierInit,
    check_given,
    load_given,
)
from shallowflow.config.messages import RENAMED, format_validation_error
from shallowflow.config.model_spec import ModelSpec
from shallowflow.config.overrides import apply_overrides, copy_tree, parse_value, set_path, split_override
from shallowflow.config.record_spec import RecordSpec
from shallowflow.config.signature import BATCHABLE
from shallowflow.config.spec import Experiment, batch_signature, resolve_choices
from shallowflow.config.spec_io import dump_toml, experiment_from_mapping, load_experiment, read_mapping
from shallowflow.config.spec_types import (
    DIGEST,
    MAX_SEED,
    ConfigError,
    FloatArray,
    Range,
    StrictModel,
    tomllib,
)
from shallowflow.config.train_spec import CLASSIFICATION_LOSSES, TrainSpec

__all__ = [
    "BATCHABLE",
    "CLASSIFICATION_LOSSES",
    "DATA_KINDS",
    "DIGEST",
    "INIT_SCHEMES",
    "MAX_SEED",
    "RENAMED",
    "ArrayData",
    "BalancedInit",
    "ConfigError",
    "DataSpec",
    "DominatedInit",
    "DpbInit",
    "EngineChoices",
    "Experiment",
    "FileData",
    "FloatArray",
    "GaussianInit",
    "GivenInit",
    "GroupInit",
    "InitSpec",
    "MnistData",
    "ModelSpec",
    "OrthogonalData",
    "OrthonormalData",
    "PytorchInit",
    "Range",
    "RecordSpec",
    "SphereData",
    "StewartData",
    "StrictModel",
    "TeacherData",
    "ThreePointData",
    "TrainSpec",
    "TwoPointData",
    "XavierInit",
    "apply_overrides",
    "batch_signature",
    "check_given",
    "copy_tree",
    "dump_toml",
    "experiment_from_mapping",
    "format_validation_error",
    "load_experiment",
    "load_given",
    "parse_value",
    "read_mapping",
    "resolve_choices",
    "set_path",
    "split_override",
    "tomllib",
]
