"""Event-level tasks: every row's own label, for the model to see on older rows.

In an event-level task (is this transaction fraud?) the labels of earlier rows
are among the best features: a device whose last transactions were fraud is
likely compromised. The task's target columns are hidden from the row
features; this module stores each row's label on its node instead
(``graph[entity].past_label``, NaN where the task gives none), and the batch
packer shows it only for rows strictly older than their seed
(:class:`rdl.nn.BatchPacker`), so the predicted row and every row at or after
its time stay hidden.
"""
from __future__ import annotations

import torch
from torch_geometric.data import HeteroData

from rdl.db import Database
from rdl.tasks import Task, task_types as types
from rdl.train.seeds import node_indices

SUPPORTED = (types.BINARY, types.REGRESSION)


def shows_past_labels(task: Task, task_type: str) -> bool:
    """Whether past labels apply: event-level binary or regression tasks."""
    return task.event_level and task_type in SUPPORTED


def attach_past_labels(graph: HeteroData, db: Database, task: Task, entity_type: str,
                       mean: float = 0.0, std: float = 1.0) -> None:
    """Sets ``graph[entity_type].past_label``: each row's label, standardised by
    ``mean`` and ``std`` (regression), NaN for rows without one."""
    table = task.event_labels(db)
    label = torch.full((graph[entity_type].num_nodes,), float("nan"))
    node = node_indices(graph, entity_type, table[table.columns[0]], "entity")
    values = torch.as_tensor(table["label"].to_numpy(dtype="float64"), dtype=torch.float32)
    label[node] = (values - mean) / std
    graph[entity_type].past_label = label
