"""The flat message layout of one message passing layer.

All messages of a layer, over every edge type, go through one gather per source
type and one scatter: messages are ordered by source type (then edge type), and
each lands in a *slot* ``(offset[t] + dst) * K + j`` of a ``[sum_t N_t, K, C]``
tensor, where ``t`` is the destination type, ``j`` the position of the
message's edge type among the ``k_t`` edge types entering ``t`` and ``K`` the
largest ``k_t``. Per destination type, the first ``k_t`` slots of its rows
hold one aggregation per incoming edge type, side by side, ready for one linear
map. A node used by several edge types is thus gathered, and its gradient
scattered back, once per layer rather than once per edge type.

The primitives below take explicit output sizes: no host syncs and no
data-dependent shapes, so they trace into one graph under :func:`torch.compile`.
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.typing import EdgeType

from rdl.nn.keys import edge_key


class MessageLayout:
    r"""Static part of the layout: which edge types enter and leave each type.

    Args:
        node_types (list[str]): All node types (the order of the slot blocks).
        edge_types (list[tuple]): All edge types.
    """

    def __init__(self, node_types: list[str], edge_types: list[EdgeType]):
        self.node_types = list(node_types)
        self.incoming = {nt: [et for et in edge_types if et[2] == nt] for nt in node_types}
        self.outgoing = {nt: [et for et in edge_types if et[0] == nt] for nt in node_types}
        self.src_types = [nt for nt in node_types if self.outgoing[nt]]
        self.width = max([len(ets) for ets in self.incoming.values()] + [1])

    def flatten(self, edges: dict[str, Tensor], inv_degree: dict[str, Tensor]
                ) -> tuple[dict[str, Tensor], Tensor, Tensor]:
        r"""Returns, for one layer, the source nodes to gather per source type,
        the slot of every message and its weight (the inverse degree of its
        destination for its edge type, for mean aggregation).

        Args:
            edges (dict): Edge key -> local ``[2, E]`` edges.
            inv_degree (dict): Node type -> ``[N_t, k_t]`` inverse in-degrees.
        """
        offset, start = {}, 0
        for nt in self.node_types:
            offset[nt] = start
            start += inv_degree[nt].size(0)
        src, slot, weight = {}, [], []
        for nt in self.src_types:
            parts = []
            for et in self.outgoing[nt]:
                s, d = edges[edge_key(et)]
                dst_type = et[2]
                j = self.incoming[dst_type].index(et)
                parts.append(s)
                slot.append((d + offset[dst_type]) * self.width + j)
                weight.append(inv_degree[dst_type][:, j].index_select(0, d))
            src[nt] = torch.cat(parts)
        return src, torch.cat(slot), torch.cat(weight)


def gather_messages(x: dict[str, Tensor], src: dict[str, Tensor]) -> Tensor:
    r"""All messages of a layer, ``[E, C]``, in the order of :attr:`MessageLayout.flatten`."""
    return torch.cat([x[nt].index_select(0, index) for nt, index in src.items()])


def slot_blocks(agg: Tensor, sizes: dict[str, tuple[int, int]]) -> dict[str, Tensor]:
    r"""Splits the slot tensor ``[sum_t N_t, K, C]`` into ``[N_t, k_t * C]``
    blocks per node type, given ``sizes[t] = (N_t, k_t)`` in slot order."""
    out, start = {}, 0
    for nt, (num, k) in sizes.items():
        out[nt] = agg.narrow(0, start, num)[:, :k].flatten(1)
        start = start + num
    return out


AGGREGATIONS = ("mean", "sum", "max", "last")


def message_times(rel_time: dict[str, Tensor], src: dict[str, Tensor]) -> Tensor:
    r"""How long before its seed each message's source happened, ``[E]`` in the
    order of :func:`gather_messages`; ``0`` for sources without times."""
    return torch.cat([rel_time[nt].index_select(0, index) if nt in rel_time
                      else index.new_zeros(index.shape, dtype=torch.float32)
                      for nt, index in src.items()])


def newest_weights(times: Tensor, slot: Tensor, num_slots: int) -> Tensor:
    r"""The weight of each message in a *last* aggregation: one over the number
    of ties for the messages whose source is the newest of their slot (the
    smallest time before the seed), zero for the others, so that a weighted
    sum yields the newest neighbour (the mean of ties, all of them where the
    sources have no times).

    Args:
        times (Tensor): Each message's source time before its seed ``[E]``.
        slot (Tensor): Each message's slot ``[E]``.
        num_slots (int): Number of slots.
    """
    newest = times.new_full((num_slots,), float("inf"))
    newest = newest.scatter_reduce(0, slot, times, "amin", include_self=True)
    is_newest = (times == newest.index_select(0, slot)).to(times.dtype)
    ties = times.new_zeros(num_slots).index_add(0, slot, is_newest)
    return is_newest / ties.index_select(0, slot).clamp(min=1.0)


def prefix(x: Tensor, num: int) -> Tensor:
    r"""The first :obj:`num` rows of :obj:`x` (destination nodes come first)."""
    torch._check(num <= x.size(0))
    return x[:num]


def aggregate(msg: Tensor, index: Tensor, num: int, aggr: str = "sum",
              inv_degree: Tensor | None = None) -> Tensor:
    r"""Aggregates the rows of :obj:`msg` into :obj:`num` rows by :obj:`index`.

    Args:
        msg (Tensor): Messages :math:`(E, *)`.
        index (Tensor): Destination of each message :math:`(E,)`.
        num (int): Number of destinations.
        aggr (str, optional): :obj:`"sum"`, :obj:`"mean"` or :obj:`"max"`;
            destinations without messages get zeros. (default: :obj:`"sum"`)
        inv_degree (Tensor, optional): :math:`(num,)` inverse in-degrees, needed
            for :obj:`"mean"` (the batch transform computes them).
    """
    out = msg.new_zeros((num, *msg.shape[1:]))
    if aggr == "max":
        expanded = index.view(-1, *([1] * (msg.dim() - 1))).expand_as(msg)
        return out.scatter_reduce(0, expanded, msg, "amax", include_self=False)
    out.index_add_(0, index, msg)
    if aggr == "mean":
        assert inv_degree is not None
        out = out * inv_degree.view(-1, *([1] * (msg.dim() - 1)))
    return out


def softmax_stats(logits: list[Tensor], index: list[Tensor], num: int) -> tuple[Tensor, Tensor]:
    r"""Per destination, the maximum and the sum of :math:`\exp(\cdot - \max)`
    of the attention logits of several edge types (each :math:`(E_i, H)`), so
    that a softmax runs over all edges into a node whatever their type.

    Returns:
        :obj:`(max, denominator)`, each :math:`(num, H)`.
    """
    heads = logits[0].size(1)
    top = logits[0].new_full((num, heads), float("-inf"))
    for score, idx in zip(logits, index):
        top = top.scatter_reduce(0, idx.unsqueeze(-1).expand_as(score), score.detach(),
                                 "amax", include_self=True)
    top = torch.where(torch.isfinite(top), top, 0.0)
    denom = logits[0].new_zeros((num, heads))
    for score, idx in zip(logits, index):
        denom = denom.index_add(0, idx, (score - top.index_select(0, idx)).exp())
    return top, denom + 1e-16


def edge_softmax(score: Tensor, index: Tensor, top: Tensor, denom: Tensor) -> Tensor:
    r"""Attention weights :math:`(E, H)` from logits and :func:`softmax_stats`."""
    return (score - top.index_select(0, index)).exp() / denom.index_select(0, index)
