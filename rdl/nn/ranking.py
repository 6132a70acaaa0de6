"""Ranking losses, masks and top-``k`` item lists for recommendation heads.

Both heads score every item: a dense ``[B, num_items]`` matrix. Positives and
seen items are ``(seed, item)`` pairs. Top-``k`` lists are what
:class:`rdl.tasks.metrics.RankingMetric` takes (``-1`` where fewer than ``k``
items may be recommended).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from rdl.nn.keys import check_choice

LOSSES = ("softmax", "bpr")


def two_tower_loss(scores: Tensor, pos_seed: Tensor, pos_item: Tensor, *,
                   loss: str = "softmax", num_negatives: int = 0,
                   generator: torch.Generator | None = None) -> Tensor:
    r"""Ranking loss of a :class:`~rdl.nn.heads.TwoTowerHead` score matrix.

    Args:
        scores (Tensor): :math:`(B, I)` scores.
        pos_seed (Tensor): Seed (row) of each positive pair :math:`(P,)`.
        pos_item (Tensor): Item (column) of each positive pair :math:`(P,)`.
        loss (str, optional): :obj:`"softmax"`: cross-entropy of each positive
            against all items, or against :obj:`num_negatives` uniformly drawn
            items when that is positive (sampled softmax); :obj:`"bpr"`: Bayesian
            personalised ranking against one drawn item per positive.
            (default: :obj:`"softmax"`)
        num_negatives (int, optional): Items drawn per positive. (default: :obj:`0`)
        generator (torch.Generator, optional): Random generator for negatives.
    """
    check_choice("loss", loss, LOSSES)
    if loss == "softmax" and num_negatives <= 0:
        # log_softmax's fused kernel: on a 256 x 90,000 matrix, forward and
        # backward take 30% less time than logsumexp minus the positive. Rows
        # without a positive take no part: one masked whole would give NaN.
        rows, inverse = torch.unique(pos_seed, return_inverse=True)
        if rows.numel() < scores.size(0):
            scores, pos_seed = scores.index_select(0, rows), inverse
        return -F.log_softmax(scores, dim=1)[pos_seed, pos_item].mean()
    pos = scores[pos_seed, pos_item]
    draws = max(num_negatives, 1)
    neg_item = torch.randint(scores.size(1), (pos.numel(), draws), generator=generator,
                             device=scores.device)
    neg = scores[pos_seed.unsqueeze(-1), neg_item]
    # A drawn item that is a positive of the seed is no negative.
    num_items = scores.size(1)
    hit = torch.isin(pos_seed.unsqueeze(-1) * num_items + neg_item, pos_seed * num_items + pos_item)
    if loss == "bpr":
        pair = -F.logsigmoid(pos.unsqueeze(-1) - neg)
        return (pair * ~hit).sum() / (~hit).sum().clamp(min=1)
    logits = torch.cat([pos.unsqueeze(-1), neg.masked_fill(hit, float("-inf"))], dim=1)
    return (torch.logsumexp(logits, dim=1) - pos).mean()


def mask_pairs(scores: Tensor, seed: Tensor, item: Tensor,
               keep: tuple[Tensor, Tensor] | None = None) -> Tensor:
    r"""Scores with the ``(seed[i], item[i])`` pairs set to ``-inf``, except
    the pairs in :obj:`keep` (e.g. the positives, whose loss must stay finite).

    Args:
        scores (Tensor): :math:`(B, I)` scores.
        seed (Tensor): Row of each pair :math:`(S,)`.
        item (Tensor): Column of each pair :math:`(S,)`.
        keep (tuple, optional): ``(seed, item)`` pairs to leave as they are.
            (default: :obj:`None`)
    """
    if keep is not None:
        num_items = scores.size(1)
        kept = torch.isin(seed * num_items + item, keep[0] * num_items + keep[1])
        seed, item = seed[~kept], item[~kept]
    return scores.index_put((seed, item), scores.new_tensor(float("-inf")))


def topk_items(scores: Tensor, k: int, exclude: tuple[Tensor, Tensor] | None = None) -> Tensor:
    r"""The :obj:`k` best items per row of a :math:`(B, I)` score matrix,
    best first, optionally without the ``(row, item)`` pairs in :obj:`exclude`.
    Items scored ``-inf`` (excluded) are never returned: ``-1`` takes their place."""
    if exclude is not None:
        scores = mask_pairs(scores, *exclude)
    top = scores.topk(min(k, scores.size(1)), dim=1)
    return top.indices.masked_fill(top.values == float("-inf"), -1)
