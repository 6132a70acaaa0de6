"""Recent popularity in a recommendation ranking: items counted in the target window before
each seed as a brute-force count does, each candidate weight scored as re-ranking a raised
copy does, the weight chosen on validation carried by the checkpoint, and at a large weight
the Predictor ranking unseen items by what was popular."""
from __future__ import annotations

import lightning as L
import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import rdl
from rdl.tasks import Task
from rdl.tasks.metrics import RankingMetric
from rdl.testing.brute_force import seen_by_brute_force
from rdl.testing.views import VIEWS_TASK, make_views
from rdl.train import RelationalDataModule, RelationalTask
from rdl.train.callbacks import TaskCheckpoint
from rdl.train.module import module_arguments
from rdl.train.popularity import (
    POPULARITY_KEY, WEIGHTS, PopularityIndex, SeedPopularity, row_scores_per_weight,
)

DAY = 86_400


@settings(max_examples=50, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 4), st.integers(-5, 30)), max_size=40),
       times=st.lists(st.integers(-10, 40), min_size=1, max_size=6),
       window=st.integers(1, 12))
def test_log_counts_equal_a_brute_force_count_of_the_window(rows, times, window):
    item = torch.tensor([r[0] for r in rows], dtype=torch.long)
    day = torch.tensor([r[1] for r in rows], dtype=torch.long)
    index = PopularityIndex(item, day * DAY, num_items=5, window=pd.DateOffset(days=window))
    row, log_counts = index.log_counts(torch.tensor(times) * DAY)
    for seed, t in enumerate(times):
        expected = [sum(1 for i, d in rows if i == it and t - window < d <= t)
                    for it in range(5)]
        assert log_counts[row[seed]].expm1().round().long().tolist() == expected


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 5), st.integers(3, 8), st.integers(0, 2**31 - 1))
def test_each_weight_scores_rows_as_re_ranking_a_raised_copy_does(rows, items, seed):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(rows, items, generator=g, dtype=torch.float64)
    scores[torch.rand(rows, items, generator=g) < 0.2] = float("-inf")  # excluded pairs
    item = torch.randint(items, (20,), generator=g)
    day = torch.randint(0, 20, (20,), generator=g)
    index = PopularityIndex(item, day * DAY, items, pd.DateOffset(days=7))
    time = torch.randint(0, 25, (rows,), generator=g) * DAY
    target = torch.randint(-1, items, (rows, 2), generator=g)
    metric = RankingMetric("map", k=2)
    got = row_scores_per_weight(scores, SeedPopularity(index, time), metric, target, 2)
    for column, weight in enumerate(WEIGHTS):
        raised = scores.clone()
        for r in range(rows):
            t = int(time[r]) // DAY
            for i in range(items):
                n = sum(1 for ii, d in zip(item.tolist(), day.tolist())
                        if ii == i and t - 7 < d <= t)
                raised[r, i] += weight * np.log1p(n)
        order = [[j for j in sorted(range(items), key=lambda j: -raised[r, j].item())
                  if raised[r, j] > float("-inf")][:2] for r in range(rows)]
        order = torch.tensor([o + [-1] * (2 - len(o)) for o in order])
        torch.testing.assert_close(got[:, column], metric.row_scores(order, target))


def _popular_by_brute_force(db, at: pd.Timestamp, days: int) -> pd.Series:
    views = db["views"].df
    recent = views[(views["at"] > at - pd.Timedelta(days=days)) & (views["at"] <= at)]
    return recent["item_id"].value_counts()


def test_the_chosen_weight_travels_with_the_checkpoint_and_a_large_one_ranks_by_popularity(
        tmp_path):
    make_views().save(tmp_path / "db")
    datamodule = RelationalDataModule(str(tmp_path / "db"), Task(**VIEWS_TASK),
                                      num_neighbors=[4, 4], batch_size=32, min_steps_per_epoch=10,
                                      cache_dir=str(tmp_path / "cache"))
    checkpoint = TaskCheckpoint(dirpath=str(tmp_path / "ckpt"))
    torch.manual_seed(0)
    module = RelationalTask(**module_arguments({"channels": 8}))
    L.Trainer(max_epochs=2, logger=False, callbacks=[checkpoint], enable_progress_bar=False,
              enable_model_summary=False).fit(module, datamodule)
    stored = torch.load(checkpoint.best_model_path, weights_only=True)
    assert stored[POPULARITY_KEY] == module.popularity_boost in WEIGHTS
    assert rdl.Predictor.from_checkpoint(checkpoint.best_model_path).module.popularity_boost \
        == module.popularity_boost

    # A number in the module's settings wins over the checkpoint's weight.
    stored[POPULARITY_KEY] = 1e6
    torch.save(stored, tmp_path / "popular.ckpt")
    fixed = RelationalTask(**module_arguments({"channels": 8, "popularity_boost": 0.5}))
    L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False).test(
        fixed, datamodule, ckpt_path=str(tmp_path / "popular.ckpt"), verbose=False)
    assert fixed.popularity_boost == 0.5

    # At a weight of a million the ranking is recent popularity among unseen items.
    predictor = rdl.Predictor.from_checkpoint(str(tmp_path / "popular.ckpt"))
    assert predictor.module.popularity_boost == 1e6
    db = make_views()
    at = pd.Timestamp("2022-03-10")
    counts = _popular_by_brute_force(db, at, days=10)
    users = [f"u{i}" for i in range(12)]
    out = predictor.recommend(ids=users, at=at, k=5)
    for user, items in out.groupby("user_id", sort=False)["item"]:
        unseen = counts.drop(list(seen_by_brute_force(db, user, at)), errors="ignore")
        got = [int(counts.get(item, 0)) for item in items]
        assert got == sorted(got, reverse=True)
        assert got == sorted(unseen.tolist(), reverse=True)[:5] + [0] * max(0, 5 - len(unseen))
