"""Reads a live SQL database (SQLite, PostgreSQL, MySQL/MariaDB) via SQLAlchemy.

Keys come from SQLAlchemy's inspector. PostgreSQL tables of plain column
types are read with COPY into Arrow's CSV reader; otherwise rows are streamed
in chunks with a server-side cursor where the driver has one and turned into
Arrow chunk by chunk, so peak memory stays near the size of the result. On
SQLite and MySQL/MariaDB (PyMySQL) the chunks come straight from the driver's
cursor (:mod:`rdl.db.dbapi_read`), elsewhere as SQLAlchemy rows. Connections are
opened read-only wherever the driver allows it, and rdl never writes.
"""
from __future__ import annotations

import importlib.util
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import MONEY, TSVECTOR

from rdl.db.dbapi_read import dbapi_cursor, forget_unread_rows, has_dbapi_path, rows_to_table
from rdl.db.issues import DataIssue, SourceError, relative_path_note, view_issues
from rdl.db.postgres_children import read_through_parents
from rdl.db.postgres_copy import fetch_with_copy
from rdl.db.raw import TableInfo, TimeBound
from rdl.db.schema import ForeignKey

# Driver module to try, and the package to install, for URLs without a driver.
_DEFAULT_DRIVERS = {
    "postgresql": [("psycopg", "psycopg", "psycopg[binary]"),
                   ("psycopg2", "psycopg2", "psycopg2-binary")],
    "mysql": [("pymysql", "pymysql", "pymysql"), ("mysqldb", "MySQLdb", "mysqlclient")],
    "mariadb": [("pymysql", "pymysql", "pymysql"), ("mysqldb", "MySQLdb", "mysqlclient")],
}


def create_readonly_engine(url: str | sa.URL) -> sa.Engine:
    """Creates an engine whose connections refuse writes where possible."""
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        raise SourceError(
            f"{url!r} is neither a database URL (like postgresql://user@host/db) "
            "nor an existing folder or database file."
        ) from None
    parsed = with_available_driver(parsed)
    backend = parsed.get_backend_name()
    kwargs: dict = {}
    if backend == "sqlite":
        path = parsed.database
        if not path or path == ":memory:":
            raise SourceError("An in-memory SQLite URL has no tables to read; give a file path.")
        if not Path(path).is_file():
            raise SourceError(f"No SQLite database file at {path!r} (unable to open database "
                              f"file); check the path{relative_path_note(path)}. rdl never "
                              "creates one.")
        import sqlite3

        # A quoted file: URI, so that '#', '?' and '%' in the path stay part of it.
        uri = f"{Path(path).absolute().as_uri()}?mode=ro"

        def creator() -> sqlite3.Connection:
            return sqlite3.connect(uri, uri=True)

        kwargs["creator"] = creator
    elif backend == "postgresql" and parsed.get_driver_name() in ("psycopg", "psycopg2"):
        kwargs["connect_args"] = {"options": "-c default_transaction_read_only=on"}
    try:
        engine = sa.create_engine(parsed, **kwargs)
    except (sa.exc.NoSuchModuleError, ModuleNotFoundError) as exc:
        raise SourceError(
            f"No driver for {parsed.drivername!r} is installed ({exc}). "
            f"Install one, e.g. `pip install {_install_hint(backend)}`."
        ) from None
    if backend in ("mysql", "mariadb"):
        @sa.event.listens_for(engine, "connect")
        def _read_only(dbapi_conn, _record) -> None:
            with dbapi_conn.cursor() as cur:
                cur.execute("SET SESSION TRANSACTION READ ONLY")
    return engine


def with_available_driver(url: sa.URL) -> sa.URL:
    backend = url.get_backend_name()
    if "+" in url.drivername or backend not in _DEFAULT_DRIVERS:
        return url
    for driver, module, _ in _DEFAULT_DRIVERS[backend]:
        if importlib.util.find_spec(module) is not None:
            return url.set(drivername=f"{backend}+{driver}")
    return url


def _install_hint(backend: str) -> str:
    options = _DEFAULT_DRIVERS.get(backend)
    return options[0][2] if options else f"<a SQLAlchemy driver for {backend}>"


class SQLSource:
    r"""The tables of a live SQL database (one schema of it), read through one
    read-only connection.

    Reads select only the columns asked for. On PostgreSQL and MariaDB/MySQL a
    time filter runs in the ``WHERE`` clause for ``TIMESTAMP``/``DATETIME``
    (MySQL's session-zoned ``TIMESTAMP`` excepted), ``DATE`` and integer
    columns; SQLite enforces no column types, so its rows are cut after
    reading.

    Args:
        url (str or sqlalchemy.URL): SQLAlchemy URL.
        sql_schema (str, optional): Schema (namespace) to read.
            (default: the connection's default)
        chunk_rows (int): Rows per fetch (all but PostgreSQL's COPY path).
            (default: :obj:`65536`)
    """

    def __init__(self, url: str | sa.URL, sql_schema: str | None = None,
                 chunk_rows: int = 65_536) -> None:
        self.engine = create_readonly_engine(url)
        self.shown = self.engine.url.render_as_string(hide_password=True)
        self.sql_schema = sql_schema
        self.chunk_rows = chunk_rows
        self.issues: list[DataIssue] = []
        self._columns: dict[str, list[dict]] = {}
        # What a failing query raises: SQLAlchemy's wrapped errors, and the
        # driver's own from the COPY path, which uses the driver directly.
        self._failures = (sa.exc.DBAPIError, self.engine.dialect.loaded_dbapi.Error)
        try:
            self.conn = self.engine.connect()
        except sa.exc.OperationalError as exc:
            self.engine.dispose()
            raise self._error(exc) from None

    def tables(self) -> list[TableInfo]:
        try:
            inspector = sa.inspect(self.conn)
            children = self._read_through_parents()
            infos = [self._reflect(inspector, name)
                     for name in inspector.get_table_names(schema=self.sql_schema)
                     if name not in children]
            views = inspector.get_view_names(schema=self.sql_schema)
            if self.conn.dialect.name == "postgresql":
                views += inspector.get_materialized_view_names(schema=self.sql_schema)
            self.issues.extend(view_issues(views))
        except self._failures as exc:
            raise self._error(exc) from None
        if not infos:
            where = f"schema {self.sql_schema!r} of " if self.sql_schema else ""
            raise SourceError(f"No tables found in {where}{self.shown}.")
        return infos

    def read(self, info: TableInfo, columns: list[str], bound: TimeBound | None = None,
             limit: int | None = None) -> pa.Table:
        wanted = [c for c in self._columns[info.name] if c["name"] in columns]
        unread = {c["name"]: why for c in wanted if (why := _why_not_a_feature(c["type"]))}
        readable = [c for c in wanted if c["name"] not in unread]
        table = sa.table(info.name, *[sa.column(c["name"]) for c in readable],
                         schema=self.sql_schema)
        if self.conn.dialect.name == "postgresql":
            query = sa.select(*[_postgres_readable(table.c[c["name"]], c["type"])
                                for c in readable])
        else:
            query = sa.select(*table.columns)
        if bound is not None:
            column = sa.column(bound.column)
            value = sa.literal(bound.value.as_py(), _sql_type(bound.value.type))
            query = query.where(sa.or_(column <= value, column.is_(None)))
        if limit is not None:
            query = query.limit(limit)
        try:
            data = None
            if self.conn.dialect.name == "postgresql" and limit is None:
                data = fetch_with_copy(self.conn, query, readable)
            elif has_dbapi_path(self.conn):
                data = _fetch_dbapi(self.conn, query, readable, self.chunk_rows)
            if data is None:
                data = _fetch_arrow(self.conn, query, readable, self.chunk_rows)
        except self._failures as exc:
            raise self._error(exc, info.name) from None
        if limit is None:
            self.issues.extend(
                DataIssue("unsupported_column", info.name, name, data.num_rows,
                          "column dropped", why)
                for name, why in unread.items()
            )
        return data

    def close(self) -> None:
        try:
            self.conn.close()
        except self._failures:
            pass  # the connection dropped: nothing is left to release on it
        finally:
            self.engine.dispose()

    def _read_through_parents(self) -> set[str]:
        """PostgreSQL tables read through a parent (partitions, inheriting
        tables), reported; none elsewhere."""
        if self.conn.dialect.name != "postgresql":
            return set()
        children, issues = read_through_parents(self.conn, self.sql_schema)
        self.issues.extend(issues)
        return children

    def _reflect(self, inspector: sa.Inspector, name: str) -> TableInfo:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", sa.exc.SAWarning)
            columns = inspector.get_columns(name, schema=self.sql_schema)
        unknown = _unrecognized_types(caught)
        self._columns[name] = columns
        pk_constraint = inspector.get_pk_constraint(name, schema=self.sql_schema)
        pk = tuple(pk_constraint["constrained_columns"] or ())
        fks = [
            ForeignKey(
                tuple(fk["constrained_columns"]),
                _referred_table(fk, self.sql_schema),
                tuple(fk["referred_columns"]) if fk.get("referred_columns") else None,
            )
            for fk in inspector.get_foreign_keys(name, schema=self.sql_schema)
        ]
        dialect = self.conn.dialect.name
        comparable = {c["name"]: _comparable(dialect, c["type"]) for c in columns}
        return TableInfo(
            name, [c["name"] for c in columns], pk, fks,
            source_types={c["name"]: unknown.get(c["name"], str(c["type"])) for c in columns},
            comparable={c: t for c, t in comparable.items() if t is not None},
        )

    def _error(self, exc: Exception, table: str | None = None) -> SourceError:
        """One line naming the source, the table being read and the driver's
        reason, instead of the driver's traceback; a dropped connection is
        called lost, as rdl kept nothing of the tables read before it."""
        orig = getattr(exc, "orig", None) or exc
        reason = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
        if table is None:
            return SourceError(f"Could not read {self.shown}: {reason}")
        if self._lost(exc):
            reason = (f"the connection to the server was lost: {reason}. Nothing was kept; "
                      "run again once the server is reachable.")
        return SourceError(f"Could not read table {table!r} of {self.shown}: {reason}")

    def _lost(self, exc: Exception) -> bool:
        """Whether ``exc`` came from a connection that is gone."""
        if getattr(exc, "connection_invalidated", False) or self.conn.invalidated:
            return True
        try:
            dbapi_conn = self.conn.connection.dbapi_connection
        except sa.exc.SQLAlchemyError:  # no connection left to ask
            return True
        cause = getattr(exc, "orig", None) or exc
        return self.engine.dialect.is_disconnect(cause, dbapi_conn, None)


def _comparable(dialect: str, sql_type: sa.types.TypeEngine) -> pa.DataType | None:
    """The Arrow type a time filter on this column compares in, or ``None``.

    Timestamps compare at whole seconds, which every server's ``DATETIME``
    holds exactly; SQLite and MySQL's ``TIMESTAMP`` (shown in the session's
    time zone) are never filtered.
    """
    if dialect not in ("postgresql", "mysql", "mariadb"):
        return None
    if isinstance(sql_type, sa.DateTime):
        if dialect != "postgresql" and isinstance(sql_type, sa.TIMESTAMP):
            return None
        return pa.timestamp("s", tz="UTC" if sql_type.timezone else None)
    if isinstance(sql_type, sa.Date):
        return pa.date32()
    if isinstance(sql_type, sa.Integer):
        return pa.int64()
    return None


def _sql_type(arrow_type: pa.DataType) -> sa.types.TypeEngine:
    if pa.types.is_timestamp(arrow_type):
        return sa.DateTime(timezone=arrow_type.tz is not None)
    if pa.types.is_date(arrow_type):
        return sa.Date()
    return sa.BigInteger()


def _referred_table(fk: dict, sql_schema: str | None) -> str:
    """The parent of a reflected foreign key, schema-qualified when it lives
    in a schema other than the one read (so that a table of the same name
    here is not taken for it; the key is then reported, not followed)."""
    schema = fk.get("referred_schema")
    if schema is None or schema == sql_schema:
        return fk["referred_table"]
    return f"{schema}.{fk['referred_table']}"


_UNRECOGNIZED = re.compile(r"Did not recognize type '(.+)' of column '(.+)'")


def _unrecognized_types(caught: list[warnings.WarningMessage]) -> dict[str, str]:
    """Column -> SQL type name, from SQLAlchemy's warnings about types it
    does not know (PostGIS or MySQL ``geometry``); those columns are read as
    the driver gives them and reported by that name, the other warnings
    passed on."""
    found = {}
    for warning in caught:
        match = _UNRECOGNIZED.search(str(warning.message))
        if match:
            found[match.group(2)] = match.group(1)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename,
                                   warning.lineno)
    return found


def _why_not_a_feature(sql_type: sa.types.TypeEngine) -> str | None:
    """Why a column of ``sql_type`` is not read (binary data, a search index),
    or ``None`` for a column that is."""
    if isinstance(sql_type, sa.types._Binary):
        return f"binary column (type {sql_type}) cannot be a feature"
    if isinstance(sql_type, TSVECTOR):
        return ("a full-text search index (type TSVECTOR), stemmed words and their positions, "
                "is not a feature")
    return None


def _postgres_readable(column: sa.ColumnClause, sql_type: sa.types.TypeEngine
                       ) -> sa.ColumnElement:
    """A PostgreSQL column as rdl reads it: ``money`` as a number (its text,
    ``$4.99``, depends on the server's locale), and a date or timestamp with
    ``infinity`` as 9999-12-31 and ``-infinity`` as 0001-01-01, which no
    driver rejects and which, outside what a time can hold, become NULL and
    are counted (an open end of a validity range, as 9999-12-31 is elsewhere)."""
    if isinstance(sql_type, MONEY):
        return sa.cast(column, sa.Numeric()).label(column.name)
    if not isinstance(sql_type, (sa.Date, sa.DateTime)):
        return column
    kind = "DATE" if isinstance(sql_type, sa.Date) else (
        "TIMESTAMPTZ" if sql_type.timezone else "TIMESTAMP")
    return sa.type_coerce(sa.case(
        (column == sa.literal_column("'infinity'"), sa.literal_column(f"{kind} '9999-12-31'")),
        (column == sa.literal_column("'-infinity'"), sa.literal_column(f"{kind} '0001-01-01'")),
        else_=column), sql_type).label(column.name)


def _fetch_dbapi(
    conn: sa.Connection, query: sa.Select, columns: list[dict], chunk_rows: int
) -> pa.Table:
    """What :func:`_fetch_arrow` returns, read straight from the DBAPI cursor
    without SQLAlchemy's row objects (see :func:`has_dbapi_path`)."""
    with dbapi_cursor(conn, query) as cursor:
        return rows_to_table(_partitions(cursor, chunk_rows), columns)


def _fetch_arrow(
    conn: sa.Connection, query: sa.Select, columns: list[dict], chunk_rows: int
) -> pa.Table:
    result = conn.execution_options(stream_results=True, yield_per=chunk_rows).execute(query)
    cursor = result.cursor
    try:
        return rows_to_table(_partitions(result, chunk_rows), columns)
    except sa.exc.DBAPIError as exc:
        if exc.connection_invalidated:
            forget_unread_rows(cursor)
        raise


def _partitions(rows: Any, size: int) -> Iterator[list]:
    """Chunks of ``size`` rows of a SQLAlchemy result or a DBAPI cursor."""
    while chunk := rows.fetchmany(size):
        yield chunk
