"""Ranking losses and top-k lists for the recommendation heads."""
from __future__ import annotations

import pytest
import torch

from rdl.nn import candidate_labels, candidate_loss, topk_candidates, topk_items, two_tower_loss
from rdl.tasks.metrics import RankingMetric


def test_topk_items_ranks_best_first_and_can_exclude():
    scores = torch.tensor([[0.1, 0.9, 0.5, 0.3], [1.0, 0.0, 0.2, 0.8]])
    assert topk_items(scores, 2).tolist() == [[1, 2], [0, 3]]
    exclude = (torch.tensor([0]), torch.tensor([1]))
    assert topk_items(scores, 2, exclude=exclude).tolist() == [[2, 3], [0, 3]]


def test_topk_candidates_groups_by_seed_and_pads():
    #          seed 0 ------------  seed 1 -----  seed 2: none
    seed = torch.tensor([0, 0, 0, 1, 1])
    item = torch.tensor([7, 3, 5, 2, 9])
    score = torch.tensor([0.1, 0.9, 0.5, -1.0, 2.0])
    top = topk_candidates(score, seed, item, num_seeds=3, k=2)
    assert top.tolist() == [[3, 5], [9, 2], [-1, -1]]
    metric = RankingMetric("map", 2)
    metric.update(top, [[3], [2], [4]])
    assert metric.compute().item() == pytest.approx((1.0 + 0.5 + 0.0) / 3)


def test_candidate_labels():
    seed, item = torch.tensor([0, 0, 1, 1]), torch.tensor([4, 5, 4, 6])
    labels = candidate_labels(seed, item, torch.tensor([0, 1]), torch.tensor([5, 4]), 10)
    assert labels.tolist() == [False, True, True, False]


@pytest.mark.parametrize("loss,num_negatives", [("softmax", 0), ("softmax", 5), ("bpr", 5)])
def test_two_tower_losses_prefer_the_positive(loss, num_negatives):
    g = torch.Generator().manual_seed(0)
    pos_seed, pos_item = torch.tensor([0, 1, 1]), torch.tensor([2, 0, 3])
    scores = torch.zeros(2, 6, requires_grad=True)
    value = two_tower_loss(scores, pos_seed, pos_item, loss=loss, num_negatives=num_negatives,
                           generator=g)
    value.backward()
    assert value > 0
    assert (scores.grad[pos_seed, pos_item] < 0).all()  # descent raises positives
    good = torch.full((2, 6), -5.0)
    good[pos_seed, pos_item] = 5.0
    assert two_tower_loss(good, pos_seed, pos_item, loss=loss, num_negatives=num_negatives,
                          generator=g) < value


@pytest.mark.parametrize("loss", ["softmax", "bpr"])
def test_candidate_losses_prefer_the_positive(loss):
    seed = torch.tensor([0, 0, 0, 1, 1])
    label = torch.tensor([0, 1, 0, 1, 0])
    scores = torch.zeros(5, requires_grad=True)
    value = candidate_loss(scores, label, seed, 2, loss=loss)
    value.backward()
    assert value > 0 and (scores.grad[label.bool()] < 0).all()
    better = torch.tensor([-3.0, 3.0, -3.0, 3.0, -3.0])
    assert candidate_loss(better, label, seed, 2, loss=loss) < value


def test_unknown_loss_is_named():
    with pytest.raises(ValueError, match=r"Unknown loss='hinge'; valid choices are "
                                         r"\['softmax', 'bpr'\]"):
        two_tower_loss(torch.zeros(1, 2), torch.tensor([0]), torch.tensor([1]), loss="hinge")
