r"""The predictive query language and its parser.

A query says what to predict, for which rows, at which moments::

    PREDICT <target> [RANK TOP <k>] FOR EACH <table>.<primary key> [WHERE <condition>]

Keywords are case-insensitive; table and column names are written as they are
in the database (double-quote names with spaces or odd characters:
``"order items"."unit price"``).

**Aggregates** look at rows of a table in a window relative to the prediction
time ``t``. ``AGG(table.column, start, end, unit)`` covers rows whose time lies
in ``(t + start, t + end]``; the unit is ``days``, ``hours``, ``months`` or
``years`` (calendar months and years: ``(t, t + 1 year]`` holds a whole year,
leap day included). The notes after ``#`` are not part of the syntax::

    COUNT(orders.*, 0, 30, days)          # orders with t < time <= t + 30 days
    COUNT(orders.*, -90, 0, days)         # the past 90 days, (t - 90d, t]
    COUNT(orders.amount, 0, 30, days)     # rows whose amount is not NULL
    SUM(orders.amount, 0, 1, months)      # SUM, AVG, MIN, MAX: numeric columns
    COUNT_DISTINCT(orders.product_id, 0, 7, days)
    EXISTS(orders.*, 0, 7, days)          # TRUE / FALSE
    LIST_DISTINCT(orders.product_id, 0, 7, days)   # list of referenced keys

An empty window gives ``COUNT`` 0, ``SUM`` 0, ``EXISTS`` FALSE and NULL for
``AVG``/``MIN``/``MAX``; rows whose label is NULL are dropped and counted.
The aggregated table needs a time column and a foreign key to the entity
table. When it has several (``flights.origin`` and ``flights.dest`` both point
at ``airports``), name one with ``VIA``; a ``WHERE`` inside the parentheses
keeps only the rows that meet a condition on that table's columns::

    COUNT(flights.* VIA dest, 0, 7, days)
    EXISTS(flights.* VIA tailnum WHERE flights.dest = 'ORD', 0, 30, days)

**Conditions** compare with ``= != <> < <= > >=``, test ``IS [NOT] NULL`` or
``[NOT] IN ('a', 'b')`` and combine with ``AND``, ``OR``, ``NOT`` and
parentheses. Literals are numbers, ``'single-quoted strings'`` (``''`` for a
quote), ``TRUE`` and ``FALSE``; they always reach the database as bound
parameters.

**Targets** and the task type they imply (override with ``task_type``):

* a condition, ``EXISTS`` or a boolean column: ``binary``, e.g. churn
  ``PREDICT COUNT(orders.*, 0, 30, days) = 0 FOR EACH customers.customer_id``;
* a numeric aggregate: ``regression``;
* ``LIST_DISTINCT(...) RANK TOP k``: ``recommendation``, e.g.
  ``PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP 12
  FOR EACH customers.customer_id``;
* a column of the entity table itself (event level, e.g. fraud)
  ``PREDICT transactions.is_fraud FOR EACH transactions.transaction_id``:
  ``binary``, ``multiclass`` (string / categorical column) or
  ``regression`` (numeric column). Each row is predicted at its own time.

**WHERE** keeps entities by static columns of the entity table
(``customers.age > 30``) and by aggregates over past windows (``end <= 0``).
A future window in ``WHERE`` is rejected as label leakage. Target windows
must lie in the future (``start >= 0``). For event-level targets, windows are
relative to each row's own time and ``WHERE`` may not use the target column.

When a label cannot be written in this language, a task can give raw SQL
instead (``sql:`` in :class:`~rdl.tasks.task.Task`): one ``SELECT`` returning
(entity id, label), with ``{start}`` and ``{end}`` bound as parameters.

There are no statements, semicolons or comments: anything that is not part of
this grammar is a :class:`~rdl.tasks.errors.QueryError` pointing at the
offending character.
"""
from __future__ import annotations

from rdl.tasks.errors import QueryError
from rdl.tasks.query.syntax import (
    AGGREGATES,
    COMPARISONS,
    UNITS,
    Aggregate,
    Column,
    Compare,
    Expr,
    InList,
    IsNull,
    Literal,
    Logical,
    Not,
    Query,
)
from rdl.tasks.query.tokens import Token, tokenize

# Deepest nesting of parentheses, NOT and WHERE inside aggregates: far beyond
# written queries, and far inside Python's recursion limit for every later pass.
MAX_DEPTH = 50


class _Parser:
    """Recursive-descent parser over the token list; one instance per query."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0
        self.depth = 0

    # Token helpers ---------------------------------------------------------
    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, ahead: int = 1) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def error(self, expected: str, tok: Token | None = None) -> QueryError:
        tok = tok or self.tok
        return QueryError(f"Expected {expected}, got {tok.describe()}", self.text, tok.pos)

    def is_kw(self, *words: str, tok: Token | None = None) -> bool:
        tok = tok or self.tok
        return tok.kind == "word" and tok.value.upper() in words

    def is_op(self, op: str) -> bool:
        return self.tok.kind == "op" and self.tok.value == op

    def take_kw(self, word: str, expected: str | None = None) -> Token:
        if not self.is_kw(word):
            raise self.error(expected or word)
        return self.advance()

    def take_op(self, op: str, expected: str | None = None) -> Token:
        if not self.is_op(op):
            raise self.error(expected or repr(op))
        return self.advance()

    def advance(self) -> Token:
        tok = self.tok
        self.i += 1
        return tok

    def deeper(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise QueryError(f"The query is nested too deeply (over {MAX_DEPTH} levels of "
                             "parentheses, NOT or WHERE); write it flatter", self.text, pos)

    def name(self, what: str) -> Token:
        if self.tok.kind not in ("word", "qword"):
            raise self.error(what)
        return self.advance()

    def integer(self, what: str) -> int:
        sign = -1 if self.is_op("-") else 1
        if sign < 0:
            self.advance()
        tok = self.tok
        if tok.kind != "number" or "." in tok.value:
            raise self.error(f"a whole number for {what}")
        self.advance()
        return sign * int(tok.value)

    # Grammar ---------------------------------------------------------------
    def query(self) -> Query:
        self.take_kw("PREDICT", "PREDICT at the start of the query")
        target = self.condition()
        top_k = None
        if self.is_kw("RANK"):
            self.advance()
            self.take_kw("TOP", "TOP after RANK (RANK TOP k)")
            top_k = self.integer("k in RANK TOP k")
        self.take_kw("FOR", "FOR EACH <table>.<primary key> after the target")
        self.take_kw("EACH", "EACH after FOR")
        table = self.name("the entity table name after FOR EACH")
        self.take_op(".", "'.' and the primary key after the entity table (table.column)")
        column = self.name("the entity table's primary key column")
        where = None
        if self.is_kw("WHERE"):
            self.advance()
            where = self.condition()
        if self.tok.kind != "end":
            raise self.error("WHERE or the end of the query")
        return Query(target, table.value, column.value, where, top_k, self.text, table.pos)

    def condition(self) -> Expr:
        self.deeper(self.tok.pos)
        expr = self._logical("OR", self._and)
        self.depth -= 1
        return expr

    def _and(self) -> Expr:
        return self._logical("AND", self._not)

    def _logical(self, op: str, operand) -> Expr:
        start = self.tok.pos
        parts = [operand()]
        while self.is_kw(op):
            self.advance()
            parts.append(operand())
        return parts[0] if len(parts) == 1 else Logical(op, tuple(parts), start)

    def _not(self) -> Expr:
        if self.is_kw("NOT"):
            pos = self.advance().pos
            self.deeper(pos)
            expr = Not(self._not(), pos)
            self.depth -= 1
            return expr
        return self._predicate()

    def _predicate(self) -> Expr:
        if self.is_op("("):
            self.advance()
            inner = self.condition()
            self.take_op(")", "')' to close the parenthesis")
            return inner
        left = self.operand()
        tok = self.tok
        if tok.kind == "op" and tok.value in COMPARISONS + ("<>",):
            self.advance()
            op = "!=" if tok.value == "<>" else tok.value
            return Compare(op, left, self.operand(), tok.pos)
        if self.is_kw("IS"):
            self.advance()
            negated = self.is_kw("NOT")
            if negated:
                self.advance()
            self.take_kw("NULL", "NULL after IS [NOT]")
            return IsNull(left, negated, tok.pos)
        if self.is_kw("IN") or (self.is_kw("NOT") and self.is_kw("IN", tok=self.peek())):
            negated = self.is_kw("NOT")
            self.i += 2 if negated else 1
            self.take_op("(", "'(' and a list of values after IN")
            values = [self.literal()]
            while self.is_op(","):
                self.advance()
                values.append(self.literal())
            self.take_op(")", "',' or ')' in the IN list")
            return InList(left, tuple(values), negated, tok.pos)
        return left

    def operand(self) -> Expr:
        tok = self.tok
        if tok.kind in ("number", "string") or self.is_op("-") or self.is_kw("TRUE", "FALSE"):
            return self.literal()
        if tok.kind == "word" and self.peek().kind == "op" and self.peek().value == "(":
            if tok.value.upper() in AGGREGATES:
                return self.aggregate()
            raise QueryError(
                f"Unknown aggregate {tok.value!r}; expected one of {list(AGGREGATES)}",
                self.text,
                tok.pos,
            )
        if tok.kind in ("word", "qword"):
            table = self.advance()
            hint = f"(table.column); text values go in single quotes: '{table.value}'"
            self.take_op(".", f"'.' and a column after {table.value!r} {hint}")
            if self.is_op("*"):
                raise self.error("a column name (table.* is only allowed inside an aggregate)")
            column = self.name(f"a column of {table.value!r}")
            return Column(table.value, column.value, table.pos)
        raise self.error("a column (table.column), an aggregate such as COUNT(...) or a value")

    def literal(self) -> Literal:
        tok = self.tok
        if self.is_kw("TRUE", "FALSE"):
            self.advance()
            return Literal(tok.value.upper() == "TRUE", tok.pos)
        if tok.kind == "string":
            self.advance()
            return Literal(tok.value, tok.pos)
        sign = -1 if self.is_op("-") else 1
        if sign < 0:
            self.advance()
        num = self.tok
        if num.kind != "number":
            raise self.error("a number, a 'quoted string', TRUE or FALSE")
        self.advance()
        value = float(num.value) if "." in num.value else int(num.value)
        return Literal(sign * value, tok.pos)

    def aggregate(self) -> Aggregate:
        func_tok = self.advance()
        func = func_tok.value.upper()
        self.take_op("(")
        table = self.name(f"table.column or table.* as the first argument of {func}")
        self.take_op(".", f"'.' after {table.value!r} (table.column or table.*)")
        column = None
        if self.is_op("*"):
            self.advance()
        else:
            column = self.name(f"a column of {table.value!r} or '*'").value
        via = None
        if self.is_kw("VIA"):
            self.advance()
            via = self.name("a foreign-key column after VIA").value
        filt = None
        if self.is_kw("WHERE"):
            self.advance()
            filt = self.condition()
        self.take_op(",", f"',' and the window start in {func}(table.col, start, end, unit)")
        start = self.integer("the window start")
        self.take_op(",", f"',' and the window end in {func}(table.col, start, end, unit)")
        end = self.integer("the window end")
        self.take_op(",", "',' and the unit (days, hours, months or years)")
        unit_tok = self.tok
        if unit_tok.kind != "word" or unit_tok.value.lower() not in UNITS:
            raise self.error("a unit: days, hours, months or years")
        self.advance()
        self.take_op(")", f"')' to close {func}(...)")
        unit = UNITS[unit_tok.value.lower()]
        return Aggregate(func, table.value, column, via, filt, start, end, unit, func_tok.pos)


def parse(text: str) -> Query:
    r"""Parses a predictive query into a :class:`~rdl.tasks.query.syntax.Query`.

    Only syntax is checked here; names and types are checked against a
    database by :func:`rdl.tasks.query.resolve.plan`.

    Args:
        text (str): The query, e.g.
            ``"PREDICT COUNT(orders.*, 0, 30, days) FOR EACH customers.id"``.

    Raises:
        QueryError: With the query, a caret under the offending token and
            what was expected there.
    """
    if not isinstance(text, str) or not text.strip():
        raise QueryError("The query is empty; expected PREDICT ... FOR EACH ...",
                         str(text or ""), 0)
    return _Parser(text).query()
