r"""Recommendation: how much what is popular at the seed's time counts,
chosen on the validation split.

The head scores items with embeddings learnt over the whole training period,
so what is popular at a seed's time (a film just out, a product in season)
reaches it only through the few items its subgraph samples. The baseline
ranks by exactly that: the items most frequent among all entities in the
target window before the seed time. On MovieLens-100k (real, outside the
repository; no user rates a film twice) the GNN ranked below that
popularity, test MAP@10 0.234 against 0.274. So when fit ends a weight ``w``
is chosen from :data:`WEIGHTS` by the task's first validation metric, bagged
over bootstrap resamples of the validation seeds as the seen items' boost is
(:mod:`rdl.train.seen_boost`), and every ranking adds ``w * log(1 + n)`` to
the item scores, ``n`` being the item's rows in the window before the seed.
0 keeps the model's own ranking; the largest weight ranks by popularity, the
model breaking ties. A weight other than 0 is kept only where it beats 0 in
:data:`WIN_SHARE` of the resamples: on the synthetic shop without repeats
0.25 gained 0.0001 on validation, a coin flip, and cost up to 0.003 on test.
Training is untouched; a checkpoint carries the weight.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch import Tensor
from torch_geometric.data import HeteroData

from rdl.db.database import Database
from rdl.graph import to_unix_seconds
from rdl.nn.ranking import topk_items
from rdl.tasks import Task
from rdl.tasks.history import item_history
from rdl.tasks.query.windows import window_offset

WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 16.0, 64.0)
WIN_SHARE = 0.9
POPULARITY_KEY = "rdl_popularity_boost"


class PopularityIndex:
    r"""Every row of a recommendation target, sorted by time, to count each
    item's rows in the target window before any time.

    Args:
        item (Tensor): Item node of each row ``[R]``.
        time (Tensor): Unix seconds of each row ``[R]``.
        num_items (int): Nodes of the item type.
        window (pandas.DateOffset): The target window's length.
    """

    def __init__(self, item: Tensor, time: Tensor, num_items: int,
                 window: pd.DateOffset) -> None:
        order = torch.argsort(time, stable=True)
        self.item, self.time = item[order], time[order]
        self.num_items = num_items
        self.window = window

    @classmethod
    def from_task(cls, task: Task, db: Database, graph: HeteroData,
                  item_type: str) -> PopularityIndex:
        """The index of a recommendation task's rows, in :obj:`graph`'s node indices."""
        rows = item_history(task, db)
        item = graph.key_index[item_type].get_indexer(rows["item"])
        known = item >= 0  # rows whose item points nowhere count for no item
        target = task.check(db).query.target
        return cls(torch.from_numpy(item[known].astype(np.int64)),
                   to_unix_seconds(rows["time"][known]), graph[item_type].num_nodes,
                   window_offset(target.end - target.start, target.unit))

    def log_counts(self, time: Tensor) -> tuple[Tensor, Tensor]:
        r"""For seed times :obj:`time` ``[B]``: each seed's row ``[B]`` of the
        ``log(1 + rows)`` of every item in the window ``(t - w, t]``,
        :math:`(T, I)` over the ``T`` distinct times."""
        unique, row = torch.unique(time, return_inverse=True)
        stamps = pd.to_datetime(unique.numpy(), unit="s")
        low = torch.from_numpy((stamps - self.window).as_unit("s").asi8.astype(np.int64))
        start = torch.searchsorted(self.time, low, right=True).tolist()
        end = torch.searchsorted(self.time, unique, right=True).tolist()
        counts = torch.stack([torch.bincount(self.item[s:e], minlength=self.num_items)
                              for s, e in zip(start, end)])
        return row, counts.to(torch.float32).log1p()

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(rows={self.item.numel()}, items={self.num_items})"


class SeedPopularity:
    r"""A batch's seed times and the index to count items for them, counted
    only when a ranking asks (training steps never do)."""

    def __init__(self, index: PopularityIndex, time: Tensor) -> None:
        self.index, self.time = index, time

    def to(self, device: torch.device | str) -> SeedPopularity:
        return self  # counted on the CPU, moved where the scores are

    def prior(self, device: torch.device | str) -> Tensor:
        r"""Each seed's ``log(1 + rows)`` of every item, :math:`(B, I)`, on :obj:`device`."""
        row, log_counts = self.index.log_counts(self.time)
        return log_counts.to(device).index_select(0, row.to(device))

    def boost(self, scores: Tensor, weight: float) -> Tensor:
        r""":obj:`scores` :math:`(B, I)` plus ``weight * log(1 + rows)``."""
        return scores if weight == 0 else scores + weight * self.prior(scores.device)


def describe(weight: float, per_row: np.ndarray, metric: str) -> str:
    """One line for the fit's output: the weight and what it did on validation."""
    means = per_row.mean(axis=0) if per_row.size else np.zeros(len(WEIGHTS))
    chosen = WEIGHTS.index(weight)
    return (f"popularity_boost auto: {weight:g} (validation {metric} {means[0]:.4f} with the "
            f"model's ranking alone, {means[chosen]:.4f} with it, {means[-1]:.4f} ranking by "
            "recent popularity; model.popularity_boost: 0 keeps the model's ranking)")


@torch.no_grad()
def row_scores_per_weight(scores: Tensor, popular: SeedPopularity, metric, target: Tensor,
                          k: int) -> Tensor:
    r"""The ranking metric (a :class:`~rdl.tasks.metrics.RankingMetric`) of
    each row with a true item, the item :obj:`scores` raised by recent
    popularity under each weight of :data:`WEIGHTS`: :math:`(N', |WEIGHTS|)`."""
    prior = popular.prior(scores.device)
    return torch.stack([metric.row_scores(topk_items(scores + w * prior, k), target)
                        for w in WEIGHTS], dim=1)
