r"""Pieces every feature query shares: names, quoting, windows and the query shape.

Each feature group is one DuckDB query over the registered label table
``__rdl_labels (__row, __id, __t)`` (label row id, entity key, cutoff in
epoch nanoseconds) and the registered tables, each with ``__rdl_time`` (its
row time in epoch nanoseconds) when it has a time column. A query returns
``__row, f0, f1, ...``: one row per label row, ordered by ``__row``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from rdl.db.table import Table

DAY_NS = 86_400 * 10**9
LABELS = "__rdl_labels"
TIME = "__rdl_time"


def hide_progress_bar(con: duckdb.DuckDBPyConnection) -> None:
    """Keeps DuckDB's progress bar off the terminal. In Jupyter without
    ipywidgets DuckDB refuses to change the setting (it cannot draw a bar
    there anyway), so the refusal is not an error."""
    try:
        con.execute("SET enable_progress_bar = false")
    except duckdb.InvalidInputException:
        pass


def q(name: str) -> str:
    """``name`` as a quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def visible_row(table: Table, alias: str, key: str) -> str:
    r"""``LEFT JOIN`` of :obj:`table` as :obj:`alias` on its primary key =
    :obj:`key`, keeping the row only if it exists at the label row's cutoff
    ``l.__t`` (static tables: always)."""
    when = f" AND {alias}.{TIME} <= l.__t" if table.time_column else ""
    return f"LEFT JOIN {q(table.name)} {alias} ON {alias}.{q(table.primary_key)} = {key}{when}"


def ns(days: float) -> int:
    """A window length in days as whole nanoseconds."""
    return int(round(days * DAY_NS))


def window_name(days: float | None) -> str:
    """``7d``, ``0.5d`` or ``all`` (``None``: all time up to the cutoff)."""
    return "all" if days is None else f"{days:g}d"


@dataclass(frozen=True)
class Visible:
    """Feature columns of one table that a model may see, by kind."""

    numerical: tuple[str, ...] = ()
    categorical: tuple[str, ...] = ()
    timestamp: tuple[str, ...] = ()


@dataclass
class Group:
    r"""One feature group: its query and the names of its output columns.

    Args:
        name: What the group is, for timings and messages.
        sql: The query (``__row, f0, f1, ...`` ordered by ``__row``).
        features: Feature name of ``f0, f1, ...``.
        categories: Categorical feature name -> ``(table, column)`` it
            copies, whose values give the categories.
    """

    name: str
    sql: str = ""
    features: list[str] = field(default_factory=list)
    categories: dict[str, tuple[str, str]] = field(default_factory=dict)


class Select:
    """Collects ``expr AS fN`` items and their feature names."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.names: list[str] = []

    def add(self, expr: str, name: str) -> None:
        self.items.append(f"{expr} AS f{len(self.items)}")
        self.names.append(name)

    def sql(self) -> str:
        return ", ".join(["__row", *self.items])
