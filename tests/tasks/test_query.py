"""Parser: the syntax tree of valid queries and the caret errors of invalid ones."""
from __future__ import annotations

import re

import pytest

from rdl.tasks import QueryError, parse
from rdl.tasks.query.syntax import (
    Aggregate,
    Column,
    Compare,
    InList,
    IsNull,
    Literal,
    Logical,
    Not,
    aggregates,
)


def test_churn_query_tree():
    q = parse("predict Count(orders.*, 0, 30, DAYS) = 0 for each customers.customer_id "
              "where count(orders.*, -90, 0, days) > 0")
    agg = Aggregate("COUNT", "orders", None, None, None, 0, 30, "days")
    assert q.target == Compare("=", agg, Literal(0))
    assert (q.table, q.column, q.top_k) == ("customers", "customer_id", None)
    past = Aggregate("COUNT", "orders", None, None, None, -90, 0, "days")
    assert q.where == Compare(">", past, Literal(0))


def test_full_grammar_round_trips_through_str():
    text = ("PREDICT LIST_DISTINCT(orders.product_id VIA customer_id WHERE orders.amount >= 2.5 "
            "AND orders.channel NOT IN ('web', 'it''s'), 0, 1, month) RANK TOP 5 "
            "FOR EACH customers.customer_id WHERE NOT (customers.age < 30 OR customers.city IS "
            "NULL) AND customers.vip = TRUE")
    q = parse(text)
    assert q.top_k == 5
    agg = q.target
    assert isinstance(agg, Aggregate) and agg.via == "customer_id" and agg.unit == "months"
    assert isinstance(agg.filter, Logical)
    assert agg.filter.operands[1] == InList(Column("orders", "channel"),
                                            (Literal("web"), Literal("it's")), True)
    assert isinstance(q.where, Logical) and q.where.op == "AND"
    assert isinstance(q.where.operands[0], Not)
    assert parse(str(q)) == q


def test_precedence_and_binds_tighter_than_or():
    q = parse("PREDICT a.x OR a.y AND NOT a.z FOR EACH a.id")
    assert q.target == Logical("OR", (Column("a", "x"),
                                      Logical("AND", (Column("a", "y"), Not(Column("a", "z"))))))


def test_quoted_identifiers_and_negative_numbers():
    q = parse('PREDICT SUM("order items"."unit ""price""", -7, 0, hours) > -1.5 '
              'FOR EACH "my table".id')
    agg = aggregates(q.target)[0]
    assert (agg.table, agg.column, agg.start, agg.end, agg.unit) == (
        "order items", 'unit "price"', -7, 0, "hours")
    assert q.target.right == Literal(-1.5)
    assert q.table == "my table"


def test_is_not_null():
    q = parse("PREDICT flights.dep_time IS NULL FOR EACH flights._pk")
    assert q.target == IsNull(Column("flights", "dep_time"), False)


@pytest.mark.parametrize("text, message, caret_at", [
    ("COUNT(orders.*, 0, 30, days) FOR EACH c.id", "Expected PREDICT", "COUNT"),
    ("PREDICT COUNT(orders.*, 0, 30) FOR EACH c.id", "Expected ',' and the unit", ")"),
    ("PREDICT COUNT(orders.*, 0, 30, weeks) FOR EACH c.id", "Expected a unit: days, hours",
     "weeks"),
    ("PREDICT COUNT(orders.*, 0, 1.5, days) FOR EACH c.id", "whole number for the window end",
     "1.5"),
    ("PREDICT COUNT(orders.* 0, 30, days) FOR EACH c.id", "Expected ',' and the window start",
     "0,"),
    ("PREDICT MEDIAN(orders.amount, 0, 30, days) FOR EACH c.id", "Unknown aggregate 'MEDIAN'",
     "MEDIAN"),
    ("PREDICT COUNT(orders.*, 0, 30, days) FOR c.id", "Expected EACH after FOR", "c.id"),
    ("PREDICT COUNT(orders.*, 0, 30, days) EACH c.id", "Expected FOR EACH", "EACH"),
    ("PREDICT COUNT(orders.*, 0, 30, days) FOR EACH c", "Expected '.' and the primary key",
     ""),
    ("PREDICT COUNT(orders.*, 0, 30, days) FOR EACH c.id WHERE", "Expected a column", ""),
    ("PREDICT COUNT(orders.*, 0, 30, days) FOR EACH c.id c.x", "Expected WHERE or the end",
     "c.x"),
    ("PREDICT orders.* FOR EACH c.id", "only allowed inside an aggregate", "*"),
    ("PREDICT (c.x > 1 FOR EACH c.id", "Expected ')' to close", "FOR"),
    ("PREDICT c.x = 'abc FOR EACH c.id", "Unterminated '-quoted text", "'abc"),
    ("PREDICT c.x IS 3 FOR EACH c.id", "Expected NULL after IS", "3"),
    ("PREDICT c.x = ORD FOR EACH c.id",
     "Expected '.' and a column after 'ORD' (table.column); text values go in single quotes: "
     "'ORD', got 'FOR'", "FOR"),
    ("PREDICT c.x IN () FOR EACH c.id", "Expected a number, a 'quoted string'", ")"),
    ("PREDICT c.x # 1 FOR EACH c.id", "Unexpected character '#'", "#"),
    ("PREDICT c.x RANK 3 FOR EACH c.id", "Expected TOP after RANK", "3"),
])
def test_parse_errors_point_at_the_token(text, message, caret_at):
    with pytest.raises(QueryError, match=re.escape(message)) as info:
        parse(text)
    err = info.value
    expected_pos = text.index(caret_at) if caret_at else len(text)
    assert err.pos == expected_pos
    line, caret = str(err).splitlines()[-2:]
    assert line == "  " + text
    assert caret == "  " + " " * expected_pos + "^"


@pytest.mark.parametrize("text", ["", "   ", None])
def test_empty_query(text):
    with pytest.raises(QueryError, match="The query is empty"):
        parse(text)


def test_multiline_query_caret_on_the_right_line():
    text = "PREDICT COUNT(orders.*, 0, 30, days)\nFOR EACH customers.customer_id\nWHERE ;"
    with pytest.raises(QueryError, match="Unexpected character ';'") as info:
        parse(text)
    assert str(info.value).endswith("  WHERE ;\n        ^")
