r"""Recommendation scores around the model: each seed's already-seen items
either excluded (``-inf`` before the top-``k``) or given the head's learned
:class:`~rdl.nn.SeenBonus`, then the ranking loss, and the top-``k`` items
of the scores raised by what was popular at the seed's time
(:mod:`rdl.train.popularity`).

Used alike by training, validation, testing, ``rdl predict`` and
:meth:`rdl.Predictor.recommend`, so every path excludes the same items.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
from lightning.pytorch.utilities import rank_zero_warn
from torch import Tensor

from rdl.nn import RelationalModel
from rdl.nn.ranking import mask_pairs, topk_items, two_tower_loss
from rdl.train.data import LabeledBatch
from rdl.train.seen import SeenItems


def item_scores(model: RelationalModel, out: Tensor, seen: SeenItems | None, exclude: bool,
                keep: tuple[Tensor, Tensor] | None = None) -> Tensor:
    r"""Scores of every item :math:`(B, I)`: the seen pairs at ``-inf`` when
    :obj:`exclude` (but the pairs in :obj:`keep`), else raised by the head's
    learned bonus for seen items."""
    if seen is None:
        return out
    if exclude:
        return mask_pairs(out, seen.seed, seen.item, keep)
    return model.head.seen(out, seen.seed, seen.item, seen.count, seen.age)


def ranked_scores(model: RelationalModel, out: Tensor, batch: LabeledBatch, exclude: bool,
                  popularity: float) -> Tensor:
    r"""The scores a ranking orders, :math:`(B, I)`: :func:`item_scores`
    plus ``popularity * log(1 + rows)`` of each item in the target window
    before the seed's time."""
    return _with_popularity(item_scores(model, out, batch.seen, exclude), batch, popularity)


def _with_popularity(scores: Tensor, batch: LabeledBatch, popularity: float) -> Tensor:
    """:obj:`scores` raised by what was popular at each seed's time, if the
    batch knows it."""
    return scores if batch.popular is None else batch.popular.boost(scores, popularity)


def loss_and_topk(model: RelationalModel, out: Tensor, batch: LabeledBatch, k: int, exclude: bool,
                  with_loss: bool = True, with_topk: bool = True, popularity: float = 0.0
                  ) -> tuple[Tensor | None, Tensor | None]:
    r"""The ranking loss of :obj:`batch`'s positives (seen items that are no
    positives left out of it when excluding) and the top-:obj:`k` items of
    :func:`ranked_scores` (``None`` without :obj:`with_topk`: a training
    step needs no list, and a top-``k`` over every item costs as much as a
    fifth of its forward pass on a large catalogue). The loss is the
    model's own: popularity only reorders the list."""
    scores = item_scores(model, out, batch.seen, exclude)
    loss = None
    if with_loss:
        fit = scores
        if exclude and batch.seen is not None:
            fit = item_scores(model, out, batch.seen, exclude, keep=(batch.y_seed, batch.y))
        loss = two_tower_loss(fit, batch.y_seed, batch.y)
    if not with_topk:
        return loss, None
    return loss, topk_items(_with_popularity(scores, batch, popularity), k)


class ExcludedPositives:
    r"""Counts the positives that exclusion hid (their entity had seen them)
    over an evaluation epoch, and warns when it hid all of them: the ranking
    metrics would then be 0 by construction, not by the model."""

    def __init__(self) -> None:
        self.hidden = 0
        self.total = 0

    def update(self, batch: LabeledBatch, num_items: int) -> None:
        self.total += batch.y.numel()
        if batch.seen is not None and batch.y.numel():
            pairs = batch.y_seed * num_items + batch.y
            seen = batch.seen.seed * num_items + batch.seen.item
            self.hidden += int(torch.isin(pairs, seen).sum())

    def finish(self, stage: str, reduce: Callable[[Tensor], Tensor]) -> None:
        r"""Warns if every positive of :obj:`stage` was hidden; :obj:`reduce`
        sums a tensor over processes. Resets the counts."""
        counts = reduce(torch.tensor([self.hidden, self.total], dtype=torch.float64))
        hidden, total = (int(v) for v in counts.tolist())
        self.hidden = self.total = 0
        if total and hidden == total:
            rank_zero_warn(
                f"exclude_seen hid every correct item of the {stage} split: all {total} were "
                "already seen by their entities, so no recommendation can be right and the "
                "ranking metrics are 0 by construction. Set model.exclude_seen: false"
            )
