"""The seen items' boost of a recommendation model: each candidate scored as a brute-force
re-ranking (with the head's learned bonus) scores it, the boost the validation rows favour
chosen, and carried by the checkpoint to rdl test and the Predictor."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from rdl.nn import SeenBonus
from rdl.tasks.metrics import RankingMetric
from rdl.train.seen import SeenItems
from rdl.train.seen_boost import (
    BOOSTS, check_boost_setting, choose_boost, row_scores_per_boost,
)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(3, 8), st.integers(0, 2**31 - 1))
def test_each_boost_scores_rows_as_re_ranking_a_raised_copy_does(rows, items, seed):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(rows, items, generator=g, dtype=torch.float64)
    pairs = sorted({(int(s), int(i)) for s, i in zip(torch.randint(rows, (6,), generator=g),
                                                      torch.randint(items, (6,), generator=g))})
    seen = SeenItems(torch.tensor([s for s, _ in pairs]), torch.tensor([i for _, i in pairs]),
                     torch.randint(1, 9, (len(pairs),), generator=g),
                     torch.randint(0, 30, (len(pairs),), generator=g).double())
    target = torch.randint(-1, items, (rows, 2), generator=g)
    metric = RankingMetric("map", k=2)
    bonus = SeenBonus().double()
    with torch.no_grad():
        bonus.weight.copy_(torch.tensor([0.3, 0.1, -0.02]) / bonus.gain)
    got = row_scores_per_boost(scores, seen, bonus, metric, target, 2)
    for column, boost in enumerate(BOOSTS):
        raised = scores.clone()
        for s, i, c, a in zip(seen.seed.tolist(), seen.item.tolist(), seen.count.tolist(),
                              seen.age.tolist()):
            raised[s, i] += 0.3 + (0.1 + boost) * np.log1p(c) - 0.02 * np.log1p(a)
        order = [sorted(range(items), key=lambda j: -raised[r, j].item())[:2]
                 for r in range(rows)]
        expected = metric.row_scores(torch.tensor(order), target)
        torch.testing.assert_close(got[:, column], expected)
    alike = row_scores_per_boost(scores, None, bonus, metric, target, 2)
    assert (alike == alike[:, :1]).all()


def test_the_boost_a_clear_winner_wins_and_a_tie_keeps_the_learned_bonus():
    rng = np.random.default_rng(0)
    base = rng.random((200, len(BOOSTS)))
    better = base.copy()
    better[:, BOOSTS.index(8.0)] += 0.5  # better on every row
    assert choose_boost(better) == 8.0
    assert choose_boost(np.ones((50, len(BOOSTS)))) == 0.0
    assert choose_boost(np.zeros((0, len(BOOSTS)))) == 0.0


@pytest.mark.parametrize("name", ["seen_boost", "popularity_boost"])
@pytest.mark.parametrize("value", [-1, "high", True, None])
def test_a_boost_is_auto_or_a_number_at_least_zero(name, value):
    with pytest.raises(ValueError, match=f"^{name}={value!r} must be 'auto' .* \\(0: zero\\)$"):
        check_boost_setting(name, value, "zero")
    for fine in ("auto", 0, 2.5):
        check_boost_setting(name, fine, "zero")


def test_a_choice_that_wins_only_half_the_resamples_falls_back_to_the_first():
    rng = np.random.default_rng(1)
    noise = rng.normal(size=(400, len(BOOSTS)))
    noise[:, 1] = noise[:, 0] + rng.normal(scale=0.01, size=400)  # a coin flip against 0
    noise[:, 2:] -= 5.0
    assert choose_boost(noise) == BOOSTS[1]  # the bagged winners lean to it, by chance
    assert choose_boost(noise, min_win_share=0.9) == 0.0
    clear = noise.copy()
    clear[:, 1] += 0.5
    assert choose_boost(clear, min_win_share=0.9) == BOOSTS[1]
