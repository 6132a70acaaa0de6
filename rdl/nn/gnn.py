"""A stack of heterogeneous message passing layers, each followed by a
LayerNorm and ReLU per node type (RelBench's HeteroGraphSAGE layout)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn import LayerNorm, ModuleDict, ModuleList
from torch_geometric.typing import EdgeType

from rdl.nn.batch import PackedBatch
from rdl.nn.gat import HeteroGATv2Conv
from rdl.nn.hgt import HGTLayer
from rdl.nn.keys import check_choice, type_key
from rdl.nn.sage import HeteroSAGEConv

GNNS = ("sage", "gat", "hgt")


class HeteroGNN(torch.nn.Module):
    r"""Message passing over the layers of a :class:`~rdl.nn.PackedBatch`.

    Layer :math:`l` updates the nodes listed by the batch's
    :obj:`inv_degree[l]`; all node types except in the last layer, which
    updates :obj:`out_types` only.

    Args:
        node_types (list[str]): All node types.
        edge_types (list[tuple]): All edge types.
        channels (int): Channels.
        num_layers (int): Number of layers.
        out_types (list[str]): Node types the last layer updates.
        gnn (str, optional): :obj:`"sage"`, :obj:`"gat"` or :obj:`"hgt"`.
            (default: :obj:`"sage"`)
        aggr (str, optional): Neighbour aggregation of :obj:`"sage"`.
            (default: :obj:`"mean"`)
        heads (int, optional): Attention heads of :obj:`"gat"`/:obj:`"hgt"`.
            (default: :obj:`4`)
        dropout (float, optional): Dropout after each layer. (default: :obj:`0.0`)
    """

    def __init__(self, node_types: list[str], edge_types: list[EdgeType], channels: int,
                 num_layers: int, out_types: list[str], *, gnn: str = "sage",
                 aggr: str = "mean", heads: int = 4, dropout: float = 0.0):
        super().__init__()
        self.gnn = check_choice("gnn", gnn, GNNS)
        self.dropout = dropout
        self.convs = ModuleList()
        self.norms = ModuleList()
        for layer in range(num_layers):
            dst = list(out_types) if layer == num_layers - 1 else list(node_types)
            if gnn == "sage":
                conv = HeteroSAGEConv(node_types, edge_types, dst, channels, aggr)
            elif gnn == "gat":
                conv = HeteroGATv2Conv(edge_types, dst, channels, heads, dropout)
            else:
                conv = HGTLayer(node_types, edge_types, dst, channels, heads, dropout)
            self.convs.append(conv)
            self.norms.append(ModuleDict({type_key(nt): LayerNorm(channels) for nt in dst}))

    def forward(self, x: dict[str, Tensor], batch: PackedBatch) -> dict[str, Tensor]:
        for layer, (conv, norms) in enumerate(zip(self.convs, self.norms)):
            out = conv(x, batch, layer)
            x = {nt: F.dropout(F.relu(norms[type_key(nt)](h)), self.dropout, self.training)
                 for nt, h in out.items()}
        return x

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.gnn!r}, num_layers={len(self.convs)})"
