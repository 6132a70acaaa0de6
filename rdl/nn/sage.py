"""Heterogeneous GraphSAGE layer, RelBench's baseline design fused per node type."""
from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import Linear, ModuleDict
from torch_geometric.typing import EdgeType

from rdl.nn.batch import PackedBatch
from rdl.nn.messages import (
    AGGREGATIONS,
    MessageLayout,
    gather_messages,
    message_times,
    newest_weights,
    prefix,
    slot_blocks,
)
from rdl.nn.keys import check_choice, type_key


class HeteroSAGEConv(torch.nn.Module):
    r"""One layer of :class:`~torch_geometric.nn.HeteroConv` over
    :class:`~torch_geometric.nn.SAGEConv` per edge type with :obj:`"sum"`
    across edge types, computed per destination type as one linear map of the
    concatenated aggregations and the node's own features:

    .. math::
        \mathbf{x}'_i = \mathbf{W} \left[ \operatorname{aggr}_{j \in
        \mathcal{N}_{r_1}(i)} \mathbf{x}_j \,\Vert\, \cdots \,\Vert\,
        \operatorname{aggr}_{j \in \mathcal{N}_{r_k}(i)} \mathbf{x}_j
        \,\Vert\, \mathbf{x}_i \right] + \mathbf{b}

    The same function as the sum of :math:`k` SAGEConvs (their root weights
    add up to one), with one matrix product per node type instead of
    :math:`2k`, and all edge types aggregated by one gather and one scatter
    (:mod:`rdl.nn.messages`).

    Args:
        node_types (list[str]): All node types.
        edge_types (list[tuple]): All edge types.
        dst_types (list[str]): Node types this layer updates.
        channels (int): Input and output channels.
        aggr (str, optional): :obj:`"mean"`, :obj:`"sum"`, :obj:`"max"` or
            :obj:`"last"` (the newest neighbour before the seed, by
            :attr:`PackedBatch.rel_time`; the mean of ties), or several joined
            by ``+`` (e.g. :obj:`"mean+last"`), whose results are concatenated
            per edge type. (default: :obj:`"mean"`)

    Shapes:
        - **input:** node features :math:`(N_t, C)` per type and a
          :class:`~rdl.nn.PackedBatch`
        - **output:** :math:`(N'_t, C)` per type in :obj:`dst_types`, where
          :math:`N'_t` is the first size of :obj:`batch.inv_degree[layer][t]`
    """

    def __init__(self, node_types: list[str], edge_types: list[EdgeType],
                 dst_types: list[str], channels: int, aggr: str = "mean"):
        super().__init__()
        self.aggr = aggr
        self.kinds = [check_choice("aggr", kind, AGGREGATIONS) for kind in aggr.split("+")]
        self.layout = MessageLayout(node_types, edge_types)
        self.dst_types = list(dst_types)
        width = len(self.kinds)
        self.lin = ModuleDict({
            type_key(nt): Linear((width * len(self.layout.incoming[nt]) + 1) * channels, channels)
            for nt in self.dst_types})

    def forward(self, x: dict[str, Tensor], batch: PackedBatch, layer: int) -> dict[str, Tensor]:
        inv_degree = batch.inv_degree[layer]
        msg = gather_messages(x, batch.msg_src[layer])
        slot, weight = batch.msg_slot[layer], batch.msg_weight[layer]
        torch._check(slot.size(0) == msg.size(0))
        torch._check(weight.size(0) == msg.size(0))
        sizes = {nt: (inv_degree[nt].size(0), len(self.layout.incoming[nt]))
                 for nt in self.layout.node_types}
        num_rows = sum(num for num, _ in sizes.values())
        weights = {"mean": weight}
        if "last" in self.kinds:
            times = message_times(batch.rel_time, batch.msg_src[layer])
            weights["last"] = newest_weights(times, slot, num_rows * self.layout.width)
        blocks = [slot_blocks(_aggregate_slots(kind, msg, slot, weights.get(kind), num_rows,
                                               self.layout.width), sizes)
                  for kind in self.kinds]
        out = {}
        for nt in self.dst_types:
            num = sizes[nt][0]
            h = torch.cat([block[nt] for block in blocks] + [prefix(x[nt], num)], dim=1)
            out[nt] = self.lin[type_key(nt)](h)
        return out

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(aggr={self.aggr!r}, dst_types={len(self.dst_types)})"


def _aggregate_slots(kind: str, msg: Tensor, slot: Tensor, weight: Tensor | None,
                     num_rows: int, width: int) -> Tensor:
    # One aggregation of all messages into the [num_rows, width, C] slot tensor;
    # `weight` weighs each message for "mean" and "last".
    agg = msg.new_zeros((num_rows, width, msg.size(1)))
    flat = agg.view(-1, msg.size(1))
    if kind == "max":
        index = slot.unsqueeze(-1).expand_as(msg)
        flat.scatter_reduce_(0, index, msg, "amax", include_self=False)
    else:
        flat.index_add_(0, slot, msg if weight is None else msg * weight.unsqueeze(-1))
    return agg
