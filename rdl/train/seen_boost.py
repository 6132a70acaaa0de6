r"""Recommendation: how much more an entity's own past items count, chosen on
the validation split.

The head's :class:`~rdl.nn.SeenBonus` learns, with the softmax loss, a bonus
for each item a seed's entity had already. The loss calibrates a probability
for every item, and the ranking of an entity's own items among themselves is
then mixed with the item embeddings' scores. Where entities return to the
same items again and again (groceries), ordering those items by how often
they were had, as the baseline does, ranks better: on a synthetic grocery
shape (1,000 households, 20,000 products, 66% of positives already had) the
GNN's validation MAP@12 went from 0.327 to 0.340 with a boost of 10 (the
baseline: 0.339), test 0.344 to 0.359 (0.358). So when fit ends, a boost
``b`` (a seen item's score plus ``b * log(1 + count)``) is chosen from
:data:`BOOSTS` by the task's first validation metric, bagged over bootstrap
resamples of the validation seeds as the LightGBM blend's share is
(:mod:`rdl.train.blend`): the mean of the resamples' winners (a tie goes to
the smaller boost), rounded to the grid. Training is untouched; the boost
changes the ranking at test and prediction time, and a checkpoint carries it.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from rdl.nn.heads import SeenBonus
from rdl.nn.ranking import topk_items
from rdl.train.seen import SeenItems

BOOSTS = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
BOOTSTRAP_ROUNDS = 100
SEEN_BOOST_KEY = "rdl_seen_boost"


def check_boost_setting(name: str, value: object, zero: str) -> None:
    """Raises unless ``value`` of setting ``name`` (``seen_boost``,
    ``popularity_boost``) is ``"auto"`` or a number at least 0; ``zero``
    says what 0 means."""
    if value == "auto":
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{name}={value!r} must be 'auto' (chosen on the validation "
                         f"split) or a number >= 0 (0: {zero})")


def choose_boost(per_row: np.ndarray, seed: int = 0, rounds: int = BOOTSTRAP_ROUNDS,
                 grid: tuple[float, ...] = BOOSTS, min_win_share: float = 0.0) -> float:
    r"""The boost of :obj:`grid` that ``per_row`` (the metric of each
    validation row under each boost, :math:`(N, |grid|)`) favours, bagged
    over ``rounds`` bootstrap resamples of the rows; ``grid[0]`` unless the
    choice beats it in at least :obj:`min_win_share` of the resamples."""
    if per_row.shape[0] == 0:
        return grid[0]
    rng = np.random.default_rng(seed)
    n = per_row.shape[0]
    samples = [per_row[rng.integers(0, n, n)].mean(axis=0) for _ in range(rounds)]
    winners = [int(np.flatnonzero(means >= means.max() - 1e-12)[0]) for means in samples]
    chosen = int(np.rint(np.mean(winners)))
    if np.mean([means[chosen] > means[0] for means in samples]) < min_win_share:
        return grid[0]
    return grid[chosen]


def describe(boost: float, per_row: np.ndarray, metric: str) -> str:
    """One line for the fit's output: the boost and what it did on validation."""
    means = per_row.mean(axis=0) if per_row.size else np.zeros(len(BOOSTS))
    chosen = BOOSTS.index(boost)
    return (f"seen_boost auto: {boost:g} (validation {metric} {means[0]:.4f} with the learned "
            f"bonus alone, {means[chosen]:.4f} with it; model.seen_boost: 0 keeps the bonus "
            "alone)")


@torch.no_grad()
def row_scores_per_boost(out: Tensor, seen: SeenItems | None, bonus: SeenBonus, metric,
                         target: Tensor, k: int) -> Tensor:
    r"""The ranking metric (a :class:`~rdl.tasks.metrics.RankingMetric`) of
    each row with a true item, the head's output ``out`` ranked with the seen
    items' ``bonus`` under each boost of :data:`BOOSTS` (a batch without seen
    items ranks alike under all): :math:`(N', |BOOSTS|)`."""
    if seen is None:
        return metric.row_scores(topk_items(out, k), target).unsqueeze(1).expand(-1, len(BOOSTS))
    columns = [metric.row_scores(topk_items(bonus(out, seen.seed, seen.item, seen.count,
                                                  seen.age, boost=b), k), target)
               for b in BOOSTS]
    return torch.stack(columns, dim=1)
