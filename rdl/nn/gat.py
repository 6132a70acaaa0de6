"""Heterogeneous GATv2 layer: one attention per edge type, summed."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn import Linear, ModuleDict, Parameter, ParameterDict
from torch_geometric.typing import EdgeType

from rdl.nn.batch import PackedBatch
from rdl.nn.keys import edge_key, type_key
from rdl.nn.messages import aggregate, edge_softmax, prefix, softmax_stats


class HeteroGATv2Conv(torch.nn.Module):
    r"""One layer of :class:`~torch_geometric.nn.HeteroConv` over
    :class:`~torch_geometric.nn.GATv2Conv` per edge type (:obj:`heads` heads of
    ``channels // heads`` channels, concatenated, :obj:`add_self_loops=False`,
    :obj:`residual=True`) with :obj:`"sum"` across edge types.

    The source projections of all edge types leaving a node type are one
    matrix product, and so are the destination projections, residuals and
    biases of all edge types entering a node type.

    Args:
        edge_types (list[tuple]): All edge types.
        dst_types (list[str]): Node types this layer updates.
        channels (int): Input and output channels.
        heads (int, optional): Attention heads; must divide :obj:`channels`.
            (default: :obj:`4`)
        dropout (float, optional): Dropout on attention weights. (default: :obj:`0.0`)
        negative_slope (float, optional): LeakyReLU slope. (default: :obj:`0.2`)
    """

    def __init__(self, edge_types: list[EdgeType], dst_types: list[str], channels: int,
                 heads: int = 4, dropout: float = 0.0, negative_slope: float = 0.2):
        super().__init__()
        if channels % heads:
            raise ValueError(f"heads={heads} must divide channels={channels}")
        self.heads, self.dim = heads, channels // heads
        self.dropout, self.negative_slope = dropout, negative_slope
        self.dst_types = list(dst_types)
        self.incoming = {nt: [et for et in edge_types if et[2] == nt] for nt in self.dst_types}
        used = [et for nt in self.dst_types for et in self.incoming[nt]]
        self.outgoing = {}
        for et in used:
            self.outgoing.setdefault(et[0], []).append(et)
        # Source side: lin_l of every edge type leaving a type, side by side.
        self.src_lin = ModuleDict({type_key(nt): Linear(channels, len(ets) * channels)
                                   for nt, ets in self.outgoing.items()})
        # Destination side: lin_r of every entering edge type, then residual + bias.
        self.dst_lin = ModuleDict({
            type_key(nt): Linear(channels, (len(self.incoming[nt]) + 1) * channels)
            for nt in self.dst_types})
        self.att = ParameterDict({edge_key(et): Parameter(torch.empty(heads, self.dim))
                                  for et in used})
        for att in self.att.values():
            torch.nn.init.xavier_uniform_(att)

    def forward(self, x: dict[str, Tensor], batch: PackedBatch, layer: int) -> dict[str, Tensor]:
        edge_index, inv_degree = batch.edge_index[layer], batch.inv_degree[layer]
        H, D = self.heads, self.dim
        x_src = {nt: self.src_lin[type_key(nt)](x[nt]).view(-1, len(ets), H, D)
                 for nt, ets in self.outgoing.items()}
        out = {}
        for nt in self.dst_types:
            num = inv_degree[nt].size(0)
            k = len(self.incoming[nt])
            x_dst = self.dst_lin[type_key(nt)](prefix(x[nt], num)).view(num, k + 1, H, D)
            h = x_dst[:, k].reshape(num, H * D)
            for j, et in enumerate(self.incoming[nt]):
                src, dst = edge_index[edge_key(et)]
                x_j = x_src[et[0]][:, self.outgoing[et[0]].index(et)].index_select(0, src)
                x_i = x_dst[:, j].index_select(0, dst)
                e = F.leaky_relu(x_i + x_j, self.negative_slope)
                logit = (e * self.att[edge_key(et)]).sum(dim=-1)
                top, denom = softmax_stats([logit], [dst], num)
                alpha = edge_softmax(logit, dst, top, denom)
                alpha = F.dropout(alpha, self.dropout, self.training)
                h = h + aggregate(x_j * alpha.unsqueeze(-1), dst, num).view(num, H * D)
            out[nt] = h
        return out

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(heads={self.heads}, dst_types={len(self.dst_types)})"
