"""Reads a DuckDB database file natively: keys from DuckDB's catalog, rows as Arrow.

DuckDB's SQLAlchemy dialect reflects keys through PostgreSQL catalog queries
that DuckDB cannot run, so rdl asks DuckDB itself (``duckdb_constraints()``).
The file is opened read-only. Reads select only the columns asked for and run
the time filter inside DuckDB (``WHERE time <= $1 OR time IS NULL``).
"""
from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from rdl.db.issues import DataIssue, SourceError, relative_path_note, view_issues
from rdl.db.raw import TableInfo, TimeBound
from rdl.db.schema import ForeignKey


def duckdb_path(source: str) -> str | None:
    """The file path of a ``duckdb:///path`` URL or a ``*.duckdb`` path, else None."""
    if source.startswith("duckdb:///"):
        return source[len("duckdb:///"):]
    if source.endswith((".duckdb", ".ddb")):
        return source
    return None


class DuckDBSource:
    r"""The base tables of one schema of a DuckDB file, opened read-only.

    Args:
        path (str): The DuckDB file.
        sql_schema (str, optional): Schema to read. (default: ``"main"``)
    """

    def __init__(self, path: str, sql_schema: str | None = None) -> None:
        if not Path(path).is_file():
            raise SourceError(f"DuckDB file {path!r} does not exist{relative_path_note(path)}.")
        self.schema = sql_schema or "main"
        self.shown = f"duckdb:///{path}"
        self.issues: list[DataIssue] = []
        try:
            self.con = duckdb.connect(path, read_only=True)
        except duckdb.Error as exc:
            raise SourceError(f"Could not open DuckDB file {path!r}: {exc}") from None

    def tables(self) -> list[TableInfo]:
        names = [r[0] for r in self.con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = ? ORDER BY table_name",
            [self.schema],
        ).fetchall()]
        if not names:
            raise SourceError(f"No tables found in schema {self.schema!r} of {self.shown}.")
        self.issues.extend(view_issues([r[0] for r in self.con.execute(
            "SELECT view_name FROM duckdb_views() WHERE schema_name = ? AND NOT internal",
            [self.schema]).fetchall()]))
        constraints = self.con.execute(
            "SELECT table_name, constraint_type, constraint_column_names, "
            "referenced_table, referenced_column_names FROM duckdb_constraints() "
            "WHERE schema_name = ? AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')",
            [self.schema],
        ).fetchall()
        types = self.con.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns() "
            "WHERE schema_name = ? ORDER BY table_name, column_index",
            [self.schema],
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
            empty = self.con.sql(f"SELECT * FROM {self._table(name)} LIMIT 0")
            schema = empty.to_arrow_table().schema
            tables.append(TableInfo(
                name, list(schema.names), pk, fks,
                source_types={c: t for table, c, t in types if table == name},
                comparable={f.name: _comparable(f.type) for f in schema},
            ))
        return tables

    def read(self, info: TableInfo, columns: list[str], bound: TimeBound | None = None,
             limit: int | None = None) -> pa.Table:
        query = f"SELECT {', '.join(map(_quote, columns))} FROM {self._table(info.name)}"
        params = None
        if bound is not None:
            column = _quote(bound.column)
            query += f" WHERE {column} <= $1 OR {column} IS NULL"
            params = [bound.value.as_py()]
        if limit is not None:
            query += f" LIMIT {int(limit)}"
        try:
            return self.con.sql(query, params=params).to_arrow_table()
        except duckdb.Error as exc:
            raise SourceError(
                f"Could not read table {info.name!r} of {self.shown}: {exc}") from None

    def close(self) -> None:
        self.con.close()

    def _table(self, name: str) -> str:
        return f"{_quote(self.schema)}.{_quote(name)}"


def _comparable(arrow_type: pa.DataType) -> pa.DataType:
    """Timestamps are compared at whole seconds, which a Python ``datetime``
    parameter holds exactly whatever the column's precision."""
    if pa.types.is_timestamp(arrow_type):
        return pa.timestamp("s", tz=arrow_type.tz)
    return arrow_type


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'
