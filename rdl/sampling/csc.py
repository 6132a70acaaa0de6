"""Per edge type neighbour indices, built once when the sampler is created.

Sampling walks edges backwards, from a destination node to its sources (CSC). An edge
type in which no destination has more than one source, such as
``(parent, "rev_f2p_col", child)`` where each child row names one parent, becomes a
dense :class:`ParentIndex` answered by one gather. Every other edge type becomes a
:class:`TimeSortedCSC` whose neighbour lists are sorted by source time.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from rdl.sampling.time_code import CODE_BITS, TimeCode


@dataclass
class TimeSortedCSC:
    r"""Incoming neighbour lists of one edge type, each sorted by source time (oldest
    first), ties broken by source node id (smaller id first).

    Args:
        bounds (torch.Tensor): Slot range :obj:`[start, end)` of each destination
            node, shape :obj:`[num_dst, 2]`.
        src (torch.Tensor): Source node of each slot, shape :obj:`[num_edges]`.
        key (torch.Tensor, optional): :obj:`dst * 2**32 + time code of the source`
            for each slot, increasing; :obj:`None` when the source type is untimed.
        unique_sources (bool): Whether every source node has at most one edge of
            this type, so that distinct destinations never share a neighbour.
    """

    bounds: Tensor
    src: Tensor
    key: Tensor | None
    unique_sources: bool


@dataclass
class ParentIndex:
    r"""An edge type in which every destination node has at most one source.

    Args:
        parent (torch.Tensor): The source of each destination node, or :obj:`-1`,
            shape :obj:`[num_dst]`.
        unique_sources (bool): Whether every source node has at most one edge of
            this type.
        complete (bool): Whether every destination node has a source (a foreign
            key without nulls).
    """

    parent: Tensor
    unique_sources: bool
    complete: bool


Adjacency = TimeSortedCSC | ParentIndex


def build_adjacency(
    edge_index: Tensor,
    num_src: int,
    num_dst: int,
    src_time: Tensor | None = None,
    src_code: TimeCode | None = None,
) -> Adjacency:
    r"""Builds the neighbour index of one edge type.

    Args:
        edge_index (torch.Tensor): Edges, row 0 the source and row 1 the destination
            node, shape :obj:`[2, num_edges]`, int64.
        num_src (int): Number of source nodes.
        num_dst (int): Number of destination nodes.
        src_time (torch.Tensor, optional): Times of the source nodes, or :obj:`None`
            when the source type is untimed. (default: :obj:`None`)
        src_code (TimeCode, optional): The time code of the source type; required
            with :obj:`src_time`. (default: :obj:`None`)

    Returns:
        A :class:`ParentIndex` when no destination has two sources, else a
        :class:`TimeSortedCSC`.
    """
    src, dst = edge_index[0], edge_index[1]
    unique_sources = _max_count(src, num_src) <= 1
    if _max_count(dst, num_dst) <= 1:
        parent = torch.full((num_dst,), -1, dtype=torch.long)
        parent[dst] = src
        return ParentIndex(parent, unique_sources, complete=dst.numel() == num_dst)

    row_key = dst << CODE_BITS if src_time is not None else dst
    if src_time is not None:
        assert src_code is not None
        row_key = row_key + src_code.encode(src_time).index_select(0, src)
    perm = _sort_by_key_then_source(row_key, src)
    ptr = torch.zeros(num_dst + 1, dtype=torch.long)
    torch.cumsum(torch.bincount(dst, minlength=num_dst), dim=0, out=ptr[1:])
    return TimeSortedCSC(
        bounds=torch.stack([ptr[:-1], ptr[1:]], dim=1),
        src=src.index_select(0, perm),
        key=row_key.index_select(0, perm) if src_time is not None else None,
        unique_sources=unique_sources,
    )


def _max_count(index: Tensor, size: int) -> int:
    if index.numel() == 0:
        return 0
    return int(torch.bincount(index, minlength=size).max())


def _sort_by_key_then_source(key: Tensor, src: Tensor) -> Tensor:
    # Two stable sorts: by source id first, then by key. Graph builders emit
    # foreign-key edges in child order, which makes the first sort unnecessary.
    if src.numel() > 1 and not bool((src[1:] >= src[:-1]).all()):
        by_source = torch.argsort(src, stable=True)
        return by_source.index_select(
            0, torch.argsort(key.index_select(0, by_source), stable=True)
        )
    return torch.argsort(key, stable=True)
