"""Saves and loads a materialised TensorFrame with its column stats in a file
that loads with ``torch.load(weights_only=True)``: tensors, strings and numbers
only, no pickled objects. Loading memory-maps the file, so the tensors stay
in the page cache until they are used (files are replaced atomically, never
rewritten in place, so a mapped file never changes under a reader), and is
checked against the checksum written with it (see :mod:`rdl.graph.cache_file`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch_frame
from torch_frame import TensorFrame
from torch_frame.data import MultiEmbeddingTensor, MultiNestedTensor
from torch_frame.data.stats import StatType

from rdl.graph.cache_file import unseal, write_sealed

FORMAT = "rdl-frame-1"
_NESTED = {"MultiNestedTensor": MultiNestedTensor, "MultiEmbeddingTensor": MultiEmbeddingTensor}


def save_frame(path: str | Path, tf: TensorFrame, col_stats: dict[str, dict[StatType, Any]],
               key: str) -> None:
    """Writes ``tf`` and ``col_stats`` under cache ``key`` (atomically, with a
    checksum)."""
    payload = {"format": FORMAT, "key": key, **frame_to_plain(tf),
               "col_stats": stats_to_plain(col_stats)}
    write_sealed(payload, path)


def load_frame(path: str | Path, key: str) -> tuple[TensorFrame, dict[str, dict[StatType, Any]]]:
    """Reads a file written by :func:`save_frame`; raises ``ValueError`` if it
    is not one, or was written for another cache key, and
    :class:`~rdl.checksum.ChecksumError` if its content changed on disk."""
    payload = torch.load(path, weights_only=True, mmap=True)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not an rdl frame file")
    if payload["key"] != key:
        raise ValueError(f"{path} holds another version of the table")
    payload = unseal(payload, path)
    return frame_from_plain(payload), stats_from_plain(payload["col_stats"])


def frame_to_plain(tf: TensorFrame) -> dict[str, Any]:
    """``tf`` as tensors, names and numbers."""
    feats = {}
    for stype, feat in tf.feat_dict.items():
        if isinstance(feat, (MultiNestedTensor, MultiEmbeddingTensor)):
            feats[stype.value] = {
                "kind": type(feat).__name__, "values": feat.values, "offset": feat.offset,
                "num_rows": feat.num_rows, "num_cols": feat.num_cols,
            }
        elif isinstance(feat, torch.Tensor):
            feats[stype.value] = {"kind": "Tensor", "values": feat}
        else:
            raise TypeError(
                f"Cannot store {type(feat).__name__} features of stype {stype.value!r}.")
    return {"feats": feats,
            "col_names": {stype.value: list(cols) for stype, cols in tf.col_names_dict.items()}}


def frame_from_plain(plain: dict[str, Any]) -> TensorFrame:
    """The inverse of :func:`frame_to_plain`."""
    feat_dict = {}
    for name, feat in plain["feats"].items():
        if feat["kind"] == "Tensor":
            feat_dict[torch_frame.stype(name)] = feat["values"]
        else:
            feat_dict[torch_frame.stype(name)] = _NESTED[feat["kind"]](
                feat["num_rows"], feat["num_cols"], feat["values"], feat["offset"])
    col_names = {torch_frame.stype(k): v for k, v in plain["col_names"].items()}
    return TensorFrame(feat_dict, col_names)


def stats_to_plain(col_stats: dict[str, dict[StatType, Any]]) -> dict[str, dict[str, Any]]:
    return {col: {stat.value: plain_value(value) for stat, value in stats.items()}
            for col, stats in col_stats.items()}


def stats_from_plain(plain: dict[str, dict[str, Any]]) -> dict[str, dict[StatType, Any]]:
    return {col: {StatType(stat): value for stat, value in stats.items()}
            for col, stats in plain.items()}


def plain_value(value: Any) -> Any:
    """Numpy scalars and containers of them become Python numbers."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return type(value)(plain_value(v) for v in value)
    return value
