"""Reads a DuckDB database file natively: keys from DuckDB's catalog, rows as Arrow.

DuckDB's SQLAlchemy dialect reflects keys through PostgreSQL catalog queries
that DuckDB cannot run, so rdl asks DuckDB itself (``duckdb_constraints()``).
The file is opened read-only.
"""
from __future__ import annotations

from pathlib import Path

import duckdb

from rdl.db.issues import SourceError
from rdl.db.raw import RawTable
from rdl.db.schema import ForeignKey


def duckdb_path(source: str) -> str | None:
    """The file path of a ``duckdb:///path`` URL or a ``*.duckdb`` path, else None."""
    if source.startswith("duckdb:///"):
        return source[len("duckdb:///"):]
    if source.endswith((".duckdb", ".ddb")):
        return source
    return None


def read_duckdb_source(path: str, sql_schema: str | None = None) -> tuple[list[RawTable], str]:
    """Reflects and reads every base table of the DuckDB file at ``path``."""
    if not Path(path).is_file():
        raise SourceError(f"DuckDB file {path!r} does not exist.")
    schema = sql_schema or "main"
    try:
        con = duckdb.connect(path, read_only=True)
    except duckdb.Error as exc:
        raise SourceError(f"Could not open DuckDB file {path!r}: {exc}") from None
    try:
        names = [r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = ? ORDER BY table_name",
            [schema],
        ).fetchall()]
        if not names:
            raise SourceError(f"No tables found in schema {schema!r} of DuckDB file {path!r}.")
        constraints = con.execute(
            "SELECT table_name, constraint_type, constraint_column_names, "
            "referenced_table, referenced_column_names FROM duckdb_constraints() "
            "WHERE schema_name = ? AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')",
            [schema],
        ).fetchall()
        types = con.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE schema_name = ?",
            [schema],
        ).fetchall()
        tables = []
        for name in names:
            pk: tuple[str, ...] = ()
            fks = []
            for table, kind, cols, ref_table, ref_cols in constraints:
                if table != name:
                    continue
                if kind == "PRIMARY KEY":
                    pk = tuple(cols)
                else:
                    fks.append(ForeignKey(tuple(cols), ref_table, tuple(ref_cols) or None))
            data = con.sql(f"SELECT * FROM {_quote(schema)}.{_quote(name)}").to_arrow_table()
            source_types = {c: t for table, c, t in types if table == name}
            tables.append(RawTable(name, data, pk, fks, source_types))
    finally:
        con.close()
    return tables, f"duckdb:///{path}"


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'
