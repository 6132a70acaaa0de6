"""Ranking losses and top-k lists for the recommendation heads."""
from __future__ import annotations

import math

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rdl.nn import SeenBonus, mask_pairs, topk_items, two_tower_loss
from rdl.tasks.metrics import RankingMetric


def test_topk_items_ranks_best_first_and_can_exclude():
    scores = torch.tensor([[0.1, 0.9, 0.5, 0.3], [1.0, 0.0, 0.2, 0.8]])
    assert topk_items(scores, 2).tolist() == [[1, 2], [0, 3]]
    exclude = (torch.tensor([0]), torch.tensor([1]))
    assert topk_items(scores, 2, exclude=exclude).tolist() == [[2, 3], [0, 3]]


def test_excluded_items_are_never_returned_and_pad_with_minus_one():
    scores = torch.tensor([[0.1, 0.9, 0.5], [1.0, 0.0, 0.2]])
    exclude = (torch.tensor([0, 0, 1]), torch.tensor([0, 1, 2]))
    assert topk_items(scores, 3, exclude=exclude).tolist() == [[2, -1, -1], [0, 1, -1]]
    metric = RankingMetric("map", 3)
    metric.update(topk_items(scores, 3, exclude=exclude), [[2], [1]])
    assert metric.compute().item() == pytest.approx((1.0 + 0.5) / 2)


def test_mask_pairs_keeps_the_pairs_asked_for():
    scores = torch.zeros(2, 3)
    masked = mask_pairs(scores, torch.tensor([0, 1, 1]), torch.tensor([2, 0, 1]),
                        keep=(torch.tensor([1]), torch.tensor([0])))
    assert torch.isinf(masked).tolist() == [[False, False, True], [False, True, False]]
    assert (scores == 0).all()  # a copy


def test_seen_bonus_moves_only_the_seen_pairs_and_learns():
    bonus = SeenBonus(gain=10.0)
    with torch.no_grad():
        bonus.weight.copy_(torch.tensor([0.1, 0.2, -0.05]))
    seed, item = torch.tensor([0, 1]), torch.tensor([3, 0])
    out = bonus(torch.zeros(2, 4), seed, item, torch.tensor([1, 4]), torch.tensor([0.0, 9.0]))
    expected = torch.zeros(2, 4)
    expected[0, 3] = 10 * (0.1 + 0.2 * math.log(2))
    expected[1, 0] = 10 * (0.1 + 0.2 * math.log(5) - 0.05 * math.log(10))
    torch.testing.assert_close(out, expected)
    out[1].sum().backward()
    assert bonus.weight.grad.abs().sum() > 0


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


@settings(max_examples=60, deadline=None)
@example(3, 3, 0)  # a row without positives, all of it masked
@given(st.integers(1, 4), st.integers(2, 9), st.integers(0, 2**31 - 1))
def test_full_softmax_loss_is_each_positives_cross_entropy_over_every_item(rows, items, seed):
    """Against a loop over the positives: log of the sum of exp over the row's items minus the
    positive's score, averaged; masked (-inf) items count for nothing, also in the gradient."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(rows, items, generator=g, dtype=torch.float64)
    pos_seed = torch.randint(rows, (5,), generator=g)
    pos_item = torch.randint(items, (5,), generator=g)
    masked = torch.rand(rows, items, generator=g) < 0.3
    masked[pos_seed, pos_item] = False
    scores = scores.masked_fill(masked, float("-inf")).requires_grad_()
    two_tower_loss(scores, pos_seed, pos_item).backward()
    reference = scores.detach().clone().requires_grad_()
    terms = [reference[s].exp().sum().log() - reference[s, i]
             for s, i in zip(pos_seed.tolist(), pos_item.tolist())]
    expected = sum(terms) / len(terms)
    expected.backward()
    torch.testing.assert_close(two_tower_loss(scores, pos_seed, pos_item), expected.detach())
    torch.testing.assert_close(scores.grad, reference.grad)
    assert (scores.grad[masked] == 0).all()


def test_unknown_loss_is_named():
    with pytest.raises(ValueError, match=r"Unknown loss='hinge'; valid choices are "
                                         r"\['softmax', 'bpr'\]"):
        two_tower_loss(torch.zeros(1, 2), torch.tensor([0]), torch.tensor([1]), loss="hinge")
