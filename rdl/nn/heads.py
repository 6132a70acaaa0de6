"""Output heads: entity classification/regression and two kinds of
recommendation (two-tower against shallow item embeddings, and ID-GNN scoring
of candidate item nodes inside each seed's subgraph)."""
from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import Embedding, LayerNorm, Linear, ReLU, Sequential


def mlp(channels: int, out_channels: int, num_layers: int = 1) -> torch.nn.Module:
    r"""``num_layers - 1`` blocks of (Linear, LayerNorm, ReLU), then a Linear."""
    layers: list[torch.nn.Module] = []
    for _ in range(num_layers - 1):
        layers += [Linear(channels, channels), LayerNorm(channels), ReLU()]
    layers.append(Linear(channels, out_channels))
    return Sequential(*layers)


class NodeHead(torch.nn.Module):
    r"""Seed embeddings -> :obj:`out_channels` outputs (1 logit for binary
    classification, :math:`C` logits for multiclass, 1 value for regression).

    Shapes:
        - **input:** :math:`(B, \text{channels})`
        - **output:** :math:`(B, \text{out\_channels})`
    """

    def __init__(self, channels: int, out_channels: int, num_layers: int = 1):
        super().__init__()
        self.mlp = mlp(channels, out_channels, num_layers)

    def forward(self, h: Tensor) -> Tensor:
        return self.mlp(h)


class TwoTowerHead(torch.nn.Module):
    r"""Scores each seed against every item: the dot product of a projection
    of the seed embedding with a shallow (learned, per item) embedding, plus an
    item bias.

    Args:
        channels (int): Seed embedding channels.
        num_items (int): Number of items (nodes of the item type).
        num_layers (int, optional): Layers of the seed projection. (default: :obj:`1`)

    Shapes:
        - **input:** :math:`(B, \text{channels})`
        - **output:** :math:`(B, \text{num\_items})` scores
    """

    def __init__(self, channels: int, num_items: int, num_layers: int = 1):
        super().__init__()
        self.lhs = mlp(channels, channels, num_layers)
        self.items = Embedding(num_items, channels)
        self.item_bias = torch.nn.Parameter(torch.zeros(num_items))
        torch.nn.init.normal_(self.items.weight, std=channels ** -0.5)

    def forward(self, h: Tensor) -> Tensor:
        return torch.addmm(self.item_bias, self.lhs(h), self.items.weight.t())


class IDGNNHead(torch.nn.Module):
    r"""Scores candidate item nodes from their embeddings after identity-aware
    message passing (the seeds were marked with a learned identity vector
    before the first layer, so each candidate's embedding depends on its own
    seed).

    Shapes:
        - **input:** :math:`(N, \text{channels})` candidate embeddings
        - **output:** :math:`(N,)` scores
    """

    def __init__(self, channels: int, num_layers: int = 1):
        super().__init__()
        self.mlp = mlp(channels, 1, num_layers)

    def forward(self, h: Tensor) -> Tensor:
        return self.mlp(h).squeeze(-1)
