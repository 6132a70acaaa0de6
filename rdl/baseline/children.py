r"""Aggregates over an entity's child rows (1 hop) and their parents (2 hops).

A label row with cutoff ``t`` sees the child rows with time in ``[t - w, t]``
for each window ``w`` (all time: ``<= t``). Two equivalent plans compute the
same numbers; the caller picks the cheaper one:

* ``"join"``: each label row joined with its entity's past child rows and
  grouped, one ``CASE`` per window and aggregate. Costs the number of
  (label row, past child row) pairs: cheap when entities have short
  histories or the task few timestamps.
* ``"window"``: DuckDB window functions (``RANGE`` frames in nanoseconds)
  over the child rows and the label rows together, partitioned by entity.
  Costs ``(child rows + label rows) * log`` whatever the number of
  timestamps, but about a hundred times more per row than the join per pair
  (see :obj:`rdl.baseline.features.JOIN_PAIRS_PER_ROW`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rdl.baseline.sql import DAY_NS, LABELS, TIME, Group, Select, ns, q, window_name
from rdl.db.table import Table

PLANS = ("join", "window")
_SQL = {"count": "count", "sum": "sum", "mean": "avg", "min": "min", "max": "max"}


@dataclass
class ChildRows:
    r"""What one children group reads and computes.

    Args:
        table: The child table.
        fk: Its foreign key to the entity.
        base: Feature name prefix, ``<child>.<fk>``.
        values: SQL expressions over the child row ``c`` and its joined
            parents, aggregated per window.
        joins: ``LEFT JOIN`` clauses attaching parents of the child row.
        aggs: ``(value index, aggregate, feature stem)``; the aggregate is
            ``sum``, ``mean``, ``min``, ``max`` or ``distinct``.
    """

    table: Table
    fk: str
    base: str
    values: list[str] = field(default_factory=list)
    joins: list[str] = field(default_factory=list)
    aggs: list[tuple[int, str, str]] = field(default_factory=list)

    def rows_sql(self, max_time: int) -> str:
        """The child rows linked to some label row, up to the latest cutoff."""
        fk = q(self.fk)
        values = "".join(f", {v} AS v{i}" for i, v in enumerate(self.values))
        return (f"SELECT c.{fk} AS __k, c.{TIME} AS __t, c.{TIME} AS __ct{values} "
                f"FROM {q(self.table.name)} c {' '.join(self.joins)} "
                f"WHERE c.{fk} IS NOT NULL AND c.{TIME} <= {max_time} "
                f"AND c.{fk} IN (SELECT __id FROM {LABELS})")


def timed_children(rows: ChildRows, windows: list[float | None], max_time: int,
                   plan: str) -> Group:
    """The children group of a timed child table, computed by :obj:`plan`."""
    if plan not in PLANS:
        raise ValueError(f"plan={plan!r} is not one of {PLANS}")
    child = rows.rows_sql(max_time)
    if plan == "join":
        def call(kind: str, value: str, w: float | None) -> str:
            # CASE, not FILTER: DuckDB runs hundreds of FILTER clauses far slower.
            inside = f"c.{value}" if w is None else \
                f"CASE WHEN c.__ct >= l.__t - {ns(w)} THEN c.{value} END"
            return _aggregate(kind, inside)

        sel = _select(rows, windows, call, "l.__t")
        sql = (f"WITH ev AS ({child}) SELECT {sel.sql()} FROM {LABELS} l "
               "LEFT JOIN ev c ON c.__k = l.__id AND c.__ct <= l.__t "
               "GROUP BY l.__row, l.__t ORDER BY __row")
    else:
        def call(kind: str, value: str, w: float | None) -> str:
            return f"{_aggregate(kind, value)} OVER {_frame(w)}"

        sel = _select(rows, windows, call, "__t")
        nulls = "".join(f", NULL AS v{i}" for i in range(len(rows.values)))
        frames = ", ".join(
            f"{_frame(w)} AS (PARTITION BY __k ORDER BY __t RANGE BETWEEN "
            f"{'UNBOUNDED' if w is None else ns(w)} PRECEDING AND CURRENT ROW)"
            for w in windows)
        sql = (f"WITH ev AS (SELECT *, NULL AS __row FROM ({child}) UNION ALL BY NAME "
               f"SELECT __id AS __k, __t, NULL AS __ct{nulls}, __row FROM {LABELS}) "
               f"SELECT {sel.sql()} FROM ev WINDOW {frames} "
               "QUALIFY __row IS NOT NULL ORDER BY __row")
    return Group(f"children {rows.base}", sql, sel.names)


def _select(rows: ChildRows, windows: list[float | None], call, cutoff: str) -> Select:
    """The group's features; ``call(kind, value, window)`` renders one aggregate."""
    sel = Select()
    for w in windows:
        wn = window_name(w)
        sel.add(call("count", "__ct", w), f"{rows.base}.count_{wn}")
        for i, kind, stem in rows.aggs:
            sel.add(call(kind, f"v{i}", w), f"{stem}_{wn}")
    sel.add(f"({cutoff} - {call('max', '__ct', None)}) / {DAY_NS}",
            f"{rows.base}.days_since_last")
    sel.add(f"({cutoff} - {call('min', '__ct', None)}) / {DAY_NS}",
            f"{rows.base}.days_since_first")
    return sel


def static_children(rows: ChildRows) -> Group:
    """The children group of a static child table: all rows, at any time."""
    sel, group = Select(), Group(f"children {rows.base}")
    aggs = ["count(*) AS n"]
    sel.add("coalesce(a.n, 0)", f"{rows.base}.count_all")
    for j, (i, kind, stem) in enumerate(rows.aggs):
        aggs.append(f"{_aggregate(kind, rows.values[i])} AS a{j}")
        sel.add(f"a.a{j}", f"{stem}_all")
    group.sql = (f"SELECT {sel.sql()} FROM {LABELS} l LEFT JOIN "
                 f"(SELECT c.{q(rows.fk)} AS __k, {', '.join(aggs)} FROM {q(rows.table.name)} c "
                 f"{' '.join(rows.joins)} WHERE c.{q(rows.fk)} IS NOT NULL GROUP BY 1) a "
                 "ON a.__k = l.__id ORDER BY __row")
    group.features = sel.names
    return group


def _aggregate(kind: str, value: str) -> str:
    """``count``, ``sum``, ``mean``, ``min``, ``max`` or ``distinct`` (count) of :obj:`value`."""
    if kind == "distinct":
        return f"count(DISTINCT {value})"
    return f"{_SQL[kind]}({value})"


def _frame(days: float | None) -> str:
    """Name of the window frame of :obj:`days` (``None``: all time)."""
    return "w_all" if days is None else f"w_{ns(days)}"
