"""Output heads: entity classification/regression and two kinds of
recommendation (two-tower against shallow item embeddings, and a hybrid that
adds ID-GNN scores of the item nodes inside each seed's subgraph), plus a
learned bonus for the items a seed already had."""
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


class SeenBonus(torch.nn.Module):
    r"""Adds a learned bonus to the scores of the items each seed already
    had: :math:`w_0 + w_1 \log(1 + \text{count}) + w_2 \log(1 + \text{days
    since the latest})`. A handful of parameters that let a model learn from
    the data whether, and how much, entities return to their own past items
    (ContextGNN's lever). It starts at :math:`1 + \log(1 + \text{count})`:
    past items first, the most frequent first, as the baseline ranks them.

    Args:
        gain (float, optional): The weights are used times :obj:`gain`, so
            that an optimizer step (about ``lr`` for Adam) moves the bonus by
            ``gain * lr``: the few logits it takes to put past items first are
            learned in tens of steps, not thousands. (default: :obj:`10.0`)

    Shapes:
        - **input:** scores :math:`(B, I)`; seed, item, count and age (days)
          of each seen pair :math:`(S,)`
        - **output:** :math:`(B, I)` scores
    """

    def __init__(self, gain: float = 10.0):
        super().__init__()
        self.gain = gain
        self.weight = torch.nn.Parameter(torch.tensor([1.0, 1.0, 0.0]) / gain)

    def forward(self, scores: Tensor, seed: Tensor, item: Tensor, count: Tensor,
                age: Tensor) -> Tensor:
        features = torch.stack([torch.ones_like(age), count.to(age.dtype).log1p(),
                                age.clamp(min=0).log1p()], dim=-1)
        return scores.index_put((seed, item), features @ (self.weight * self.gain),
                                accumulate=True)


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
    item bias. Its :attr:`seen` (a :class:`SeenBonus`) adds the bonus of a
    seed's own past items, applied by the caller, which knows them.

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
        self.seen = SeenBonus()
        torch.nn.init.normal_(self.items.weight, std=channels ** -0.5)

    def forward(self, h: Tensor) -> Tensor:
        return torch.addmm(self.item_bias, self.lhs(h), self.items.weight.t())


class IDGNNHead(torch.nn.Module):
    r"""A ContextGNN-style hybrid: every item gets a :class:`TwoTowerHead`
    score, and the items inside a seed's subgraph also get a score from their
    own embedding after identity-aware message passing (the seeds were marked
    with a learned identity vector before the first layer, so each candidate's
    embedding depends on its own seed). An item reached several times in one
    subgraph counts once, with its best score. Items the seed never touched are
    ranked by the two-tower score alone, so they can still be recommended.

    Args:
        channels (int): Embedding channels.
        num_items (int): Number of items (nodes of the item type).
        num_layers (int, optional): Layers of the seed projection and of the
            candidate MLP. (default: :obj:`1`)

    Shapes:
        - **input:** seed embeddings :math:`(B, \text{channels})`, candidate
          embeddings :math:`(N, \text{channels})`, the seed :math:`(N,)` and
          item id :math:`(N,)` of each candidate
        - **output:** :math:`(B, \text{num\_items})` scores
    """

    def __init__(self, channels: int, num_items: int, num_layers: int = 1):
        super().__init__()
        self.two_tower = TwoTowerHead(channels, num_items, num_layers)
        self.mlp = mlp(channels, 1, num_layers)

    @property
    def seen(self) -> SeenBonus:
        return self.two_tower.seen

    def forward(self, h: Tensor, candidates: Tensor, seed: Tensor, item: Tensor) -> Tensor:
        scores = self.two_tower(h)
        local = self.mlp(candidates)  # [N, 1]
        index = (seed * scores.size(1) + item).unsqueeze(-1)
        torch._check(index.size(0) == local.size(0))
        extra = scores.new_zeros(scores.numel(), 1).scatter_reduce(0, index, local, "amax",
                                                                   include_self=False)
        return scores + extra.view_as(scores)
