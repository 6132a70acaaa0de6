"""Reads a sub-folder of a folder source as one table written in parts: what
Spark, Dask, Hive and partitioned exports write (``orders/part-00000-5d1c.csv``,
``events/day=2024-01-01/part-0.json``, ``sales/year=2023/0.parquet``, or
``orders_2023.csv`` beside ``orders_2024.csv``).

Names that start with ``_`` or ``.`` are a writer's bookkeeping (``_SUCCESS``,
``.part-0.crc``, ``_temporary/``) and skipped, as are empty files (Spark's
empty partitions). The parts share one format, and ``key=value`` folders
above a part become columns, a column that a part lacks is NULL in its rows
(reported for CSV, where each part has a header of its own). Files named as
writers name parts (``part-00000-<uuid>``, ``0``, ``data_3``) are one table;
files named otherwise are only when they agree on their columns (each holds
at least three quarters of all of them), and a single one never is: a
sub-folder of separate tables is no table, and :class:`NotOneTable` says what
to do.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from rdl.db.csv_file import CSV_SUFFIXES, CsvTable
from rdl.db.issues import DataIssue
from rdl.db.json_file import JSON_SUFFIXES, JsonTable
from rdl.db.parquet_file import PARQUET_SUFFIXES, ParquetTable
from rdl.db.raw import TableInfo, TimeBound

# Dask's to_csv into a folder writes 0.part, 1.part, ...: CSV text.
_FORMATS = {"parquet": PARQUET_SUFFIXES, "CSV": (*CSV_SUFFIXES, ".part"), "JSON": JSON_SUFFIXES}
# A part's name as writers give it: part-00000-<uuid>-c000, 0, data_3, chunk-7, a hash.
_PART_NAME = re.compile(r"(part|data|chunk|shard|batch)([-_.]?[0-9a-f-]*)?"
                        r"|(?=[0-9a-f-]*\d)[0-9a-f-]+", re.IGNORECASE)
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_SHARED = 0.75  # the share of all columns each part must hold


class NotOneTable(Exception):
    """Why a sub-folder is not read as one table, and what would make it one."""


def part_folder_table(folder: Path) -> ParquetTable | JsonTable | CsvPartsTable:
    """The table that the files under ``folder`` are the parts of."""
    found: dict[str, list[Path]] = {}
    for path in _files(folder):
        kind = _format(path)
        if kind is not None:
            found.setdefault(kind, []).append(path)
    if not found:
        raise NotOneTable("a folder without parquet, CSV or JSON files (the parts of a table)")
    if len(found) > 1:
        raise NotOneTable(f"a folder of {' and '.join(sorted(found))} files: the parts of one "
                          "table share one format")
    [(kind, parts)] = found.items()
    named_as_parts = all(_named_as_part(part, folder) for part in parts)
    if len(parts) == 1 and not named_as_parts:
        shown = parts[0].relative_to(folder)
        raise NotOneTable(
            f"a folder holding one file, {shown}: rdl reads the folder's own files, and a "
            f"sub-folder as the parts of one table; move {shown.name} beside the other files to "
            "read it as a table of its own")
    table = CsvPartsTable(folder, parts) if kind == "CSV" else None
    if not named_as_parts:  # orders_2023.csv beside orders_2024.csv, or two tables?
        _check_shared(folder, dict(zip(parts, table.part_names if table else
                                            (_columns(kind, part) for part in parts))))
    if table is not None:
        return table
    return ParquetTable(folder, parts) if kind == "parquet" else JsonTable(folder, parts)


class CsvPartsTable:
    """A folder's CSV parts, each parsed as :class:`CsvTable`, read as one
    table: columns by name, a column typed differently in two parts as the
    type both fit (an int beside a float is a float, anything else text)."""

    def __init__(self, folder: Path, parts: list[Path]) -> None:
        self.path = folder
        self.parts = [CsvTable(part) for part in parts]
        if not self.parts[0].has_header:  # a writer writes a header in every part or none
            for part in self.parts:
                part.has_header = False
        self.part_names = [part.info(part.path.name).columns for part in self.parts]
        self.partitions = [_partition_values(folder, part) for part in parts]
        self.names = _union(self.part_names + [list(values) for values in self.partitions])

    @property
    def encoding(self) -> str:
        return next((p.encoding for p in self.parts if p.encoding != "utf8"), "utf8")

    def info(self, name: str) -> TableInfo:
        return TableInfo(name, self.names, decimal_comma=self.parts[0].delimiter == ";")

    def header_issues(self, name: str) -> list[DataIssue]:
        issues = self.parts[0].header_issues(name)
        for column in self.names:
            lacking = [p.path.relative_to(self.path) for p, names, values in
                       zip(self.parts, self.part_names, self.partitions)
                       if column not in names and column not in values]
            if lacking:
                issues.append(DataIssue(
                    "csv_parts", name, column, len(lacking), "NULL in the parts without it",
                    f"{len(lacking)} of {len(self.parts)} parts lack column {column!r} "
                    f"(first {lacking[0]}): their rows read NULL there"))
        return issues

    def read(self, columns: list[str], bound: TimeBound | None, limit: int | None) -> pa.Table:
        assert bound is None, "CSV columns are not comparable; the cut happens after parsing"
        pieces, rows = [], 0
        for part, names, values in zip(self.parts, self.part_names, self.partitions):
            own = [c for c in columns if c in names]
            data = part.read(own or names[:1], None, None)  # names[:1]: the count of rows
            pieces.append(pa.table({c: data.column(c) if c in own else
                                    _constant(values.get(c), data.num_rows) for c in columns}))
            rows += data.num_rows
            if limit is not None and rows >= limit:
                break
        data = _concatenate(pieces, columns)
        return data if limit is None else data.slice(0, limit)


def _files(folder: Path) -> list[Path]:
    """The files under ``folder``, bookkeeping and empty files left out."""
    return sorted(
        path for path in folder.rglob("*")
        if path.is_file() and path.stat().st_size > 0
        and not any(part.startswith(("_", ".")) for part in path.relative_to(folder).parts))


def _format(path: Path) -> str | None:
    name = path.name.lower()
    return next((kind for kind, suffixes in _FORMATS.items() if name.endswith(suffixes)), None)


def _named_as_part(path: Path, folder: Path) -> bool:
    stem = path.name.split(".")[0]
    inside_partition = any("=" in part for part in path.relative_to(folder).parts[:-1])
    return inside_partition or stem == folder.name or bool(_PART_NAME.fullmatch(stem))


def _columns(kind: str, path: Path) -> list[str]:
    if kind == "parquet":
        return list(pq.read_schema(path).names)
    with duckdb.connect() as con:
        return con.read_json(str(path), hive_partitioning=False).columns


def _check_shared(folder: Path, columns: dict[Path, list[str]]) -> None:
    """Raises :class:`NotOneTable` when some part holds under three quarters
    of the columns all parts hold: then they are different tables."""
    every = _union(list(columns.values()))
    for path, names in columns.items():
        if len(names) < _SHARED * len(every):
            other = next(p for p, n in columns.items() if set(n) != set(names))
            first, second = sorted([path, other])
            raise NotOneTable(
                f"files with different columns ({first.relative_to(folder)}: "
                f"{_shown(columns[first])}; {second.relative_to(folder)}: "
                f"{_shown(columns[second])}) are not "
                "the parts of one table: put each table's file beside the others, or each "
                "table's parts in a folder of its own")


def _shown(names: list[str]) -> str:
    return ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")


def _union(lists: list[list[str]]) -> list[str]:
    return list(dict.fromkeys(name for names in lists for name in names))


def _partition_values(folder: Path, path: Path) -> dict[str, int | str | None]:
    """The ``key=value`` folders above a part (Hive's layout), a whole
    number as an int, Hive's name for NULL as None."""
    values: dict[str, int | str | None] = {}
    for part in path.relative_to(folder).parts[:-1]:
        key, _, value = part.partition("=")
        if _:
            value = unquote(value)
            values[unquote(key)] = (None if value == _HIVE_NULL
                                    else int(value) if re.fullmatch(r"-?\d+", value) else value)
    return values


def _constant(value: int | str | None, rows: int) -> pa.Array:
    return pa.nulls(rows) if value is None else pa.array([value] * rows)


def _concatenate(pieces: list[pa.Table], columns: list[str]) -> pa.Table:
    """The pieces' rows under one type per column: the one type they share,
    the type an int and a float both fit, or else text."""
    merged = {}
    for name in columns:
        chunks = [piece.column(name) for piece in pieces]
        types = [pa.schema([(name, t)]) for t in dict.fromkeys(c.type for c in chunks)]
        try:
            target = pa.unify_schemas(types, promote_options="permissive").field(name).type
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            target = pa.string()
        merged[name] = pa.chunked_array(
            [chunk for c in chunks for chunk in c.cast(target).chunks], type=target)
    return pa.table(merged)
