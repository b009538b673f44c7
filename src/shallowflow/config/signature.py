"""Batch signatures: runs whose specs differ only in *batchable* fields share array shapes and
compiled code, and are trained together in one batch (:mod:`shallowflow.experiment`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from shallowflow.config.spec_types import DIGEST

if TYPE_CHECKING:
    from shallowflow.config.spec import Experiment

BATCHABLE = ("name", "seed", "runs", "init.scale", "init.log_scale", "train.stop_loss",
             "train.stop_grad", "data.seed", "record.at_steps", "record.at_times")
"""The fields that may differ between the runs of one batch (dotted paths)."""


def batch_signature(exp: Experiment) -> str:
    """JSON of the spec without its batchable fields, with its engine choices (which may depend
    on batchable fields): equal signatures can share one batch."""
    d = exp.model_dump(mode="json", context=DIGEST)
    for path in BATCHABLE:
        node = d
        *head, last = path.split(".")
        for h in head:
            node = node[h]
        node.pop(last, None)
    d["resolved"] = exp.choices.settings()
    return json.dumps(d, sort_keys=True)
