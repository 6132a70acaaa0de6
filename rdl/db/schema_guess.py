"""Guesses what a database's schema leaves out (a folder of CSV or parquet files
declares nothing), so that ``rdl inspect`` can offer a schema file to start from.

Keys. Without foreign keys nothing links the tables and a model sees every row
alone. A table's primary key is, in this order of preference: a column named
``id`` or ``<table>_id`` (the table's name in the singular or as written),
another id-named column (``playerID``, ``sku_id``) not named for another table,
or a pair of id-named columns, whose values (pairs) are unique and never
missing (a single column may miss a value in at most :data:`MAX_KEY_GAPS` of
the rows, such as a row an export cut short: the YAML says how many rows the
key drops); failing those, a unique column whose name another table has for a
column of values mostly found in it (``planes.tailnum``). A foreign key is a
column of another table named like a single key (``user_id`` for
``users.user_id``, ``<table>_id`` for an ``id`` key, or the table's name in
the singular, ``patient`` for ``patients``), or both columns of a
pair key, whose values are nearly all (:data:`MIN_FOUND`) among the key's (a
table's own key too, where a larger table has a key of that name: reviews keyed
by ``order_id`` extend ``orders`` one to one). A
link with only most of its values found (:data:`MIN_SHOWN`), as exports with
dangling references have them, is shown commented out, as is a text column
named unlike any key whose values are nearly all a table's text key
(``flights.origin`` in ``airports.faa``, which then becomes that key).

Implied tables. An id-named column that repeats (``events.user_id``), is no
table's key and links to none, names things the data holds no table of. An
implied table (``users: events.user_id``) gives each value a row, so a task can
predict for it and its rows link through it; same-named columns of several
tables feed one. A column named for its own table (``reviews.review_id``, a key
with duplicates), its table's one-column key, part of a composite link, read
as a time (``yearID``), or with fewer than :data:`MIN_IMPLIED` values (a
category, already a feature) is not offered; a column of a pair key may be
(``tags`` keyed by ``[userId, movieId]`` names users).

Times. A table without a time column has every row seen at every prediction
time, so a row of 2015 informs a prediction for 2010. A whole-number column named
for a year, month or date (``yearID``, ``season``, ``month``, ``date``) whose
values all read as one (1800-2100, YYYYMM, YYYYMMDD) is offered as its time
column if at least half of the rows have it (the YAML says how many lack it),
placed at the period's end: a row is seen once its period is over, which
never leaks a season's statistics into a prediction made during it. Six
digits that all read as YYMMDD (less the zeros a number drops: 2001's dates
start with them) are offered by their format, ``%y%m%d``, as dates written
as text are read. A
whole-number column named for a time (``timestamp``, ``created_at``, ``ts``)
whose values all read as 1973-2100 in seconds (or ms, us, ns) since 1970 is
offered with that unit.
Where other tables have time columns, only tables that link to another one are
offered a time column (a static parent is often static by choice), and only a
column with two values or more (Sakila's films all have release year 2006: placed
at that year's end, it would hide every film from the rentals, which end in
February 2006, and order nothing).

The guesses follow names and values only, and are printed (or written to a new
file) for the user to check, never applied.
"""
from __future__ import annotations

import re
from collections.abc import Collection, Hashable
from dataclasses import dataclass, field
from itertools import combinations

import pandas as pd

from rdl.db.database import Database
from rdl.db.keys import SURROGATE_KEY, id_named, whole_numbers
from rdl.db.schema import CALENDAR_UNITS, TimeColumn
from rdl.db.table import Table
from rdl.db.times import NOT_CREATION, parse_times

MIN_FOUND = 0.95  # share of a column's values that must be keys of the parent
MIN_SHOWN = 0.5  # a link with less found is not shown; below MIN_FOUND, commented out
MIN_IMPLIED = 20  # distinct values an implied table needs; fewer make a category, a feature
MAX_KEY_GAPS = 0.01  # share of rows a one-column key may lack a value in

Key = str | tuple[str, ...]  # one column, or the columns of a composite key


@dataclass(frozen=True)
class ImpliedGuess:
    """The ``(table, column)`` pairs naming an implied table's rows, how many
    rows have a value, and how many distinct values they hold."""

    sources: tuple[tuple[str, str], ...]
    rows: int
    values: int

    def refs(self) -> list[str]:
        return [f"{table}.{column}" for table, column in self.sources]


@dataclass
class SchemaGuess:
    r"""Schema entries that names and values suggest.

    Args:
        primary_keys: Table -> column (or columns), for tables with only
            rdl's row-id key.
        foreign_keys: Table -> column (or columns) -> (parent table, share
            of the values found among the parent's keys, values compared).
        time_columns: Table -> (column, unit: a calendar period or an
            epoch unit), for tables without a time column.
        weak_links: Like ``foreign_keys``, for links with only part of
            their values found (at least :data:`MIN_SHOWN`).
        time_gaps: Table -> rows without a value in its guessed time column
            (rows the time column would drop), where there are any.
        key_gaps: Table -> rows without a value in its guessed primary key
            (rows the key would drop), where there are any.
        time_parents: Table without a time -> (foreign key column, parent with
            a time), offered commented out as ``time_column: {from: ...}``
            (an order line happens with its order; a customer does not
            happen with its sales rep, so the user decides).
        implied_tables: Name -> the columns that name its rows, for
            ``implied_tables`` (:mod:`rdl.db.implied`).
    """

    primary_keys: dict[str, Key] = field(default_factory=dict)
    foreign_keys: dict[str, dict[Key, tuple[str, float, int]]] = field(default_factory=dict)
    time_columns: dict[str, tuple[str, str]] = field(default_factory=dict)
    weak_links: dict[str, dict[Key, tuple[str, float, int]]] = field(default_factory=dict)
    time_gaps: dict[str, int] = field(default_factory=dict)
    key_gaps: dict[str, int] = field(default_factory=dict)
    time_parents: dict[str, tuple[str, str]] = field(default_factory=dict)
    implied_tables: dict[str, ImpliedGuess] = field(default_factory=dict)

    def links_only(self) -> SchemaGuess:
        """The guessed foreign keys, with only the guessed primary keys they
        point to."""
        parents = {parent for found in (self.foreign_keys, self.weak_links)
                   for links in found.values() for parent, _, _ in links.values()}
        return SchemaGuess({table: key for table, key in self.primary_keys.items()
                            if table in parents}, self.foreign_keys, self.time_columns,
                           self.weak_links, self.time_gaps, self.time_parents,
                           self.implied_tables, self.key_gaps)

    def add_link(self, table: str, column: Key, link: tuple[str, float, int] | None) -> None:
        """Keeps ``link`` (parent, share found, values) as a foreign key, as a
        weak link, or not at all, by its share."""
        if link is not None and link[1] >= MIN_SHOWN:
            kind = self.foreign_keys if link[1] >= MIN_FOUND else self.weak_links
            kind.setdefault(table, {})[column] = link

    def empty(self) -> bool:
        """Whether nothing is guessed."""
        return not (self.primary_keys or self.foreign_keys or self.time_columns
                    or self.weak_links or self.implied_tables or self.time_parents)

    def merged_into(self, schema: dict) -> dict:
        """A copy of a schema file's content (:obj:`schema`, as YAML reads it)
        with these guesses added where it declares nothing for them (the weak
        links left out: :meth:`weak_links_note` lists them as comments)."""
        merged = {**schema, "tables": {name: dict(spec or {}) for name, spec
                                       in (schema.get("tables") or {}).items()}}
        for table in sorted(set(self.primary_keys) | set(self.foreign_keys)
                            | set(self.time_columns)):
            spec = merged["tables"].setdefault(table, {})
            if table in self.primary_keys:
                key = self.primary_keys[table]
                spec.setdefault("primary_key", key if isinstance(key, str) else list(key))
            if table in self.time_columns:
                spec.setdefault("time_column", _time_spec(*self.time_columns[table]))
            links = self.foreign_keys.get(table, {})
            if links:
                declared = dict(spec.get("foreign_keys") or {})
                for column, (parent, _, _) in links.items():
                    if isinstance(column, str):
                        declared.setdefault(column, parent)
                    else:
                        declared.setdefault(parent, {"columns": list(column), "table": parent})
                spec["foreign_keys"] = declared
        if self.implied_tables:
            implied = dict(merged.get("implied_tables") or {})
            fed = {ref for refs in implied.values()
                   for ref in ([refs] if isinstance(refs, str) else refs)}
            for name, found in self.implied_tables.items():
                if not fed & set(found.refs()):  # a column feeds one table
                    implied.setdefault(name, found.refs())
            merged["implied_tables"] = implied
        return merged

    def weak_links_note(self) -> str:
        """The weak links and the parents' times as comment lines, for a file
        whose YAML is written as data (where they cannot stay commented out in
        place); empty if none."""
        links = [f"#   {table}: {_yaml_key(column)} -> {parent}   # {_weak_reason(found, count)}"
                 for table, links in sorted(self.weak_links.items())
                 for column, (parent, found, count) in sorted(links.items(), key=_by_name)]
        times = [f"#   {table}: time_column: {{from: {column}}}   # {parent} has a time"
                 for table, (column, parent) in sorted(self.time_parents.items())]
        note = []
        if links:
            note += ["# Links not added (check each; the line says why):", *links]
        if times:
            note += ["# Times not added (add one under its table if each row happens with the "
                     "row it names):", *times]
        return "".join(line + "\n" for line in note)

    def to_yaml(self) -> str:
        """The guesses as a schema file's ``tables:`` section, each foreign key
        with how many of its values the parent has; weak links commented out."""
        lines = ["tables:"]
        for table in sorted(set(self.primary_keys) | set(self.foreign_keys)
                            | set(self.time_columns) | set(self.weak_links)
                            | set(self.time_parents)):
            lines.append(f"  {table}:")
            if table in self.primary_keys:
                key = self.primary_keys[table]
                lines.append(f"    primary_key: {_yaml_key(key)}"
                             + _gaps_note(key, self.key_gaps.get(table, 0)))
            if table in self.time_columns:
                spec = ", ".join(f"{k}: {_yaml_scalar(v)}" for k, v
                                 in _time_spec(*self.time_columns[table]).items())
                lines.append(f"    time_column: {{{spec}}}" + _gaps_note(
                    self.time_columns[table][0], self.time_gaps.get(table, 0)))
            elif table in self.time_parents:
                column, parent = self.time_parents[table]
                lines.append(f"    # time_column: {{from: {column}}}   # no time of its own; "
                             f"{parent} has one: uncomment if each row happens with its "
                             f"{parent} row")
            links = {**self.weak_links.get(table, {}), **self.foreign_keys.get(table, {})}
            if links:
                lines.append("    foreign_keys:")
            for column, (parent, found, count) in sorted(links.items(), key=_by_name):
                target = (parent if isinstance(column, str) else
                          f"{parent}: {{columns: {_yaml_key(column)}, table: {parent}}}")
                name = f"{column}: " if isinstance(column, str) else ""
                if column in self.foreign_keys.get(table, {}):
                    lines.append(f"      {name}{target}   # {found:.1%} of {count:,} values found")
                else:
                    lines.append(f"      # {name}{target}   # {_weak_reason(found, count)}")
        if self.implied_tables:
            lines.append("implied_tables:   # a row per value, first seen at its earliest row")
        for name, found in sorted(self.implied_tables.items()):
            lines.append(f"  {name}: [{', '.join(found.refs())}]   # {found.rows:,} rows name "
                         f"{found.values:,} values")
        return "\n".join(lines)


def guess_keys(db: Database) -> SchemaGuess:
    """Primary keys for tables that have only a row id (and that no declared
    foreign key points to), then foreign keys to every table whose key
    (declared or guessed) another table's columns name."""
    guess = SchemaGuess()
    keys: dict[str, Key] = {}
    referenced = {parent for table in db for parent in table.foreign_keys.values()}
    # names a column holding a table's key has: no other table's key goes by them
    id_names = {table.name: _referring_names(table.name) for table in db}
    columns = {table.name: {str(column).lower() for column in table.df.columns} for table in db}
    for table in db:
        if table.primary_key == SURROGATE_KEY and table.name not in referenced:
            held = [names for name, names in columns.items() if name != table.name]
            key = _primary_key(table.name, table.df, _of_others(id_names, table.name), held)
            if key is not None:
                guess.primary_keys[table.name] = keys[table.name] = key
                if isinstance(key, str) and (gaps := int(table.df[key].isna().sum())):
                    guess.key_gaps[table.name] = gaps
        elif table.primary_key not in (None, SURROGATE_KEY):
            keys[table.name] = table.primary_key
    for table in db:  # keys named for no id, found by another table's column of that name
        if (table.primary_key == SURROGATE_KEY and table.name not in referenced | set(keys)
                and (key := _shared_key(table.name, db, keys,
                                        _of_others(id_names, table.name))) is not None):
            guess.primary_keys[table.name] = keys[table.name] = key
    for child in db:
        own = keys.get(child.name)
        by_name = {str(column).lower(): column for column in child.df.columns}
        for column in child.df.columns:
            if column == SURROGATE_KEY or column in child.foreign_keys:
                continue
            best = None
            for parent in _parents_named_by(str(column).lower(), child.name, keys, db):
                if column == own and not _parent_of(parent, child.name, db):
                    continue  # two tables keyed by one name: only the smaller links (1:1)
                found, count = _found_share(child.df[[column]], db[parent].df[[keys[parent]]])
                if count and (best is None or found > best[1]):
                    best = (parent, found, count)
                if count and found >= MIN_FOUND:
                    break
            guess.add_link(child.name, column, best)
        for parent, key in keys.items():
            if parent == child.name or isinstance(key, str):
                continue
            columns = tuple(by_name.get(part.lower()) for part in key)
            if None in columns or (columns == own and _parent_of(child.name, parent, db)):
                continue  # two tables keyed by the same pair: only the smaller links (1:1)
            found, count = _found_share(child.df[list(columns)], db[parent].df[list(key)])
            if count:
                guess.add_link(child.name, columns, (parent, found, count))
    _links_named_otherwise(db, guess, keys, referenced, id_names)
    guess.implied_tables = _implied_tables(db, guess, keys)
    return guess


def _implied_tables(db: Database, guess: SchemaGuess,
                    keys: dict[str, Key]) -> dict[str, ImpliedGuess]:
    """The implied table each name of :func:`_implied_stem` columns suggests
    (``user_id`` -> ``users``), fed by every column of that name, where their
    values repeat and number at least :data:`MIN_IMPLIED`; a name some table
    already has is passed over."""
    linked = {(table, column) for found in (guess.foreign_keys, guess.weak_links)
              for table, links in found.items() for key in links
              for column in ((key,) if isinstance(key, str) else key)}
    by_stem: dict[str, list[tuple[str, str, pd.Series]]] = {}
    for table in db:
        key = keys.get(table.name, table.primary_key)  # a pair key's columns may name things
        taken = ({key} if isinstance(key, str) else set()) | set(table.foreign_keys)
        taken |= {column for name, column in linked if name == table.name}
        for column in table.df.columns:
            values = table.df[column].dropna()
            if column not in taken and (stem := _implied_stem(table, column, values)):
                by_stem.setdefault(stem, []).append((table.name, str(column), values))
    names = {table.name.lower() for table in db}
    implied = {}
    for stem, found in by_stem.items():
        name = stem if stem.endswith("s") else f"{stem}s"
        values = (pd.concat([_as_text(v) for _, _, v in found]) if len(found) > 1
                  else found[0][2])
        distinct = int(values.nunique())
        if (name not in names and stem not in names and distinct >= MIN_IMPLIED
                and distinct < len(values)):  # ids that repeat: rows name things
            implied[name] = ImpliedGuess(tuple((t, c) for t, c, _ in found), len(values),
                                         distinct)
    return implied


def _implied_stem(table: Table, column: Hashable, values: pd.Series) -> str | None:
    """What a column of ``table`` (not its key, linking nowhere) names, if it
    may name things without a table: id-named, not a time, not named for its
    own table."""
    stem = _stem(str(column))
    if (not id_named(column) or not stem or stem in table.name.lower() or values.empty
            or column == table.time_column or not _keyish(values)
            or _time_unit(str(column), values)):
        return None
    return stem


def _stem(column: str) -> str:
    """What an id-named column names: ``user_id`` -> ``user``, ``playerID`` -> ``player``."""
    name = column[:-3] if column.lower().endswith("_id") else column[:-2]
    return name.lower()


def _links_named_otherwise(db: Database, guess: SchemaGuess, keys: dict[str, Key],
                           referenced: set[str], id_names: dict[str, set[str]]) -> None:
    """Text columns that no name links, whose values are nearly all
    (:data:`MIN_FOUND`) among a table's single text key, as weak links (shown
    commented out: values alone are weaker evidence than a name): a keyless
    table's unique text column that such a column finds becomes its key
    (``airports.faa``, which ``flights.origin`` and ``flights.dest`` name)."""
    linked = {(table, column) for found in (guess.foreign_keys, guess.weak_links)
              for table, links in found.items() for column in links}
    loose = {table.name: [column for column in table.df.columns
                          if column not in (keys.get(table.name), SURROGATE_KEY)
                          and column not in table.foreign_keys
                          and (table.name, column) not in linked
                          and _texty(table.df[column]) and table.df[column].nunique() >= 2]
             for table in db}
    counts = {(name, column): db[name].df[column].value_counts()
              for name, columns in loose.items() for column in columns}

    def finds(parent: str, key: str) -> list[tuple[str, str, float, int]]:
        """The loose columns of other tables whose values ``parent.key`` holds."""
        values, found = db[parent].df[key], []
        for (name, column), seen in counts.items():
            share = float(seen[seen.index.isin(values)].sum() / seen.sum())
            if name != parent and share >= MIN_FOUND:
                found.append((name, column, share, int(seen.sum())))
        return found

    for table in db:
        if table.primary_key != SURROGATE_KEY or table.name in referenced | set(keys):
            continue
        others = _of_others(id_names, table.name)
        for column in table.df.columns:
            values = table.df[column]
            if (column != SURROGATE_KEY and str(column).lower() not in others
                    and _texty(values) and values.notna().all() and values.is_unique
                    and finds(table.name, column)):
                guess.primary_keys[table.name] = keys[table.name] = column
                break
    for parent, key in keys.items():
        if isinstance(key, str) and _texty(db[parent].df[key]):
            for child, column, found, count in finds(parent, key):
                links = guess.weak_links.setdefault(child, {})
                if column not in links or links[column][1] < found:
                    links[column] = (parent, found, count)


def guess_time_columns(db: Database, linking: Collection[str] = ()) -> dict[str, tuple[str, str]]:
    """For each table without a time column, its first whole-number column
    named and valued like a year, month or date, or like seconds (ms, ...)
    since 1970 (see the module's docstring).
    Where some table has a time column, only the tables in ``linking`` (those
    that link to another table: facts, not dimensions) get a guess: a static
    parent is static by choice as often as not (a film's release year, a
    plane's year of make, is no time its row appears), while a season's
    statistics beside dated rows are not; and a column of one value is no
    time there (it orders nothing and may hide the whole table)."""
    dated = any(table.time_column is not None for table in db)
    found: dict[str, tuple[str, str]] = {}
    for table in db:
        if table.time_column is not None or (dated and table.name not in linking):
            continue
        for column in table.df.columns:
            unit = _time_unit(str(column), table.df[column])
            if unit is not None and (not dated or table.df[column].nunique() > 1):
                found[table.name] = (column, unit)
                break
    return found


_CALENDAR_NAMES = {"year": ("year", "season"), "month": ("month", "period"),
                   "day": ("date", "day")}
# Dates written as six digits, YYMMDD (the PKDD'99 bank archive's 930705).
SHORT_DATE = "%y%m%d"



def _time_spec(column: str, unit: str) -> dict[str, str]:
    """A guessed time column as the schema file declares it: a calendar
    period placed at its end, an epoch number as it is, digits of a short
    date (:data:`SHORT_DATE`) by their format."""
    if unit == SHORT_DATE:
        return {"column": column, "format": unit}
    spec = {"column": column, "unit": unit}
    return {**spec, "at": "end"} if unit in CALENDAR_UNITS else spec


# Whole seconds (milliseconds, ...) since 1970 that fall in 1973-2100.
_EPOCH_RANGES = {"s": (10**8, 41 * 10**8), "ms": (10**11, 41 * 10**11),
                 "us": (10**14, 41 * 10**14), "ns": (10**17, 41 * 10**17)}
_EPOCH_NAMES = re.compile(r"time|date|created|creation|event|epoch|_at$|_on$|(^|_)ts$", re.I)


def _time_unit(name: str, values: pd.Series) -> str | None:
    """:func:`_calendar_unit`, or failing it an epoch unit (``s``, ``ms``,
    ``us``, ``ns``) for a column named for a time (``timestamp``, ``rated_at``,
    ``ts``) whose values all read as 1973-2100 in it (MovieLens-style ratings
    carry their time as seconds)."""
    unit = _calendar_unit(name, values)
    if unit is not None or not _EPOCH_NAMES.search(name):
        return unit
    values = _whole_numbers(values)
    if values is None or NOT_CREATION.search(name):
        return None
    low, high = int(values.min()), int(values.max())
    for unit, (first, last) in _EPOCH_RANGES.items():
        if first <= low and high <= last:
            return unit
    return None


def _calendar_unit(name: str, values: pd.Series) -> str | None:
    """``year``, ``month`` or ``day`` if every value present (in at least half
    of the rows) reads as one and the name says so (and names no other
    moment: a birth or death year is no row's time)."""
    lowered = name.lower()
    values = _whole_numbers(values)
    if values is None or NOT_CREATION.search(name):
        return None
    low, high = int(values.min()), int(values.max())
    for unit, words in _CALENDAR_NAMES.items():
        if not any(word in lowered for word in words):
            continue
        if unit == "year" and 1800 <= low and high <= 2100:
            return unit
        if unit == "month" and 180001 <= low and high <= 210012 and values.mod(100).between(
                1, 12).all():
            return unit
        if unit == "day" and 18000101 <= low and high <= 21001231:
            days = pd.to_datetime(values.astype(str), format="%Y%m%d", errors="coerce")
            if days.notna().all():
                return unit
        if unit == "day" and 101 <= low and high <= 991231:  # six digits, zeros dropped
            _, unread = parse_times(values, TimeColumn(name, format=SHORT_DATE))  # as read then
            if not unread:
                return SHORT_DATE
    return None


def _whole_numbers(values: pd.Series) -> pd.Series | None:
    """The present values of a column of whole numbers (integers, or floats as
    a CSV reader makes of integers with gaps) that at least half of the rows
    have, as int64; None for any other column. A time column drops the rows
    it lacks (counted), so a few gaps (an archive's one empty row) are no
    reason to leave a table static, while a mostly missing column is no
    row's time."""
    if not whole_numbers(values):
        return None
    present = values.dropna()
    if present.empty or 2 * len(present) < len(values):
        return None
    return present.astype("int64")


def _parent_of(table: str, other: str, db: Database) -> bool:
    """Of two tables keyed alike, whether ``table`` is the one the other links
    to: the larger one, or on a tie the first by name."""
    return (len(db[table]), other) > (len(db[other]), table)


def _parents_named_by(column: str, child: str, keys: dict[str, Key], db: Database) -> list[str]:
    """Tables with a single key that a column so named may reference: those
    whose name it follows (``user_id`` -> ``users``) first, then those whose
    key has its name, the larger tables first."""
    named = [parent for parent, key in keys.items()
             if parent != child and isinstance(key, str) and column in _names_of(parent, key)]
    return sorted(named, key=lambda parent: (column not in _id_names(parent), -len(db[parent])))


def columns_naming(db: Database, table: str) -> list[str]:
    """``table.column`` of every column named for keys of ``table`` (``user_id``
    for ``users``) in the other tables, sorted: what an implied table of that
    name would be fed by."""
    names = _id_names(table)
    return sorted(f"{other.name}.{column}" for other in db if other.name != table
                  for column in other.df.columns if str(column).lower() in names)


def _of_others(id_names: dict[str, set[str]], table: str) -> set[str]:
    """The id names (:func:`_id_names`) of every table but ``table``."""
    return set().union(*(names for name, names in id_names.items() if name != table))


def _id_names(table: str) -> set[str]:
    """How a column holding this table's key is commonly named: ``<stem>_id``
    or ``<stem>id`` for the name as written and each way to read it as a
    plural (users, addresses, categories); a stem no column has costs nothing."""
    return {f"{stem}{sep}id" for stem in _stems(table) for sep in ("_", "")}


def _stems(table: str) -> set[str]:
    """The table's name, lowercase, as written and each way to read it as a plural."""
    name = table.lower()
    stems = {name}
    if name.endswith("s"):
        stems.add(name[:-1])
    if name.endswith("es"):
        stems.add(name[:-2])
    if name.endswith("ies"):
        stems.add(name[:-3] + "y")
    return stems


def _names_of(parent: str, key: str) -> set[str]:
    """Names a column referencing ``parent.key`` may have: an id name, the
    key's own name, or the table's name in the singular (Synthea's
    ``encounters.PATIENT`` for ``patients.Id``)."""
    names = _referring_names(parent)
    if key.lower() != "id":
        names.add(key.lower())
    return names


def _referring_names(table: str) -> set[str]:
    """The names of a column in another table that holds this table's key,
    whatever the key is called: its id names and its name in the singular."""
    return _id_names(table) | _bare_names(table)


def _bare_names(table: str) -> set[str]:
    """The table's name in the singular: each reading of a plural, or the
    name itself where it is no plural (a column ``patients`` counts them)."""
    stems = _stems(table)
    return stems - {table.lower()} if table.lower().endswith("s") else stems


def _primary_key(table: str, df: pd.DataFrame, others: set[str],
                 held: list[set[str]]) -> Key | None:
    """The first of: an ``id``/``<table>_id`` column, another id-named column
    not named for another table (``user_id`` of ``events`` is no key, however
    unique), a pair of id-named columns neither of which is unique alone, that
    is unique and never missing (a single column may miss a value in at most
    :data:`MAX_KEY_GAPS` of the rows). Of several such pairs, the first that
    another table has both columns of (``held``: each other table's column
    names, lower case) wins: ``[yearID, teamID]``, which season statistics
    name, over ``[yearID, franchID]``."""
    # a single column may lack a value in a few rows (an export cut short)
    singles = [column for column in df.columns
               if id_named(column) and (_keyish(df[column]) or whole_numbers(df[column]))
               and df[column].notna().any()
               and df[column].isna().sum() <= MAX_KEY_GAPS * len(df)]
    wanted = {"id"} | _id_names(table)
    named = [column for column in singles if str(column).lower() in wanted]
    rest = [column for column in singles if str(column).lower() not in wanted | others]
    for column in named + rest:
        if df[column].dropna().is_unique:
            return column
    candidates = [column for column in singles
                  if _keyish(df[column]) and df[column].notna().all()]
    unique = {column for column in candidates if df[column].is_unique}
    first = None
    for pair in combinations([c for c in candidates if c not in unique], 2):
        named_elsewhere = any({str(c).lower() for c in pair} <= names for names in held)
        if (named_elsewhere or first is None) and not df.duplicated(list(pair)).any():
            if named_elsewhere:
                return pair
            first = pair
    return first


def _gaps_note(column: Key, gaps: int) -> str:
    """The YAML comment saying how many rows lack ``column``, which rdl drops."""
    if not gaps:
        return ""
    dropped = "row: rdl drops it" if gaps == 1 else "rows: rdl drops them"
    return f"   # {column} missing in {gaps:,} {dropped} (counted)"


def _shared_key(table: str, db: Database, keys: dict[str, Key], others: set[str]) -> str | None:
    """A column of ``table`` that is unique and never missing, not named for
    another table (``others``) or as another table's key, whose name another
    table has for a column with at least :data:`MIN_SHOWN` of its values among
    it (``planes.tailnum`` for ``flights.tailnum``)."""
    df = db[table].df
    taken = others | {key.lower() for key in keys.values() if isinstance(key, str)}
    for column in df.columns:
        name = str(column).lower()
        values = df[column]
        if (column == SURROGATE_KEY or name in taken or not _keyish(values)
                or values.isna().any() or not values.is_unique):
            continue
        for other in db:
            same = [c for c in other.df.columns if str(c).lower() == name]
            if other.name != table and same:
                found, count = _found_share(other.df[[same[0]]], df[[column]])
                if count and found >= MIN_SHOWN:
                    return column
    return None


def _texty(values: pd.Series) -> bool:
    return pd.api.types.is_string_dtype(values) and not pd.api.types.is_bool_dtype(values)


def _keyish(values: pd.Series) -> bool:
    return pd.api.types.is_integer_dtype(values) or pd.api.types.is_string_dtype(values)


def _found_share(child: pd.DataFrame, parent: pd.DataFrame) -> tuple[float, int]:
    """Share of ``child``'s rows without missing values whose values are a
    row of ``parent``'s, and how many rows that share is of; columns of
    different kinds compare as text."""
    child, parent = child.dropna(), parent.dropna()
    if child.empty:
        return 0.0, 0
    mine, theirs = [], []
    for i in range(child.shape[1]):
        ours, its = child.iloc[:, i], parent.iloc[:, i]
        if (pd.api.types.is_numeric_dtype(ours) != pd.api.types.is_numeric_dtype(its)
                or pd.api.types.is_float_dtype(ours) != pd.api.types.is_float_dtype(its)):
            ours, its = _as_text(ours), _as_text(its)
        mine.append(ours.to_numpy())
        theirs.append(its.to_numpy())
    if len(mine) == 1:
        return float(pd.Series(mine[0]).isin(theirs[0]).mean()), len(child)
    found = pd.MultiIndex.from_arrays(mine).isin(pd.MultiIndex.from_arrays(theirs))
    return float(found.mean()), len(child)


def _as_text(values: pd.Series) -> pd.Series:
    """Values (none missing) as text, whole floats without their ``.0`` (a key
    column with missing values reads from a file as float)."""
    if pd.api.types.is_float_dtype(values) and (values == values.round()).all():
        values = values.astype("int64")
    return values.astype(str)


def _weak_reason(found: float, count: int) -> str:
    """Why a weak link is commented out."""
    if found >= MIN_FOUND:
        return f"{found:.1%} of {count:,} values found, but named unlike the key"
    return f"only {found:.1%} of {count:,} values found: the rest would link to no row"


def _yaml_scalar(value: str) -> str:
    """A value as YAML reads it back: quoted where it starts with ``%``."""
    return f'"{value}"' if value.startswith("%") else value


def _yaml_key(key: Key) -> str:
    return key if isinstance(key, str) else f"[{', '.join(key)}]"


def _by_name(item) -> str:
    column = item[0]
    return column if isinstance(column, str) else " ".join(column)
