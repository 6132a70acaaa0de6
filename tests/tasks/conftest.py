"""A small shop database with planted values, and a brute-force label oracle.

Tables (time columns in brackets)::

    customers [signup]  --<  orders [ordered_at]  >--  products (static)
        |  \\
        |   --<  referrals [created_at] (referrer, referee: two keys to customers)
        --<  addresses (static, a key to customers but no time)

Customer ``c1`` has planted orders on 2021-03-05, 03-20 and 04-10 (amounts
10, 20, 40); ``c8`` signs up on 2021-05-20, after the validation timestamp.
"""
from __future__ import annotations

import pandas as pd
import pytest

from rdl.db.database import Database
from rdl.db.table import Table

ORDERS = [
    # customer, product, time, amount, channel, returned
    ("c1", 101, "2021-01-05 10:00", 15.0, "web", False),
    ("c1", 102, "2021-03-05 09:00", 10.0, "web", False),
    ("c1", 103, "2021-03-20 12:00", 20.0, "store", True),
    ("c1", 101, "2021-04-10 08:00", 40.0, "web", False),
    ("c1", 104, "2021-05-15 08:00", 5.0, "web", False),
    ("c1", 101, "2021-06-10 18:00", 7.0, "store", False),
    ("c2", 101, "2021-01-20 11:00", 30.0, "store", False),
    ("c2", 101, "2021-02-14 11:00", None, "store", True),
    ("c2", 105, "2021-05-02 00:00", 12.5, "web", False),
    ("c2", 102, "2021-05-31 23:00", 9.0, "o'neil", False),
    ("c3", 103, "2021-02-01 00:00", 50.0, "web", True),
    ("c3", 103, "2021-02-28 00:00", 25.0, "web", False),
    ("c3", 104, "2021-04-01 00:00", 60.0, "store", False),
    ("c3", 105, "2021-04-30 23:59", 8.0, "web", False),
    ("c3", 101, "2021-06-02 00:00", 11.0, "web", True),
    ("c4", 102, "2021-01-10 00:00", 3.0, "web", False),
    ("c4", 102, "2021-01-11 00:00", 4.0, "web", False),
    ("c4", 104, "2021-03-31 00:00", 100.0, "store", False),
    ("c4", 105, "2021-05-10 00:00", 6.0, "store", True),
    ("c4", 101, "2021-06-15 00:00", 2.0, "web", False),
    ("c5", 101, "2021-02-10 00:00", 22.0, "web", False),
    ("c5", 103, "2021-05-01 00:00", 33.0, "web", False),
    ("c5", 103, "2021-05-01 00:01", 34.0, "web", False),
    ("c6", 105, "2021-03-01 00:00", 44.0, "store", True),
    ("c6", 104, "2021-04-20 00:00", 55.0, "store", False),
    ("c6", 102, "2021-06-20 00:00", 66.0, "web", False),
    ("c7", 101, "2021-01-02 00:00", 1.0, "web", False),
    ("c7", None, "2021-05-05 00:00", 2.0, "web", False),
    ("c8", 105, "2021-05-25 00:00", 70.0, "web", False),
    ("c8", 104, "2021-06-05 00:00", 80.0, "store", True),
    (None, 101, "2021-05-07 00:00", 99.0, "web", False),
]

CUSTOMERS = [
    # id, signup, age, city, vip
    ("c1", "2021-01-01 00:00", 34, "Paris", True),
    ("c2", "2021-01-01 00:00", 25, "Lyon", False),
    ("c3", "2021-01-15 00:00", 41, "Paris", False),
    ("c4", "2021-01-03 00:00", 29, "O'Hare", True),
    ("c5", "2021-02-01 00:00", 52, "Nice", False),
    ("c6", "2021-02-20 00:00", 38, "Lyon", False),
    ("c7", "2021-01-01 00:00", 19, "Paris", False),
    ("c8", "2021-05-20 00:00", 45, "Nice", True),
]

REFERRALS = [
    ("c1", "c3", "2021-01-14 00:00"),
    ("c1", "c5", "2021-01-30 00:00"),
    ("c2", "c6", "2021-02-19 00:00"),
    ("c1", "c8", "2021-05-19 00:00"),
    ("c4", "c1", "2021-04-15 00:00"),
]

VAL = "2021-05-01"
TEST = "2021-06-01"


def make_shop() -> Database:
    """Builds the shop database described in the module docstring."""
    orders = pd.DataFrame(ORDERS, columns=["customer_id", "product_id", "ordered_at", "amount",
                                           "channel", "returned"])
    orders.insert(0, "order_id", range(1, len(orders) + 1))
    orders["ordered_at"] = pd.to_datetime(orders["ordered_at"])
    orders["product_id"] = orders["product_id"].astype("Int64")
    customers = pd.DataFrame(CUSTOMERS, columns=["customer_id", "signup", "age", "city", "vip"])
    customers["signup"] = pd.to_datetime(customers["signup"])
    products = pd.DataFrame({
        "product_id": [101, 102, 103, 104, 105],
        "category": ["toys", "books", "books", "garden", "toys"],
        "price": [9.5, 12.0, 7.25, 30.0, 4.0],
    })
    referrals = pd.DataFrame(REFERRALS, columns=["referrer", "referee", "created_at"])
    referrals.insert(0, "referral_id", range(1, len(referrals) + 1))
    referrals["created_at"] = pd.to_datetime(referrals["created_at"])
    addresses = pd.DataFrame({"address_id": [1, 2, 3], "customer_id": ["c1", "c2", "c3"],
                              "zip": ["75001", "69001", "75002"]})
    tables = {
        "customers": Table("customers", customers, "customer_id", {}, "signup",
                           {"age": "numerical", "city": "categorical", "vip": "categorical"}),
        "orders": Table("orders", orders, "order_id",
                        {"customer_id": "customers", "product_id": "products"}, "ordered_at",
                        {"amount": "numerical", "channel": "categorical",
                         "returned": "categorical"}),
        "products": Table("products", products, "product_id", {}, None,
                          {"category": "categorical", "price": "numerical"}),
        "referrals": Table("referrals", referrals, "referral_id",
                           {"referrer": "customers", "referee": "customers"}, "created_at", {}),
        "addresses": Table("addresses", addresses, "address_id", {"customer_id": "customers"},
                           None, {"zip": "categorical"}),
    }
    return Database(tables, source="fake-shop")


@pytest.fixture
def shop() -> Database:
    return make_shop()


def snapshot(db: Database) -> dict[str, pd.DataFrame]:
    """Deep copies of every table, to assert later that nothing changed."""
    return {name: t.df.copy(deep=True) for name, t in db.tables.items()}


def assert_unchanged(db: Database, before: dict[str, pd.DataFrame]) -> None:
    assert sorted(db.tables) == sorted(before)
    for name, df in before.items():
        pd.testing.assert_frame_equal(db.tables[name].df, df)


def brute_force(child: pd.DataFrame, entities: pd.DataFrame, *, entity_id: str, fk: str,
                time: str, func: str, column: str | None, start: pd.DateOffset,
                end: pd.DateOffset, timestamps, entity_time: str | None = None) -> pd.DataFrame:
    """Labels computed the slow, obvious way: one Python loop per (entity, t).

    Returns ``[entity_id, "timestamp", "value"]`` with NaN for empty AVG/MIN/MAX.
    """
    rows = []
    for t in pd.to_datetime(list(timestamps)):
        alive = entities if entity_time is None else entities[entities[entity_time] <= t]
        for eid in alive[entity_id].dropna():
            sel = child[(child[fk] == eid) & (child[time] > t + start) & (child[time] <= t + end)]
            vals = sel[column].dropna() if column is not None else sel
            if func == "COUNT":
                v = len(vals)
            elif func == "EXISTS":
                v = len(vals) > 0
            elif func == "SUM":
                v = float(vals.sum()) if len(vals) else 0.0
            elif func == "COUNT_DISTINCT":
                v = vals.nunique()
            elif func in ("AVG", "MIN", "MAX"):
                agg = {"AVG": "mean", "MIN": "min", "MAX": "max"}[func]
                v = float(getattr(vals, agg)()) if len(vals) else float("nan")
            else:  # LIST_DISTINCT
                v = sorted(vals.unique().tolist())
            rows.append((eid, t, v))
    return pd.DataFrame(rows, columns=[entity_id, "timestamp", "value"])
