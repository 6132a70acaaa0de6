"""Saves and loads a materialised TensorFrame with its column stats in a file
that loads with ``torch.load(weights_only=True)``: tensors, strings and numbers
only, no pickled objects."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch_frame
from torch_frame import TensorFrame
from torch_frame.data import MultiEmbeddingTensor, MultiNestedTensor
from torch_frame.data.stats import StatType

FORMAT = "rdl-frame-1"


def save_frame(path: str | Path, tf: TensorFrame, col_stats: dict[str, dict[StatType, Any]],
               key: str) -> None:
    """Writes ``tf`` and ``col_stats`` under cache ``key`` (atomically)."""
    feats = {}
    for stype, feat in tf.feat_dict.items():
        if isinstance(feat, (MultiNestedTensor, MultiEmbeddingTensor)):
            feats[stype.value] = {
                "kind": type(feat).__name__, "values": feat.values, "offset": feat.offset,
                "num_rows": feat.num_rows, "num_cols": feat.num_cols,
            }
        else:
            feats[stype.value] = {"kind": "Tensor", "values": feat}
    payload = {
        "format": FORMAT,
        "key": key,
        "feats": feats,
        "col_names": {stype.value: list(cols) for stype, cols in tf.col_names_dict.items()},
        "col_stats": {
            col: {stat.value: plain_value(value) for stat, value in stats.items()}
            for col, stats in col_stats.items()
        },
    }
    path = Path(path)
    tmp = path.with_suffix(".tmp")
    torch.save(payload, tmp)
    tmp.replace(path)


def load_frame(path: str | Path, key: str) -> tuple[TensorFrame, dict[str, dict[StatType, Any]]]:
    """Reads a file written by :func:`save_frame`; raises ``ValueError`` if it
    is not one, or was written for another cache key."""
    payload = torch.load(path, weights_only=True)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not an rdl frame file")
    if payload["key"] != key:
        raise ValueError(f"{path} holds another version of the table")
    feat_dict = {}
    for name, feat in payload["feats"].items():
        stype = torch_frame.stype(name)
        if feat["kind"] == "Tensor":
            feat_dict[stype] = feat["values"]
        else:
            cls = MultiNestedTensor if feat["kind"] == "MultiNestedTensor" else MultiEmbeddingTensor
            feat_dict[stype] = cls(feat["num_rows"], feat["num_cols"], feat["values"], feat["offset"])
    col_names = {torch_frame.stype(k): v for k, v in payload["col_names"].items()}
    col_stats = {
        col: {StatType(stat): value for stat, value in stats.items()}
        for col, stats in payload["col_stats"].items()
    }
    return TensorFrame(feat_dict, col_names), col_stats


def plain_value(value: Any) -> Any:
    """Numpy scalars and containers of them become Python numbers."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return type(value)(plain_value(v) for v in value)
    return value
