"""Guesses the keys a database does not declare (a folder of CSV or parquet
files declares none), so that ``rdl inspect`` can offer a schema file to start from.

Without foreign keys nothing links the tables and a model sees every row alone.
The guesses follow names and values only, and are printed for the user to
check, never applied. A table's primary key is, in this order of preference:
a column named ``id`` or ``<table>_id`` (the table's name in the singular or as
written), another id-named column (``playerID``, ``sku_id``) not named for
another table, or a pair of id-named columns, whose values (pairs) are unique
and never missing. A foreign
key is a column of another table named like a single key (``user_id`` for
``users.user_id``, or ``<table>_id`` for an ``id`` key), or both columns of a
pair key, whose values are nearly all (:data:`MIN_FOUND`) among the key's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import pandas as pd

from rdl.db.database import Database
from rdl.db.keys import SURROGATE_KEY

MIN_FOUND = 0.95  # share of a column's values that must be keys of the parent

Key = str | tuple[str, ...]  # one column, or the columns of a composite key


@dataclass
class GuessedKeys:
    r"""Keys that names and values suggest.

    Args:
        primary_keys: Table -> column (or columns), for tables with only
            rdl's row-id key.
        foreign_keys: Table -> column (or columns) -> (parent table, share
            of the values found among the parent's keys, values compared).
    """

    primary_keys: dict[str, Key] = field(default_factory=dict)
    foreign_keys: dict[str, dict[Key, tuple[str, float, int]]] = field(default_factory=dict)

    def links_only(self) -> GuessedKeys:
        """The guessed foreign keys, with only the guessed primary keys they
        point to."""
        parents = {parent for links in self.foreign_keys.values()
                   for parent, _, _ in links.values()}
        return GuessedKeys({table: key for table, key in self.primary_keys.items()
                            if table in parents}, self.foreign_keys)

    def to_yaml(self) -> str:
        """The guesses as a schema file's ``tables:`` section, each foreign key
        with how many of its values the parent has."""
        lines = ["tables:"]
        for table in sorted(set(self.primary_keys) | set(self.foreign_keys)):
            lines.append(f"  {table}:")
            if table in self.primary_keys:
                lines.append(f"    primary_key: {_yaml_key(self.primary_keys[table])}")
            links = self.foreign_keys.get(table, {})
            if links:
                lines.append("    foreign_keys:")
                for column, (parent, found, count) in sorted(links.items(), key=_by_name):
                    target = (parent if isinstance(column, str) else
                              f"{parent}: {{columns: {_yaml_key(column)}, table: {parent}}}")
                    name = f"{column}: " if isinstance(column, str) else ""
                    lines.append(f"      {name}{target}   # {found:.1%} of {count:,} "
                                 "values found")
        return "\n".join(lines)


def guess_keys(db: Database) -> GuessedKeys:
    """Primary keys for tables that have only a row id (and that no declared
    foreign key points to), then foreign keys to every table whose key
    (declared or guessed) another table's columns name."""
    guess = GuessedKeys()
    keys: dict[str, Key] = {}
    referenced = {parent for table in db for parent in table.foreign_keys.values()}
    for table in db:
        if table.primary_key == SURROGATE_KEY and table.name not in referenced:
            others = set().union(*(_id_names(t.name) for t in db if t.name != table.name))
            key = _primary_key(table.name, table.df, others)
            if key is not None:
                guess.primary_keys[table.name] = keys[table.name] = key
        elif table.primary_key not in (None, SURROGATE_KEY):
            keys[table.name] = table.primary_key
    for child in db:
        own = keys.get(child.name)
        by_name = {str(column).lower(): column for column in child.df.columns}
        for column in child.df.columns:
            if column in (own, SURROGATE_KEY) or column in child.foreign_keys:
                continue
            for parent in _parents_named_by(str(column).lower(), child.name, keys, db):
                found, count = _found_share(child.df[[column]], db[parent].df[[keys[parent]]])
                if count and found >= MIN_FOUND:
                    guess.foreign_keys.setdefault(child.name, {})[column] = (parent, found, count)
                    break
        for parent, key in keys.items():
            if parent == child.name or isinstance(key, str):
                continue
            columns = tuple(by_name.get(part.lower()) for part in key)
            if None in columns or columns == own:
                continue
            found, count = _found_share(child.df[list(columns)], db[parent].df[list(key)])
            if count and found >= MIN_FOUND:
                guess.foreign_keys.setdefault(child.name, {})[columns] = (parent, found, count)
    return guess


def _parents_named_by(column: str, child: str, keys: dict[str, Key], db: Database) -> list[str]:
    """Tables with a single key that a column so named may reference: those
    whose name it follows (``user_id`` -> ``users``) first, then those whose
    key has its name, the larger tables first."""
    named = [parent for parent, key in keys.items()
             if parent != child and isinstance(key, str) and column in _names_of(parent, key)]
    return sorted(named, key=lambda parent: (column not in _id_names(parent), -len(db[parent])))


def _id_names(table: str) -> set[str]:
    """How a column holding this table's key is commonly named: ``<stem>_id``
    or ``<stem>id`` for the name as written and each way to read it as a
    plural (users, addresses, categories); a stem no column has costs nothing."""
    name = table.lower()
    stems = {name}
    if name.endswith("s"):
        stems.add(name[:-1])
    if name.endswith("es"):
        stems.add(name[:-2])
    if name.endswith("ies"):
        stems.add(name[:-3] + "y")
    return {f"{stem}{sep}id" for stem in stems for sep in ("_", "")}


def _names_of(parent: str, key: str) -> set[str]:
    """Names a column referencing ``parent.key`` may have."""
    names = _id_names(parent)
    if key.lower() != "id":
        names.add(key.lower())
    return names


def _id_named(column) -> bool:
    """``id``, ``..._id`` or ``...Id``/``...ID`` (``playerID``), not ``paid``."""
    name = str(column)
    return (name.lower() == "id" or name.lower().endswith("_id")
            or (len(name) > 2 and name[-2:] in ("Id", "ID")))


def _primary_key(table: str, df: pd.DataFrame, others: set[str]) -> Key | None:
    """The first of: an ``id``/``<table>_id`` column, another id-named column
    not named for another table (``user_id`` of ``events`` is no key, however
    unique), a pair of id-named columns neither of which is unique alone, that
    is unique and never missing."""
    candidates = [column for column in df.columns
                  if _id_named(column) and _keyish(df[column]) and df[column].notna().all()]
    wanted = {"id"} | _id_names(table)
    named = [column for column in candidates if str(column).lower() in wanted]
    rest = [column for column in candidates if str(column).lower() not in wanted | others]
    unique = {column for column in candidates if df[column].is_unique}
    for column in named + rest:
        if column in unique:
            return column
    for pair in combinations([c for c in candidates if c not in unique], 2):
        if not df.duplicated(list(pair)).any():
            return pair
    return None


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


def _yaml_key(key: Key) -> str:
    return key if isinstance(key, str) else f"[{', '.join(key)}]"


def _by_name(item) -> str:
    column = item[0]
    return column if isinstance(column, str) else " ".join(column)
