r"""Foreign keys taken from a parent table (``customer_id: {from: invoice_id}``).

An order line names its order, and the order its customer; the line itself
does not name the customer. A task that predicts per customer from the lines
("which products will this customer buy") and a model that should reach a
customer's lines in one hop both need the link the lines lack. A schema file
declares it (see :mod:`rdl.db.schema`); this module copies, for every row, the
parent's key column from the parent row its own key names, and adds the copy
as a foreign key of the table. Everything downstream sees an ordinary key.
"""
from __future__ import annotations

import pandas as pd

from rdl.db.issues import SchemaError
from rdl.db.keys import parent_reference, parents_first, referenced_rows, take_rows
from rdl.db.schema import ForeignKey, InheritedKey, SchemaOverrides


def inherit_keys(overrides: SchemaOverrides, frames: dict[str, pd.DataFrame],
                 foreign_keys: dict[str, list[ForeignKey]],
                 key_columns: dict[str, tuple[str, ...]]) -> None:
    """Adds each declared inherited key: a column in ``frames[table]`` (the
    parent's raw key values, missing where the row's own key dangles or is
    missing) and a :class:`ForeignKey` in ``foreign_keys[table]``, which the
    caller then resolves, and counts dangling values of, like any other."""
    declared = {name: ov.inherited_keys for name, ov in overrides.tables.items()
                if ov.inherited_keys and name in frames}
    for name in _parents_first(declared, foreign_keys):
        for column, spec in declared[name].items():
            via = _own_key(name, column, spec, foreign_keys[name])
            target = _parents_key(name, column, spec, via.table, foreign_keys[via.table])
            parent = frames[via.table]
            rows = referenced_rows(frames[name], via, parent,
                                   parent_reference(name, via, key_columns, frames))
            frames[name][column] = take_rows(parent[spec.column], rows).to_numpy()
            foreign_keys[name].append(ForeignKey((column,), target.table, target.ref_columns))


def _own_key(name: str, column: str, spec: InheritedKey, keys: list[ForeignKey]) -> ForeignKey:
    """The table's one-column foreign key ``spec.through``."""
    if (fk := _one_column_key(keys, spec.through)) is None:
        raise SchemaError(
            f"Table {name!r}: foreign key {column!r} {{from: {spec.through}}} needs "
            f"{spec.through!r} to be a one-column foreign key of {name!r}; its foreign keys "
            f"are {_names(keys)}.")
    return fk


def _parents_key(name: str, column: str, spec: InheritedKey, parent: str,
                 keys: list[ForeignKey]) -> ForeignKey:
    """The parent's one-column foreign key ``spec.column``."""
    if (fk := _one_column_key(keys, spec.column)) is None:
        raise SchemaError(
            f"Table {name!r}: foreign key {column!r} {{from: {spec.through}}} copies "
            f"{parent}.{spec.column}, which is not a one-column foreign key of {parent!r}; its "
            f"foreign keys are {_names(keys)} (name another with {{from: {spec.through}, "
            "column: <one of them>}).")
    return fk


def _one_column_key(keys: list[ForeignKey], column: str) -> ForeignKey | None:
    return next((fk for fk in keys if fk.columns == (column,)), None)


def _names(keys: list[ForeignKey]) -> list[str]:
    return ["+".join(fk.columns) for fk in keys]


def _parents_first(declared: dict[str, dict[str, InheritedKey]],
                   foreign_keys: dict[str, list[ForeignKey]]) -> list[str]:
    """The tables with inherited keys, each after the parents it copies from
    when those inherit keys too (a line's customer through its order, whose
    customer comes through its basket)."""
    parents = {name: {fk.table for spec in specs.values()
                      if (fk := _one_column_key(foreign_keys[name], spec.through)) is not None
                      and fk.table != name}
               for name, specs in declared.items()}
    order, cycle = parents_first(parents)
    if cycle:
        raise SchemaError(f"Tables {cycle} take foreign keys from each other "
                          "(foreign_keys: {name: {from: ...}}); one of them needs its own.")
    return order
