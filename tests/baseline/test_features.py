"""Baseline features: equal to a brute-force oracle, blind to the future, blind to
hidden and excluded columns."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from rdl.baseline import BaselineError, compute_features, feature_table
from rdl.baseline.features import excluded_columns, visible_columns
from rdl.baseline.groups import GroupBuilder
from rdl.tasks import Task
from rdl.testing.feature_oracle import assert_matches, children_oracle, siblings_oracle
from rdl.testing.shops import BASE, DAY, make_feature_shop

SETTINGS = settings(max_examples=20, deadline=None, derandomize=True)
ENTITY_TASK = dict(query="PREDICT COUNT(orders.*, 0, 7, days) FOR EACH customers.cid",
                   val_timestamp=BASE + 20 * DAY, test_timestamp=BASE + 40 * DAY)
EVENT_TASK = dict(query="PREDICT orders.returned FOR EACH orders.oid",
                  val_timestamp=BASE + 20 * DAY, test_timestamp=BASE + 40 * DAY)
# Times on whole days as often as not, so rows sit exactly on window bounds.
HOURS = st.one_of(st.integers(0, 40).map(lambda d: 24 * d), st.integers(0, 40 * 24))
WINDOWS = st.sampled_from([[1.0], [7.0], [1.0, 7.0], [0.5, 3.0, 10.0]])


@st.composite
def shops(draw):
    n = draw(st.integers(1, 4))
    customers = [(draw(st.sampled_from([0, 5, 10])), draw(st.integers(18, 70)),
                  draw(st.sampled_from(["Paris", "Lyon"]))) for _ in range(n)]
    orders = draw(st.lists(st.tuples(
        st.none() | st.integers(0, n - 1), st.none() | st.integers(0, 2),
        st.none() | st.integers(0, 1), HOURS, st.none() | st.integers(-5, 20).map(float),
        st.integers(1, 3), st.booleans(),
    ), min_size=1, max_size=25))
    reviews = draw(st.lists(st.tuples(st.integers(0, len(orders) - 1), HOURS,
                                      st.integers(1, 5)), max_size=10))
    return make_feature_shop(customers, orders, reviews)


@st.composite
def customer_labels(draw, db):
    rows = draw(st.lists(st.tuples(st.integers(0, len(db["customers"].df) - 1), HOURS),
                         min_size=1, max_size=8))
    return pd.DataFrame({"cid": pd.array([f"k{c}" for c, _ in rows], dtype="str"),
                         "timestamp": [BASE + pd.Timedelta(hours=h) for _, h in rows]})


def order_labels(db, keep: list[bool]) -> pd.DataFrame:
    orders = db["orders"].df
    picked = orders[np.resize(keep, len(orders))]
    return pd.DataFrame({"oid": picked["oid"], "timestamp": picked["at"]}).reset_index(drop=True)


def entity_expected(db, labels, windows, hidden=None) -> dict:
    expected = {**children_oracle(db, labels, "orders", "cid", windows, hidden),
                **children_oracle(db, labels, "addresses", "cid", windows, hidden)}
    people = db["customers"].df.set_index("cid").loc[labels["cid"]]
    age = (labels["timestamp"].to_numpy() - people["signup"].to_numpy()) / DAY
    exists = age >= 0  # a customer who signs up after t is not there yet
    expected["customers.age"] = np.where(exists, people["age"], np.nan).tolist()
    expected["customers.signup_age_days"] = np.where(exists, age, np.nan).tolist()
    return expected


def event_expected(db, labels, windows, hidden) -> dict:
    expected = children_oracle(db, labels, "reviews", "oid", windows, hidden)
    for fk, sibling, sfk in [("cid", "orders", "cid"), ("cid", "addresses", "cid"),
                             ("pid", "orders", "pid"), ("sid", "orders", "sid")]:
        expected.update(siblings_oracle(db, labels, "orders", fk, sibling, sfk, windows, hidden))
    rows = db["orders"].df.set_index("oid").loc[labels["oid"]]
    stores = db["stores"].df.set_index("sid")
    opened = [stores.loc[s, "opened"] if pd.notna(s) else pd.NaT for s in rows["sid"]]
    seen = [pd.notna(o) and o <= t for o, t in zip(opened, labels["timestamp"])]
    expected["sid->stores.size"] = [stores.loc[s, "size"] if ok else np.nan
                                    for s, ok in zip(rows["sid"], seen)]
    expected["orders.amount"] = rows["amount"].tolist()
    expected["orders.at_hour"] = labels["timestamp"].dt.hour.tolist()
    return expected


@SETTINGS
@given(data=st.data(), windows=WINDOWS, plan=st.sampled_from(["join", "window"]))
def test_entity_features_equal_brute_force(data, windows, plan):
    db = data.draw(shops())
    labels = data.draw(customer_labels(db))
    feats = compute_features(db, Task(**ENTITY_TASK), labels, windows=windows, hops=2,
                             children_plan=plan).frame
    expected = entity_expected(db, labels, windows)
    assert_matches(feats, expected)
    assert set(feats.columns) == set(expected) | {"customers.city", "customers.secret"}


@SETTINGS
@given(db=shops(), keep=st.lists(st.booleans(), min_size=1, max_size=5), windows=WINDOWS)
def test_event_features_equal_brute_force(db, keep, windows):
    labels = order_labels(db, keep)
    if labels.empty:
        return
    hidden = {"orders": ["returned", "leak"]}
    feats = compute_features(db, Task(**EVENT_TASK), labels, windows=windows, hops=2,
                             exclude_columns={"orders": ["leak"]}).frame
    assert_matches(feats, event_expected(db, labels, windows, hidden))


def scramble_after(db, t: pd.Timestamp) -> None:
    """Changes every row later than ``t`` and adds more, in every timed table."""
    orders, reviews, stores = db["orders"].df, db["reviews"].df, db["stores"].df
    late = orders["at"] > t
    orders.loc[late, "amount"] = orders.loc[late, "amount"] * 3 + 1000
    orders.loc[late, "cid"] = "k0"
    orders.loc[late, "sid"] = 1
    extra = orders.iloc[:1].assign(oid=10_000, at=t + pd.Timedelta(seconds=1), amount=-7.0,
                                   cid="k0", pid=2, sid=2)
    db.tables["orders"].df = pd.concat([orders, extra], ignore_index=True)
    reviews.loc[reviews["at"] > t, "stars"] = 99.0
    db.tables["reviews"].df = pd.concat([reviews, pd.DataFrame(
        {"rid": [10_000], "oid": pd.array([0], dtype="Int64"), "at": [t + DAY], "stars": [0.0]},
    ).astype({"at": "datetime64[ns]"})], ignore_index=True)
    db.tables["stores"].df = pd.concat([stores, pd.DataFrame(
        {"sid": [2], "opened": [t + pd.Timedelta(seconds=1)], "size": [1e6]},
    ).astype({"opened": "datetime64[ns]"})], ignore_index=True)
    db.tables["customers"].df.loc[db["customers"].df["signup"] > t, "age"] = 1e6


@SETTINGS
@given(data=st.data(), windows=WINDOWS, event=st.booleans())
def test_rows_after_every_cutoff_never_change_features(data, windows, event):
    db = data.draw(shops())
    if event:
        labels = order_labels(db, data.draw(st.lists(st.booleans(), min_size=1, max_size=5)))
        if labels.empty:
            return
        task = Task(**EVENT_TASK)
    else:
        labels = data.draw(customer_labels(db))
        task = Task(**ENTITY_TASK)
    before = compute_features(db, task, labels, windows=windows).frame
    scramble_after(db, labels["timestamp"].max())
    after = compute_features(db, task, labels, windows=windows).frame
    pd.testing.assert_frame_equal(before, after)


def test_planted_values_one_and_two_hops():
    r"""Customer k0 orders on day 1 (amount 10, quantity 1, product 0 at 2.0,
    store 0), day 5 (amount 20, quantity 2, product 1 at 5.5, store 1 opened
    on day 15: not yet visible) and day 9 (no amount, quantity 3, no
    product); k1 orders on day 9 only. Labels: k0 at day 9 (twice: duplicates
    are kept) and k0 at day 4."""
    db = make_feature_shop([(0, 30, "Paris"), (0, 40, "Lyon")], [
        (0, 0, 0, 24, 10.0, 1, False), (0, 1, 1, 5 * 24, 20.0, 2, False),
        (0, None, None, 9 * 24, None, 3, True), (1, 0, 0, 9 * 24, 99.0, 1, False),
    ])
    labels = pd.DataFrame({"cid": pd.array(["k0", "k0", "k0"], dtype="str"),
                           "timestamp": [BASE + 9 * DAY, BASE + 9 * DAY, BASE + 4 * DAY]})
    f = compute_features(db, Task(**ENTITY_TASK), labels, windows=[4]).frame
    # [t - 4 days, t] holds days 5 and 9 at day 9, day 1 at day 4 (its start).
    assert f["orders.cid.count_4d"].tolist() == [2, 2, 1]
    assert f["orders.cid.sum_amount_4d"].tolist() == [20.0, 20.0, 10.0]
    assert f["orders.cid.max_qty_4d"].tolist() == [3.0, 3.0, 1.0]
    assert f["orders.cid.count_all"].tolist() == [3, 3, 1]
    assert f["orders.cid.mean_amount_all"].tolist() == [15.0, 15.0, 10.0]
    assert f["orders.cid.days_since_last"].tolist() == [0.0, 0.0, 3.0]
    assert f["orders.cid.days_since_first"].tolist() == [8.0, 8.0, 3.0]
    assert f["orders.cid.pid->products.mean_price_all"].tolist() == [3.75, 3.75, 2.0]
    assert f["orders.cid.pid->products.distinct_all"].tolist() == [2, 2, 1]
    # Store 1 opens on day 15, after the order of day 5 that names it.
    assert f["orders.cid.sid->stores.distinct_all"].tolist() == [1, 1, 1]
    assert f["orders.cid.sid->stores.mean_size_all"].tolist() == [10.0, 10.0, 10.0]
    # Static children: k0 has two addresses, on floors 1 and 3.
    assert f["addresses.cid.count_all"].tolist() == [2, 2, 2]
    assert f["addresses.cid.mean_floor_all"].tolist() == [2.0, 2.0, 2.0]


def test_siblings_are_strictly_earlier():
    """Orders 0 and 1 of k0 share a moment; order 2 comes an hour later."""
    db = make_feature_shop([(0, 30, "Paris")], [(0, 0, 0, 24, 1.0, 1, False),
                                               (0, 0, 0, 24, 2.0, 1, True),
                                               (0, 1, 0, 25, 4.0, 1, False)])
    labels = order_labels(db, [True])
    f = compute_features(db, Task(**EVENT_TASK), labels, windows=[1]).frame
    assert f["cid->customers<-orders.cid.count_all"].tolist() == [0, 0, 2]
    assert f["cid->customers<-orders.cid.mean_amount_1d"].iloc[2] == 1.5
    assert f["pid->products<-orders.pid.count_all"].tolist() == [0, 0, 0]
    assert f["cid->customers<-orders.cid.days_since_last"].iloc[2] == pytest.approx(1 / 24)


def test_hidden_and_excluded_columns_are_never_features():
    db = make_feature_shop([(0, 30, "Paris")], [(0, 0, 0, 24, 1.0, 1, True)], [(0, 30, 5)])
    labels = order_labels(db, [True])
    names = compute_features(db, Task(**EVENT_TASK), labels, windows=[7],
                             exclude_columns={"orders": ["leak"],
                                              "customers": ["secret"]}).names
    assert names and not [n for n in names if re.search("returned|leak|secret", n)]
    with_leak = compute_features(db, Task(**EVENT_TASK), labels, windows=[7]).names
    assert "orders.leak" in with_leak and "orders.returned" not in with_leak


@pytest.mark.parametrize("exclude, message", [
    ({"orders": ["nope"]}, r"\['nope'\].*table 'orders'"),
    ({"nowhere": ["x"]}, "table 'nowhere'"),
])
def test_unknown_excluded_columns_are_named(exclude, message):
    db = make_feature_shop([(0, 30, "Paris")], [(0, 0, 0, 24, 1.0, 1, True)])
    with pytest.raises(BaselineError, match=message):
        compute_features(db, Task(**EVENT_TASK), order_labels(db, [True]),
                         exclude_columns=exclude)


@pytest.mark.parametrize("windows, message", [([0], "positive"), (["x"], "list of days")])
def test_bad_windows(windows, message):
    db = make_feature_shop([(0, 30, "Paris")], [(0, 0, 0, 24, 1.0, 1, True)])
    with pytest.raises(BaselineError, match=message):
        compute_features(db, Task(**EVENT_TASK), order_labels(db, [True]), windows=windows)


def test_flight_cancellation_queries_never_read_hidden_columns(flights_db):
    """Every query generated for the event-level config leaves the target and
    the configured exclusions out, in every group (own, parents, siblings)."""
    config = yaml.safe_load(open("configs/flight_cancellation.yaml"))
    task = Task(**config["task"])
    task.check(flights_db)
    hidden = excluded_columns(flights_db, task, config["data"]["exclude_columns"])
    assert hidden["flights"] == ["dep_time", "dep_delay", "arr_time", "arr_delay", "air_time"]
    visible = {t.name: visible_columns(t, hidden.get(t.name, [])) for t in flights_db}
    groups = GroupBuilder(flights_db, "flights", visible, [7, 30], True, 0).groups(2)
    assert any(g.name.startswith("siblings") for g in groups)
    sql = " ".join(g.sql for g in groups)
    names = [n for g in groups for n in g.features]
    for col in hidden["flights"]:
        assert f'"{col}"' not in sql
        pattern = rf"(^|\.|(sum|mean|min|max)_){col}(_[\d.]+d|_all|$)"
        assert not [n for n in names if re.search(pattern, n)], col
    assert '"sched_dep_time"' in sql  # the pattern would see a near-miss


def test_feature_table_keeps_the_label_rows(flights_db):
    task = Task(**yaml.safe_load(open("configs/flights_to_ord.yaml"))["task"])
    table = feature_table(flights_db, task, "val", windows=[30], hops=1)
    labels = task.table(flights_db, "val")
    pd.testing.assert_frame_equal(table[list(labels.columns)], labels)
    assert table["planes.model"].dtype == "category"
    assert table["flights.tailnum.count_30d"].max() > 0
    assert not [c for c in table.columns if "->" in c]  # one hop only


@pytest.mark.parametrize("min_rows", [1, 5, 40])
def test_categories_few_entity_rows_hold_read_as_missing(flights_db, min_rows):
    """`data.entity_category_min_rows` for LightGBM: a plane model that fewer than
    `min_rows` planes fly is missing, as the GNN sees it; counted by brute force."""
    task = Task(**yaml.safe_load(open("configs/flights_to_ord.yaml"))["task"])
    table = feature_table(flights_db, task, "val", windows=[30], hops=1,
                          category_min_rows=min_rows)
    planes = flights_db["planes"].df.set_index("tailnum")
    counts = planes["model"].value_counts()
    models = table["tailnum"].map(planes["model"])
    expected = [None if pd.isna(m) or counts[m] < min_rows else str(m) for m in models]
    got = [None if pd.isna(m) else str(m) for m in table["planes.model"]]
    assert got == expected
    assert sorted(table["planes.model"].cat.categories) == sorted(
        counts[counts >= min_rows].index.astype(str))
    if min_rows == 40:
        assert sum(m is None for m in got) > sum(pd.isna(m) for m in models)
