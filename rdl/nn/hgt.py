"""Heterogeneous graph transformer layer (HGT)."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn import Linear, ModuleDict, Parameter, ParameterDict
from torch_geometric.typing import EdgeType

from rdl.nn.batch import PackedBatch
from rdl.nn.keys import edge_key, type_key
from rdl.nn.messages import aggregate, edge_softmax, prefix, softmax_stats


class HGTLayer(torch.nn.Module):
    r"""The layer of :class:`~torch_geometric.nn.HGTConv`: per node type key,
    query and value projections, per edge type and head relation matrices for
    keys and values and a prior :math:`\mu`, one softmax over all edges into a
    node whatever their type, then GELU, an output projection and a learned
    gated skip connection.

    The relation matrices are folded into the key/value projection weights
    (parameters only), so each source type costs one matrix product for all
    its edge types.

    Args:
        node_types (list[str]): All node types.
        edge_types (list[tuple]): All edge types.
        dst_types (list[str]): Node types this layer updates.
        channels (int): Input and output channels.
        heads (int, optional): Attention heads; must divide :obj:`channels`.
            (default: :obj:`4`)
        dropout (float, optional): Dropout on attention weights. (default: :obj:`0.0`)
    """

    def __init__(self, node_types: list[str], edge_types: list[EdgeType], dst_types: list[str],
                 channels: int, heads: int = 4, dropout: float = 0.0):
        super().__init__()
        if channels % heads:
            raise ValueError(f"heads={heads} must divide channels={channels}")
        self.heads, self.dim, self.dropout = heads, channels // heads, dropout
        self.dst_types = list(dst_types)
        self.incoming = {nt: [et for et in edge_types if et[2] == nt] for nt in self.dst_types}
        used = [et for nt in self.dst_types for et in self.incoming[nt]]
        self.outgoing: dict[str, list[EdgeType]] = {}
        for et in used:
            self.outgoing.setdefault(et[0], []).append(et)
        project = set(self.outgoing) | set(self.dst_types)
        self.kqv = ModuleDict({type_key(nt): Linear(channels, 3 * channels) for nt in node_types
                               if nt in project})
        self.k_rel = ParameterDict({edge_key(et): Parameter(torch.empty(heads, self.dim, self.dim))
                                    for et in used})
        self.v_rel = ParameterDict({edge_key(et): Parameter(torch.empty(heads, self.dim, self.dim))
                                    for et in used})
        self.p_rel = ParameterDict({edge_key(et): Parameter(torch.ones(heads)) for et in used})
        self.out_lin = ModuleDict({type_key(nt): Linear(channels, channels)
                                   for nt in self.dst_types})
        self.skip = ParameterDict({type_key(nt): Parameter(torch.ones(1)) for nt in self.dst_types})
        for rel in [*self.k_rel.values(), *self.v_rel.values()]:
            for h in range(heads):
                torch.nn.init.xavier_uniform_(rel.data[h])

    def _relation_weights(self, nt: str) -> tuple[Tensor, Tensor]:
        # Keys and values of every edge type leaving `nt`: [C, 2 * k * C] and bias.
        C, H, D = self.heads * self.dim, self.heads, self.dim
        lin = self.kqv[type_key(nt)]
        w_k, w_v = lin.weight[:C].t().view(C, H, D), lin.weight[2 * C:].t().view(C, H, D)
        b_k, b_v = lin.bias[:C].view(H, D), lin.bias[2 * C:].view(H, D)
        weights, biases = [], []
        for et in self.outgoing[nt]:
            k_rel, v_rel = self.k_rel[edge_key(et)], self.v_rel[edge_key(et)]
            weights += [torch.einsum("chd,hde->che", w_k, k_rel).reshape(C, C),
                        torch.einsum("chd,hde->che", w_v, v_rel).reshape(C, C)]
            biases += [torch.einsum("hd,hde->he", b_k, k_rel).reshape(C),
                        torch.einsum("hd,hde->he", b_v, v_rel).reshape(C)]
        return torch.cat(weights, dim=1), torch.cat(biases)

    def forward(self, x: dict[str, Tensor], batch: PackedBatch, layer: int) -> dict[str, Tensor]:
        edge_index, inv_degree = batch.edge_index[layer], batch.inv_degree[layer]
        C, H, D = self.heads * self.dim, self.heads, self.dim
        kv = {}
        for nt, ets in self.outgoing.items():
            weight, bias = self._relation_weights(nt)
            kv[nt] = torch.addmm(bias, x[nt], weight).view(-1, len(ets), 2, H, D)
        out = {}
        for nt in self.dst_types:
            num = inv_degree[nt].size(0)
            x_dst = prefix(x[nt], num)
            kqv = self.kqv[type_key(nt)]
            q = F.linear(x_dst, kqv.weight[C:2 * C], kqv.bias[C:2 * C])
            q = q.view(num, H, D)
            logits, values, index = [], [], []
            for et in self.incoming[nt]:
                src, dst = edge_index[edge_key(et)]
                slot = self.outgoing[et[0]].index(et)
                k_j = kv[et[0]][:, slot, 0].index_select(0, src)
                score = (q.index_select(0, dst) * k_j).sum(-1) * self.p_rel[edge_key(et)]
                logits.append(score / math.sqrt(D))
                values.append(kv[et[0]][:, slot, 1].index_select(0, src))
                index.append(dst)
            h = x_dst.new_zeros((num, H, D))
            if logits:
                top, denom = softmax_stats(logits, index, num)
                for score, v_j, dst in zip(logits, values, index):
                    alpha = F.dropout(edge_softmax(score, dst, top, denom), self.dropout,
                                      self.training)
                    h = h + aggregate(v_j * alpha.unsqueeze(-1), dst, num)
            h = self.out_lin[type_key(nt)](F.gelu(h.view(num, C)))
            gate = self.skip[type_key(nt)].sigmoid()
            out[nt] = gate * h + (1 - gate) * x_dst
        return out

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(heads={self.heads}, dst_types={len(self.dst_types)})"
