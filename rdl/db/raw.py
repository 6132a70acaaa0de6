"""What a source reader hands over: each table's reflected shape, then its rows
as Arrow, one table at a time and only the columns and rows asked for."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rdl.db.issues import DataIssue
from rdl.db.json_text import parse_json_text
from rdl.db.schema import ForeignKey


@dataclass
class TableInfo:
    r"""A table as reflected from a source, before any row is read.

    Args:
        name: Table name.
        columns: Column names, in source order.
        primary_key: Reflected primary key columns (empty if none).
        foreign_keys: Reflected foreign keys.
        source_types: Column -> the source's own type name, for messages.
        comparable: Column -> the Arrow type in which the source compares the
            column's values exactly in a filter; columns missing here (text,
            untyped SQLite values, ...) are never filtered by the source.
        decimal_comma: Numbers stored as text write their decimal mark as a
            comma (a ``;``-separated CSV, as Excel writes them in European
            locales; see :mod:`rdl.db.text_numbers`).
    """

    name: str
    columns: list[str]
    primary_key: tuple[str, ...] = ()
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    source_types: dict[str, str] = field(default_factory=dict)
    comparable: dict[str, pa.DataType] = field(default_factory=dict)
    decimal_comma: bool = False


@dataclass(frozen=True)
class TimeBound:
    r"""A filter a source runs while reading: ``column <= value OR column IS NULL``.

    Args:
        column: The table's time column.
        value: The largest stored value to keep, typed as ``comparable`` says.
    """

    column: str
    value: pa.Scalar


class Source(Protocol):
    """A database rdl reads from: reflect every table, then read one at a time."""

    shown: str  # where the data comes from, without a password
    issues: list[DataIssue]  # problems found while reflecting or reading

    def tables(self) -> list[TableInfo]:
        """Every table, reflected (no rows are read)."""

    def read(self, info: TableInfo, columns: list[str], bound: TimeBound | None = None,
             limit: int | None = None) -> pa.Table:
        """``columns`` of the rows of ``info`` within ``bound``, at most ``limit`` rows."""

    def close(self) -> None:
        """Releases connections and files."""


def read_frame(
    source: Source, info: TableInfo, columns: list[str], bound: TimeBound | None = None,
    limit: int | None = None,
) -> tuple[pd.DataFrame, list[DataIssue]]:
    """Reads ``columns`` of a table (see :meth:`Source.read`) as pandas.

    Rows empty in every column read (the blank lines a spreadsheet saved as
    CSV leaves below its data) are dropped and counted. Binary columns
    (BLOBs) have no feature meaning and are dropped with a note (all-NULL
    columns are judged later, as features); decimals become
    float64; integer columns with NULLs become nullable ``Int64`` rather than
    float, so that keys keep their values exactly; dates become datetime
    objects, or ``datetime64`` when there are no rows (an empty column of
    objects would say nothing of its type).
    Columns are converted one at a time and each Arrow column is freed as
    soon as pandas has it, so a table never needs twice its size.
    """
    data, issues = _without_empty_rows(info.name, source.read(info, columns, bound, limit))
    pool = pa.default_memory_pool()
    pool.release_unused()  # Arrow's allocator keeps freed pages (e.g. the reader's) otherwise
    num_rows = data.num_rows
    data, found = _usable_columns(info, data)
    issues.extend(found)
    converted = {}
    while data.num_columns:  # one column at a time, each freed once pandas has it
        # via a one-column table: pandas gets its own writable copy, not a view of Arrow's
        column = data.select([0]).to_pandas(
            types_mapper=_nullable_integers, date_as_object=num_rows > 0).iloc[:, 0]
        if isinstance(column.dtype, pd.Int64Dtype) and not column.hasnans:
            column = column.astype("int64")
        converted[data.column_names[0]] = column
        data = data.remove_column(0)
        pool.release_unused()
    if not converted:
        return pd.DataFrame(index=range(num_rows)), issues
    return pd.DataFrame(converted, copy=False), issues


def _without_empty_rows(name: str, data: pa.Table) -> tuple[pa.Table, list[DataIssue]]:
    """``data`` without its rows that are NULL in every column, and an issue
    counting them: kept, each would be a node of nothing but missing values."""
    if not data.num_columns or not data.num_rows:
        return data, []
    empty = pc.is_null(data.column(0))
    for column in data.columns[1:]:
        empty = pc.and_(empty, pc.is_null(column))
    count = pc.sum(empty).as_py() or 0
    if not count:
        return data, []
    return data.filter(pc.invert(empty)), [DataIssue(
        "empty_row", name, None, count, "rows dropped",
        "row with no value in any column (such as the blank lines below a spreadsheet's "
        "data that a CSV export keeps as commas)")]


def _usable_columns(info: TableInfo, data: pa.Table) -> tuple[pa.Table, list[DataIssue]]:
    """``data`` with its struct columns (and text of JSON objects,
    :mod:`rdl.db.json_text`) split into their fields, without its
    binary columns (each reported, by its SQL type
    where the source knows it: BLOB, geometry), decimals as floats, UUIDs and
    unsigned 64-bit numbers past int64 (hash ids) as text, and
    durations (SQL ``TIME``/``INTERVAL`` as drivers give them) and times of
    day as seconds, which a model reads as numbers."""
    data, issues = parse_json_text(info.name, data)
    keep = {}
    data = _split_structs(data)
    for i, f in enumerate(data.schema):
        if (pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)
                or pa.types.is_fixed_size_binary(f.type)):
            shown = info.source_types.get(f.name, f.type)
            issues.append(DataIssue(
                "unsupported_column", info.name, f.name, data.num_rows, "column dropped",
                f"binary column (type {shown}) cannot be a feature",
            ))
        elif pa.types.is_decimal(f.type):
            keep[f.name] = pc.cast(data.column(i), pa.float64())
        elif pa.types.is_uint64(f.type) and (pc.max(data.column(i)).as_py() or 0) >= 2**63:
            # Past int64: a 64-bit hash id, as text (as a float, ids would collide)
            keep[f.name] = pc.cast(data.column(i), pa.string())
        elif isinstance(f.type, pa.UuidType):  # PostgreSQL's uuid keys, as their text
            keep[f.name] = pa.chunked_array(
                [[None if v is None else str(v) for v in data.column(i).to_pylist()]],
                pa.string())
        elif (pa.types.is_duration(f.type) or pa.types.is_time(f.type)
              or pa.types.is_interval(f.type)):
            keep[f.name] = _seconds(data.column(i), f.type)
        else:
            keep[f.name] = data.column(i)
    return (pa.table(keep) if keep else pa.table({})), issues


def _split_structs(data: pa.Table) -> pa.Table:
    """Each struct column (DuckDB's ``STRUCT``, a parquet group) as one column
    per field, named ``column.field`` (nested structs all the way down), NULL
    where the struct is: a model reads an age and a city, not the text of a
    record. A struct whose field names are taken by other columns stays
    whole."""
    if not any(pa.types.is_struct(f.type) for f in data.schema):
        return data
    columns: dict[str, pa.ChunkedArray] = {}
    for name, column in zip(data.column_names, data.columns):
        fields = _fields(name, column)
        if any(field in columns or (field != name and field in data.column_names)
               for field in fields):
            fields = {name: column}
        columns.update(fields)
    return pa.table(columns)


def _fields(name: str, column: pa.ChunkedArray) -> dict[str, pa.ChunkedArray]:
    if not pa.types.is_struct(column.type):
        return {name: column}
    out: dict[str, pa.ChunkedArray] = {}
    for i, field in enumerate(column.type):
        values = pa.chunked_array([pc.struct_field(chunk, [i]) for chunk in column.chunks],
                                  field.type)
        out.update(_fields(f"{name}.{field.name}", values))
    return out


def _nullable_integers(arrow_type: pa.DataType):
    if pa.types.is_integer(arrow_type):
        return pd.Int64Dtype()
    return None


_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
_MONTH_S = 365.25 / 12 * 86_400


def _seconds(column: pa.ChunkedArray, arrow_type: pa.DataType) -> pa.ChunkedArray:
    """A duration, a time of day (since midnight) or a calendar interval
    (DuckDB's; a month as its average, 30.44 days) as float seconds."""
    if pa.types.is_interval(arrow_type):
        return pa.chunked_array([[
            None if v is None else v.months * _MONTH_S + v.days * 86_400 + v.nanoseconds / 1e9
            for v in column.to_pylist()]], pa.float64())
    whole = pc.cast(column, pa.int64() if pa.types.is_duration(arrow_type) or
                    arrow_type.bit_width == 64 else pa.int32())
    return pc.divide(pc.cast(whole, pa.float64()), float(_PER_SECOND[arrow_type.unit]))
