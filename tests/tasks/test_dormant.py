"""Seeds whose entity has no row of the target's table yet are counted against a
brute-force scan, and most of them get a hint naming the WHERE that leaves them out."""
from __future__ import annotations

import re

import numpy as np
import yaml
import pandas as pd
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rdl.db import Database, Table
from rdl.tasks import Task, TaskError
from rdl.tasks.dormant import DORMANT_HINT_SHARE, dormant_hint, dormant_share
from rdl.testing.files import write_parquet

CHURN = "PREDICT COUNT(orders.*, 0, 30, days) = 0 FOR EACH customers.customer_id"


def shop(customers: int, buyers: int, orders: int, seed: int) -> Database:
    """Static customers, of whom only the first ``buyers`` ever order, over 2021."""
    rng = np.random.default_rng(seed)
    people = pd.DataFrame({"customer_id": np.arange(customers),
                           "age": rng.integers(18, 80, customers).astype(float)})
    bought = pd.DataFrame({
        "order_id": np.arange(orders),
        "customer_id": rng.integers(0, buyers, orders),
        "ordered_at": pd.Timestamp("2021-01-01")
        + pd.to_timedelta(rng.integers(0, 364 * 24, orders), unit="h"),
    })
    return Database({
        "customers": Table("customers", people, "customer_id", {}, None, {"age": "numerical"}),
        "orders": Table("orders", bought, "order_id", {"customer_id": "customers"},
                        "ordered_at", {}),
    }, source="dormant-shop")


@settings(max_examples=15, deadline=None)
@given(customers=st.integers(5, 40), share=st.floats(0.05, 1.0), seed=st.integers(0, 99))
def test_the_dormant_share_is_the_brute_force_one(customers, share, seed):
    db = shop(customers, max(1, int(customers * share)), 200, seed)
    task = Task(query=CHURN, val_timestamp="2021-11-01", test_timestamp="2021-12-01")
    try:
        labels = task.table(db, "train")
    except TaskError as exc:  # five customers ordering every month: no churn to label
        assume("needs both classes" not in str(exc))
        raise
    orders = db["orders"].df
    dormant = [not ((orders["customer_id"] == row.customer_id)
                    & (orders["ordered_at"] <= row.timestamp)).any()
               for row in labels.itertuples()]
    measured, table = dormant_share(task, db, labels)
    assert table == "orders"
    assert measured == np.mean(dormant)
    hint = dormant_hint(task, db, labels)
    assert (hint is not None) == (measured >= DORMANT_HINT_SHARE)


def test_the_hint_names_a_where_that_leaves_the_dormant_seeds_out():
    """200 customers, 30 of whom ever order: most seeds are customers who never do."""
    db = shop(200, 30, 2000, seed=0)
    task = Task(query=CHURN, val_timestamp="2021-11-01", test_timestamp="2021-12-01")
    labels = task.table(db, "train")
    share, _ = dormant_share(task, db, labels)
    assert share > 0.85  # 170 customers never order, the others not from the start
    hint = dormant_hint(task, db, labels)
    assert hint.startswith(f"{share:.0%} of the training seeds have no orders row at or before "
                           "their time")
    where = re.search(r"add (WHERE .*) to the query", hint).group(1)
    assert where == "WHERE COUNT(orders.*, -30, 0, days) > 0"
    active = Task(query=f"{CHURN} {where}", val_timestamp="2021-11-01",
                  test_timestamp="2021-12-01")
    labels = active.table(db, "train")
    assert set(labels["customer_id"]) <= set(range(30))
    assert dormant_share(active, db, labels) is None  # a task with WHERE chose its seeds


def test_no_hint_for_recommendation_where_a_first_buyer_is_a_cold_start():
    """dellstore2: '84% of the training seeds have no orderlines row ... their labels are
    easy' on a recommendation task, whose seeds all have items to come."""
    db = shop(400, 400, 600, seed=0)
    orders = db["orders"].df.assign(product_id=np.arange(600) % 7)
    products = pd.DataFrame({"product_id": np.arange(7)})
    db = Database({
        "customers": db["customers"],
        "products": Table("products", products, "product_id", {}, None, {}),
        "orders": Table("orders", orders, "order_id",
                        {"customer_id": "customers", "product_id": "products"},
                        "ordered_at", {}),
    }, source="dormant-shop-items")
    task = Task(query="PREDICT LIST_DISTINCT(orders.product_id, 0, 30, days) RANK TOP 3 "
                      "FOR EACH customers.customer_id",
                val_timestamp="2021-11-01", test_timestamp="2021-12-01")
    labels = task.table(db, "train")
    share, _ = dormant_share(task, db, labels)
    assert share >= DORMANT_HINT_SHARE  # most of them buy for the first time
    assert dormant_hint(task, db, labels) is None


def test_labels_and_baseline_print_the_hint(tmp_path, capsys):
    from rdl.baseline.run import run_baseline
    from rdl.tasks import cli as labels_cli

    db = shop(200, 30, 2000, seed=0)
    source = write_parquet(tmp_path / "shop", {name: db[name].df for name in db.tables})
    config = {"data": {"source": str(source), "schema": {"tables": {
                  "customers": {"primary_key": "customer_id", "time_column": None},
                  "orders": {"primary_key": "order_id", "time_column": "ordered_at",
                             "foreign_keys": {"customer_id": "customers"}}}}},
              "task": {"query": CHURN, "val_timestamp": "2021-11-01",
                       "test_timestamp": "2021-12-01"}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    assert labels_cli.labels_main(["--config", str(path), "--split", "train",
                                   "--output", str(tmp_path / "train.parquet")]) == 0
    assert "add WHERE COUNT(orders.*, -30, 0, days) > 0" in capsys.readouterr().out
    notes = run_baseline(config, num_boost_round=5).notes
    assert any("add WHERE COUNT(orders.*, -30, 0, days) > 0" in note for note in notes)
