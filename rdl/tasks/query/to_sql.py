r"""Compiles a checked query (:class:`~rdl.tasks.query.resolve.ResolvedQuery`) into DuckDB SQL.

All timestamps of a split are evaluated by one statement: entity rows are
crossed with the timestamp view :obj:`TIMESTAMPS_VIEW` into *seeds*
``(id, t)`` (event-level tasks use each row's own time instead); every
distinct aggregate becomes one grouped sub-query, and the final ``SELECT``
left-joins them back to the seeds. For entity-level tasks a sub-query
range-joins the aggregated rows with the timestamps whose window
``(t + start, t + end]`` holds them, so each row meets about
``window / timedelta`` timestamps rather than all of them (measured 2.4x
faster than joining seeds on the foreign key for 2M rows and 327
timestamps); event-level seeds join their own rows on the foreign key.

Identifiers come only from the checked schema and are always double-quoted;
every value from the query (literals, window bounds, split bounds) is a
named parameter (``$p0``, ``$p1``, ...), never part of the SQL text.
"""
from __future__ import annotations

import pandas as pd

from rdl.tasks.query.resolve import ResolvedQuery
from rdl.tasks.query.syntax import (
    Aggregate,
    Column,
    Compare,
    Expr,
    InList,
    IsNull,
    Literal,
    Logical,
    Not,
    aggregates,
    columns,
)

TIMESTAMPS_VIEW = "__rdl_timestamps"
_SEEDS = "__rdl_seeds"
_INTERVAL = {"days": "to_days", "hours": "to_hours", "months": "to_months",
             "years": "to_years"}
_ZERO_WHEN_EMPTY = ("COUNT", "COUNT_DISTINCT", "SUM")


def quote(name: str) -> str:
    """Double-quotes an identifier for DuckDB, doubling embedded quotes."""
    return '"' + str(name).replace('"', '""') + '"'


class _Compiler:
    def __init__(self, plan: ResolvedQuery):
        self.plan = plan
        self.params: dict[str, object] = {}
        query = plan.query
        self.aggs = aggregates(query.target)
        self.aggs += [a for a in aggregates(query.where) if a not in self.aggs]
        names = [c.column for c in columns(query.target) + columns(query.where)]
        self.entity_cols = {name: f"__rdl_c{i}" for i, name in enumerate(dict.fromkeys(names))}

    def bind(self, value: object) -> str:
        name = f"p{len(self.params)}"
        self.params[name] = value
        return f"${name}"

    def interval(self, amount: int, unit: str) -> str:
        return f"{_INTERVAL[unit]}(CAST({self.bind(int(amount))} AS INTEGER))"

    def seeds(self, after: pd.Timestamp | None, upto: pd.Timestamp | None) -> str:
        p = self.plan
        pk, time = quote(p.entity_column), p.entity_time and quote(p.entity_time)
        extra = "".join(f", e.{quote(c)} AS {a}" for c, a in self.entity_cols.items())
        conds = [f"e.{pk} IS NOT NULL"]
        if p.event_level:
            source = f"{quote(p.entity_table)} AS e"
            seed_time = f"e.{time}"
            conds.append(f"e.{time} IS NOT NULL")
            if after is not None:
                conds.append(f"e.{time} > {self.bind(after)}")
            if upto is not None:
                conds.append(f"e.{time} <= {self.bind(upto)}")
        else:
            source = f"{quote(p.entity_table)} AS e CROSS JOIN {quote(TIMESTAMPS_VIEW)} AS ts"
            seed_time = 'ts."timestamp"'
            if time is not None:
                conds.append(f'e.{time} <= ts."timestamp"')
        return (f"SELECT e.{pk} AS __rdl_id, {seed_time} AS __rdl_t{extra}\n"
                f"  FROM {source}\n  WHERE {' AND '.join(conds)}")

    def aggregate_cte(self, agg: Aggregate) -> str:
        time = quote(self.plan.time_columns[agg.table])
        link = quote(self.plan.links[agg])
        lo = self.interval(agg.start, agg.unit)
        hi = self.interval(agg.end, agg.unit)
        conds = []
        if self.plan.event_level:
            # One seed per entity row: join each seed to its own rows.
            source = f"{_SEEDS} AS s JOIN {quote(agg.table)} AS r ON r.{link} = s.__rdl_id"
            ident, t = "s.__rdl_id", "s.__rdl_t"
            conds += [f"r.{time} > s.__rdl_t + {lo}", f"r.{time} <= s.__rdl_t + {hi}"]
        else:
            # Range join of rows with the timestamps whose window holds them: each row
            # meets about window / step timestamps, not all of them.
            windows = (f'(SELECT "timestamp", "timestamp" + {lo} AS lo, "timestamp" + {hi} AS hi '
                       f"FROM {quote(TIMESTAMPS_VIEW)})")
            source = (f"{quote(agg.table)} AS r JOIN {windows} AS w "
                      f"ON r.{time} > w.lo AND r.{time} <= w.hi")
            ident, t = f"r.{link}", 'w."timestamp"'
            conds.append(f"r.{link} IS NOT NULL")
        if agg.filter is not None:
            conds.append(self.expr(agg.filter, inner=True))
        return (f"SELECT {ident} AS __rdl_id, {t} AS __rdl_t, {self.inner_value(agg)} AS v\n"
                f"  FROM {source}\n"
                f"  WHERE {' AND '.join(conds)}\n  GROUP BY {ident}, {t}")

    @staticmethod
    def inner_value(agg: Aggregate) -> str:
        col = "*" if agg.column is None else f"r.{quote(agg.column)}"
        if agg.func in ("COUNT", "EXISTS"):
            return f"COUNT({col})"
        if agg.func == "COUNT_DISTINCT":
            return f"COUNT(DISTINCT {col})"
        if agg.func == "LIST_DISTINCT":
            return f"list(DISTINCT {col} ORDER BY {col}) FILTER (WHERE {col} IS NOT NULL)"
        return f"{agg.func}(CAST({col} AS DOUBLE))"

    def outer_value(self, agg: Aggregate) -> str:
        v = f"__rdl_a{self.aggs.index(agg)}.v"
        if agg.func in _ZERO_WHEN_EMPTY:
            return f"COALESCE({v}, 0)"
        if agg.func == "EXISTS":
            return f"(COALESCE({v}, 0) > 0)"
        return v

    def literal(self, lit: Literal, other: Expr) -> str:
        value = lit.value
        if self.plan.kinds.get(id(other)) == "time" and isinstance(value, str):
            value = pd.Timestamp(value).to_pydatetime()
        return self.bind(value)

    def expr(self, node: Expr, inner: bool = False, other: Expr | None = None) -> str:
        if isinstance(node, Literal):
            return self.literal(node, other if other is not None else node)
        if isinstance(node, Column):
            return f"r.{quote(node.column)}" if inner else f"s.{self.entity_cols[node.column]}"
        if isinstance(node, Aggregate):
            return self.outer_value(node)
        if isinstance(node, Compare):
            op = "<>" if node.op == "!=" else node.op
            left = self.expr(node.left, inner, node.right)
            right = self.expr(node.right, inner, node.left)
            return f"({left} {op} {right})"
        if isinstance(node, IsNull):
            return f"({self.expr(node.operand, inner)} IS {'NOT ' if node.negated else ''}NULL)"
        if isinstance(node, InList):
            values = ", ".join(self.expr(v, inner, node.operand) for v in node.values)
            neg = "NOT " if node.negated else ""
            return f"({self.expr(node.operand, inner)} {neg}IN ({values}))"
        if isinstance(node, Logical):
            return "(" + f" {node.op} ".join(self.expr(o, inner) for o in node.operands) + ")"
        assert isinstance(node, Not)
        return f"(NOT {self.expr(node.operand, inner)})"


def label_sql(plan: ResolvedQuery, after: pd.Timestamp | None = None,
                 upto: pd.Timestamp | None = None) -> tuple[str, dict[str, object]]:
    r"""Compiles :obj:`plan` into one DuckDB ``SELECT`` and its parameters.

    The statement reads the database tables as views of the same name and,
    for entity-level tasks, the prediction times from the view
    :obj:`TIMESTAMPS_VIEW` (one ``timestamp`` column). It returns the
    columns ``id``, ``timestamp`` and ``label``.

    Args:
        plan (ResolvedQuery): Checked query.
        after (pd.Timestamp, optional): Event-level only: keep rows with time
            ``> after``. (default: :obj:`None`)
        upto (pd.Timestamp, optional): Event-level only: keep rows with time
            ``<= upto``. (default: :obj:`None`)

    Returns:
        ``(sql, params)`` for ``con.execute(sql, params)``.
    """
    c = _Compiler(plan)
    ctes = [f"{_SEEDS} AS (\n  {c.seeds(after, upto)}\n)"]
    joins = []
    for i, agg in enumerate(c.aggs):
        ctes.append(f"__rdl_a{i} AS (\n  {c.aggregate_cte(agg)}\n)")
        joins.append(f"LEFT JOIN __rdl_a{i} ON __rdl_a{i}.__rdl_id = s.__rdl_id "
                     f"AND __rdl_a{i}.__rdl_t = s.__rdl_t")
    query = plan.query
    sql = "WITH " + ",\n".join(ctes) + "\n"
    sql += f'SELECT s.__rdl_id AS id, s.__rdl_t AS "timestamp", {c.expr(query.target)} AS label\n'
    sql += f"FROM {_SEEDS} AS s\n" + "".join(j + "\n" for j in joins)
    if query.where is not None:
        sql += f"WHERE {c.expr(query.where)}\n"
    sql += "ORDER BY 2, 1"
    return sql, c.params


def history_sql(plan: ResolvedQuery) -> tuple[str, dict[str, object]]:
    r"""Compiles the rows a recommendation target's ``LIST_DISTINCT`` reads,
    at any time: the same table, link, item column and ``WHERE`` filter.

    An entity's past items at ``t`` are the rows with ``t_row <= t``, i.e.
    the target aggregate over the window ``(-inf, 0]``.

    Returns:
        ``(sql, params)`` of a ``SELECT`` with columns ``id`` (the entity
        key), ``item`` (the item key) and ``t`` (the row's time); rows with a
        missing id, item or time are left out.
    """
    target = plan.query.target
    assert isinstance(target, Aggregate) and target.func == "LIST_DISTINCT"
    c = _Compiler(plan)
    link, item = quote(plan.links[target]), quote(target.column)
    time = quote(plan.time_columns[target.table])
    conds = [f"r.{link} IS NOT NULL", f"r.{item} IS NOT NULL", f"r.{time} IS NOT NULL"]
    if target.filter is not None:
        conds.append(c.expr(target.filter, inner=True))
    sql = (f"SELECT r.{link} AS id, r.{item} AS item, r.{time} AS t\n"
           f"FROM {quote(target.table)} AS r\nWHERE {' AND '.join(conds)}")
    return sql, c.params
