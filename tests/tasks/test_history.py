"""Seen items and the repeat rate of recommendation tasks, against brute force."""
from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rdl.db.database import Database
from rdl.db.table import Table
from rdl.tasks import Task, TaskError, item_history, repeat_rate, resolve_exclude_seen, seen_items
from rdl.testing.brute_force import seen_by_brute_force
from rdl.testing.views import VIEWS_TASK, make_views

START = pd.Timestamp("2022-01-01")
QUERY = ("PREDICT LIST_DISTINCT(views.item_id{where}, 0, 3, days) RANK TOP 2 "
         "FOR EACH users.user_id")


def views_db(rows: list[tuple]) -> Database:
    """Users u0..u3, items 0..4 and ``(user, item or None, day, liked)`` views."""
    views = pd.DataFrame(rows, columns=["user_id", "item_id", "day", "liked"])
    views["at"] = (START + pd.to_timedelta(views.pop("day"), unit="D")).astype("datetime64[ns]")
    views["item_id"] = views["item_id"].astype("Int64")
    views.insert(0, "view_id", range(len(views)))
    return Database({
        "users": Table("users", pd.DataFrame({"user_id": [f"u{i}" for i in range(4)]}),
                       "user_id", {}, None, {}),
        "items": Table("items", pd.DataFrame({"item_id": range(5)}), "item_id", {}, None, {}),
        "views": Table("views", views, "view_id", {"user_id": "users", "item_id": "items"}, "at",
                       {"liked": "categorical"}),
    })


def task(where: str = "") -> Task:
    return Task(query=QUERY.format(where=where), val_timestamp="2022-01-20",
                test_timestamp="2022-01-25")


VIEWS = st.lists(st.tuples(st.sampled_from(["u0", "u1", "u2", "u3"]),
                           st.one_of(st.none(), st.integers(0, 4)), st.integers(0, 19),
                           st.booleans()), min_size=1, max_size=40)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=VIEWS, days=st.lists(st.integers(0, 19), min_size=1, max_size=4, unique=True),
       liked_only=st.booleans())
def test_seen_items_and_repeat_rate_equal_brute_force(rows, days, liked_only):
    db = views_db(rows)
    t = task(" WHERE views.liked = true" if liked_only else "")
    labels = t.make_table(db, [START + pd.Timedelta(days=d) for d in days])
    views = db["views"].df
    views = views[views["item_id"].notna() & (views["liked"] if liked_only else True)]

    def past(user, at):
        return views[(views["user_id"] == user) & (views["at"] <= at)]

    expected = []
    for row, (user, at) in enumerate(zip(labels["user_id"], labels["timestamp"])):
        for item, group in past(user, at).groupby("item_id"):
            expected.append((row, int(item), len(group), group["at"].max()))
    got = seen_items(t, db, labels)
    assert list(got.itertuples(index=False, name=None)) == expected

    positives = [(user, at, item) for user, at, items in labels.itertuples(index=False)
                 for item in items]
    repeats = sum(item in set(past(user, at)["item_id"]) for user, at, item in positives)
    rate = repeat_rate(t, db, labels)
    assert (rate.positives, rate.repeats) == (len(positives), repeats)
    assert rate.rate == (repeats / len(positives) if positives else 0.0)


def test_history_reads_the_targets_link_filter_and_times():
    db = views_db([("u0", 1, 0, True), ("u0", 2, 1, False), ("u1", None, 2, True),
                   ("u1", 1, 3, True)])
    history = item_history(task(" WHERE views.liked = true"), db)
    assert list(history.columns) == ["user_id", "item", "time"]
    assert history[["user_id", "item"]].values.tolist() == [["u0", 1], ["u1", 1]]
    assert history["time"].tolist() == [START, START + pd.Timedelta(days=3)]


def test_a_database_without_repeats_has_rate_zero_and_seen_sets_match_the_rows():
    db = make_views()
    t = Task(**VIEWS_TASK)
    train = t.table(db, "train")
    assert repeat_rate(t, db, train).rate == 0.0 and repeat_rate(t, db, train).positives > 50
    seen = seen_items(t, db, train).groupby("row")["item"].apply(set)
    for row, (user, at) in enumerate(zip(train["user_id"], train["timestamp"])):
        assert seen.get(row, set()) == seen_by_brute_force(db, user, at)
    again = make_views(repeat=True)
    assert repeat_rate(t, again, t.table(again, "train")).rate > 0.5


@pytest.mark.parametrize("option, rate, expected", [
    ("auto", 0.0, True), ("auto", 0.049, True), ("auto", 0.05, False), ("auto", 0.6, False),
    (True, 0.6, True), (False, 0.0, False),
])
def test_exclude_seen_auto_follows_the_threshold(option, rate, expected):
    assert resolve_exclude_seen(option, rate) is expected


def test_bad_exclude_seen_and_non_recommendation_tasks_are_errors():
    with pytest.raises(TaskError, match="exclude_seen='sometimes' must be auto, true or false"):
        resolve_exclude_seen("sometimes", 0.1)
    db = views_db([("u0", 1, 0, True)])
    churn = Task(query="PREDICT COUNT(views.*, 0, 3, days) = 0 FOR EACH users.user_id",
                 val_timestamp="2022-01-20", test_timestamp="2022-01-25")
    with pytest.raises(TaskError, match="Seen items need a recommendation query"):
        item_history(churn, db)
