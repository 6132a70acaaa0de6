"""Small hand-written shop databases whose rows tests check answers against.

:func:`make_shop` (tables, time columns in brackets)::

    customers [signup]  --<  orders [ordered_at]  >--  products (static)
        |  \\
        |   --<  referrals [created_at] (referrer, referee: two keys to customers)
        --<  addresses (static, a key to customers but no time)

Customer ``c1`` has planted orders on 2021-03-05, 03-20 and 04-10 (amounts
10, 20, 40); ``c8`` signs up on 2021-05-20, after the validation timestamp
:data:`VAL`. :func:`leaky_shop` adds columns that give labels away, for the
leakage guard. :func:`make_feature_shop` builds another shop from given rows,
for the baseline's features (see :mod:`rdl.testing.feature_oracle`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

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
# An event-level task of the shop, whose label leaky_shop gives away.
RETURNED = "PREDICT orders.returned FOR EACH orders.order_id"


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


def leaky_shop(static_customers: bool = False) -> Database:
    r""":func:`make_shop` with planted columns:

    * ``orders.rating``: NULL exactly when the order is returned (the label);
    * ``orders.refunded_at``: set 3 days after returned orders only;
    * ``orders.confirmed_at``: a minute before the order (honest);
    * ``customers.last_order_at``: each customer's last order (the churn
      label in disguise); ``customers.birthday``: honest.
    """
    db = make_shop()
    orders, customers = db["orders"], db["customers"]
    returned = orders.df["returned"]
    orders.df["rating"] = np.where(returned, np.nan, 4.0)
    orders.df["refunded_at"] = orders.df["ordered_at"].where(returned) + pd.Timedelta(days=3)
    orders.df["confirmed_at"] = orders.df["ordered_at"] - pd.Timedelta(minutes=1)
    orders.stypes.update(rating="numerical", refunded_at="timestamp", confirmed_at="timestamp")
    last = orders.df.groupby("customer_id")["ordered_at"].max()
    customers.df["last_order_at"] = customers.df["customer_id"].map(last)
    customers.df["birthday"] = pd.Timestamp("1990-06-01") - pd.to_timedelta(
        customers.df["age"] * 365, unit="D")
    customers.stypes.update(last_order_at="timestamp", birthday="timestamp")
    if static_customers:
        customers.time_column = None
    return db


BASE = pd.Timestamp("2021-01-01")
DAY = pd.Timedelta(days=1)


def make_feature_shop(customers: list[tuple], orders: list[tuple], reviews: list[tuple] = (),
                      stores: list[tuple] = ((0, 10.0), (15, 20.0))) -> Database:
    r"""A shop built from the given rows, for the baseline's features::

        stores [opened] --<  orders [at]  >-- products (static)
                              |    \
        customers [signup] --<      --< reviews [at]
             \
              --< addresses (static)

    Args:
        customers: ``(signup day, age, city)`` per customer ``k0, k1, ...``.
        orders: ``(customer index or None, product index or None, store index
            or None, hours after BASE, amount or None, quantity, returned)``.
        reviews: ``(order index, hours after BASE, stars)``.
        stores: ``(opening day, size)`` per store.
    """
    cust = pd.DataFrame({
        "cid": pd.array([f"k{i}" for i in range(len(customers))], dtype="str"),
        "signup": [BASE + d * DAY for d, *_ in customers],
        "age": [float(a) for _, a, _ in customers],
        "city": pd.array([c for *_, c in customers], dtype="str"),
        "secret": np.arange(len(customers), dtype=float),
    })
    order = pd.DataFrame({
        "oid": np.arange(len(orders), dtype=np.int64),
        "cid": pd.array([None if c is None else f"k{c}" for c, *_ in orders], dtype="str"),
        "pid": pd.array([p for _, p, *_ in orders], dtype="Int64"),
        "sid": pd.array([s for _, _, s, *_ in orders], dtype="Int64"),
        "at": [BASE + pd.Timedelta(hours=h) for *_, h, _, _, _ in orders],
        "amount": pd.array([a for *_, a, _, _ in orders], dtype="float64"),
        "qty": [float(n) for *_, n, _ in orders],
        "returned": [int(r) for *_, r in orders],
    })
    order["leak"] = order["returned"].astype(float)
    review = pd.DataFrame({
        "rid": np.arange(len(reviews), dtype=np.int64),
        "oid": pd.array([o for o, _, _ in reviews], dtype="Int64"),
        "at": [BASE + pd.Timedelta(hours=h) for _, h, _ in reviews],
        "stars": [float(s) for *_, s in reviews],
    })
    store = pd.DataFrame({"sid": np.arange(len(stores), dtype=np.int64),
                          "opened": [BASE + d * DAY for d, _ in stores],
                          "size": [s for _, s in stores]})
    products = pd.DataFrame({"pid": np.arange(3, dtype=np.int64), "price": [2.0, 5.5, 9.0],
                             "kind": pd.array(["a", "b", "a"], dtype="str")})
    addresses = pd.DataFrame({"aid": np.arange(3, dtype=np.int64),
                              "cid": pd.array(["k0", "k0", "k1"], dtype="str"),
                              "floor": [1.0, 3.0, 7.0]})
    for df, col in ((cust, "signup"), (order, "at"), (review, "at"), (store, "opened")):
        df[col] = df[col].astype("datetime64[ns]")
    return Database({
        "customers": Table("customers", cust, "cid", {}, "signup",
                           {"age": "numerical", "city": "categorical", "secret": "numerical",
                            "signup": "timestamp"}),
        "orders": Table("orders", order, "oid", {"cid": "customers", "pid": "products",
                                                  "sid": "stores"}, "at",
                        {"amount": "numerical", "qty": "numerical", "returned": "categorical",
                         "leak": "numerical"}),
        "reviews": Table("reviews", review, "rid", {"oid": "orders"}, "at",
                         {"stars": "numerical"}),
        "stores": Table("stores", store, "sid", {}, "opened", {"size": "numerical"}),
        "products": Table("products", products, "pid", {}, None,
                          {"price": "numerical", "kind": "categorical"}),
        "addresses": Table("addresses", addresses, "aid", {"cid": "customers"}, None,
                           {"floor": "numerical"}),
    })
