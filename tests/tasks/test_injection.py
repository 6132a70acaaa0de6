"""Neither a query nor the sql escape hatch can run arbitrary SQL or change the data."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from rdl.db.database import Database
from rdl.tasks import QueryError, Task, TaskError, label_sql, parse, resolve_query
from rdl.testing.shops import TEST, VAL

C = "FOR EACH customers.customer_id"
COUNT = "PREDICT COUNT(orders.*, 0, 30, days)"


def snapshot(db: Database) -> dict[str, pd.DataFrame]:
    """Deep copies of every table, to assert later that nothing changed."""
    return {name: t.df.copy(deep=True) for name, t in db.tables.items()}


def assert_unchanged(db: Database, before: dict[str, pd.DataFrame]) -> None:
    assert sorted(db.tables) == sorted(before)
    for name, df in before.items():
        pd.testing.assert_frame_equal(db.tables[name].df, df)


@pytest.mark.parametrize("query, message", [
    (f"{COUNT} FOR EACH customers.customer_id; DROP TABLE orders",
     "Unexpected character ';'; a query is one PREDICT statement, not SQL"),
    (f"{COUNT} {C} -- WHERE customers.age > 3", "Comments ('--') are not part of the query"),
    (f"{COUNT} {C} WHERE customers.city = 'x' OR 1=1 --'", "Comments ('--')"),
    (f'{COUNT} FOR EACH "customers; DROP TABLE orders; --".customer_id',
     "Unknown table 'customers; DROP TABLE orders; --'; the tables are"),
    (f'{COUNT} {C} WHERE customers."age) OR (1=1" > 3',
     "Table 'customers' has no column 'age) OR (1=1'; its columns are"),
    (f"{COUNT} {C} WHERE customers.city = 'a' UNION SELECT 1",
     "Expected WHERE or the end of the query, got 'UNION'"),
    (f"{COUNT} {C} WHERE customers.city = 'a'; SELECT 1", "Unexpected character ';'"),
    (f"PREDICT COUNT(orders.*, 0, 30, days); DELETE FROM orders {C}", "Unexpected character ';'"),
    (f"{COUNT} {C} WHERE customers.age > (SELECT 1)", "Expected a column"),
    (f"{COUNT} {C} WHERE customers.age > 3 /* x */", "Unexpected character '/'"),
])
def test_query_injection_is_a_clear_error(shop, query, message):
    before = snapshot(shop)
    with pytest.raises(QueryError, match=re.escape(message)):
        Task(query=query, val_timestamp=VAL, test_timestamp=TEST).table(shop, "val")
    assert_unchanged(shop, before)


@pytest.mark.parametrize("evil", [
    "x'; DROP TABLE orders; --",
    "' OR '1'='1",
    "Paris' OR 'a'='a",
    'Paris" OR "a"="a',
    "\\'; DELETE FROM customers; --",
])
def test_string_literals_are_values_never_sql(shop, evil):
    before = snapshot(shop)
    literal = "'" + evil.replace("'", "''") + "'"
    query = f"{COUNT} {C} WHERE customers.city = {literal} OR customers.city = 'Nice'"
    sql, params = label_sql(resolve_query(parse(query), shop))
    assert evil not in sql and evil in params.values()
    t = Task(query=query, val_timestamp=VAL, test_timestamp=TEST)
    assert t.make_table(shop, [VAL])["customer_id"].tolist() == ["c5"]
    assert_unchanged(shop, before)


def test_quote_in_a_matching_string_literal(shop):
    t = Task(query=f"{COUNT} {C} WHERE customers.city = 'O''Hare'", val_timestamp=VAL,
             test_timestamp=TEST)
    assert t.make_table(shop, [VAL])["customer_id"].tolist() == ["c4"]


def test_odd_identifiers_are_quoted(shop):
    weird = 'we"ird; DROP TABLE orders; --'
    shop.tables["customers"].df[weird] = range(len(shop.tables["customers"].df))
    before = snapshot(shop)
    t = Task(query=f'{COUNT} {C} WHERE customers."we""ird; DROP TABLE orders; --" >= 6',
             val_timestamp=VAL, test_timestamp=TEST)
    assert t.make_table(shop, ["2021-06-01"])["customer_id"].tolist() == ["c7", "c8"]
    assert_unchanged(shop, before)


def sql_task(sql: str) -> Task:
    return Task(sql=sql, entity_table="customers", task_type="regression", timedelta="30d",
                val_timestamp=VAL, test_timestamp=TEST)


WINDOW = "WHERE ordered_at > {start} AND ordered_at <= {end}"


@pytest.mark.parametrize("sql, message", [
    (f"SELECT customer_id, COUNT(*) FROM orders {WINDOW} GROUP BY 1; DROP TABLE orders",
     "sql holds 2 statements; only one SELECT statement is accepted"),
    (f"DELETE FROM orders {WINDOW}", "sql is a DELETE statement; only SELECT statements"),
    (f"UPDATE orders SET amount = 0 {WINDOW}", "sql is a UPDATE statement"),
    (f"INSERT INTO orders SELECT * FROM orders {WINDOW}", "sql is a INSERT statement"),
    (f"CREATE TABLE x AS SELECT * FROM orders {WINDOW}", "sql is a CREATE statement"),
    (f"COPY (SELECT * FROM orders {WINDOW}) TO 'x.csv'", "sql is a COPY statement"),
    ("ATTACH 'x.db' AS x -- {start} {end}", "sql is a ATTACH statement"),
    ("SET threads = 1 -- {start} {end}", "sql is a SET statement"),
    ("SELEC customer_id FROM orders -- {start} {end}", "sql does not parse"),
    ("SELECT customer_id, COUNT(*) FROM orders GROUP BY 1",
     "sql does not use {start} and {end}; label rows must be limited to the window"),
    (f"SELECT customer_id, 1 FROM orders {WINDOW}; --", None),
])
def test_sql_escape_hatch_accepts_only_one_select(shop, sql, message):
    before = snapshot(shop)
    if message is None:  # a trailing comment after ';' is harmless and accepted
        assert sql_task(sql).make_table(shop, [VAL]).shape[1] == 3
    else:
        with pytest.raises(TaskError, match=re.escape(message)):
            sql_task(sql).table(shop, "val")
    assert_unchanged(shop, before)


@pytest.mark.parametrize("sql, message", [
    ("SELECT * FROM read_csv('/etc/passwd') WHERE {start} < {end}",
     "file system operations are disabled"),
    ("SELECT * FROM query('DROP TABLE orders') WHERE {start} < {end}", "Expected a single SELECT"),
    ("SELECT customer_id FROM orders WHERE ordered_at > {start} AND ordered_at <= {end}",
     "sql returned 1 columns ['customer_id']; it must return exactly two"),
    ("SELECT customer_id, 1 FROM orders WHERE ordered_at > {start} AND ordered_at <= {end}",
     "sql returned entity 'c1' twice for 2021-05-14 00:00:00; GROUP BY the entity id"),
])
def test_sql_that_runs_but_cannot_do_harm(shop, sql, message):
    before = snapshot(shop)
    with pytest.raises(TaskError, match=re.escape(message)):
        sql_task(sql).make_table(shop, ["2021-05-14"])
    assert_unchanged(shop, before)


def test_sql_cannot_see_rows_after_the_window(shop):
    t = sql_task("SELECT c.customer_id, (SELECT MAX(ordered_at) FROM orders) FROM customers c "
                 "WHERE {start} < {end}")
    t.task_type = "multiclass"
    df = t.make_table(shop, [pd.Timestamp("2021-03-01")])
    assert (df["label"] <= pd.Timestamp("2021-03-31")).all()


def test_sql_parameters_are_bound(shop):
    before = snapshot(shop)
    t = sql_task("SELECT customer_id, COUNT(*) FROM orders WHERE ordered_at > {start} "
                 "AND ordered_at <= {end} AND channel = 'o''neil' GROUP BY 1")
    assert t.make_table(shop, [VAL])["customer_id"].tolist() == []
    assert t.make_table(shop, ["2021-05-15"])["customer_id"].tolist() == ["c2"]
    assert_unchanged(shop, before)


@pytest.mark.parametrize("sql", ["", "   ", None])
def test_empty_sql(sql):
    with pytest.raises(TaskError, match="Give exactly one of query=|sql is empty"):
        sql_task(sql)
