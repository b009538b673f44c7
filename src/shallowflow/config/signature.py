"""Batch signatures: runs whose specs differ only in *batchable* fields share array shapes and
compiled code, and are trained together in one batch (:mod:`shallowflow.training.batches`)."""

from __future__ import annotations

import json
from typing import Any

BATCHABLE = ("name", "seed", "runs", "init.scale", "init.log_scale", "train.stop_loss",
             "train.stop_grad", "data.seed", "record.at_steps", "record.at_times")
"""The fields that may differ between the runs of one batch (dotted paths)."""


def signature_of(d: dict[str, Any], settings: dict[str, Any]) -> str:
    """JSON of a spec's dump ``d`` (``model_dump(mode="json", context=DIGEST)``, changed in
    place) without its batchable fields, with its engine ``settings`` (which may depend on
    batchable fields): equal signatures can share one batch."""
    for path in BATCHABLE:
        node = d
        *head, last = path.split(".")
        for h in head:
            node = node[h]
        node.pop(last, None)
    d["resolved"] = settings
    return json.dumps(d, sort_keys=True)
