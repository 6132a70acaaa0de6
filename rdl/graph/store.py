"""The built graph in one file that memory-maps back: loader worker processes
and DDP ranks on a node read the same page-cache pages instead of each
holding a copy.

The file is a plain ``torch.save`` of tensors, strings and numbers, so it
loads with ``torch.load(weights_only=True, mmap=True)``: every tensor (node
times, edge indices, TensorFrame features) is then a view of the mapped file
and costs memory only for the pages that are read, once per machine. Key
values that are text are stored as UTF-8 bytes plus offsets and come back as
an Arrow-backed ``pandas.Index`` over the mapped bytes. The file is written
atomically with a checksum of its content, checked on every load (see
:mod:`rdl.graph.cache_file`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import torch
from torch_geometric.data import HeteroData

from rdl.graph.cache_file import unseal, write_sealed
from rdl.graph.frame_io import frame_from_plain, frame_to_plain, stats_from_plain, stats_to_plain

FORMAT = "rdl-graph-1"
_NODE_ATTRS = {"num_nodes", "time", "tf"}
_GRAPH_ATTRS = {"col_stats_dict", "table_of", "key_index"}


def save_graph(data: HeteroData, path: str | Path) -> None:
    r"""Writes a graph built by :func:`rdl.graph.build_graph` to ``path``
    (one file with a checksum, replaced atomically; an ``OSError`` naming
    ``path`` if it cannot be written, e.g. on a full disk).

    Args:
        data (HeteroData): The graph: per node type ``num_nodes`` and
            optional ``time`` and ``tf``; per edge type ``edge_index``; and
            the graph attributes ``col_stats_dict``, ``table_of`` and
            ``key_index``. Anything else is an error, so nothing is lost
            silently.
        path (str or Path): The file to write.
    """
    extra = set(data.to_dict()["_global_store"]) - _GRAPH_ATTRS
    if extra:
        raise ValueError(f"save_graph stores the graph attributes {sorted(_GRAPH_ATTRS)}; "
                         f"the graph also has {sorted(extra)}.")
    nodes = {}
    for nt in data.node_types:
        store = data[nt]
        unknown = set(store.keys()) - _NODE_ATTRS
        if unknown:
            raise ValueError(f"save_graph cannot store attribute(s) {sorted(unknown)} of node "
                             f"type {nt!r}; it stores {sorted(_NODE_ATTRS)}.")
        nodes[nt] = {"num_nodes": int(store.num_nodes),
                     "time": store["time"] if "time" in store else None,
                     "tf": frame_to_plain(store.tf) if "tf" in store else None}
    edges = []
    for et in data.edge_types:
        unknown = set(data[et].keys()) - {"edge_index"}
        if unknown:
            raise ValueError(f"save_graph cannot store attribute(s) {sorted(unknown)} of edge "
                             f"type {et}; it stores edge_index only.")
        edges.append([*et, data[et].edge_index])
    payload = {
        "format": FORMAT,
        "nodes": nodes,
        "edges": edges,
        "col_stats_dict": {nt: stats_to_plain(s)
                           for nt, s in getattr(data, "col_stats_dict", {}).items()},
        "table_of": dict(getattr(data, "table_of", {})),
        "key_index": {nt: _index_to_plain(nt, index)
                      for nt, index in getattr(data, "key_index", {}).items()},
    }
    write_sealed(payload, path)


def load_graph(path: str | Path, *, mmap: bool = True) -> HeteroData:
    r"""Reads a graph written by :func:`save_graph`.

    Args:
        path (str or Path): The file.
        mmap (bool): Map the file instead of reading it: tensors are views of
            the page cache, shared by every process that maps the same file
            (forked loader workers, DDP ranks). Keep the file in place while
            the graph is in use. (default: :obj:`True`)

    Returns:
        HeteroData: equal, attribute by attribute, to the graph saved.

    Raises:
        ValueError: if ``path`` is not a graph file, or
            :class:`~rdl.checksum.ChecksumError` (a ``ValueError``) if its
            content changed since it was written.
    """
    try:
        payload = torch.load(path, weights_only=True, mmap=mmap)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"No saved graph at {str(path)!r}; write one with save_graph().") from None
    except RuntimeError as exc:
        raise ValueError(f"{path} is not a graph written by save_graph(): {exc}") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not a graph written by save_graph() (format {FORMAT}).")
    payload = unseal(payload, path)
    data = HeteroData()
    data.col_stats_dict = {nt: stats_from_plain(s) for nt, s in payload["col_stats_dict"].items()}
    data.table_of = payload["table_of"]
    data.key_index = {nt: _index_from_plain(p) for nt, p in payload["key_index"].items()}
    for nt, node in payload["nodes"].items():
        data[nt].num_nodes = node["num_nodes"]
        if node["time"] is not None:
            data[nt].time = node["time"]
        if node["tf"] is not None:
            data[nt].tf = frame_from_plain(node["tf"])
    for src, rel, dst, edge_index in payload["edges"]:
        data[src, rel, dst].edge_index = edge_index
    return data


def _index_to_plain(node_type: str, index: pd.Index) -> dict[str, Any]:
    """Key values as tensors: numbers as they are, datetimes as integers of
    their unit, text as UTF-8 bytes plus int64 offsets."""
    base = {"name": index.name}
    if pd.api.types.is_datetime64_dtype(index.dtype):
        return {**base, "kind": "datetime", "dtype": str(index.dtype),
                "values": torch.from_numpy(index.asi8.copy())}
    if pd.api.types.is_string_dtype(index.dtype) and pd.api.types.infer_dtype(index) == "string":
        text = pa.array(index, type=pa.large_string())
        if isinstance(text, pa.ChunkedArray):
            text = text.combine_chunks()
        _, offsets, data = text.buffers()
        start = text.offset
        offsets = np.frombuffer(offsets, dtype=np.int64)[start:start + len(text) + 1]
        raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
        raw = raw[offsets[0]:offsets[-1]]
        return {**base, "kind": "text", "offsets": torch.from_numpy(offsets - offsets[0]),
                "values": torch.from_numpy(raw.copy())}
    values = np.asarray(index)
    if values.dtype.kind not in "biuf":
        raise TypeError(
            f"save_graph cannot store the keys of node type {node_type!r} (dtype {index.dtype}); "
            "it stores numbers, datetimes and text."
        )
    return {**base, "kind": "numbers", "values": torch.from_numpy(values.copy())}


def _index_from_plain(plain: dict[str, Any]) -> pd.Index:
    values = plain["values"]
    if plain["kind"] == "numbers":
        return pd.Index(values.numpy(), name=plain["name"], copy=False)
    if plain["kind"] == "datetime":
        return pd.Index(values.numpy().view(plain["dtype"]), name=plain["name"], copy=False)
    offsets = plain["offsets"]
    text = pa.Array.from_buffers(pa.large_string(), offsets.numel() - 1, [
        None, pa.py_buffer(offsets.numpy()), pa.py_buffer(values.numpy())])
    return pd.Index(pd.arrays.ArrowStringArray(text), name=plain["name"], copy=False)
