"""A locked-down, throw-away DuckDB connection over the in-memory tables.

Labels are always computed here, never on the user's own database server:
each :class:`~rdl.db.table.Table`'s DataFrame is registered as a read-only
view under its table name. The connection has file system and extension
access switched off and its configuration locked, so even a ``SELECT`` cannot
read files or load code.
"""
from __future__ import annotations

import duckdb
import pandas as pd

from rdl.db.database import Database
from rdl.tasks.errors import TaskError

_CONFIG = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "lock_configuration": True,
}
RESERVED_PREFIX = "__rdl_"


def open_connection(db: Database, extra: dict[str, pd.DataFrame] | None = None,
                    ) -> duckdb.DuckDBPyConnection:
    r"""Opens an in-memory DuckDB connection with :obj:`db`'s tables as views.

    Args:
        db (Database): Tables to expose, each under its own name.
        extra (dict, optional): More DataFrames to expose (e.g. timestamps);
            their names must start with ``__rdl_``. (default: :obj:`None`)
    """
    for name in db.tables:
        if name.startswith(RESERVED_PREFIX):
            raise TaskError(
                f"Table name {name!r} starts with {RESERVED_PREFIX!r}, which rdl reserves for "
                "its own views; rename the table"
            )
    con = duckdb.connect(":memory:", config=dict(_CONFIG))
    for name, table in db.tables.items():
        con.register(name, table.df)
    for name, df in (extra or {}).items():
        assert name.startswith(RESERVED_PREFIX)
        con.register(name, df)
    return con


def run(con: duckdb.DuckDBPyConnection, sql: str,
        params: dict | list | None = None) -> pd.DataFrame:
    """Runs one statement and returns its result, turning DuckDB errors into :class:`TaskError`."""
    try:
        return con.execute(sql, params or {}).df()
    except duckdb.Error as exc:
        raise TaskError(f"DuckDB could not compute the labels: {exc}") from None


def check_select(sql: str) -> None:
    r"""Accepts exactly one ``SELECT`` statement and rejects everything else.

    Uses DuckDB's own parser (:func:`duckdb.extract_statements`), so comments,
    quoting and ``;`` inside strings are judged the way DuckDB would run them.

    Raises:
        TaskError: For several statements, a non-``SELECT`` statement or SQL
            that does not parse.
    """
    if not isinstance(sql, str) or not sql.strip():
        raise TaskError("sql is empty; write one SELECT statement returning (entity id, label)")
    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise TaskError(f"sql does not parse: {exc}") from None
    if len(statements) != 1:
        raise TaskError(
            f"sql holds {len(statements)} statements; only one SELECT statement is accepted "
            "(remove the ';' and anything after it)"
        )
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise TaskError(
            f"sql is a {kind.name} statement; only SELECT statements are accepted, the database "
            "is never modified"
        )
