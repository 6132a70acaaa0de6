"""The recommendation baseline: already-seen items excluded when users do not
repeat, own past items first when they do."""
from __future__ import annotations

import pandas as pd
import pytest

from rdl.baseline import run_baseline
from rdl.baseline.recommend import recommend
from rdl.tasks import Task
from rdl.testing.brute_force import seen_by_brute_force
from rdl.testing.views import VIEWS_TASK, make_views


@pytest.fixture(scope="module")
def views():
    return make_views()


def popular_unseen(db, user, at, k) -> list:
    """Brute force: the items viewed most in the 10 days up to ``at`` (ties:
    smaller id), leaving out what ``user`` had seen by then."""
    rows = db["views"].df
    window = rows[(rows["at"] > at - pd.Timedelta(days=10)) & (rows["at"] <= at)]
    counts = window.groupby("item_id").size().reset_index(name="n")
    ranked = counts.sort_values(["n", "item_id"], ascending=[False, True])["item_id"].tolist()
    seen = seen_by_brute_force(db, user, at)
    return [item for item in ranked if item not in seen][:k]


def test_excluding_ranks_the_popular_items_the_user_has_not_seen(views):
    task = Task(**VIEWS_TASK)
    labels = task.table(views, "test")
    ranked = recommend(views, task, labels, exclude_seen=True)
    for (user, at, _), items in zip(labels.itertuples(index=False), ranked):
        assert not set(items) & seen_by_brute_force(views, user, at)
        assert items == popular_unseen(views, user, at, 5)


def test_without_exclusion_own_past_items_come_first(views):
    task = Task(**VIEWS_TASK)
    labels = task.table(views, "test")
    ranked = recommend(views, task, labels)
    for (user, at, _), items in zip(labels.itertuples(index=False), ranked):
        seen = seen_by_brute_force(views, user, at)
        assert set(items[: len(seen)]) <= seen or seen <= set(items)


@pytest.mark.parametrize("repeat, option, excluded", [
    (False, "auto", True), (True, "auto", False), (False, False, False), (True, True, True),
])
def test_exclude_seen_follows_the_training_repeat_rate(tmp_path, repeat, option, excluded):
    db = make_views(repeat=repeat)
    db.save(tmp_path)
    result = run_baseline({"task": VIEWS_TASK, "data": {"source": str(tmp_path)}},
                          exclude_seen=option)
    assert (result.repeat_rate == 0.0) is (not repeat)
    assert result.notes[0].startswith(f"{result.repeat_rate:.1%} of training positives")
    assert ("left out of recommendations" in result.notes[0]) is excluded
    test = Task(**VIEWS_TASK).table(db, "test")
    items = result.predictions["prediction"]
    hits = [bool(set(i) & seen_by_brute_force(db, u, t))
            for u, t, i in zip(test["user_id"], test["timestamp"], items)]
    assert not any(hits) if excluded else any(hits)
    if repeat and not excluded:  # users only re-view their own items: they are ranked first
        assert result.metrics["test"]["map@5"] > 2 * result.trivial["test"]["map@5"]


def test_excluding_every_correct_item_warns(tmp_path):
    make_views(repeat=True).save(tmp_path)
    with pytest.warns(UserWarning, match="Every correct item of the val split was already seen"):
        result = run_baseline({"task": VIEWS_TASK, "data": {"source": str(tmp_path)}},
                              exclude_seen=True)
    assert result.metrics["val"]["map@5"] == 0.0
