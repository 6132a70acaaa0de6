"""Primary and foreign keys: one key column per table, every link resolved.

After :func:`resolve_primary_key` each table has a single key column without
NULLs or duplicates (composite keys and key-less event tables get a surrogate
``_pk`` row id). :func:`resolve_foreign_key` then rewrites each reference so
that it holds the parent's key value, or NULL when the parent row is missing.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.db.issues import DataIssue, SchemaError
from rdl.db.schema import ForeignKey

SURROGATE_KEY = "_pk"


def resolve_primary_key(
    name: str, df: pd.DataFrame, pk: tuple[str, ...]
) -> tuple[pd.DataFrame, str, list[DataIssue]]:
    """Returns the rows with a clean single key column, that column's name and
    the issues found (NULL keys and duplicates are dropped and counted)."""
    issues = []
    if pk:
        null = df[list(pk)].isna().any(axis=1)
        if null.any():
            issues.append(DataIssue(
                "null_primary_key", name, "+".join(pk), int(null.sum()), "rows dropped",
                "primary key is NULL",
            ))
            df = df.loc[~null]
        dup = df.duplicated(subset=list(pk), keep="first")
        if dup.any():
            issues.append(DataIssue(
                "duplicate_primary_key", name, "+".join(pk), int(dup.sum()),
                "rows dropped (first occurrence kept)", "primary key value repeats",
            ))
            df = df.loc[~dup]
        df = df.reset_index(drop=True)
    if len(pk) == 1:
        df[pk[0]] = _tidy_key_dtype(df[pk[0]])
        return df, pk[0], issues
    if SURROGATE_KEY in df.columns:
        raise SchemaError(
            f"Table {name!r} needs a surrogate key but already has a column "
            f"{SURROGATE_KEY!r}; declare its primary key in the schema file."
        )
    df.insert(0, SURROGATE_KEY, np.arange(len(df), dtype=np.int64))
    return df, SURROGATE_KEY, issues


def foreign_key_column(fk: ForeignKey) -> str:
    """Name of the column that holds the resolved reference."""
    return fk.columns[0] if len(fk.columns) == 1 else "+".join(fk.columns)


def resolve_foreign_key(
    child: str, child_df: pd.DataFrame, fk: ForeignKey,
    parent_df: pd.DataFrame, parent_key: str, parent_ref: tuple[str, ...],
) -> tuple[pd.Series, list[DataIssue]]:
    """Maps a reference onto the parent's key column.

    ``parent_ref`` are the parent columns the reference names (its primary
    key columns unless the foreign key says otherwise). Returns the new
    column, holding parent key values, and a count of dangling references.
    """
    cols = list(fk.columns)
    present = child_df[cols].notna().all(axis=1).to_numpy()
    if len(cols) == 1:
        parent_values = _comparable(parent_df[parent_ref[0]], child_df[cols[0]])
        child_values = _comparable(child_df[cols[0]], parent_df[parent_ref[0]])
        positions = pd.Index(parent_values).get_indexer(child_values)
    else:
        parent_index = pd.MultiIndex.from_frame(parent_df[list(parent_ref)])
        positions = parent_index.get_indexer(pd.MultiIndex.from_frame(child_df[cols]))
    positions = np.where(present, positions, -1)
    dangling = int((present & (positions < 0)).sum())
    keys = parent_df[parent_key]
    resolved = keys.take(np.maximum(positions, 0)).reset_index(drop=True)
    resolved = resolved.astype(_nullable(keys.dtype)).where(positions >= 0)
    issues = []
    if dangling:
        column = foreign_key_column(fk)
        issues.append(DataIssue(
            "dangling_foreign_key", child, column, dangling, "link set to NULL, row kept",
            f"value not found in {fk.table}.{'+'.join(parent_ref)}",
        ))
    return resolved, issues


def _tidy_key_dtype(values: pd.Series) -> pd.Series:
    """Integral floats (ints that passed through NULL-able storage) become ints."""
    if pd.api.types.is_float_dtype(values):
        finite = values.dropna()
        if (finite == np.floor(finite)).all():
            return values.astype("Int64" if values.hasnans else "int64")
    return values


def _comparable(values: pd.Series, other: pd.Series) -> pd.Series:
    """Makes key values of different kinds (e.g. text vs int) comparable."""
    numeric = pd.api.types.is_numeric_dtype
    if numeric(values) and numeric(other):
        return _tidy_key_dtype(values)
    if numeric(values) != numeric(other):
        return _tidy_key_dtype(values).astype("string")
    return values


def _nullable(dtype) -> object:
    if pd.api.types.is_integer_dtype(dtype):
        return "Int64"
    return dtype
