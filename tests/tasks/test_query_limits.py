"""Queries at the edges (huge windows, deep nesting, constant labels) are TaskErrors."""
from __future__ import annotations

import pytest

from rdl.tasks import QueryError, Task, TaskError, parse
from rdl.tasks.query.windows import MAX_WINDOW, check_window
from rdl.testing.shops import TEST, VAL

ENTITY = " FOR EACH customers.customer_id"


def task(query: str, **kwargs) -> Task:
    return Task(query=query, val_timestamp=VAL, test_timestamp=TEST, **kwargs)


@pytest.mark.parametrize("query", [
    "PREDICT COUNT(orders.*, 0, 99999999999, days)" + ENTITY,
    "PREDICT COUNT(orders.*, 0, 300000, months)" + ENTITY,
    "PREDICT COUNT(orders.*, 0, 10000000000000000000000000, hours)" + ENTITY,
    "PREDICT COUNT(orders.*, 0, 30, days)" + ENTITY
    + " WHERE COUNT(orders.*, -99999999999, 0, days) > 0",
])
def test_window_too_long(query):
    with pytest.raises(QueryError, match="too long: it may reach at most") as exc:
        task(query)
    assert "\n" not in exc.value.reason


@pytest.mark.parametrize("unit", sorted(MAX_WINDOW))
def test_longest_window_allowed(unit):
    longest = MAX_WINDOW[unit]
    query = parse(f"PREDICT COUNT(orders.*, 0, {longest}, {unit})" + ENTITY)
    check_window(query.target, "target", query)
    too_long = parse(f"PREDICT COUNT(orders.*, 0, {longest + 1}, {unit})" + ENTITY)
    with pytest.raises(QueryError, match="too long"):
        check_window(too_long.target, "target", too_long)


@pytest.mark.parametrize("timedelta", ["99999999999d", "300000mo", "36526d"])
def test_timedelta_too_long(timedelta):
    with pytest.raises(TaskError, match=f"timedelta='{timedelta}' is too long"):
        task("PREDICT COUNT(orders.*, 0, 30, days)" + ENTITY, timedelta=timedelta)


@pytest.mark.parametrize("where", [
    "(" * 2000 + "customers.age > 30" + ")" * 2000,
    "NOT " * 5000 + "customers.age > 30",
    "COUNT(orders.* WHERE " * 300 + "orders.amount > 1" + ", -1, 0, days)" * 300 + " > 0",
])
def test_nesting_too_deep(where):
    with pytest.raises(QueryError, match="nested too deeply") as exc:
        task("PREDICT COUNT(orders.*, 0, 30, days)" + ENTITY + " WHERE " + where)
    assert "\n" not in exc.value.reason


def test_deep_but_allowed_nesting_computes_labels(shop):
    plain = task("PREDICT COUNT(orders.*, 0, 30, days)" + ENTITY + " WHERE customers.age > 30")
    nested = task("PREDICT COUNT(orders.*, 0, 30, days)" + ENTITY + " WHERE "
                  + "(" * 24 + "NOT NOT " * 12 + "customers.age > 30" + ")" * 24)
    assert nested.table(shop, "train").equals(plain.table(shop, "train"))


def test_constant_regression_labels_are_refused_for_training(shop):
    t = task("PREDICT COUNT(orders.* WHERE orders.amount > 1000, 0, 30, days)" + ENTITY)
    assert t.task_type == "regression"
    with pytest.raises(TaskError, match="Every label of the train split is 0: a regression task "
                                        "needs labels that vary"):
        t.table(shop, "train")
    assert set(t.table(shop, "val")["label"]) == {0}  # evaluation may be constant
