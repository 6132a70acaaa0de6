"""Guesses the keys a database does not declare (a folder of CSV or parquet
files declares none), so that ``rdl inspect`` can offer a schema file to start from.

Without foreign keys nothing links the tables and a model sees every row alone.
The guesses follow names and values only, and are printed for the user to
check, never applied: a table's primary key is a column named ``id`` or
``<table>_id`` (the table's name in the singular or as written) whose values
are unique and never missing; a foreign key is a column of another table named
like that key (``user_id`` for ``users.user_id``, or ``<table>_id`` for an
``id`` key) whose values are nearly all (:data:`MIN_FOUND`) among the key's.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from rdl.db.database import Database
from rdl.db.keys import SURROGATE_KEY

MIN_FOUND = 0.95  # share of a column's values that must be keys of the parent


@dataclass
class GuessedKeys:
    r"""Keys that names and values suggest.

    Args:
        primary_keys: Table -> column, for tables with only rdl's row-id key.
        foreign_keys: Table -> column -> (parent table, share of the
            column's values found among the parent's keys, values compared).
    """

    primary_keys: dict[str, str] = field(default_factory=dict)
    foreign_keys: dict[str, dict[str, tuple[str, float, int]]] = field(default_factory=dict)

    def links_only(self) -> GuessedKeys:
        """The guessed foreign keys, with only the guessed primary keys they
        point to."""
        parents = {parent for links in self.foreign_keys.values()
                   for parent, _, _ in links.values()}
        return GuessedKeys({table: column for table, column in self.primary_keys.items()
                            if table in parents}, self.foreign_keys)

    def to_yaml(self) -> str:
        """The guesses as a schema file's ``tables:`` section, each foreign key
        with how many of its values the parent has."""
        lines = ["tables:"]
        for table in sorted(set(self.primary_keys) | set(self.foreign_keys)):
            lines.append(f"  {table}:")
            if table in self.primary_keys:
                lines.append(f"    primary_key: {self.primary_keys[table]}")
            links = self.foreign_keys.get(table, {})
            if links:
                lines.append("    foreign_keys:")
                for column, (parent, found, count) in sorted(links.items()):
                    lines.append(f"      {column}: {parent}   # {found:.1%} of {count:,} "
                                 "values found")
        return "\n".join(lines)


def guess_keys(db: Database) -> GuessedKeys:
    """Primary keys for tables that have only a row id, then foreign keys to
    every table whose key (declared or guessed) another table's column names."""
    guess = GuessedKeys()
    keys: dict[str, str] = {}
    for table in db:
        if table.primary_key == SURROGATE_KEY:
            column = _primary_key(table.name, table.df)
            if column is not None:
                guess.primary_keys[table.name] = keys[table.name] = column
        elif table.primary_key is not None:
            keys[table.name] = table.primary_key
    for child in db:
        own = keys.get(child.name)
        for column in child.df.columns:
            if column in (own, SURROGATE_KEY) or column in child.foreign_keys:
                continue
            for parent, key in keys.items():
                if parent == child.name or str(column).lower() not in _names_of(parent, key):
                    continue
                found, count = _found_share(child.df[column], db[parent].df[key])
                if count and found >= MIN_FOUND:
                    guess.foreign_keys.setdefault(child.name, {})[column] = (parent, found, count)
                    break
    return guess


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


def _primary_key(table: str, df: pd.DataFrame) -> str | None:
    wanted = {"id"} | _id_names(table)
    for column in df.columns:
        if str(column).lower() not in wanted:
            continue
        values = df[column]
        keyish = pd.api.types.is_integer_dtype(values) or pd.api.types.is_string_dtype(values)
        if keyish and values.notna().all() and values.is_unique:
            return column
    return None


def _found_share(child: pd.Series, parent: pd.Series) -> tuple[float, int]:
    """Share of ``child``'s non-missing values among ``parent``'s, and how
    many values that share is of; values of different kinds compare as text."""
    child = child.dropna()
    if child.empty:
        return 0.0, 0
    if (pd.api.types.is_numeric_dtype(child) != pd.api.types.is_numeric_dtype(parent)
            or pd.api.types.is_float_dtype(child) != pd.api.types.is_float_dtype(parent)):
        child, parent = _as_text(child), _as_text(parent)
    return float(child.isin(parent).mean()), len(child)


def _as_text(values: pd.Series) -> pd.Series:
    """Values as text, whole floats without their ``.0`` (a key column with
    missing values reads from a file as float)."""
    if pd.api.types.is_float_dtype(values):
        values = values.dropna()
        if (values == values.round()).all():
            values = values.astype("int64")
    return values.astype(str)
