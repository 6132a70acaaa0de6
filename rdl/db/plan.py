"""Decides, before any full read, which columns of a table are read and which
rows the source may skip: keys and the time column always, features as the
schema and ``connect``'s options say, rows up to a cutoff time.

The time filter a source runs is conservative: it keeps every row whose parsed
time can be ``<= upto`` (and rows without a time, so that they are counted as
before), and :func:`rdl.db.connect.build_database` applies the exact cut after
parsing. A source therefore only filters a column whose stored form compares
exactly in the order of time:

=============================  ===============================================
stored as                      filtered by the source with
=============================  ===============================================
timestamp (naive)              ``col <= upto`` rounded up to the column's unit
timestamp with time zone       the same instant in UTC
date                           ``col <= date(upto)``
integer, a counted unit        ``col <= floor((upto - origin) / unit)``
integer, ``year/month/day``    ``col <= YYYY / YYYYMM / YYYYMMDD of upto``
text, floats, SQLite values    nothing: every row is read, then cut
=============================  ===============================================
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pyarrow as pa

from rdl.db.issues import SchemaError
from rdl.db.raw import Source, TableInfo, TimeBound, read_frame
from rdl.db.schema import COUNTED_UNITS, TableOverride, TimeColumn
from rdl.db.times import pick_time_column

# Rows of an undeclared text time column looked at to recognise it.
INFER_ROWS = 10_000


@dataclass(frozen=True)
class ReadOptions:
    r"""What :func:`rdl.connect` reads beyond the schema file's drops.

    Args:
        columns: Table -> feature columns to read; tables not named are read
            whole. Keys and the time column are always read.
        exclude_columns: Table -> feature columns not to read.
        upto: Read only rows of timed tables whose time is ``<= upto``.
    """

    columns: dict[str, list[str]] | None = None
    exclude_columns: dict[str, list[str]] | None = None
    upto: pd.Timestamp | None = None

    def check_names(self, infos: dict[str, TableInfo]) -> None:
        """Raises if an option names a table or column the source lacks."""
        options = (("columns", self.columns), ("exclude_columns", self.exclude_columns))
        for option, mapping in options:
            for table, cols in (mapping or {}).items():
                if table not in infos:
                    raise SchemaError(
                        f"{option} names table {table!r}, which the source lacks; "
                        f"tables are {sorted(infos)}."
                    )
                if isinstance(cols, str):
                    raise SchemaError(
                        f"{option}[{table!r}] must be a list of column names, got {cols!r}.")
                missing = [c for c in cols if c not in infos[table].columns]
                if missing:
                    raise SchemaError(
                        f"{option} names column(s) {missing} of table {table!r}, which has "
                        f"{infos[table].columns}."
                    )


def columns_to_read(
    info: TableInfo, override: TableOverride, keys: set[str], time: str | None,
    options: ReadOptions,
) -> list[str]:
    """The columns of ``info`` to read, in source order.

    ``keys`` are the primary and foreign key columns in use. Keys and ``time``
    are always read; the schema's ``drop_columns`` and ``options`` prune the
    features.
    """
    always = keys | ({time} if time else set())
    for col in override.drop_columns:
        if col in always:
            what = "the time column" if col == time else "a key column"
            raise SchemaError(
                f"Table {info.name!r}: drop_columns names {col!r}, which is {what}; "
                "remove it from drop_columns (or declare another key/time column)."
            )
    excluded = set((options.exclude_columns or {}).get(info.name, ()))
    for col in sorted(excluded & always):
        what = "the time column" if col == time else "a key column"
        raise SchemaError(
            f"exclude_columns names {info.name}.{col}, which is {what} and always read."
        )
    wanted = (options.columns or {}).get(info.name)
    dropped = set(override.drop_columns) | excluded
    return [
        c for c in info.columns
        if c in always or (c not in dropped and (wanted is None or c in wanted))
    ]


def time_bound(info: TableInfo, spec: TimeColumn, upto: pd.Timestamp) -> TimeBound | None:
    """The filter the source may run for ``upto``, or ``None`` when the column's
    stored form does not compare exactly in the order of time (see the table
    in this module's docstring)."""
    arrow_type = info.comparable.get(spec.column)
    if arrow_type is None or spec.format is not None:
        return None
    upto = pd.Timestamp(upto)
    if pa.types.is_timestamp(arrow_type) and spec.unit is None:
        value = upto.ceil(arrow_type.unit)
        if arrow_type.tz is not None:
            value = value.tz_localize("UTC")
        return TimeBound(spec.column, pa.scalar(value, type=arrow_type))
    if pa.types.is_date(arrow_type) and spec.unit is None:
        return TimeBound(spec.column, pa.scalar(upto.date(), type=arrow_type))
    if pa.types.is_integer(arrow_type) and spec.unit in COUNTED_UNITS:
        bound = (upto - spec.zero) // COUNTED_UNITS[spec.unit]
        return TimeBound(spec.column, pa.scalar(bound, type=pa.int64()))
    if pa.types.is_integer(arrow_type) and spec.unit in ("year", "month", "day"):
        code = {"year": upto.year, "month": upto.year * 100 + upto.month,
                "day": upto.year * 10_000 + upto.month * 100 + upto.day}[spec.unit]
        return TimeBound(spec.column, pa.scalar(code, type=pa.int64()))
    return None



def infer_time_column(source: Source, info: TableInfo, candidates: list[str]) -> str | None:
    """Picks the time column of a table that declares none from its first
    :data:`INFER_ROWS` rows (native date/time columns are recognised by
    type; dates stored as text by their values)."""
    if not candidates:
        return None
    sample, _ = read_frame(source, info, candidates, limit=INFER_ROWS)
    return pick_time_column(sample, exclude=set())
