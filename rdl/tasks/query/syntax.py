"""Syntax tree of a predictive query, as produced by :mod:`rdl.tasks.query.parser`.

Nodes are frozen dataclasses so that identical aggregates compare equal and
can share one sub-query. The ``pos`` field (offset of the node in the query
text, for error messages) is excluded from comparisons for that reason.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

AGGREGATES = (
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "COUNT_DISTINCT",
    "EXISTS",
    "LIST_DISTINCT",
)
UNITS = {
    "day": "days",
    "days": "days",
    "hour": "hours",
    "hours": "hours",
    "month": "months",
    "months": "months",
    "year": "years",
    "years": "years",
}
COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True)
class Column:
    """A column of a table, written ``table.column``."""

    table: str
    column: str
    pos: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return f"{self.table}.{self.column}"


@dataclass(frozen=True)
class Literal:
    """A number, a single-quoted string, ``TRUE`` or ``FALSE``."""

    value: int | float | str | bool
    pos: int = field(default=0, compare=False)

    def __str__(self) -> str:
        if isinstance(self.value, bool):
            return str(self.value).upper()
        if isinstance(self.value, str):
            return "'" + self.value.replace("'", "''") + "'"
        return repr(self.value)


@dataclass(frozen=True)
class Aggregate:
    r"""An aggregate over rows of :obj:`table` in the window ``(t+start, t+end]``.

    Args:
        func: One of :obj:`AGGREGATES`.
        table: Table whose rows are aggregated.
        column: Aggregated column, or ``None`` for ``table.*``.
        via: Foreign-key column of :obj:`table` that links rows to the
            entity, or ``None`` to pick the only one.
        filter: Condition on :obj:`table`'s columns a row must meet.
        start: Window start, in :obj:`unit`, relative to prediction time.
        end: Window end, in :obj:`unit`, relative to prediction time.
        unit: ``"days"``, ``"hours"``, ``"months"`` or ``"years"``.
    """

    func: str
    table: str
    column: str | None
    via: str | None
    filter: Expr | None
    start: int
    end: int
    unit: str
    pos: int = field(default=0, compare=False)

    def __str__(self) -> str:
        src = f"{self.table}.{self.column or '*'}"
        if self.via:
            src += f" VIA {self.via}"
        if self.filter is not None:
            src += f" WHERE {self.filter}"
        return f"{self.func}({src}, {self.start}, {self.end}, {self.unit})"


@dataclass(frozen=True)
class Compare:
    """``left op right`` with ``op`` one of :obj:`COMPARISONS`."""

    op: str
    left: Expr
    right: Expr
    pos: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


@dataclass(frozen=True)
class IsNull:
    """``operand IS [NOT] NULL``."""

    operand: Expr
    negated: bool
    pos: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return f"{self.operand} IS {'NOT ' if self.negated else ''}NULL"


@dataclass(frozen=True)
class InList:
    """``operand [NOT] IN (literal, ...)``."""

    operand: Expr
    values: tuple[Literal, ...]
    negated: bool
    pos: int = field(default=0, compare=False)

    def __str__(self) -> str:
        values = ", ".join(str(v) for v in self.values)
        return f"{self.operand} {'NOT ' if self.negated else ''}IN ({values})"


@dataclass(frozen=True)
class Logical:
    """``AND`` or ``OR`` over two or more operands."""

    op: str
    operands: tuple[Expr, ...]
    pos: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return "(" + f" {self.op} ".join(str(o) for o in self.operands) + ")"


@dataclass(frozen=True)
class Not:
    """``NOT operand``."""

    operand: Expr
    pos: int = field(default=0, compare=False)

    def __str__(self) -> str:
        return f"NOT {self.operand}"


Expr = Column | Literal | Aggregate | Compare | IsNull | InList | Logical | Not


@dataclass(frozen=True)
class Query:
    r"""A parsed ``PREDICT ... FOR EACH ... [WHERE ...]`` query.

    Args:
        target: What to predict.
        table: Entity table.
        column: Entity table's primary key as written in the query.
        where: Entity filter, or ``None``.
        top_k: ``k`` of ``RANK TOP k`` (recommendation), or ``None``.
        text: The query text, for error messages.
    """

    target: Expr
    table: str
    column: str
    where: Expr | None
    top_k: int | None
    text: str = field(default="", compare=False)
    entity_pos: int = field(default=0, compare=False)

    def __str__(self) -> str:
        rank = f" RANK TOP {self.top_k}" if self.top_k is not None else ""
        where = f" WHERE {self.where}" if self.where is not None else ""
        return f"PREDICT {self.target}{rank} FOR EACH {self.table}.{self.column}{where}"


def children(node: Expr) -> tuple[Expr, ...]:
    """Direct sub-expressions of :obj:`node`, not entering aggregate filters."""
    if isinstance(node, Compare):
        return (node.left, node.right)
    if isinstance(node, (IsNull, InList, Not)):
        return (node.operand,)
    if isinstance(node, Logical):
        return node.operands
    return ()


def walk(node: Expr | None) -> Iterator[Expr]:
    """Yields :obj:`node` and all its sub-expressions (filters excluded)."""
    if node is None:
        return
    yield node
    for child in children(node):
        yield from walk(child)


def aggregates(node: Expr | None) -> list[Aggregate]:
    """Distinct aggregates in :obj:`node`, in order of appearance."""
    found: list[Aggregate] = []
    for n in walk(node):
        if isinstance(n, Aggregate) and n not in found:
            found.append(n)
    return found


def columns(node: Expr | None) -> list[Column]:
    """Column references in :obj:`node`, outside aggregates."""
    return [n for n in walk(node) if isinstance(n, Column)]
