"""Checks a parsed query against a database schema and resolves what it means.

Every name in the query is looked up here, so the SQL compiler only ever
sees tables and columns that exist; this is also where the leakage rules
live (target windows in the future, ``WHERE`` windows in the past, event-level
targets hidden from ``WHERE``) and where the task type is inferred.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from rdl.db.database import Database
from rdl.db.keys import SURROGATE_KEY
from rdl.db.schema_guess import columns_naming
from rdl.db.table import Table
from rdl.tasks import task_types as types
from rdl.tasks.errors import QueryError
from rdl.tasks.query.syntax import (
    Aggregate,
    Column,
    Compare,
    Expr,
    InList,
    IsNull,
    Literal,
    Logical,
    Query,
    aggregates,
    columns,
)
from rdl.tasks.query.windows import check_window

_NEEDS_COLUMN = ("SUM", "AVG", "MIN", "MAX", "COUNT_DISTINCT", "LIST_DISTINCT")
_NUMERIC_ONLY = ("SUM", "AVG", "MIN", "MAX")


@dataclass
class ResolvedQuery:
    r"""A query resolved against one database schema.

    Args:
        query: The parsed query.
        entity_table: Entity table name.
        entity_column: Its primary key.
        entity_time: Its time column, or ``None`` for a static table.
        event_level: Whether each entity row is predicted at its own time.
        task_type: Inferred or given task type.
        links: Foreign-key column (of the aggregated table) linking each
            aggregate's rows to the entity.
        time_columns: Time column of each aggregated table.
        kinds: Value kind (number, bool, string, time, list) of each node,
            keyed by ``id(node)``.
        hidden_columns: Entity-table columns the model must not see for a
            row and later rows (the event-level target).
        item_table: Table of the recommended items, or ``None``.
    """

    query: Query
    entity_table: str
    entity_column: str
    entity_time: str | None
    event_level: bool
    task_type: str
    links: dict[Aggregate, str] = field(default_factory=dict)
    time_columns: dict[str, str] = field(default_factory=dict)
    kinds: dict[int, str] = field(default_factory=dict)
    hidden_columns: dict[str, list[str]] = field(default_factory=dict)
    item_table: str | None = None


class _Checker:
    def __init__(self, query: Query, db: Database):
        self.query = query
        self.db = db
        self.links: dict[Aggregate, str] = {}
        self.time_columns: dict[str, str] = {}
        self.kinds: dict[int, str] = {}

    def fail(self, message: str, pos: int) -> QueryError:
        return QueryError(message, self.query.text, pos)

    def table(self, name: str, pos: int) -> Table:
        if name not in self.db.tables:
            raise self.fail(f"Unknown table {name!r}; the tables are {sorted(self.db.tables)}"
                            + _implied_note(self.db, name), pos)
        return self.db.tables[name]

    def column(self, table: Table, name: str, pos: int) -> str:
        if name not in table.df.columns:
            raise self.fail(
                f"Table {table.name!r} has no column {name!r}; its columns are "
                f"{[str(c) for c in table.df.columns]}",
                pos,
            )
        return name

    def kind(self, node: Expr, scope: str, role: str) -> str:
        """Checks :obj:`node` and returns its value kind.

        ``scope`` is the table whose columns may appear; ``role`` is
        ``target``, ``where`` or ``filter`` (inside an aggregate).
        """
        kind = self._kind(node, scope, role)
        self.kinds[id(node)] = kind
        return kind

    def _kind(self, node: Expr, scope: str, role: str) -> str:
        if isinstance(node, Literal):
            if isinstance(node.value, bool):
                return "bool"
            return "string" if isinstance(node.value, str) else "number"
        if isinstance(node, Column):
            table = self.table(node.table, node.pos)
            if node.table != scope:
                where = "inside this aggregate" if role == "filter" else f"in the {role}"
                raise self.fail(
                    f"Column {node} cannot be used {where}: only columns of {scope!r} can "
                    "(use an aggregate to read other tables)",
                    node.pos,
                )
            return types.column_kind(table.df[self.column(table, node.column, node.pos)])
        if isinstance(node, Aggregate):
            if role == "filter":
                raise self.fail("Aggregates cannot be nested inside an aggregate's WHERE", node.pos)
            return self.aggregate(node, role)
        if isinstance(node, Compare):
            left = self.kind(node.left, scope, role)
            right = self.kind(node.right, scope, role)
            if isinstance(node.left, Literal) and isinstance(node.right, Literal):
                raise self.fail(f"{node} compares two values; compare a column or aggregate",
                                node.pos)
            self.comparable(left, right, node.left, node.right, node.pos)
            return "bool"
        if isinstance(node, IsNull):
            if isinstance(node.operand, Literal):
                raise self.fail("IS NULL needs a column or aggregate", node.pos)
            self.kind(node.operand, scope, role)
            return "bool"
        if isinstance(node, InList):
            left = self.kind(node.operand, scope, role)
            for value in node.values:
                self.comparable(left, self.kind(value, scope, role), node.operand, value, value.pos)
            return "bool"
        operands = node.operands if isinstance(node, Logical) else (node.operand,)
        for operand in operands:
            if self.kind(operand, scope, role) != "bool":
                op = node.op if isinstance(node, Logical) else "NOT"
                raise self.fail(f"{op} needs true/false operands; {operand} is not one",
                                operand.pos)
        return "bool"

    def comparable(self, a: str, b: str, left: Expr, right: Expr, pos: int) -> None:
        numeric = {"number", "bool"}
        if a == b or (a in numeric and b in numeric):
            return
        for kind, other, node in ((a, b, right), (b, a, left)):
            if kind == "time" and other == "string" and isinstance(node, Literal):
                try:
                    pd.Timestamp(node.value)
                except ValueError:
                    raise self.fail(f"{node} is not a timestamp", node.pos) from None
                return
        if "list" in (a, b):
            raise self.fail("LIST_DISTINCT can only be the whole target", pos)
        raise self.fail(f"Cannot compare {left} ({a}) with {right} ({b})", pos)

    def aggregate(self, agg: Aggregate, role: str) -> str:
        table = self.table(agg.table, agg.pos)
        entity = self.query.table
        self.links[agg] = self.link(agg, table)
        if table.time_column is None:
            timed = sorted(n for n, t in self.db.tables.items()
                           if t.time_column and entity in t.foreign_keys.values())
            raise self.fail(
                f"{agg.func} over {agg.table!r} needs a time column, but {agg.table!r} is static; "
                f"timed tables linked to {entity!r} are {timed}. A time column rdl did not "
                "recognise (whole-number years, day numbers or seconds since 1970, say) is "
                "declared in a schema file (time_column; rdl inspect SOURCE --suggest-schema "
                "FILE.yaml guesses years, months, dates and epoch numbers)",
                agg.pos,
            )
        self.time_columns[agg.table] = table.time_column
        check_window(agg, role, self.query)
        if agg.filter is not None and self.kind(agg.filter, agg.table, "filter") != "bool":
            raise self.fail(f"The WHERE inside {agg.func} must be a condition", agg.filter.pos)
        if agg.column is None:
            if agg.func in _NEEDS_COLUMN:
                raise self.fail(f"{agg.func} needs a column, not {agg.table}.*", agg.pos)
            return "bool" if agg.func == "EXISTS" else "number"
        col_kind = types.column_kind(table.df[self.column(table, agg.column, agg.pos)])
        if agg.func in _NUMERIC_ONLY and col_kind not in ("number", "bool"):
            raise self.fail(
                f"{agg.func} needs a numeric column; {agg.table}.{agg.column} is {col_kind}",
                agg.pos,
            )
        if agg.func == "LIST_DISTINCT":
            if role != "target" or agg is not self.query.target:
                raise self.fail("LIST_DISTINCT can only be the whole target", agg.pos)
            if agg.column not in table.foreign_keys:
                raise self.fail(
                    f"LIST_DISTINCT needs a foreign-key column so that the items form a table; "
                    f"the foreign keys of {agg.table!r} are {sorted(table.foreign_keys)}",
                    agg.pos,
                )
            return "list"
        return "bool" if agg.func == "EXISTS" else "number"

    def link(self, agg: Aggregate, table: Table) -> str:
        entity = self.query.table
        fks = sorted(c for c, parent in table.foreign_keys.items() if parent == entity)
        if agg.via is not None:
            if agg.via not in fks:
                raise self.fail(
                    f"VIA {agg.via!r}: {agg.table}.{agg.via} is not a foreign key to {entity!r}; "
                    f"the ones that are: {fks}",
                    agg.pos,
                )
            return agg.via
        if not fks:
            linked = sorted(n for n, t in self.db.tables.items()
                            if entity in t.foreign_keys.values())
            raise self.fail(
                f"{agg.table!r} has no foreign key to the entity table {entity!r}; tables that "
                f"have one: {linked}{_through_parent_hint(self.db, table, entity)}",
                agg.pos,
            )
        if len(fks) > 1:
            raise self.fail(
                f"{agg.table!r} has {len(fks)} foreign keys to {entity!r} ({', '.join(fks)}); "
                f"say which one with VIA, e.g. {agg.func}({agg.table}.{agg.column or '*'} "
                f"VIA {fks[0]}, ...)",
                agg.pos,
            )
        return fks[0]


def _through_parent_hint(db: Database, table: Table, entity: str) -> str:
    """How to give ``table`` the key its parent has to ``entity`` (order lines
    reach their customer through their order), or ``""`` if no parent has one."""
    for column, parent in sorted(table.foreign_keys.items()):
        keys = sorted(c for c, t in db[parent].foreign_keys.items() if t == entity)
        if keys:
            return (f". {table.name!r} reaches {entity!r} through {parent!r} ({column}): "
                    f"declare 'foreign_keys: {{{keys[0]}: {{from: {column}}}}}' for "
                    f"{table.name!r} in a schema file to give each row its {parent} row's "
                    f"{keys[0]}")
    return ""


def _could_be_key(values: pd.Series | None) -> bool:
    """Whether a column (``None``: no such column) is unique and never missing."""
    return values is not None and bool(values.notna().all()) and values.is_unique


def resolve_query(query: Query, db: Database, task_type: str | None = None) -> ResolvedQuery:
    r"""Checks :obj:`query` against :obj:`db` and resolves it into a :class:`ResolvedQuery`.

    Args:
        query (Query): Parsed query (see :func:`rdl.tasks.query.parse`).
        db (Database): Database whose schema the names must exist in.
        task_type (str, optional): Override of the inferred task type.
            (default: :obj:`None`)

    Raises:
        QueryError: Unknown names, type mismatches or leakage, pointing at
            the offending part of the query.
    """
    c = _Checker(query, db)
    entity = c.table(query.table, query.entity_pos)
    if entity.primary_key is None:
        raise c.fail(f"Entity table {query.table!r} has no primary key to predict for",
                     query.entity_pos)
    if query.column != entity.primary_key:
        if entity.primary_key == SURROGATE_KEY and _could_be_key(entity.df.get(query.column)):
            raise c.fail(
                f"{query.table!r} has no single-column primary key (a folder of files declares "
                f"none), so rdl keys its rows by a row id, {SURROGATE_KEY}: declare "
                f"{query.column!r} as its key in a schema file (--schema, or data.schema in a "
                "config; rdl inspect SOURCE --suggest-schema FILE.yaml guesses keys), or write "
                f"FOR EACH {query.table}.{SURROGATE_KEY}",
                query.entity_pos,
            )
        raise c.fail(
            f"FOR EACH needs the primary key of {query.table!r}: write "
            f"FOR EACH {query.table}.{entity.primary_key}",
            query.entity_pos,
        )
    target_aggs = aggregates(query.target)
    event_level = not target_aggs
    target_cols = columns(query.target)
    if event_level and not target_cols:
        raise c.fail("The target needs a column or an aggregate to predict", query.target.pos)
    if event_level and entity.time_column is None:
        raise c.fail(
            f"Predicting {target_cols[0]} row by row needs a timed table; {query.table!r} has no "
            "time column. Aggregate a timed table instead, e.g. COUNT(orders.*, 0, 30, days)",
            query.target.pos,
        )
    kind = c.kind(query.target, query.table, "target")
    hidden: dict[str, list[str]] = {}
    if event_level:
        names = sorted({col.column for col in target_cols})
        for col in target_cols:
            if col.column in (entity.primary_key, entity.time_column):
                raise c.fail(f"{col} is a key or time column and cannot be a target", col.pos)
        hidden = {query.table: names}
    list_aggs = [a for a in target_aggs if a.func == "LIST_DISTINCT"]
    if list_aggs and query.top_k is None:
        raise c.fail("A LIST_DISTINCT target needs RANK TOP k after it", query.target.pos)
    if query.top_k is not None and not list_aggs:
        raise c.fail("RANK TOP k only follows a LIST_DISTINCT target", query.target.pos)
    if query.top_k is not None and query.top_k < 1:
        raise c.fail(f"RANK TOP {query.top_k}: k must be at least 1", query.target.pos)
    if query.where is not None:
        if c.kind(query.where, query.table, "where") != "bool":
            raise c.fail("WHERE needs a condition (a comparison, EXISTS, ...)", query.where.pos)
        for col in columns(query.where):
            if col.column in hidden.get(query.table, []):
                raise c.fail(f"WHERE uses the target column {col}, which leaks the label", col.pos)
    inferred = types.infer_type(kind, query, entity)
    if task_type is None:
        task_type = inferred
    types.check_override(types.check_task_type(task_type), inferred, kind, query)
    item_table = None
    if list_aggs:
        agg = list_aggs[0]
        item_table = db.tables[agg.table].foreign_keys[agg.column]
    return ResolvedQuery(query, query.table, entity.primary_key, entity.time_column, event_level,
                task_type, c.links, c.time_columns, c.kinds, hidden, item_table)


def _implied_note(db: Database, name: str) -> str:
    """Where columns are named for the unknown table (``events.user_id`` for
    ``users``), how to give them a table of their own."""
    named = columns_naming(db, name)
    if not named:
        return ""
    refs = named[0] if len(named) == 1 else f"[{', '.join(named)}]"
    return (f". {', '.join(named)} name{'s' if len(named) == 1 else ''} {name} without a "
            f"table of them: declare 'implied_tables: {{{name}: {refs}}}' in a schema file "
            "(README: The schema file)")
