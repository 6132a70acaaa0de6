"""Ranking losses and top-``k`` item lists for recommendation heads.

Two-tower scores are a dense ``[B, num_items]`` matrix; ID-GNN scores are one
value per candidate node, with the candidate's seed and item id. Positives are
``(seed, item)`` pairs. Top-``k`` lists are what
:class:`rdl.tasks.metrics.RankingMetric` takes (``-1`` pads rows with fewer
than ``k`` candidates).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from rdl.nn.names import check_choice
from rdl.nn.messages import edge_softmax, softmax_stats

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
    pos = scores[pos_seed, pos_item]
    if loss == "softmax" and num_negatives <= 0:
        return (torch.logsumexp(scores, dim=1).index_select(0, pos_seed) - pos).mean()
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


def candidate_labels(seed: Tensor, item: Tensor, pos_seed: Tensor, pos_item: Tensor,
                     num_items: int) -> Tensor:
    r"""Whether each candidate ``(seed[i], item[i])`` is a positive pair."""
    return torch.isin(seed * num_items + item, pos_seed * num_items + pos_item)


def candidate_loss(scores: Tensor, label: Tensor, seed: Tensor, num_seeds: int, *,
                   loss: str = "softmax") -> Tensor:
    r"""Ranking loss of :class:`~rdl.nn.heads.IDGNNHead` candidate scores.

    Args:
        scores (Tensor): Score of each candidate :math:`(N,)`.
        label (Tensor): Whether each candidate is a positive :math:`(N,)`.
        seed (Tensor): Seed of each candidate :math:`(N,)`.
        num_seeds (int): Number of seeds.
        loss (str, optional): :obj:`"softmax"`: cross-entropy of each positive
            against its seed's candidates; :obj:`"bpr"`: each positive against
            every other candidate of its seed, through the log-sum-exp of the
            pairwise differences. (default: :obj:`"softmax"`)
    """
    check_choice("loss", loss, LOSSES)
    label = label.to(scores.dtype)
    num_pos = label.sum().clamp(min=1)
    if loss == "bpr":
        neg = scores.masked_fill(label > 0, float("-inf"))
        top, denom = softmax_stats([neg.unsqueeze(-1)], [seed], num_seeds)
        lse = (top + denom.log()).squeeze(-1).index_select(0, seed)
        return (F.softplus(lse - scores) * label).sum() / num_pos
    score = scores.unsqueeze(-1)
    top, denom = softmax_stats([score], [seed], num_seeds)
    log_p = edge_softmax(score, seed, top, denom).clamp(min=1e-30).log().squeeze(-1)
    return -(log_p * label).sum() / num_pos


def topk_items(scores: Tensor, k: int, exclude: tuple[Tensor, Tensor] | None = None) -> Tensor:
    r"""The :obj:`k` best items per row of a :math:`(B, I)` score matrix,
    best first, optionally without the ``(row, item)`` pairs in :obj:`exclude`."""
    if exclude is not None:
        scores = scores.index_put(exclude, scores.new_tensor(float("-inf")))
    return scores.topk(min(k, scores.size(1)), dim=1).indices


def topk_candidates(scores: Tensor, seed: Tensor, item: Tensor, num_seeds: int,
                    k: int) -> Tensor:
    r"""The :obj:`k` best candidate items per seed, best first, as a
    :math:`(B, k)` tensor padded with ``-1``."""
    order = torch.argsort(scores, descending=True, stable=True)
    order = order[torch.argsort(seed[order], stable=True)]
    seed_sorted = seed[order]
    counts = torch.bincount(seed_sorted, minlength=num_seeds)
    start = torch.cumsum(counts, 0) - counts
    rank = torch.arange(order.numel(), device=scores.device) - start[seed_sorted]
    keep = rank < k
    out = torch.full((num_seeds, k), -1, dtype=torch.long, device=scores.device)
    out[seed_sorted[keep], rank[keep]] = item[order[keep]]
    return out
