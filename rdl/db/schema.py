"""The YAML schema file: declares or corrects keys, time columns and stypes.

Example::

    drop_tables: [audit_log]
    tables:
      flights:
        primary_key: null                # no key: rows get a row-id key
        time_column: time_hour
        foreign_keys:
          carrier: airlines              # column -> table (its primary key)
          tailnum: planes
          origin: airports
          weather: {columns: [origin, time_hour], table: weather}   # composite
        stypes: {flight: categorical}
        drop_columns: [year, month, day]
      planes:
        primary_key: tailnum
        time_column: {column: year, unit: year}   # integer years
      seasons:
        time_column: {column: yearID, unit: year, at: end}   # known when the year ends
      purchases:
        time_column: {column: DAY, unit: days, origin: 2019-12-31}   # day 1 = 2020-01-01
      weather:
        primary_key: [origin, time_hour]
      invoice_lines:
        time_column: {from: invoice_id}   # each line at its invoice's time
        foreign_keys:
          customer_id: {from: invoice_id}   # the customer of its invoice
    implied_tables:                      # tables the data names but does not hold
      users: events.user_id              # one row per user_id, from its first event on
      items: [events.item_id, ratings.item_id]

A declared value always wins over what the database reflects. ``foreign_keys``
entries replace reflected keys on the same columns; ``column: null`` removes a
reflected key. ``time_column: null`` declares a table static.

A key taken from a parent (``customer_id: {from: invoice_id}``) gives a table
a foreign key it does not hold: each row gets the ``customer_id`` of the
``invoices`` row its ``invoice_id`` names, a key to wherever that column
points. Order lines then link to their customer, so a task can predict an
invoice line's items per customer (``LIST_DISTINCT(invoice_lines.product_id,
...) FOR EACH customers.customer_id``) and the model reaches the lines in one
hop. ``{from: invoice_id, column: buyer}`` takes the parent's ``buyer`` column.

A time column in ``year``, ``month`` or ``day`` units stands for a whole
period. ``at: start`` (the default) places each row at the period's first
instant (1999 -> 1999-01-01 00:00:00); ``at: end`` at its last second, the
next period's start minus one second (1999 -> 1999-12-31 23:59:59), so that
a row summing up a period is only seen by predictions made once it is over.
Whole ``days`` and ``weeks`` counted from an ``origin`` (as are ``s``, ``ms``,
``us`` and ``ns``; 1970-01-01 if none is given) stand for a period too.

An event log often names its users and items without a table of them, and a
task needs a table to predict for (``FOR EACH users.user_id``). An implied
table holds one row per distinct value of the key columns listed, keyed by
the first column's name, and each listed column becomes a foreign key to it.
Its time column ``first_seen`` is the earliest time of a row naming the value,
so a user exists from its first event on; a listed table without a time
column makes it static (see :mod:`rdl.db.implied`).
"""
from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from rdl.db.issues import SchemaError, relative_path_note
from rdl.db.table import STYPES

# Units a declared time column may be stored in, besides real dates/times.
TIME_UNITS = ("s", "ms", "us", "ns", "days", "weeks", "year", "month", "day")
# Units counted from an origin (1970-01-01 unless the schema says otherwise), and how long one is.
COUNTED_UNITS = {"s": pd.Timedelta(seconds=1), "ms": pd.Timedelta(milliseconds=1),
                 "us": pd.Timedelta(microseconds=1), "ns": pd.Timedelta(nanoseconds=1),
                 "days": pd.Timedelta(days=1), "weeks": pd.Timedelta(weeks=1)}
# Units whose values are calendar periods, and where in the period a row sits.
CALENDAR_UNITS = ("year", "month", "day")
# Units whose values stand for a period, which ``at: end`` may place a row at the end of.
PERIOD_UNITS = CALENDAR_UNITS + ("days", "weeks")
TIME_PLACEMENTS = ("start", "end")
_TABLE_KEYS = {"primary_key", "foreign_keys", "time_column", "stypes", "drop_columns"}
UNSET: Any = object()  # "not declared", as opposed to an explicit null


@dataclass(frozen=True)
class ForeignKey:
    r"""A (possibly composite) reference from ``columns`` to ``table``.

    Args:
        columns: Referencing columns of the child table.
        table: Referenced (parent) table.
        ref_columns: Referenced parent columns; ``None`` means its primary key.
    """

    columns: tuple[str, ...]
    table: str
    ref_columns: tuple[str, ...] | None = None


@dataclass(frozen=True)
class TimeColumn:
    r"""A declared time column and how its values are stored.

    Args:
        column: Column name.
        unit: One of ``TIME_UNITS`` for numbers (``s``/``ms``/``us``/``ns``
            and whole ``days``/``weeks`` counted from :obj:`origin`; ``year``
            as YYYY, ``month`` as YYYYMM, ``day`` as YYYYMMDD), or ``None``
            for real dates/times and date strings.
        format: ``strftime`` format for date strings, or ``None`` to infer.
        at: For ``PERIOD_UNITS``: ``"start"`` places a row at its period's
            first instant, ``"end"`` at its last second (the next period's
            start minus one second).
        origin: For ``COUNTED_UNITS``: the instant that 0 stands for
            (``None``: 1970-01-01), so a day number ``DAY`` of an export
            (1 = its first day) reads as a date.
    """

    column: str
    unit: str | None = None
    format: str | None = None
    at: str = "start"
    origin: pd.Timestamp | None = None

    @property
    def zero(self) -> pd.Timestamp:
        """The instant a counted 0 stands for: :attr:`origin`, or 1970-01-01."""
        return self.origin if self.origin is not None else pd.Timestamp(0)


@dataclass(frozen=True)
class InheritedTime:
    r"""A time column taken from a parent table: each row happens when the
    row that its foreign key :obj:`foreign_key` names does (an invoice line
    at its invoice's date). Without it such a table is static, and the lines
    of later invoices are seen at every prediction time.

    Args:
        foreign_key: The table's foreign key column (a declared or
            reflected key to a table with a time column).
    """

    foreign_key: str

    @property
    def column(self) -> str:
        """The name of the time column it adds to the table."""
        return f"{self.foreign_key}.time"


@dataclass(frozen=True)
class InheritedKey:
    r"""A foreign key taken from a parent table: each row gets the value of
    the parent's foreign key column :obj:`column` in the row that its own
    foreign key :obj:`through` names (an invoice line, its invoice's
    customer). The new column is a key to the table :obj:`column` points at.

    Args:
        through: The table's own one-column foreign key to the parent.
        column: The parent's one-column foreign key to copy.
    """

    through: str
    column: str


@dataclass
class TableOverride:
    """What the schema file declares for one table; ``UNSET`` = not declared."""

    primary_key: Any = UNSET  # None | str | tuple[str, ...]
    foreign_keys: dict[tuple[str, ...], ForeignKey | None] = field(default_factory=dict)
    inherited_keys: dict[str, InheritedKey] = field(default_factory=dict)  # new column -> spec
    time_column: Any = UNSET  # None | TimeColumn | InheritedTime
    stypes: dict[str, str] = field(default_factory=dict)
    drop_columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class ImpliedTable:
    r"""A table the data names but does not hold: one row per distinct value
    of :obj:`sources`, each a ``(table, column)`` that becomes a foreign key
    to it; keyed by the first source column's name."""

    name: str
    sources: tuple[tuple[str, str], ...]

    @property
    def key(self) -> str:
        return self.sources[0][1]


@dataclass
class SchemaOverrides:
    """A parsed schema file."""

    tables: dict[str, TableOverride] = field(default_factory=dict)
    drop_tables: tuple[str, ...] = ()
    path: str = "<schema>"
    implied_tables: dict[str, ImpliedTable] = field(default_factory=dict)

    def implied_keys(self) -> dict[str, dict[str, str]]:
        """Table -> column -> the implied table the column names."""
        found: dict[str, dict[str, str]] = {}
        for implied in self.implied_tables.values():
            for table, column in implied.sources:
                found.setdefault(table, {})[column] = implied.name
        return found

    def for_table(self, name: str) -> TableOverride:
        return self.tables.get(name, TableOverride())


def load_schema(source: str | Path | dict | SchemaOverrides | None) -> SchemaOverrides:
    """Parses a schema file path, an already-loaded mapping, or ``None``."""
    if source is None:
        return SchemaOverrides()
    if isinstance(source, SchemaOverrides):
        return source
    if isinstance(source, dict):
        return parse_schema(source, "<schema dict>")
    path = Path(source)
    if not path.is_file():
        raise SchemaError(f"Schema file {str(path)!r} does not exist"
                          f"{relative_path_note(path)}.")
    return parse_schema(read_schema_file(path), str(path))


def read_schema_file(path: Path) -> Any:
    """The YAML of a schema file, refusing a key given twice in one mapping:
    YAML would keep the later entry and silently drop the earlier one (a second
    ``customer:`` appended to a suggested schema loses the first one's keys)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                line = key_node.start_mark.line + 1
                if not isinstance(key, Hashable):
                    continue  # a complex key; parse_schema names it
                if key in seen:
                    raise SchemaError(
                        f"Schema file {path}, line {line}: {key!r} is given twice in one "
                        f"mapping (first on line {seen[key]}); merge the two entries")
                seen[key] = line
            return super().construct_mapping(node, deep)

    try:
        return yaml.load(path.read_text(), Loader=UniqueKeyLoader) or {}
    except yaml.YAMLError as exc:
        raise SchemaError(f"Schema file {path} is not valid YAML: {exc}") from None


def parse_schema(raw: Any, where: str) -> SchemaOverrides:
    """Validates the structure of a schema mapping (names are checked later,
    against the database, by :func:`check_schema_names`)."""
    if not isinstance(raw, dict):
        raise SchemaError(f"{where}: the top level must be a mapping with 'tables:'.")
    unknown = set(raw) - {"tables", "drop_tables", "implied_tables"}
    if unknown:
        raise SchemaError(
            f"{where}: unknown top-level key(s) {sorted(unknown)}; "
            "valid keys are 'tables', 'drop_tables' and 'implied_tables'."
        )
    tables_raw = raw.get("tables") or {}
    if not isinstance(tables_raw, dict):
        raise SchemaError(f"{where}: 'tables' must map table names to settings.")
    tables = {
        str(name): _parse_table(str(name), spec or {}, where)
        for name, spec in tables_raw.items()
    }
    return SchemaOverrides(
        tables=tables,
        drop_tables=tuple(_as_names(raw.get("drop_tables") or [], f"{where}: drop_tables")),
        path=where,
        implied_tables=_parse_implied(raw.get("implied_tables") or {}, where),
    )


def _parse_implied(raw: Any, where: str) -> dict[str, ImpliedTable]:
    """``name: table.column`` or ``name: [table.column, ...]`` entries; a
    column may feed one implied table only."""
    if not isinstance(raw, dict):
        raise SchemaError(f"{where}: 'implied_tables' must map table names to the key columns "
                          "that name their rows (users: events.user_id).")
    implied, seen = {}, {}
    for name, value in raw.items():
        ctx = f"{where}: implied table {name!r}"
        sources = []
        for ref in _as_names(value, ctx):
            table, dot, column = ref.rpartition(".")
            if not dot or not table or not column:
                raise SchemaError(f"{ctx}: {ref!r} must be written table.column "
                                  "(events.user_id).")
            if (table, column) in seen:
                raise SchemaError(f"{ctx}: {ref} already feeds implied table "
                                  f"{seen[table, column]!r}; a column names one table.")
            seen[table, column] = str(name)
            sources.append((table, column))
        implied[str(name)] = ImpliedTable(str(name), tuple(sources))
    return implied


def _parse_table(name: str, spec: Any, where: str) -> TableOverride:
    ctx = f"{where}: table {name!r}"
    if not isinstance(spec, dict):
        raise SchemaError(f"{ctx} must be a mapping of settings.")
    unknown = set(spec) - _TABLE_KEYS
    if unknown:
        raise SchemaError(
            f"{ctx}: unknown setting(s) {sorted(unknown)}; valid: {sorted(_TABLE_KEYS)}."
        )
    override = TableOverride()
    if "primary_key" in spec:
        pk = spec["primary_key"]
        if pk is None:
            override.primary_key = None
        else:
            names = _as_names(pk, f"{ctx}: primary_key")
            override.primary_key = names[0] if len(names) == 1 else tuple(names)
    for key, value in (spec.get("foreign_keys") or {}).items():
        if isinstance(value, dict) and "from" in value:
            override.inherited_keys[str(key)] = _parse_inherited_key(str(key), value, ctx)
            continue
        fk = _parse_foreign_key(str(key), value, ctx)
        cols = fk.columns if fk is not None else (str(key),)
        override.foreign_keys[cols] = fk
    if "time_column" in spec:
        override.time_column = _parse_time_column(spec["time_column"], ctx)
    for col, stype in (spec.get("stypes") or {}).items():
        if stype not in STYPES:
            raise SchemaError(
                f"{ctx}: column {col!r} has unknown stype {stype!r}; valid: {list(STYPES)}."
            )
        override.stypes[str(col)] = stype
    override.drop_columns = tuple(_as_names(spec.get("drop_columns") or [], f"{ctx}: drop_columns"))
    return override


def _parse_foreign_key(key: str, value: Any, ctx: str) -> ForeignKey | None:
    """``col: table``, ``col: table.col`` or ``name: {columns: [...], table: t}``."""
    if value is None:
        return None
    if isinstance(value, str):
        table, _, ref = value.partition(".")
        return ForeignKey((key,), table, (ref,) if ref else None)
    if isinstance(value, dict):
        unknown = set(value) - {"columns", "table", "ref_columns"}
        if unknown or "table" not in value:
            raise SchemaError(
                f"{ctx}: foreign key {key!r} must give 'table' (and optionally "
                f"'columns', 'ref_columns'); got keys {sorted(value)}."
            )
        cols = tuple(_as_names(value.get("columns", [key]), f"{ctx}: foreign key {key!r}"))
        ref = value.get("ref_columns")
        ref_cols = tuple(_as_names(ref, f"{ctx}: foreign key {key!r}")) if ref else None
        if ref_cols is not None and len(ref_cols) != len(cols):
            raise SchemaError(
                f"{ctx}: foreign key {key!r} has {len(cols)} column(s) but "
                f"{len(ref_cols)} ref_columns."
            )
        return ForeignKey(cols, str(value["table"]), ref_cols)
    raise SchemaError(f"{ctx}: foreign key {key!r} must be a table name or a mapping.")


def _parse_inherited_key(key: str, value: dict, ctx: str) -> InheritedKey:
    """``key: {from: <own foreign key>}`` or ``{from: ..., column: <parent's key>}``."""
    unknown = set(value) - {"from", "column"}
    if unknown:
        raise SchemaError(f"{ctx}: foreign key {key!r} {{from: ...}} takes only 'column' "
                          f"besides; it has {sorted(unknown)}.")
    return InheritedKey(str(value["from"]), str(value.get("column", key)))


def _parse_time_column(value: Any, ctx: str) -> TimeColumn | InheritedTime | None:
    if value is None:
        return None
    if isinstance(value, str):
        return TimeColumn(value)
    if isinstance(value, dict) and "from" in value:
        if set(value) != {"from"}:
            raise SchemaError(f"{ctx}: time_column {{from: ...}} takes no other key; it has "
                              f"{sorted(set(value) - {'from'})}.")
        return InheritedTime(str(value["from"]))
    if isinstance(value, dict) and "column" in value:
        unknown = set(value) - {"column", "unit", "format", "at", "origin"}
        if unknown:
            raise SchemaError(f"{ctx}: time_column has unknown key(s) {sorted(unknown)}.")
        column, unit, at = str(value["column"]), value.get("unit"), value.get("at", "start")
        if unit is not None and unit not in TIME_UNITS:
            raise SchemaError(
                f"{ctx}: time_column unit {unit!r} is not one of {list(TIME_UNITS)}."
            )
        if at not in TIME_PLACEMENTS:
            raise SchemaError(
                f"{ctx}: time_column {column!r} has at: {at!r}; use 'start' (the default) "
                "or 'end' (each row at the end of its year, month or day)."
            )
        if at == "end" and unit not in PERIOD_UNITS:
            raise SchemaError(
                f"{ctx}: time_column {column!r} has at: end, which needs unit "
                f"{' | '.join(PERIOD_UNITS)} (the period each value stands for); "
                f"its unit is {unit!r}."
            )
        return TimeColumn(column, unit, value.get("format"), at,
                          _parse_origin(value.get("origin"), column, unit, ctx))
    raise SchemaError(
        f"{ctx}: time_column must be a column name, {{column: ..., unit: ..., at: ...}} or "
        "{from: <foreign key column>} (the time of the row it names)."
    )


def _parse_origin(value: Any, column: str, unit: str | None, ctx: str) -> pd.Timestamp | None:
    if value is None:
        return None
    if unit not in COUNTED_UNITS:
        raise SchemaError(
            f"{ctx}: time_column {column!r} has an origin, which only numbers counted from "
            f"it have (unit {' | '.join(COUNTED_UNITS)}); its unit is {unit!r}."
        )
    try:
        origin = pd.Timestamp(str(value))
    except ValueError:
        origin = pd.NaT
    if origin is pd.NaT:
        raise SchemaError(
            f"{ctx}: time_column {column!r} has origin {value!r}, which is no date "
            "(write it as 2020-01-01 or 2020-01-01 06:00)."
        )
    return origin.tz_convert("UTC").tz_localize(None) if origin.tzinfo else origin


def _as_names(value: Any, ctx: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise SchemaError(f"{ctx} must be a name or a list of names, got {value!r}.")


def check_schema_names(
    overrides: SchemaOverrides, columns_by_table: dict[str, list[str]]
) -> None:
    """Raises if the schema file names tables or columns the source lacks, or
    an implied table a table the source holds (or a column declared otherwise)."""
    valid_tables = sorted(columns_by_table)
    _check_implied(overrides, columns_by_table)
    for name in [*overrides.drop_tables, *overrides.tables]:
        if name not in columns_by_table:
            raise SchemaError(
                f"{overrides.path}: unknown table {name!r}; the source has {valid_tables}."
            )
    for name, ov in overrides.tables.items():
        cols = columns_by_table[name]
        # A stype may name a struct's field (column.field), checked once the struct is read.
        named: list[str] = list(ov.drop_columns) + [
            c for c in ov.stypes if c.split(".")[0] not in cols]
        if isinstance(ov.primary_key, str):
            named.append(ov.primary_key)
        elif isinstance(ov.primary_key, tuple):
            named.extend(ov.primary_key)
        for fk_cols in ov.foreign_keys:
            named.extend(fk_cols)
        if isinstance(ov.time_column, TimeColumn):
            named.append(ov.time_column.column)
        if isinstance(ov.time_column, InheritedTime):
            named.append(ov.time_column.foreign_key)
        named.extend(spec.through for spec in ov.inherited_keys.values())
        for col in named:
            if col not in cols:
                raise SchemaError(
                    f"{overrides.path}: table {name!r} has no column {col!r}; "
                    f"its columns are {cols}."
                )
        for col, spec in ov.inherited_keys.items():
            if col in cols:
                raise SchemaError(
                    f"{overrides.path}: table {name!r}: foreign key {col!r} {{from: "
                    f"{spec.through}}} adds a column the table already has; name it "
                    f"otherwise ({col}_of_{spec.through}: {{from: {spec.through}, "
                    f"column: {spec.column}}}).")


def check_struct_fields(path: str, name: str, declared: list[str], columns: list[str]) -> None:
    """Raises if ``declared`` (stypes given for a struct's fields,
    ``column.field``) names a field the table's columns, read, do not hold."""
    for col in declared:
        if col not in columns:
            prefix = col.split(".")[0] + "."
            fields = [c for c in columns if c.startswith(prefix)]
            raise SchemaError(f"{path}: table {name!r} has no column {col!r}; the fields of "
                              f"{prefix[:-1]!r} are {fields or 'none: it is not a struct'}.")


def _check_implied(overrides: SchemaOverrides, columns_by_table: dict[str, list[str]]) -> None:
    """Raises where an implied table clashes with the source or the rest of the
    file: a name the source has, settings given for it under ``tables:``, a
    listed column of a table not read, or one declared as a foreign key too."""
    declared = {name: {c for cols in ov.foreign_keys for c in cols}
                for name, ov in overrides.tables.items()}
    for implied in overrides.implied_tables.values():
        ctx = f"{overrides.path}: implied table {implied.name!r}"
        if implied.name in columns_by_table:
            raise SchemaError(f"{ctx}: the source already has a table of that name; an "
                              "implied table stands for one it lacks (declare a foreign key "
                              "to the real one instead).")
        if implied.name in overrides.tables or implied.name in overrides.drop_tables:
            raise SchemaError(f"{ctx} takes no settings under tables: or drop_tables:; "
                              "it holds only its key and first_seen.")
        for table, column in implied.sources:
            if table not in columns_by_table or table in overrides.drop_tables:
                raise SchemaError(f"{ctx}: {table}.{column} names table {table!r}, which is not "
                                  f"read; tables: {_read_tables(columns_by_table, overrides)}.")
            if column not in columns_by_table[table]:
                raise SchemaError(f"{ctx}: table {table!r} has no column {column!r}; its "
                                  f"columns are {columns_by_table[table]}.")
            if column in declared.get(table, set()):
                raise SchemaError(f"{ctx}: {table}.{column} is also declared as a foreign key "
                                  f"under tables: {table}:; keep one of the two.")


def _read_tables(columns_by_table: dict[str, list[str]], overrides: SchemaOverrides) -> list[str]:
    """The tables a schema file may name: the source's, less those dropped."""
    return sorted(set(columns_by_table) - set(overrides.drop_tables))
