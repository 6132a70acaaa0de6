"""Categories that few rows of a table hold, made unseen.

A category held by a single row (a player's ``retroID``, a customer's full
name) names that row, as an id would, and one held by a handful (a birth
town, a rare surname) names a handful. On the task's entity table such a
column lets a model learn each entity by name: an entity seen at many
training times is fitted by its name and past labels, which tells nothing
about a later time or another entity. Categories held by fewer than
``min_rows`` rows are cut from the column stats, so the encoder has no
embedding for them and a graph encoded later with these stats (a trained
model's) reads them as unseen too, and the values become missing (-1), as
unseen categories are.
"""
from __future__ import annotations

import torch
import torch_frame
from torch_geometric.data import HeteroData
from torch_frame.data.stats import StatType


def forget_rare_categories(graph: HeteroData, node_type: str, min_rows: int) -> dict[str, int]:
    """Makes the categories that fewer than ``min_rows`` ``node_type`` rows
    hold unseen, in its categorical columns and their stats (both replaced,
    not changed in place: a memory-mapped graph's tensors stay as they are).

    Returns:
        Column -> number of categories made unseen, for the columns that had any.
    """
    store = graph[node_type]
    if "tf" not in store or torch_frame.categorical not in store.tf.feat_dict:
        return {}
    tf = store.tf
    stats = dict(graph.col_stats_dict[node_type])
    feat = tf.feat_dict[torch_frame.categorical]
    columns, forgotten = [], {}
    for i, col in enumerate(tf.col_names_dict[torch_frame.categorical]):
        categories, counts = stats[col][StatType.COUNT]
        kept = torch.tensor([count >= min_rows for count in counts], dtype=torch.bool)
        values = feat[:, i]
        if bool(kept.all()):
            columns.append(values)
            continue
        forgotten[col] = int((~kept).sum())
        position = torch.full((len(categories),), -1, dtype=torch.long)
        position[kept] = torch.arange(int(kept.sum()))
        columns.append(torch.where(values < 0, -1, position[values.clamp(min=0)]))
        stats[col] = {**stats[col], StatType.COUNT: (
            [c for c, keep in zip(categories, kept.tolist()) if keep],
            [n for n, keep in zip(counts, kept.tolist()) if keep])}
    if forgotten:
        feat_dict = {**tf.feat_dict, torch_frame.categorical: torch.stack(columns, dim=1)}
        store.tf = torch_frame.TensorFrame(feat_dict, tf.col_names_dict)
        graph.col_stats_dict = {**graph.col_stats_dict, node_type: stats}
    return forgotten
