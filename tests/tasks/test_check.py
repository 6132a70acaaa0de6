"""Queries that parse but do not fit the schema, leak, or mistype their values."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from rdl.db import Database, Table, connect
from rdl.tasks import QueryError, Task, TaskError, parse, resolve_query
from rdl.testing.shops import TEST, VAL, make_shop

C = "FOR EACH customers.customer_id"


@pytest.mark.parametrize("query, message, caret_at", [
    (f"PREDICT COUNT(ordrs.*, 0, 30, days) {C}",
     "Unknown table 'ordrs'; the tables are ['addresses', 'customers', 'orders', 'products', "
     "'referrals']", "COUNT"),
    (f"PREDICT SUM(orders.amt, 0, 30, days) {C}",
     "Table 'orders' has no column 'amt'; its columns are ['order_id', 'customer_id', "
     "'product_id', 'ordered_at', 'amount', 'channel', 'returned']", "SUM"),
    ("PREDICT COUNT(orders.*, 0, 30, days) FOR EACH customers.age",
     "FOR EACH needs the primary key of 'customers': write FOR EACH customers.customer_id",
     "customers"),
    ("PREDICT COUNT(orders.*, 0, 30, days) FOR EACH shops.id", "Unknown table 'shops'", "shops"),
    (f"PREDICT COUNT(addresses.*, 0, 30, days) {C}",
     "COUNT over 'addresses' needs a time column, but 'addresses' is static; timed tables "
     "linked to 'customers' are ['orders', 'referrals']", "COUNT"),
        (f"PREDICT COUNT(referrals.*, 0, 30, days) {C}",
     "'referrals' has 2 foreign keys to 'customers' (referee, referrer); say which one with "
     "VIA, e.g. COUNT(referrals.* VIA referee, ...)", "COUNT"),
    (f"PREDICT COUNT(referrals.* VIA created_at, 0, 30, days) {C}",
     "VIA 'created_at': referrals.created_at is not a foreign key to 'customers'; the ones "
     "that are: ['referee', 'referrer']", "COUNT"),
    (f"PREDICT COUNT(orders.*, 0, 30, days) {C} WHERE COUNT(orders.*, -30, 1, days) > 0",
     "WHERE uses a future window (-30, 1]: filtering entities on what happens after the "
     "prediction time leaks the label. Use end <= 0", "COUNT(orders.*, -30"),
    (f"PREDICT COUNT(orders.*, -1, 30, days) {C}",
     "The target window (-1, 30] starts before the prediction time", "COUNT"),
    (f"PREDICT COUNT(orders.*, 30, 30, days) {C}",
     "Window (30, 30] of COUNT is empty; the end must be after the start", "COUNT"),
    (f"PREDICT SUM(orders.channel, 0, 30, days) {C}",
     "SUM needs a numeric column; orders.channel is string", "SUM"),
    (f"PREDICT AVG(orders.*, 0, 30, days) {C}", "AVG needs a column, not orders.*", "AVG"),
    (f"PREDICT LIST_DISTINCT(orders.channel, 0, 30, days) RANK TOP 3 {C}",
     "LIST_DISTINCT needs a foreign-key column so that the items form a table; the foreign "
     "keys of 'orders' are ['customer_id', 'product_id']", "LIST"),
    (f"PREDICT LIST_DISTINCT(orders.product_id, 0, 30, days) {C}",
     "A LIST_DISTINCT target needs RANK TOP k after it", "LIST"),
    (f"PREDICT COUNT(orders.*, 0, 30, days) RANK TOP 3 {C}",
     "RANK TOP k only follows a LIST_DISTINCT target", "COUNT"),
    (f"PREDICT LIST_DISTINCT(orders.product_id, 0, 30, days) RANK TOP 0 {C}",
     "RANK TOP 0: k must be at least 1", "LIST"),
    (f"PREDICT COUNT(orders.*, 0, 30, days) > 'many' {C}",
     "Cannot compare COUNT(orders.*, 0, 30, days) (number) with 'many' (string)", "> 'many'"),
    (f"PREDICT NOT COUNT(orders.*, 0, 30, days) {C}",
     "NOT needs true/false operands; COUNT(orders.*, 0, 30, days) is not one", "COUNT"),
    (f"PREDICT COUNT(orders.*, 0, 30, days) {C} WHERE orders.amount > 3",
     "Column orders.amount cannot be used in the where: only columns of 'customers' can",
     "orders.amount"),
    (f"PREDICT COUNT(orders.* WHERE customers.age > 3, 0, 30, days) {C}",
     "Column customers.age cannot be used inside this aggregate: only columns of 'orders'",
     "customers.age"),
    (f"PREDICT COUNT(orders.* WHERE COUNT(orders.*, -1, 0, days) > 0, 0, 30, days) {C}",
     "Aggregates cannot be nested inside an aggregate's WHERE", "COUNT(orders.*, -1"),
    (f"PREDICT COUNT(orders.*, 0, 30, days) {C} WHERE customers.age",
     "WHERE needs a condition", "customers.age"),
    (f"PREDICT customers.age > 3 {C}",
     "Predicting customers.age row by row needs a timed table; 'customers' has no time "
     "column", None),
    ("PREDICT orders.returned FOR EACH orders.order_id WHERE orders.returned = FALSE",
     "WHERE uses the target column orders.returned, which leaks the label", "orders.returned ="),
    ("PREDICT orders.ordered_at IS NULL FOR EACH orders.order_id",
     "orders.ordered_at is a key or time column and cannot be a target", "orders.ordered_at"),
    ("PREDICT 1 = 1 FOR EACH orders.order_id",
     "The target needs a column or an aggregate to predict", "= 1"),
    (f"PREDICT COUNT(orders.*, 0, 30, days) {C} WHERE customers.signup > 'soon'",
     "'soon' is not a timestamp", "'soon'"),
    (f"PREDICT COUNT(orders.*, 0, 30, days) {C} WHERE 'a' = 'b'",
     "'a' = 'b' compares two values; compare a column or aggregate", "= 'b'"),
    (f"PREDICT COUNT(orders.*, 0, 30, days) = LIST_DISTINCT(orders.product_id, 0, 1, days) {C}",
     "LIST_DISTINCT can only be the whole target", "LIST"),
    (f"PREDICT COUNT(orders.*, 0, 30, days) {C} WHERE LIST_DISTINCT(orders.product_id, -9, 0, "
     "days) IS NULL", "LIST_DISTINCT can only be the whole target", "LIST"),
])
def test_schema_errors_point_at_the_query(shop, query, message, caret_at):
    if query.startswith("PREDICT customers.age"):
        shop.tables["customers"].time_column = None
    with pytest.raises(QueryError, match=re.escape(message) if message else "no foreign key") as e:
        resolve_query(parse(query), shop)
    if caret_at is not None:
        assert e.value.pos == query.index(caret_at)
    assert str(e.value).splitlines()[-2] == "  " + query


def test_missing_foreign_key_lists_linked_tables(shop):
    with pytest.raises(QueryError, match=re.escape(
            "'products' has no foreign key to the entity table 'customers'; tables that have "
            "one: ['addresses', 'orders', 'referrals']")):
        resolve_query(parse(f"PREDICT COUNT(products.*, 0, 30, days) {C}"), shop)


def test_a_table_only_named_by_key_columns_points_to_implying_it(shop):
    """The products file left out: the orders still name products by product_id."""
    del shop.tables["products"]
    query = "PREDICT COUNT(orders.*, 0, 30, days) FOR EACH products.product_id"
    with pytest.raises(QueryError, match=re.escape(
            "orders.product_id names products without a table of them: declare "
            "'implied_tables: {products: orders.product_id}' in a schema file")):
        resolve_query(parse(query), shop)
    with pytest.raises(QueryError) as caught:  # no column names shops: no such line
        resolve_query(parse("PREDICT COUNT(orders.*, 0, 30, days) FOR EACH shops.id"), shop)
    assert "implied_tables" not in str(caught.value)


def test_entity_table_without_primary_key(shop):
    shop.tables["addresses"].primary_key = None
    with pytest.raises(QueryError, match="Entity table 'addresses' has no primary key"):
        resolve_query(parse("PREDICT COUNT(orders.*, 0, 1, days) FOR EACH addresses.address_id"), shop)


@pytest.fixture
def shop_files(tmp_path):
    """The shop as a folder of CSV files, which declares no keys."""
    for table in make_shop():
        table.df.to_csv(tmp_path / f"{table.name}.csv", index=False)
    return connect(str(tmp_path))


def test_entity_table_keyed_by_a_row_id_points_to_declaring_its_key(shop_files):
    with pytest.raises(QueryError, match=re.escape(
            "'customers' has no single-column primary key (a folder of files declares none), "
            "so rdl keys its rows by a row id, _pk: declare 'customer_id' as its key in a "
            "schema file")):
        resolve_query(parse(f"PREDICT COUNT(orders.*, 0, 30, days) {C}"), shop_files)


@pytest.mark.parametrize("query, task_type, message", [
    (f"PREDICT COUNT(orders.*, 0, 30, days) {C}", "recommendation",
     "task_type='recommendation' does not fit the target COUNT(orders.*, 0, 30, days)"),
    (f"PREDICT LIST_DISTINCT(orders.product_id, 0, 30, days) RANK TOP 2 {C}", "binary",
     "recommendation goes with LIST_DISTINCT(...) RANK TOP k and only with it"),
    ("PREDICT orders.channel FOR EACH orders.order_id", "regression",
     "task_type='regression' needs a numeric or boolean target, but orders.channel holds text"),
])
def test_task_type_override_must_fit(shop, query, task_type, message):
    with pytest.raises(TaskError, match=re.escape(message)):
        t = Task(query=query, task_type=task_type, val_timestamp=VAL, test_timestamp=TEST)
        t.table(shop, "val")


def test_task_type_override_to_multiclass_and_binary(shop):
    t = Task(query=f"PREDICT COUNT(orders.*, 0, 31, days) {C}", task_type="multiclass",
             val_timestamp=VAL, test_timestamp=TEST)
    assert set(t.table(shop, "val")["label"]) == {0, 1, 2}
    assert t.metrics == ["accuracy", "f1"]
    t = Task(query=f"PREDICT COUNT(orders.*, 0, 31, days) {C}", task_type="binary",
             val_timestamp=VAL, test_timestamp=TEST)
    with pytest.raises(TaskError, match=re.escape(
            "task_type='binary' needs labels that are true/false or 0/1, got ['0', '1', '2']")):
        t.table(shop, "val")


def test_unknown_task_type():
    with pytest.raises(TaskError, match=re.escape(
            "task_type='classification' is not a task type; use one of ['binary', "
            "'multiclass', 'regression', 'recommendation']")):
        Task(query=f"PREDICT COUNT(orders.*, 0, 30, days) {C}", task_type="classification",
             val_timestamp=VAL, test_timestamp=TEST)


def test_stype_categorical_number_column_is_multiclass(shop):
    shop.tables["orders"].stypes["product_id"] = "categorical"
    t = Task(query="PREDICT orders.product_id FOR EACH orders.order_id",
             val_timestamp=VAL, test_timestamp=TEST)
    assert resolve_query(parse(t.query), shop).task_type == "multiclass"


def test_for_each_on_a_column_that_repeats_offers_only_the_row_id(shop_files):
    with pytest.raises(QueryError, match=re.escape(
            "FOR EACH needs the primary key of 'orders': write FOR EACH orders._pk")):
        resolve_query(parse("PREDICT orders.returned FOR EACH orders.customer_id"), shop_files)


def test_a_count_over_a_table_of_whole_number_years_points_to_declaring_them():
    people = Table("People", pd.DataFrame({"playerID": ["a", "b"]}), "playerID")
    batting = Table("Batting", pd.DataFrame({"batting_id": [1, 2], "playerID": ["a", "b"],
                                             "yearID": [2000, 2001]}),
                    "batting_id", {"playerID": "People"}, None, {"yearID": "numerical"})
    db = Database({"People": people, "Batting": batting})
    with pytest.raises(QueryError, match=re.escape(
            "needs a time column, but 'Batting' is static; timed tables linked to 'People' are "
            "[]. A time column rdl did not recognise (whole-number years, day numbers or seconds "
            "since 1970, say) is declared in a schema file (time_column; rdl inspect SOURCE "
            "--suggest-schema FILE.yaml guesses")):
        resolve_query(parse("PREDICT COUNT(Batting.*, 0, 1, years) = 0 FOR EACH "
                            "People.playerID"), db)
