"""Database -> heterogeneous temporal graph: rows become nodes, foreign keys
become edges in both directions, columns become TensorFrame features."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch_geometric.data import HeteroData

from rdl.db.database import Database
from rdl.graph.materialize import materialize_table
from rdl.graph.names import forward_relation, reverse_relation, safe_name
from rdl.graph.text import HashTextEmbedder


SECONDS_PER_DAY = 86_400.0


def to_unix_seconds(times: pd.Series) -> torch.Tensor:
    """``datetime64`` values as int64 seconds since the epoch."""
    return torch.from_numpy(times.to_numpy(dtype="datetime64[s]").astype(np.int64))


def build_graph(
    db: Database,
    *,
    exclude_columns: dict[str, list[str]] | None = None,
    text_embedder: HashTextEmbedder | None = None,
    cache_dir: str | Path | None = None,
    col_stats_dict: dict | None = None,
) -> HeteroData:
    r"""Builds the graph every later stage of rdl works on.

    Node type ``t`` (the table name made safe for ``ModuleDict`` keys) has one
    node per row, in row order, so node ``i`` is ``db[t].df.iloc[i]``. It
    carries ``num_nodes``, ``time`` (int64 unix seconds, timed tables only)
    and ``tf`` (a :class:`torch_frame.TensorFrame` of the feature columns;
    absent for tables without features). Each foreign key column ``c`` of
    child ``C`` to parent ``P`` gives edge types ``(C, "f2p_c", P)`` and
    ``(P, "rev_f2p_c", C)``, stored as two views of one ``[3, E]`` buffer
    (treat them as read-only); NULL references give no edge.

    Graph-level attributes: ``col_stats_dict`` (node type -> column -> stats,
    what PyTorch Frame encoders need), ``table_of`` (node type -> table name)
    and ``key_index`` (node type -> ``pandas.Index`` of the user's key
    values, so predictions map back to the user's ids).

    Args:
        db (Database): The database to turn into a graph.
        exclude_columns (dict, optional): Table -> feature columns to leave
            out (e.g. a task's target). (default: :obj:`None`)
        text_embedder (HashTextEmbedder, optional): Embeds ``text_embedded``
            columns. (default: ``HashTextEmbedder()``)
        cache_dir (str or Path, optional): Where materialised features are
            cached per table. (default: :obj:`None`, no cache)
        col_stats_dict (dict, optional): Node type -> column stats to encode
            with instead of computing them (a trained model's, so that newer
            data keeps its category indices). (default: :obj:`None`)
    """
    exclude_columns = exclude_columns or {}
    node_types = _node_types(db)
    data = HeteroData()
    data.col_stats_dict = {}
    data.table_of = {nt: name for name, nt in node_types.items()}
    data.key_index = {}
    for table in db:
        nt = node_types[table.name]
        data[nt].num_nodes = len(table)
        data.key_index[nt] = pd.Index(table.df[table.primary_key])
        if table.time_column is not None:
            data[nt].time = to_unix_seconds(table.df[table.time_column])
        unknown = set(exclude_columns.get(table.name, ())) - set(table.stypes)
        if unknown:
            raise ValueError(
                f"exclude_columns names {sorted(unknown)} which are not feature columns of "
                f"table {table.name!r}; its features are {sorted(table.stypes)}."
            )
        frame = materialize_table(
            table, exclude=tuple(exclude_columns.get(table.name, ())),
            text_embedder=text_embedder, cache_dir=cache_dir,
            col_stats=(col_stats_dict or {}).get(nt),
        )
        if frame is not None:
            data[nt].tf, data.col_stats_dict[nt] = frame
    for table in db:
        for column, parent in table.foreign_keys.items():
            child_nt, parent_nt = node_types[table.name], node_types[parent]
            pair = _link(table.df[column], data.key_index[parent_nt])
            data[child_nt, forward_relation(column), parent_nt].edge_index = pair[1:]
            data[parent_nt, reverse_relation(column), child_nt].edge_index = pair[:2]
    _warn_unlinked(db)
    with warnings.catch_warnings():  # said above in rdl's words, with what to do
        warnings.filterwarnings("ignore", message="The node types .* are isolated")
        data.validate()
    return data


def _warn_unlinked(db: Database) -> None:
    """Names :attr:`Database.unlinked` (an archive's post-season series whose
    team columns are named unlike the key, say) and what to do."""
    alone = db.unlinked
    if not alone:
        return
    names = ", ".join(repr(name) for name in alone)
    warnings.warn(
        f"no foreign key links table(s) {names} to the others: a model sees their rows only "
        "as a task's own seeds, never beside other rows. Declare their foreign keys in a "
        "schema file (rdl inspect SOURCE --suggest-schema FILE.yaml guesses keys) or leave "
        f"them out with drop_tables: [{', '.join(alone)}]", stacklevel=3)


def _node_types(db: Database) -> dict[str, str]:
    node_types: dict[str, str] = {}
    for name in db.tables:
        safe = safe_name(name)
        clash = [other for other, nt in node_types.items() if nt == safe]
        if clash:
            raise ValueError(
                f"Tables {clash[0]!r} and {name!r} both become node type {safe!r}; "
                "rename one (drop_tables in the schema file, or a view)."
            )
        node_types[name] = safe
    return node_types


def _link(references: pd.Series, parent_keys: pd.Index) -> torch.Tensor:
    """Rows ``(parent, child, parent)`` for every non-NULL reference: rows 1-2
    are the child -> parent edges and rows 0-1 the reverse ones, two
    contiguous views of one buffer instead of two copies."""
    positions = parent_keys.get_indexer(references)
    child = np.flatnonzero(positions >= 0)
    pair = torch.empty(3, child.size, dtype=torch.long)
    pair[1] = torch.from_numpy(child)
    pair[0] = torch.from_numpy(positions[child].astype(np.int64, copy=False))
    pair[2] = pair[0]
    return pair
