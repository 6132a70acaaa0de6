"""Reads a live SQL database (SQLite, PostgreSQL, MySQL/MariaDB) via SQLAlchemy.

Keys come from SQLAlchemy's inspector. PostgreSQL tables of plain column
types are read with COPY into Arrow's CSV reader; otherwise rows are streamed
in chunks with a server-side cursor where the driver has one and turned into
Arrow chunk by chunk, so peak memory stays near the size of the result. Connections are
opened read-only wherever the driver allows it, and rdl never writes.
"""
from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pyarrow as pa
import sqlalchemy as sa

from rdl.db.issues import DataIssue, SourceError
from rdl.db.postgres_copy import fetch_with_copy
from rdl.db.raw import RawTable
from rdl.db.schema import ForeignKey

# Driver module to try, and the package to install, for URLs without a driver.
_DEFAULT_DRIVERS = {
    "postgresql": [("psycopg", "psycopg", "psycopg[binary]"), ("psycopg2", "psycopg2", "psycopg2-binary")],
    "mysql": [("pymysql", "pymysql", "pymysql"), ("mysqldb", "MySQLdb", "mysqlclient")],
    "mariadb": [("pymysql", "pymysql", "pymysql"), ("mysqldb", "MySQLdb", "mysqlclient")],
}


def create_readonly_engine(url: str) -> sa.Engine:
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
        import sqlite3

        def creator() -> sqlite3.Connection:
            return sqlite3.connect(f"file:{path}?mode=ro", uri=True)

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


def read_sql_source(
    url: str, sql_schema: str | None = None, chunk_rows: int = 65_536
) -> tuple[list[RawTable], list[DataIssue], str]:
    """Reflects and reads every table of ``url`` (in ``sql_schema`` if given).

    Returns the raw tables, the issues found while reading, and the URL with
    its password hidden (for messages and metadata).
    """
    engine = create_readonly_engine(url)
    shown = engine.url.render_as_string(hide_password=True)
    try:
        with engine.connect() as conn:
            inspector = sa.inspect(conn)
            names = inspector.get_table_names(schema=sql_schema)
            tables, issues = [], []
            for name in names:
                raw, found = _read_table(conn, inspector, name, sql_schema, chunk_rows)
                tables.append(raw)
                issues.extend(found)
    except sa.exc.OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise SourceError(f"Could not read {shown}: {reason}") from None
    finally:
        engine.dispose()
    if not tables:
        where = f"schema {sql_schema!r} of " if sql_schema else ""
        raise SourceError(f"No tables found in {where}{shown}.")
    return tables, issues, shown


def _read_table(
    conn: sa.Connection, inspector: sa.Inspector, name: str,
    sql_schema: str | None, chunk_rows: int,
) -> tuple[RawTable, list[DataIssue]]:
    columns = inspector.get_columns(name, schema=sql_schema)
    source_types = {c["name"]: str(c["type"]) for c in columns}
    binary = [c for c in columns if isinstance(c["type"], sa.types._Binary)]
    readable = [c for c in columns if c not in binary]
    pk = tuple(inspector.get_pk_constraint(name, schema=sql_schema)["constrained_columns"] or ())
    fks = [
        ForeignKey(
            tuple(fk["constrained_columns"]),
            fk["referred_table"],
            tuple(fk["referred_columns"]) if fk.get("referred_columns") else None,
        )
        for fk in inspector.get_foreign_keys(name, schema=sql_schema)
    ]
    table_ref = sa.table(name, *[sa.column(c["name"]) for c in readable], schema=sql_schema)
    data = None
    if conn.dialect.name == "postgresql":
        data = fetch_with_copy(conn, table_ref, readable)
    if data is None:
        data = _fetch_arrow(conn, sa.select(*table_ref.columns), readable, chunk_rows)
    issues = [
        DataIssue(
            "unsupported_column", name, c["name"], data.num_rows, "column dropped",
            f"binary column (type {c['type']}) cannot be a feature",
        )
        for c in binary
    ]
    return RawTable(name, data, pk, fks, source_types), issues


def _fetch_arrow(
    conn: sa.Connection, query: sa.Select, columns: list[dict], chunk_rows: int
) -> pa.Table:
    names = [c["name"] for c in columns]
    types = [_arrow_type(c["type"]) for c in columns]
    result = conn.execution_options(stream_results=True, yield_per=chunk_rows).execute(query)
    batches = [
        _rows_to_arrow(rows, names, types) for rows in _partitions(result, chunk_rows)
    ]
    if not batches:
        schema = pa.schema([(n, t or pa.null()) for n, t in zip(names, types)])
        return schema.empty_table()
    return pa.concat_tables(batches, promote_options="permissive")


def _partitions(result: sa.CursorResult, size: int) -> Iterator[list]:
    while rows := result.fetchmany(size):
        yield rows


def _rows_to_arrow(rows: list, names: list[str], types: list[pa.DataType | None]) -> pa.Table:
    columns = list(zip(*rows)) if rows else [() for _ in names]
    arrays = []
    for values, arrow_type in zip(columns, types):
        first = next((v for v in values if v is not None), None)
        if isinstance(first, (bytes, bytearray, memoryview)):
            arrow_type = None  # binary content whatever the declared type
        try:
            arrays.append(pa.array(values, type=arrow_type, from_pandas=True))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            arrays.append(pa.array([None if v is None else str(v) for v in values]))
    return pa.Table.from_arrays(arrays, names=names)


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
