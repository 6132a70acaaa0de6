"""SQLite's and MySQL/MariaDB's fast path: a SELECT run on a cursor of the
connection's own DBAPI connection, its row tuples turned into Arrow columns
without SQLAlchemy's per-row objects, which cost about as much as the
driver's own fetching. SQLAlchemy's rows (the generic path) are turned into
columns by the same code, so both paths give identical tables."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import sqlalchemy as sa

# Drivers whose cursors this path knows (PyMySQL's unbuffered SSCursor streams
# rows from the server); any other takes SQLAlchemy's row path.
_DRIVERS = {"sqlite": ("pysqlite",), "mysql": ("pymysql",), "mariadb": ("pymysql",)}

# Rows transposed at a time: zip(*rows) over a whole chunk of rows touches each
# row tuple once per column, far apart in memory, and runs about four times slower.
_BLOCK = 256


def has_dbapi_path(conn: sa.Connection) -> bool:
    """Whether :func:`dbapi_cursor` knows the dialect and driver of ``conn``."""
    return conn.dialect.driver in _DRIVERS.get(conn.dialect.name, ())


@contextmanager
def dbapi_cursor(conn: sa.Connection, query: sa.Select) -> Iterator[Any]:
    """A cursor of ``conn``'s own DBAPI connection (its session, read-only
    settings and transaction) on which ``query`` has run, closed afterwards.

    The query's values (rdl's own limits and time bounds, never user text)
    are rendered as SQL literals. It runs through SQLAlchemy's cursor
    execution, so its event listeners see the statement and its errors are
    wrapped as usual; a connection lost while rows are fetched is
    invalidated, as SQLAlchemy does on its own path.
    """
    dialect = conn.dialect
    dbapi_conn = conn.connection.dbapi_connection
    streaming = dialect.name != "sqlite"  # sqlite3 steps through rows as they are fetched
    cursor = (dbapi_conn.cursor(dialect.loaded_dbapi.cursors.SSCursor) if streaming
              else dbapi_conn.cursor())
    statement = str(query.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
    try:
        # SQLAlchemy's own way to run a statement on a cursor it did not make
        # (private; SQLAlchemy is pinned). No parameters, but an empty set of
        # them, so that PyMySQL turns the '%%' written for '%' in names back.
        conn._cursor_execute(cursor, statement, () if dialect.positional else {})
        yield cursor
    except dialect.loaded_dbapi.Error as exc:
        if dialect.is_disconnect(exc, dbapi_conn, cursor):
            forget_unread_rows(cursor)
            conn.invalidate()
        raise
    finally:
        cursor.close()


def rows_to_table(chunks: Iterable[Sequence[Sequence]], columns: list[dict]) -> pa.Table:
    """The Arrow table of ``columns`` (reflected SQL columns) from chunks of
    rows, each chunk typed on its own and the chunks promoted to one type."""
    names = [c["name"] for c in columns]
    types = [_arrow_type(c["type"]) for c in columns]
    bits = [getattr(c["type"], "__visit_name__", "") == "BIT" for c in columns]
    batches = [_rows_to_arrow(rows, names, types, bits) for rows in chunks]
    if not batches:  # no values to infer from: the declared types
        return pa.schema([(c["name"], _declared_type(c["type"])) for c in columns]).empty_table()
    try:
        return pa.concat_tables(batches, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return _concat_as_text(batches)


def _concat_as_text(batches: list[pa.Table]) -> pa.Table:
    """The chunks as one table, where a column whose chunks Arrow cannot
    promote to one type (numbers in one, text in a later one, as SQLite
    allows) becomes text throughout, as if all its rows had come in one chunk."""
    columns = []
    for i in range(batches[0].num_columns):
        parts = [b.select([i]) for b in batches]
        try:
            columns.append(pa.concat_tables(parts, promote_options="permissive").column(0))
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            columns.append(pa.chunked_array(
                [[None if v is None else str(v) for v in p.column(0).to_pylist()] for p in parts],
                pa.string()))
    return pa.Table.from_arrays(columns, names=batches[0].column_names)


def forget_unread_rows(cursor: Any) -> None:
    """Tells PyMySQL's streaming cursor of a dropped connection that no rows
    are left: it would otherwise try to read them from the closed socket when
    it is freed, and print a traceback long after rdl has reported the error."""
    pending = getattr(cursor, "_result", None)
    if getattr(pending, "unbuffered_active", False):
        pending.unbuffered_active = False


def _rows_to_arrow(rows: Sequence[Sequence], names: list[str],
                   types: list[pa.DataType | None], bits: list[bool]) -> pa.Table:
    """One chunk of rows as Arrow; a MySQL ``BIT(n)`` column, whose values
    the driver gives as bytes, as the whole numbers they spell (``BIT(1)``
    is MySQL's usual flag)."""
    arrays = []
    for values, arrow_type, bit in zip(_transpose(rows, len(names)), types, bits):
        if bit:
            values = [int.from_bytes(v, "big") if isinstance(v, (bytes, bytearray)) else v
                      for v in values]
            arrow_type = pa.int64()
        first = next((v for v in values if v is not None), None)
        if isinstance(first, (bytes, bytearray, memoryview)):
            arrow_type = None  # binary content whatever the declared type
        try:
            arrays.append(pa.array(values, type=arrow_type, from_pandas=True))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            arrays.append(pa.array([None if v is None else str(v) for v in values]))
    return pa.Table.from_arrays(arrays, names=names)


def _transpose(rows: Sequence[Sequence], width: int) -> list[list]:
    """The columns of ``rows``, transposed :data:`_BLOCK` rows at a time."""
    columns: list[list] = [[] for _ in range(width)]
    for start in range(0, len(rows), _BLOCK):
        for column, values in zip(columns, zip(*rows[start:start + _BLOCK])):
            column.extend(values)
    return columns


def _declared_type(sql_type: sa.types.TypeEngine) -> pa.DataType:
    """The Arrow type of an empty column declared ``sql_type`` (``null`` for
    types rdl does not map)."""
    if isinstance(sql_type, (sa.Float, sa.Numeric)):
        return pa.float64()
    if isinstance(sql_type, sa.DateTime):
        return pa.timestamp("us", tz="UTC" if sql_type.timezone else None)
    return _arrow_type(sql_type) or pa.null()


def _arrow_type(sql_type: sa.types.TypeEngine) -> pa.DataType | None:
    """Arrow type for simple SQL types; ``None`` lets Arrow infer it."""
    if isinstance(sql_type, sa.Boolean):
        return pa.bool_()
    if isinstance(sql_type, sa.Integer):
        return pa.int64()
    if isinstance(sql_type, (sa.Float, sa.Numeric)):
        return None  # Decimal values: inferred, then cast to float64
    if isinstance(sql_type, sa.DateTime):
        return None  # may carry a time zone; Arrow keeps it
    if isinstance(sql_type, sa.Date):
        return pa.date32()
    if isinstance(sql_type, sa.String):
        return pa.string()
    return None
