r"""Temporal neighbour statistics of sampled nodes: what a fan-out hides.

Sampling keeps at most ``k`` neighbours of a node, so a mean over them can
neither count nor tell how recent a node's activity is, and counts and recency
are what hand-made features (and LightGBM) win with. For every sampled node and
every edge type into its type, :class:`TemporalNodeStats` reads the full
time-sorted neighbour lists at the node's seed time ``t`` and gives:

* ``log1p`` of the number of neighbours with time ``<= t`` (the temporal
  in-degree, not capped by the fan-out);
* ``log1p`` of the number with time in ``(t - w, t]`` for each of
  :data:`NUM_WINDOWS` windows ``w``;
* ``log1p`` of the days since the latest neighbour at or before ``t``
  (:data:`NEVER_DAYS` when there is none).

Neighbours of an untimed source type give the in-degree alone. Without seed
times every neighbour counts, windows and recency are zero.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor
from torch_geometric.data import HeteroData
from torch_geometric.typing import EdgeType, NodeType

from rdl.graph import SECONDS_PER_DAY
from rdl.sampling.csc import ParentIndex, TimeSortedCSC
from rdl.sampling.graph_index import GraphIndex
from rdl.sampling.time_code import CODE_BITS

NUM_WINDOWS = 3
NEVER_DAYS = 36_500.0


def stats_widths(node_types: Sequence[NodeType], edge_types: Sequence[EdgeType],
                 time_types: Sequence[NodeType]) -> dict[NodeType, int]:
    r"""Number of statistics per node of each type (``0`` without incoming edges):
    ``2 + NUM_WINDOWS`` per incoming edge type from a timed source, else ``1``."""
    timed = set(time_types)
    return {nt: sum(2 + NUM_WINDOWS if et[0] in timed else 1
                    for et in edge_types if et[2] == nt)
            for nt in node_types}


class TemporalNodeStats:
    r"""Loader transform that sets ``batch[node_type].node_stats`` ``[N, width]``
    (float32, see :func:`stats_widths`) on a batch of
    :class:`~rdl.sampling.TemporalNeighborSampler`.

    Args:
        index (GraphIndex): The sampler's graph index (``sampler.index``).
        windows (Sequence[int]): :data:`NUM_WINDOWS` window lengths in seconds.
    """

    def __init__(self, index: GraphIndex, windows: Sequence[int]):
        if len(windows) != NUM_WINDOWS or any(w <= 0 for w in windows):
            raise ValueError(f"windows must be {NUM_WINDOWS} positive lengths in seconds "
                             f"(got {list(windows)})")
        self.index = index
        self.windows = [int(w) for w in windows]
        self.incoming = {nt: [et for et in index.edge_types if et[2] == nt]
                         for nt in index.node_types}

    def __call__(self, batch: HeteroData) -> HeteroData:
        seed_type = next((nt for nt in batch.node_types if "seed_time" in batch[nt]), None)
        seed_time = batch[seed_type].seed_time if seed_type is not None else None
        for nt in self.index.node_types:
            if nt not in batch.node_types or not self.incoming[nt]:
                continue
            store = batch[nt]
            node = store.n_id
            time = None if seed_time is None else seed_time.index_select(0, store.batch)
            parts = [self._edge_stats(et, node, time) for et in self.incoming[nt]]
            store.node_stats = torch.cat(parts, dim=1)
        return batch

    def _edge_stats(self, edge_type: EdgeType, node: Tensor, time: Tensor | None) -> Tensor:
        src = edge_type[0]
        adjacency = self.index.adjacency[edge_type]
        src_time = self.index.node_time.get(src)
        if isinstance(adjacency, ParentIndex):
            parent = adjacency.parent.index_select(0, node)
            exists = parent >= 0
            if src_time is None:
                return exists.to(torch.float32).mul_(math.log(2)).unsqueeze(1)
            latest = (src_time.index_select(0, parent.clamp(min=0)) if src_time.numel() > 0
                      else torch.zeros_like(parent))  # no source rows: every parent is -1
            if time is None:
                return self._timed(exists.long(), latest, exists, None, [])
            exists &= latest <= time
            return self._timed(exists.long(), latest, exists, time,
                               [exists & (latest > time - w) for w in self.windows])
        assert isinstance(adjacency, TimeSortedCSC)
        bounds = adjacency.bounds.index_select(0, node)
        start, end = bounds[:, 0], bounds[:, 1]
        if src_time is None or adjacency.key is None:
            return torch.log1p((end - start).to(torch.float32)).unsqueeze(1)
        if time is None:
            count = end - start
            return self._timed(count, None, count > 0, None, [])
        code = self.index.time_code[src]
        base = node << CODE_BITS
        key = adjacency.key
        # one binary search for the cut at the seed time and at each window's start
        cuts = torch.stack([time] + [time - w for w in self.windows])
        found = torch.searchsorted(key, (code.bound(cuts) + base).view(-1), right=True)
        upper, *lowers = found.view(cuts.shape).unbind(0)
        count = upper - start
        has = count > 0
        latest_code = key.index_select(0, (upper - 1).clamp(min=0)) - base
        latest = code.decode(latest_code.clamp(min=0, max=None).where(has, 0))
        return self._timed(count, latest, has, time, [upper - lower for lower in lowers])

    def _timed(self, count: Tensor, latest: Tensor | None, has: Tensor, time: Tensor | None,
               window_counts: list[Tensor]) -> Tensor:
        columns = [count.to(torch.float32)]
        if time is None:
            columns += [torch.zeros_like(columns[0])] * (NUM_WINDOWS + 1)
            return torch.stack(columns, 1).log1p_()
        columns += [in_window.to(torch.float32) for in_window in window_counts]
        days = (time - latest).to(torch.float32).div_(SECONDS_PER_DAY).clamp_(min=0)
        columns.append(torch.where(has, days, NEVER_DAYS))
        return torch.stack(columns, 1).log1p_()

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(windows={self.windows})"
