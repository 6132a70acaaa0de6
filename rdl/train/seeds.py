"""Task tables -> seed tensors: node index, seed time and label of every row."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from torch import Tensor
from torch_geometric.data import HeteroData

from rdl.graph.build import to_unix_seconds
from rdl.tasks import task_types as types


@dataclass
class Seeds:
    r"""The seeds of one split, aligned row by row.

    Args:
        node (Tensor): Node index of each seed entity ``[S]``.
        time (Tensor): Seed (prediction) time in unix seconds ``[S]``.
        label (Tensor): Label per seed ``[S]`` (float for binary and
            regression, int64 class index for multiclass); for
            recommendation, item node indices ``[L]`` with ``label_ptr [S+1]``.
        label_ptr (Tensor, optional): CSR offsets of recommendation labels.
        ids (pandas.Series): The entities' own key values, to report back.
        timestamps (pandas.Series): The prediction times, to report back.
        prior (Tensor, optional): A second model's logit or value per seed
            ``[S]``, blended into the GNN's (see :mod:`rdl.train.blend`).
        features (Tensor, optional): The baseline's scaled aggregates of each
            seed ``[S, F]``, a model input (see
            :mod:`rdl.train.baseline_features`).
    """

    node: Tensor
    time: Tensor
    label: Tensor
    label_ptr: Tensor | None
    ids: pd.Series
    timestamps: pd.Series
    prior: Tensor | None = None
    features: Tensor | None = None
    # the baseline's raw features of these seeds, computed once for the blend and
    # the model input both (rdl.train.blend.seed_features)
    feature_memo: list = field(default_factory=list, init=False, repr=False,
                               compare=False)

    def __len__(self) -> int:
        return self.node.numel()


def node_indices(graph: HeteroData, node_type: str, ids: pd.Series, what: str) -> Tensor:
    """Node indices of the user's key values; unknown ids are an error naming them."""
    keys = graph.key_index[node_type]
    positions = keys.get_indexer(ids)
    missing = positions < 0
    if missing.any():
        examples = ids[missing].unique()[:5].tolist()
        raise ValueError(
            f"{int(missing.sum())} {what} id(s) are not in table "
            f"{graph.table_of[node_type]!r}, e.g. {examples}{_kind_hint(keys, examples)}"
        )
    return torch.from_numpy(positions.astype(np.int64))


def _kind_hint(keys: pd.Index, examples: list) -> str:
    """Where ids are written as text and the keys are numbers (``'103'`` for
    ``103``), or the other way round, how to write them."""
    as_text = pd.Index(keys.astype(str))
    found = [e for e in examples if str(e) in as_text and e not in keys]
    if not found:
        return ""
    key = keys[as_text.get_loc(str(found[0]))]
    key = key.item() if isinstance(key, np.generic) else key
    return (f"; the table's keys are {type(key).__name__} values: write {key!r}, "
            f"not {found[0]!r}")


def make_seeds(
    table: pd.DataFrame, graph: HeteroData, entity_type: str, task_type: str,
    classes: list | None = None, item_type: str | None = None,
) -> Seeds:
    """Turns a task table ``[entity id, timestamp, label]`` into :class:`Seeds`."""
    id_col = table.columns[0]
    node = node_indices(graph, entity_type, table[id_col], "entity")
    time = to_unix_seconds(table["timestamp"])
    labels = table["label"]
    ptr = None
    if task_type == types.RECOMMENDATION:
        lengths = labels.map(len).to_numpy()
        flat = pd.Series([item for items in labels for item in items])
        label = node_indices(graph, item_type, flat, "item")
        ptr = torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64))
    elif task_type == types.MULTICLASS:
        lookup = {c: i for i, c in enumerate(classes or [])}
        unknown = set(labels) - set(lookup)
        if unknown:
            raise ValueError(f"labels {sorted(map(str, unknown))[:5]} are not among the classes")
        label = torch.tensor([lookup[v] for v in labels], dtype=torch.long)
    else:
        label = torch.from_numpy(labels.to_numpy(dtype=np.float32))
    return Seeds(node, time, label, ptr, table[id_col].reset_index(drop=True),
                 table["timestamp"].reset_index(drop=True))
