"""Reads one JSON file of a folder as a table, through DuckDB's JSON reader.

Event logs and document stores export JSON: one object per line (JSON lines,
``.jsonl``/``.ndjson``) or an array of objects (``.json``), gzipped or not.
DuckDB reads both, infers each field's type from the whole file (a sample
would let a late value of another type fail the read), recognises ISO times,
and hands nested objects over as structs, which :mod:`rdl.db.raw` splits into
one column per field as it does for parquet.
"""
from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from rdl.db.issues import SourceError
from rdl.db.raw import TableInfo, TimeBound

JSON_SUFFIXES = tuple(f"{suffix}{gz}" for suffix in (".jsonl", ".ndjson", ".json")
                      for gz in ("", ".gz"))


class JsonTable:
    """One JSON file, or a folder's parts: its records' fields are the
    columns. Its types are DuckDB's inference, so it reports none as
    comparable and is never asked to filter; a time cut happens after
    reading."""

    def __init__(self, path: Path, parts: list[Path] | None = None) -> None:
        self.path = path
        self._con = duckdb.connect()
        try:  # the types are inferred once, from the whole file, and the relation kept
            # A folder's parts: their fields by name, ``key=value`` folders as columns.
            self._relation = self._con.read_json(
                [str(part) for part in parts] if parts else str(path), sample_size=-1,
                union_by_name=bool(parts), hive_partitioning=bool(parts))
            self.columns = self._relation.columns
            self.types = [str(t) for t in self._relation.types]
        except duckdb.Error as exc:
            raise SourceError(f"Could not read JSON {path}: {_first_line(exc)}") from None
        if self.columns == ["json"]:  # DuckDB's one column for values that are no objects
            raise SourceError(f"Could not read JSON {path}: its values are not objects; a table "
                              "needs one object per line, or an array of objects")

    def info(self, name: str) -> TableInfo:
        return TableInfo(name, list(self.columns),
                         source_types=dict(zip(self.columns, self.types)))

    def read(self, columns: list[str], bound: TimeBound | None, limit: int | None) -> pa.Table:
        assert bound is None, "JSON columns are not comparable; the cut happens after reading"
        try:
            relation = self._relation.select(*[self._column(c) for c in columns])
            if limit is not None:
                relation = relation.limit(limit)
            return relation.to_arrow_table()
        except duckdb.Error as exc:
            raise SourceError(f"Could not read JSON {self.path}: {_first_line(exc)}") from None

    def _column(self, name: str) -> duckdb.Expression:
        """A field as read; one whose values mix types (DuckDB's ``JSON``) as
        text, strings unquoted, the way a CSV file holds it."""
        column = duckdb.ColumnExpression(name)
        if self.types[self.columns.index(name)] != "JSON":
            return column
        return duckdb.FunctionExpression("json_extract_string", column,
                                         duckdb.ConstantExpression("$")).alias(name)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0]
