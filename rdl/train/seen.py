r"""The items each seed's entity already had, looked up per mini-batch.

Built once from :func:`rdl.tasks.history.item_history` (the rows the task's
``LIST_DISTINCT`` reads): every entity's rows, sorted by time, in one CSR
array. A seed (entity ``e``, time ``t``) reads the prefix of ``e``'s rows with
time ``<= t``, so one index serves every split and any prediction time, in
memory linear in the rows, with no per-seed tables.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import HeteroData

from rdl.db.database import Database
from rdl.graph import SECONDS_PER_DAY, to_unix_seconds
from rdl.sampling.neighbors import expand_ranges
from rdl.tasks import Task
from rdl.tasks.history import item_history


@dataclass
class SeenItems:
    r"""The ``(seed, item)`` pairs of a batch whose entity had the item at or
    before the seed time, one per distinct pair.

    Args:
        seed (Tensor): Seed (row of the batch) of each pair ``[S]``.
        item (Tensor): Item node index ``[S]``.
        count (Tensor): Rows with that item up to the seed time ``[S]``.
        age (Tensor): Days from the latest of them to the seed time ``[S]``.
    """

    seed: Tensor
    item: Tensor
    count: Tensor
    age: Tensor

    def to(self, device: torch.device | str) -> SeenItems:
        return SeenItems(*(t.to(device) for t in (self.seed, self.item, self.count, self.age)))


class SeenIndex:
    r"""Every entity's time-sorted ``(item, time)`` rows, for :meth:`lookup`.

    Args:
        entity (Tensor): Entity node of each row ``[R]``.
        item (Tensor): Item node of each row ``[R]``.
        time (Tensor): Unix seconds of each row ``[R]``.
        num_entities (int): Nodes of the entity type.
        num_items (int): Nodes of the item type.
    """

    def __init__(self, entity: Tensor, item: Tensor, time: Tensor, num_entities: int,
                 num_items: int) -> None:
        self.num_entities, self.num_items = num_entities, num_items
        self.t0 = int(time.min()) if time.numel() else 0
        self.span = (int(time.max()) - self.t0 + 1) if time.numel() else 1
        assert num_entities * self.span < 2 ** 62, "entity x time key overflows int64"
        key = entity * self.span + (time - self.t0)
        order = torch.argsort(key, stable=True)
        self.key, self.item, self.time = key[order], item[order], time[order]
        self.ptr = torch.searchsorted(self.key, torch.arange(num_entities + 1) * self.span)

    @classmethod
    def from_task(cls, task: Task, db: Database, graph: HeteroData, entity_type: str,
                  item_type: str) -> SeenIndex:
        """The index of a recommendation task's rows, in :obj:`graph`'s node indices."""
        rows = item_history(task, db)
        entity = graph.key_index[entity_type].get_indexer(rows.iloc[:, 0])
        item = graph.key_index[item_type].get_indexer(rows["item"])
        known = (entity >= 0) & (item >= 0)  # rows whose keys point nowhere are no items
        time = to_unix_seconds(rows["time"][known])
        return cls(torch.from_numpy(entity[known].astype(np.int64)),
                   torch.from_numpy(item[known].astype(np.int64)), time,
                   graph[entity_type].num_nodes, graph[item_type].num_nodes)

    def lookup(self, node: Tensor, time: Tensor) -> SeenItems:
        r"""The items of the seeds (entity :obj:`node`, unix seconds :obj:`time`)."""
        start = self.ptr.index_select(0, node)
        offset = (time - self.t0).clamp(min=-1, max=self.span - 1)
        end = torch.searchsorted(self.key, node * self.span + offset, right=True)
        owner, row = expand_ranges(start, end - start)
        pair = owner * self.num_items + self.item.index_select(0, row)
        unique, inverse, times_seen = torch.unique(pair, return_inverse=True, return_counts=True)
        last = torch.zeros(unique.numel(), dtype=torch.long).scatter_reduce(
            0, inverse, self.time.index_select(0, row), "amax", include_self=False)
        seed = unique // self.num_items
        age = (time.index_select(0, seed) - last).to(torch.float32) / SECONDS_PER_DAY
        return SeenItems(seed, unique % self.num_items, times_seen, age)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(rows={self.key.numel()}, "
                f"entities={self.num_entities}, items={self.num_items})")
