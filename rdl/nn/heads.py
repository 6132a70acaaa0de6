"""Output heads: entity classification/regression and two kinds of
recommendation (two-tower against item embeddings, and a hybrid that adds
ID-GNN scores of the item nodes inside each seed's subgraph), plus a learned
bonus for the items a seed already had and the item columns that shape each
item's embedding."""
from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import Embedding, LayerNorm, Linear, ReLU, Sequential
from torch_frame import TensorFrame, stype

from rdl.nn.table_encoders import CategoricalTerm


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

    Its :attr:`boost` (a buffer, 0 unless set) adds
    :math:`\text{boost} \cdot \log(1 + \text{count})` on top: a weight chosen
    after training by the ranking metric, not learned by the loss
    (:mod:`rdl.train.seen_boost`).

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
        # Not in the weights: a checkpoint carries it beside them (rdl.train.seen_boost).
        self.register_buffer("boost", torch.zeros(()), persistent=False)

    def forward(self, scores: Tensor, seed: Tensor, item: Tensor, count: Tensor,
                age: Tensor, boost: float | None = None) -> Tensor:
        """``boost`` stands in for :attr:`boost` (a candidate being weighed)."""
        features = torch.stack([torch.ones_like(age), count.to(age.dtype).log1p(),
                                age.clamp(min=0).log1p()], dim=-1)
        boost = self.boost if boost is None else boost
        bonus = features @ (self.weight * self.gain) + boost * features[:, 1]
        return scores.index_put((seed, item), bonus, accumulate=True)


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


class ItemFeatures(torch.nn.Module):
    r"""Every item's categorical columns as one vector per item (the sum of
    its categories' embeddings), for a :class:`TwoTowerHead` to add to the
    item's own embedding. Items that share a value (a product group, a colour)
    share a term, so what a seed is learned to like carries over at once to
    the other items of that kind, including those with few or no purchases of
    their own; a per-item embedding alone learns each item from its own
    positives.

    The codes are a buffer, copied from the item table by :meth:`fill` and
    saved with the model's weights. Numerical columns are not read: on the
    bundled recommendation tasks adding them changed nothing on retail and
    cost plane_destinations 1% MAP (benchmarks/REPORT.md).

    Args:
        num_items (int): Number of items (rows of the item table).
        channels (int): Embedding channels.
        col_names_dict (dict): The item table's stype -> column names.
        col_stats (dict): The item table's column -> PyTorch Frame stats.
    """

    def __init__(self, num_items: int, channels: int, col_names_dict: dict, col_stats: dict):
        super().__init__()
        self.columns = list(col_names_dict.get(stype.categorical, []))
        if not self.columns:
            raise ValueError("ItemFeatures needs a categorical column (the item table has "
                             f"{_stype_names(col_names_dict)})")
        self.register_buffer("codes", torch.full((num_items, len(self.columns)), -1))
        self.categorical = CategoricalTerm([col_stats[c] for c in self.columns], channels)
        # Start at the scale of TwoTowerHead's own item embeddings.
        torch.nn.init.normal_(self.categorical.emb.weight, std=channels ** -0.5)
        with torch.no_grad():
            self.categorical.emb.weight[0].zero_()

    @staticmethod
    def readable(col_names_dict: dict | None) -> bool:
        r"""Whether a table with these columns has any this module reads."""
        return bool((col_names_dict or {}).get(stype.categorical))

    def fill(self, tf: TensorFrame) -> None:
        r"""Copies the item table's codes (its graph's TensorFrame, one row
        per item, in node order) into :attr:`codes`."""
        if tf.num_rows != self.codes.size(0):
            raise ValueError(f"The item table has {tf.num_rows} rows; this model was built "
                             f"for {self.codes.size(0)} items")
        columns = list(tf.col_names_dict.get(stype.categorical, []))
        if columns != self.columns:
            raise ValueError(f"The item table's categorical columns are {columns}; this model "
                             f"reads {self.columns}")
        self.codes.copy_(tf.feat_dict[stype.categorical])

    def forward(self) -> Tensor:
        return self.categorical(self.codes)


def _stype_names(col_names_dict: dict) -> str:
    names = sorted(st.value for st, cols in col_names_dict.items() if cols)
    return ", ".join(names) + " columns" if names else "no feature columns"


class TwoTowerHead(torch.nn.Module):
    r"""Scores each seed against every item: the dot product of a projection
    of the seed embedding with the item's embedding, plus an item bias. An
    item's embedding is a learned vector of its own, plus, with
    :obj:`item_features`, a vector of its categorical columns. Its :attr:`seen` (a
    :class:`SeenBonus`) adds the bonus of a seed's own past items, applied by
    the caller, which knows them.

    Args:
        channels (int): Seed embedding channels.
        num_items (int): Number of items (nodes of the item type).
        num_layers (int, optional): Layers of the seed projection. (default: :obj:`1`)
        item_features (ItemFeatures, optional): The items' columns.
            (default: :obj:`None`)

    Shapes:
        - **input:** :math:`(B, \text{channels})`
        - **output:** :math:`(B, \text{num\_items})` scores
    """

    def __init__(self, channels: int, num_items: int, num_layers: int = 1,
                 item_features: ItemFeatures | None = None):
        super().__init__()
        self.lhs = mlp(channels, channels, num_layers)
        self.items = Embedding(num_items, channels)
        self.item_bias = torch.nn.Parameter(torch.zeros(num_items))
        self.seen = SeenBonus()
        self.item_features = item_features
        torch.nn.init.normal_(self.items.weight, std=channels ** -0.5)

    def item_embeddings(self) -> Tensor:
        r"""The :math:`(I, \text{channels})` item side of the dot product."""
        items = self.items.weight
        return items if self.item_features is None else items + self.item_features()

    def forward(self, h: Tensor) -> Tensor:
        return torch.addmm(self.item_bias, self.lhs(h), self.item_embeddings().t())


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
        item_features (ItemFeatures, optional): The items' columns, for the
            two-tower scores. (default: :obj:`None`)

    Shapes:
        - **input:** seed embeddings :math:`(B, \text{channels})`, candidate
          embeddings :math:`(N, \text{channels})`, the seed :math:`(N,)` and
          item id :math:`(N,)` of each candidate
        - **output:** :math:`(B, \text{num\_items})` scores
    """

    def __init__(self, channels: int, num_items: int, num_layers: int = 1,
                 item_features: ItemFeatures | None = None):
        super().__init__()
        self.two_tower = TwoTowerHead(channels, num_items, num_layers, item_features)
        self.mlp = mlp(channels, 1, num_layers)

    @property
    def seen(self) -> SeenBonus:
        return self.two_tower.seen

    @property
    def item_features(self) -> ItemFeatures | None:
        return self.two_tower.item_features

    def forward(self, h: Tensor, candidates: Tensor, seed: Tensor, item: Tensor) -> Tensor:
        scores = self.two_tower(h)
        local = self.mlp(candidates)  # [N, 1]
        index = (seed * scores.size(1) + item).unsqueeze(-1)
        torch._check(index.size(0) == local.size(0))
        extra = scores.new_zeros(scores.numel(), 1).scatter_reduce(0, index, local, "amax",
                                                                   include_self=False)
        return scores + extra.view_as(scores)
