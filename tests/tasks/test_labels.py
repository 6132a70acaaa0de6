"""Label tables of the shop database against hand values and a brute-force oracle."""
from __future__ import annotations

import pandas as pd
import pytest

from rdl.db import Database, Table
from rdl.tasks import Task, TaskError
from rdl.testing.brute_force import brute_force_labels
from rdl.testing.shops import TEST, VAL

pytestmark = pytest.mark.filterwarnings("ignore:The test label window ends")

C = "FOR EACH customers.customer_id"
TIMES = ["2021-01-01", "2021-01-31", "2021-03-01", "2021-04-01", "2021-05-01"]


def task(query: str, **kwargs) -> Task:
    return Task(query=query, val_timestamp=VAL, test_timestamp=TEST, **kwargs)


def labels_by_id(df: pd.DataFrame, key: str = "customer_id") -> dict:
    return dict(zip(df[key], df["label"]))


@pytest.mark.parametrize("func, column", [
    ("COUNT", None), ("COUNT", "amount"), ("SUM", "amount"), ("AVG", "amount"),
    ("MIN", "amount"), ("MAX", "amount"), ("COUNT_DISTINCT", "product_id"), ("EXISTS", None),
    ("LIST_DISTINCT", "product_id"),
])
@pytest.mark.parametrize("start, end, unit", [(0, 30, "days"), (0, 36, "hours"), (0, 1, "months"),
                                              (3, 20, "days")])
def test_aggregates_match_brute_force(shop, func, column, start, end, unit):
    rank = " RANK TOP 3" if func == "LIST_DISTINCT" else ""
    t = task(f"PREDICT {func}(orders.{column or '*'}, {start}, {end}, {unit}){rank} "
             "FOR EACH customers.customer_id")
    got = t.make_table(shop, TIMES)
    offset = lambda n: pd.DateOffset(**{unit: n})  # noqa: E731
    want = brute_force_labels(shop["orders"].df, shop["customers"].df, entity_id="customer_id",
                              fk="customer_id", time="ordered_at", func=func, column=column,
                              start=offset(start), end=offset(end), timestamps=TIMES,
                              entity_time="signup")
    if func in ("AVG", "MIN", "MAX"):
        want = want[want["value"].notna()]
    if func == "LIST_DISTINCT":
        want = want[want["value"].map(len) > 0]
    want = want.sort_values(["timestamp", "customer_id"]).reset_index(drop=True)
    assert list(got.columns) == ["customer_id", "timestamp", "label"]
    assert got["customer_id"].tolist() == want["customer_id"].tolist()
    assert (got["timestamp"] == want["timestamp"]).all()
    if func == "LIST_DISTINCT":
        assert got["label"].tolist() == want["value"].tolist()
    else:
        pd.testing.assert_series_equal(got["label"].astype(float), want["value"].astype(float),
                                       check_names=False)
    dropped = got.attrs["dropped"]
    assert dropped["null_label"] + dropped["empty_list"] == (
        len(brute_force_labels(shop["orders"].df, shop["customers"].df,
                               entity_id="customer_id", fk="customer_id", time="ordered_at",
                               func="COUNT", column=None, start=offset(0), end=offset(0),
                               timestamps=TIMES, entity_time="signup"))
        - len(want))


def test_planted_sums(shop):
    t = task("PREDICT SUM(orders.amount, 0, 30, days) FOR EACH customers.customer_id")
    df = t.make_table(shop, ["2021-03-01", "2021-04-01"])
    c1 = df[df["customer_id"] == "c1"].set_index("timestamp")["label"]
    assert c1[pd.Timestamp("2021-03-01")] == 30.0  # 03-05 (10) + 03-20 (20)
    assert c1[pd.Timestamp("2021-04-01")] == 40.0  # 04-10
    assert t.task_type == "regression" and df["label"].dtype == "float64"


def test_churn_with_past_window_filter(shop):
    t = task("PREDICT COUNT(orders.*, 0, 30, days) = 0 FOR EACH customers.customer_id "
             "WHERE COUNT(orders.*, -90, 0, days) > 0")
    val = t.table(shop, "val")
    # c7's last order before val is 01-02 (not in the past 90 days); c8 signs up after val.
    assert labels_by_id(val) == {"c1": 0, "c2": 0, "c3": 1, "c4": 0, "c5": 0, "c6": 1}
    assert val["label"].dtype == "int64" and (val["timestamp"] == pd.Timestamp(VAL)).all()
    assert t.task_type == "binary"
    assert t.metrics == ["auroc", "average_precision", "accuracy", "f1"]


def test_window_bounds_are_open_at_t_and_closed_at_end(shop):
    # c5 orders at 05-01 00:00 (exactly t) and 05-01 00:01.
    t = task("PREDICT COUNT(orders.*, 0, 1, days) FOR EACH customers.customer_id "
             "WHERE COUNT(orders.*, -1, 0, days) > 0")
    df = t.make_table(shop, ["2021-05-01"])
    assert labels_by_id(df) == {"c3": 0, "c5": 1}  # c3 ordered 04-30 23:59; the 00:00 order is past


def test_entities_exist_only_after_their_time(shop):
    t = task("PREDICT EXISTS(orders.*, 0, 30, days) FOR EACH customers.customer_id")
    assert "c8" not in set(t.table(shop, "val")["customer_id"])
    assert labels_by_id(t.table(shop, "test"))["c8"] == 1  # signed up 05-20, orders 06-05


def test_static_entity_table(shop):
    t = task("PREDICT COUNT(orders.*, 0, 31, days) FOR EACH products.product_id")
    df = t.table(shop, "val")
    assert labels_by_id(df, "product_id") == {101: 1, 102: 1, 103: 1, 104: 1, 105: 3}


def test_via_picks_the_foreign_key(shop):
    made = task(f"PREDICT COUNT(referrals.* VIA referrer, 0, 30, days) {C}")
    got = task(f"PREDICT COUNT(referrals.* VIA referee, 0, 30, days) {C}")
    ts = ["2021-01-01"]
    assert labels_by_id(made.make_table(shop, ts))["c1"] == 2
    assert labels_by_id(got.make_table(shop, ts))["c1"] == 0


def test_where_on_static_columns(shop):
    t = task("PREDICT SUM(orders.amount, 0, 30, days) FOR EACH customers.customer_id "
             "WHERE customers.city = 'O''Hare' OR (customers.age > 40 AND customers.vip) "
             "OR customers.city IN ('Lyon') AND NOT customers.age >= 30")
    df = t.make_table(shop, ["2021-06-01"])
    assert sorted(df["customer_id"]) == ["c2", "c4", "c8"]


def test_where_on_time_column_with_date_literal(shop):
    t = task("PREDICT COUNT(orders.*, 0, 30, days) FOR EACH customers.customer_id "
             "WHERE customers.signup < '2021-01-10'")
    df = t.make_table(shop, ["2021-03-01"])
    assert sorted(df["customer_id"]) == ["c1", "c2", "c4", "c7"]


def test_filter_inside_aggregate(shop):
    t = task("PREDICT COUNT(orders.* WHERE orders.channel = 'web' AND orders.amount > 10, "
             "0, 30, days) FOR EACH customers.customer_id")
    df = t.make_table(shop, ["2021-03-01"])
    assert labels_by_id(df) == {"c1": 0, "c2": 0, "c3": 0, "c4": 0, "c5": 0, "c6": 0, "c7": 0}
    df = t.make_table(shop, ["2021-01-01"])  # only c1's 15.0 web order of 01-05 qualifies
    assert labels_by_id(df) == {"c1": 1, "c2": 0, "c7": 0}


def test_empty_windows_give_zero_false_or_dropped_null(shop):
    ts = ["2021-05-03"]
    count = task("PREDICT COUNT(orders.*, 0, 1, hours) FOR EACH customers.customer_id")
    assert set(count.make_table(shop, ts)["label"]) == {0.0}
    avg = task("PREDICT AVG(orders.amount, 0, 1, hours) FOR EACH customers.customer_id")
    df = avg.make_table(shop, ts)
    assert df.empty and df.attrs["dropped"]["null_label"] == 7


def test_recommendation(shop):
    t = task("PREDICT LIST_DISTINCT(orders.product_id, 0, 31, days) RANK TOP 2 "
             "FOR EACH customers.customer_id")
    df = t.table(shop, "val")
    assert labels_by_id(df) == {"c1": [104], "c2": [102, 105], "c4": [105], "c5": [103]}
    assert df.attrs["dropped"]["empty_list"] == 3  # c3, c6 and c7 (its order has no product)
    assert (t.task_type, t.top_k, t.item_table) == ("recommendation", 2, "products")
    assert t.metrics == ["map@2", "precision@2", "recall@2", "ndcg@2"]


def test_event_level_binary_splits(shop):
    t = task("PREDICT orders.returned FOR EACH orders.order_id")
    assert t.task_type is None and t.event_level
    assert t.hidden_columns == {"orders": ["returned"]}
    orders = shop["orders"].df
    for split, keep in [
        ("train", orders["ordered_at"] <= VAL),
        ("val", (orders["ordered_at"] > VAL) & (orders["ordered_at"] <= TEST)),
        ("test", orders["ordered_at"] > TEST),
    ]:
        df = t.table(shop, split)
        want = orders[keep].sort_values(["ordered_at", "order_id"])
        assert df["order_id"].tolist() == want["order_id"].tolist()
        assert df["timestamp"].tolist() == want["ordered_at"].tolist()
        assert df["label"].tolist() == want["returned"].astype(int).tolist()
    assert t.task_type == "binary"


def test_event_level_regression_drops_null_labels(shop):
    t = task("PREDICT orders.amount FOR EACH orders.order_id WHERE orders.channel != 'store'")
    df = t.table(shop, "train")
    assert t.task_type == "regression"
    assert df.attrs["dropped"]["null_label"] == 0  # the NULL amount is a store order
    t = task("PREDICT orders.amount FOR EACH orders.order_id")
    assert t.table(shop, "train").attrs["dropped"]["null_label"] == 1


def test_event_level_multiclass(shop):
    t = task("PREDICT orders.channel FOR EACH orders.order_id")
    df = t.table(shop, "val")
    assert t.task_type == "multiclass" and t.metrics == ["accuracy", "f1"]
    assert set(df["label"]) == {"web", "store", "o'neil"}
    assert t.classes(shop) == ["o'neil", "store", "web"] and t.num_classes(shop) == 3


def test_months_follow_the_calendar(shop):
    t = task("PREDICT SUM(orders.amount, 0, 1, months) FOR EACH customers.customer_id")
    df = t.make_table(shop, ["2021-01-31"])
    # (01-31, 02-28]: c2 02-14 (NULL amount), c3 02-01 + 02-28; c5 and c6 sign up later.
    assert labels_by_id(df) == {"c1": 0.0, "c2": 0.0, "c3": 75.0, "c4": 0.0, "c7": 0.0}


def test_a_year_window_holds_a_season_stamped_at_its_end_where_365_days_miss_a_leap_year():
    players = pd.DataFrame({"player_id": [1, 2]})
    seasons = pd.DataFrame({"season_id": [1, 2, 3], "player_id": [1, 1, 2],
                            "at": pd.to_datetime(["2015-12-31 23:59:59", "2016-12-31 23:59:59",
                                                  "2015-12-31 23:59:59"])})
    db = Database({"players": Table("players", players, "player_id"),
                   "seasons": Table("seasons", seasons, "season_id", {"player_id": "players"},
                                    "at")})

    def plays_on(amount: int, unit: str) -> dict:
        t = Task(query=f"PREDICT COUNT(seasons.*, 0, {amount}, {unit}) > 0 FOR EACH "
                       f"players.player_id WHERE COUNT(seasons.*, -{amount}, 0, {unit}) > 0",
                 val_timestamp="2017-01-01", test_timestamp="2018-01-01")
        return labels_by_id(t.make_table(db, ["2016-01-01"]), "player_id")

    assert plays_on(1, "years") == {1: True, 2: False}
    assert plays_on(365, "days") == {1: False, 2: False}  # 2016-12-31 is day 366


def test_sql_escape_hatch(shop):
    t = Task(sql="SELECT customer_id, SUM(amount) FROM orders WHERE ordered_at > {start} "
                 "AND ordered_at <= {end} GROUP BY customer_id",
             entity_table="customers", task_type="regression", timedelta="30d",
             val_timestamp=VAL, test_timestamp=TEST)
    q = task("PREDICT SUM(orders.amount, 0, 30, days) FOR EACH customers.customer_id")
    for split in ("train", "val"):
        a, b = t.table(shop, split), q.table(shop, split)
        b = a[["customer_id", "timestamp"]].merge(b, how="left")
        pd.testing.assert_frame_equal(a, b)
        assert len(a) < len(q.table(shop, split))
    assert t.entity_column == "customer_id" and t.metrics == ["mae", "rmse", "r2"]


def test_sql_ids_outside_the_entity_table_are_dropped(shop):
    t = Task(sql="SELECT customer_id, COUNT(*) > 0 FROM orders WHERE ordered_at > {start} "
                 "AND ordered_at <= {end} GROUP BY customer_id",
             entity_table="customers", task_type="binary", timedelta="30d",
             val_timestamp=VAL, test_timestamp=TEST)
    df = t.make_table(shop, ["2021-05-01"])
    # The order without a customer, and c8's, who signs up on 05-20, after t.
    assert df.attrs["dropped"]["unknown_entity"] == 2
    assert sorted(df["customer_id"]) == ["c1", "c2", "c4", "c5", "c7"]


def test_event_level_where_reads_windows_before_each_row(shop):
    # Customers referred in the 30 days before their own sign-up: c3, c5 and c6
    # before val (c8 signs up later; c1 is referred after signing up).
    t = task("PREDICT customers.age FOR EACH customers.customer_id "
             "WHERE COUNT(referrals.* VIA referee, -30, 0, days) > 0")
    df = t.table(shop, "train")
    assert labels_by_id(df) == {"c3": 41.0, "c5": 52.0, "c6": 38.0}
    assert df["timestamp"].tolist() == list(pd.to_datetime(["2021-01-15", "2021-02-01",
                                                            "2021-02-20"]))
    assert t.hidden_columns == {"customers": ["age"]}


def test_primary_key_named_like_an_output_column(shop):
    customers = shop.tables["customers"]
    customers.df = customers.df.rename(columns={"customer_id": "label"})
    customers.primary_key = "label"
    t = task("PREDICT COUNT(orders.*, 0, 30, days) FOR EACH customers.label")
    with pytest.raises(TaskError, match="The entity's primary key is named 'label'"):
        t.make_table(shop, [VAL])


def test_task_repr():
    t = task("PREDICT COUNT(orders.*, 0, 30, days) FOR EACH customers.customer_id")
    assert repr(t) == ("Task(regression, query='PREDICT COUNT(orders.*, 0, 30, days) FOR EACH "
                       "customers.customer_id', val=2021-05-01 00:00:00, test=2021-06-01 00:00:00)")
    assert repr(task("PREDICT orders.channel FOR EACH orders.order_id")).startswith(
        "Task(type unknown until check(db), query=")


@pytest.mark.parametrize("target, floor", [
    ("COUNT(orders.*, 0, 30, days)", 0.0), ("COUNT_DISTINCT(orders.product_id, 0, 30, days)", 0.0),
    ("SUM(orders.amount, 0, 30, days)", 0.0), ("MAX(orders.amount, 0, 30, days)", 0.0),
    ("SUM(orders.amount, 0, 30, days)", None),  # once an amount is negative (a refund)
    ("COUNT(orders.*, 0, 30, days) > 0", None),  # binary: nothing to raise
])
def test_value_floor_is_zero_where_no_label_can_be_negative(shop, target, floor):
    """A count, or a total of amounts none of which is negative, is never below 0: predictions
    are raised to 0 (classicmodels' payments: the GNN predicted -5,132)."""
    if floor is None and "SUM" in target:
        shop["orders"].df.loc[0, "amount"] = -5.0
    t = task(f"PREDICT {target} {C}")
    t.check(shop)
    assert t.value_floor(shop) == floor
    if floor is not None:
        assert t.table(shop, "train")["label"].min() >= floor
    shop["orders"].df.loc[0, "amount"] = -5.0  # an event's own column: negative, no floor
    event = task("PREDICT orders.amount FOR EACH orders.order_id")
    event.check(shop)
    assert event.value_floor(shop) is None
    assert Task(sql="SELECT customer_id, SUM(amount) AS label FROM orders WHERE ordered_at > "
                    "{start} AND ordered_at <= {end} GROUP BY 1", entity_table="customers",
                task_type="regression",
                timedelta="30 days", val_timestamp=VAL,
                test_timestamp=TEST).value_floor(shop) is None
