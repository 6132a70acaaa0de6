"""Primary and foreign keys: one key column per table, every link resolved.

After :func:`resolve_primary_key` each table has a single key column without
NULLs or duplicates (composite keys and key-less event tables get a surrogate
``_pk`` row id). :func:`resolve_foreign_key` then rewrites each reference so
that it holds the parent's key value, or NULL when the parent row is missing.
"""
from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

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
        df[pk[0]] = tidy_key_dtype(df[pk[0]])
        return df, pk[0], issues
    if SURROGATE_KEY in df.columns:
        raise SchemaError(
            f"Table {name!r} needs a surrogate key but already has a column "
            f"{SURROGATE_KEY!r}; declare its primary key in the schema file."
        )
    df.insert(0, SURROGATE_KEY, np.arange(len(df), dtype=np.int64))
    return df, SURROGATE_KEY, issues


def parents_first(parents: dict[str, set[str]]) -> tuple[list[str], list[str]]:
    """The tables of ``parents`` (table -> the tables it takes something from),
    each after those of its parents that are keys of ``parents`` too; and apart,
    sorted, the tables left over because they take from each other."""
    order: list[str] = []
    while len(order) < len(parents):
        ready = [name for name, named in parents.items() if name not in order
                 and all(p not in parents or p in order for p in named)]
        if not ready:
            return order, sorted(set(parents) - set(order))
        order.extend(ready)
    return order, []


def foreign_key_column(fk: ForeignKey) -> str:
    """Name of the column that holds the resolved reference."""
    return fk.columns[0] if len(fk.columns) == 1 else "+".join(fk.columns)


def parent_reference(
    child: str, fk: ForeignKey, key_columns: dict[str, tuple[str, ...]],
    frames: dict[str, pd.DataFrame],
) -> tuple[str, ...]:
    """The parent columns :obj:`fk` of table ``child`` references: its
    declared ones, or the parent's primary key; raises where there are none,
    they are not the parent's, or their number differs from the reference's."""
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


def referenced_rows(child_df: pd.DataFrame, fk: ForeignKey, parent_df: pd.DataFrame,
                    parent_ref: tuple[str, ...]) -> np.ndarray:
    """The row of ``parent_df`` each row of ``child_df`` names through
    :obj:`fk` (in the parent's columns ``parent_ref``), -1 where the
    reference is missing or names no row."""
    present = child_df[list(fk.columns)].notna().all(axis=1).to_numpy()
    return np.where(present, _found_rows(child_df, fk, parent_df, parent_ref), -1)


def resolve_foreign_key(
    child: str, child_df: pd.DataFrame, fk: ForeignKey,
    parent_df: pd.DataFrame, parent_key: str, parent_ref: tuple[str, ...],
) -> tuple[pd.Series, list[DataIssue]]:
    """Maps a reference onto the parent's key column.

    ``parent_ref`` are the parent columns the reference names (its primary
    key columns unless the foreign key says otherwise). Returns the new
    column, holding parent key values, and a count of dangling references.
    """
    present = child_df[list(fk.columns)].notna().all(axis=1).to_numpy()
    positions = np.where(present, _found_rows(child_df, fk, parent_df, parent_ref), -1)
    dangling = int((present & (positions < 0)).sum())
    resolved = take_rows(parent_df[parent_key], positions)
    issues = []
    if dangling:
        column = foreign_key_column(fk)
        issues.append(DataIssue(
            "dangling_foreign_key", child, column, dangling, "link set to NULL, row kept",
            f"value not found in {fk.table}.{'+'.join(parent_ref)}",
        ))
    return resolved, issues


def whole_numbers(values: pd.Series) -> bool:
    """Whether every present value of a number column is a whole number: an
    integer column, or floats that are (ints that passed through NULL-able
    storage, as a CSV reader makes of integers with gaps). Booleans are not."""
    if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
        return False
    if pd.api.types.is_integer_dtype(values):
        return True
    present = values.dropna()
    return bool(np.isfinite(present).all() and (present % 1 == 0).all())


def tidy_key_dtype(values: pd.Series) -> pd.Series:
    """Integral floats (ints that passed through NULL-able storage) become ints."""
    if pd.api.types.is_float_dtype(values) and whole_numbers(values):
        return values.astype("Int64" if values.hasnans else "int64")
    return values


def _positions(parent: pd.Series, child: pd.Series) -> np.ndarray:
    """Row of ``parent`` holding each ``child`` value, or -1 (Arrow hash lookup).

    The hash table is built on the smaller side: a small child table (fraud
    reports) referencing a huge parent (transactions) hashes its own distinct
    values and scans the parent, instead of hashing every parent key.
    """
    parent_arr, child_arr = _arrow_pair(tidy_key_dtype(parent), tidy_key_dtype(child))
    if len(child_arr) < len(parent_arr):
        uniques = pc.drop_null(pc.unique(child_arr))
        hit = _index_in(parent_arr, uniques)
        rows = np.flatnonzero(hit >= 0)[::-1]  # reversed: the first parent row wins
        row_of_unique = np.full(len(uniques), -1, dtype=np.int64)
        row_of_unique[hit[rows]] = rows
        which = _index_in(child_arr, uniques)
        positions = row_of_unique[np.maximum(which, 0)] if len(uniques) else which
        positions[which < 0] = -1
    else:
        positions = _index_in(child_arr, parent_arr)
    del parent_arr, child_arr
    pa.default_memory_pool().release_unused()  # the hash table's pages, back to the OS
    return positions


def _index_in(values: pa.Array, value_set: pa.Array) -> np.ndarray:
    found = pc.index_in(values, value_set=value_set)
    return found.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _arrow_pair(parent: pd.Series, child: pd.Series) -> tuple[pa.Array, pa.Array]:
    """Both key columns as Arrow arrays of one type: numbers compare as
    numbers, times of different units as nanoseconds, anything else mixed
    compares as text."""
    parent_arr = _single_chunk(pa.array(parent, from_pandas=True))
    child_arr = _single_chunk(pa.array(child, from_pandas=True))
    if parent_arr.type == child_arr.type:
        return parent_arr, child_arr
    numeric = pa.types.is_integer, pa.types.is_floating
    if any(f(parent_arr.type) for f in numeric) and any(f(child_arr.type) for f in numeric):
        return parent_arr.cast(pa.float64()), child_arr.cast(pa.float64())
    if (pa.types.is_timestamp(parent_arr.type) and pa.types.is_timestamp(child_arr.type)
            and parent_arr.type.tz == child_arr.type.tz):  # e.g. a parsed time column (ns) and us
        finest = pa.timestamp("ns", tz=parent_arr.type.tz)
        return parent_arr.cast(finest), child_arr.cast(finest)
    return parent_arr.cast(pa.string()), child_arr.cast(pa.string())


def _single_chunk(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Arrow-backed pandas columns may hold several chunks; the kernels want one."""
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def _joint_codes(parent: list[pd.Series], child: list[pd.Series]) -> tuple[np.ndarray, np.ndarray]:
    """One int64 code per row of a composite key, equal for equal tuples
    across ``parent`` and ``child`` (NULL parts give -1)."""
    n_parent = len(parent[0])
    parent_codes = np.zeros(n_parent, dtype=np.int64)
    child_codes = np.zeros(len(child[0]), dtype=np.int64)
    missing = np.zeros(n_parent + len(child[0]), dtype=bool)
    for p, c in zip(parent, child):
        p_arr, c_arr = _arrow_pair(tidy_key_dtype(p), tidy_key_dtype(c))
        both = pa.concat_arrays([p_arr, c_arr]).to_pandas()
        codes, uniques = pd.factorize(both, use_na_sentinel=True)
        missing |= codes < 0
        width = max(len(uniques), 1)
        parent_codes = parent_codes * width + codes[:n_parent]
        child_codes = child_codes * width + codes[n_parent:]
        # renumber densely so the next multiplication cannot overflow int64
        dense, _ = pd.factorize(np.concatenate([parent_codes, child_codes]))
        parent_codes, child_codes = dense[:n_parent], dense[n_parent:]
    parent_codes[missing[:n_parent]] = -1
    child_codes[missing[n_parent:]] = -1
    return parent_codes, child_codes


def _found_rows(child_df: pd.DataFrame, fk: ForeignKey, parent_df: pd.DataFrame,
                parent_ref: tuple[str, ...]) -> np.ndarray:
    """The parent row each child value (a pair of values: their joint codes)
    is found in, -1 where none holds it."""
    cols = list(fk.columns)
    if len(cols) == 1:
        return _positions(parent_df[parent_ref[0]], child_df[cols[0]])
    parent_codes, child_codes = _joint_codes(
        [parent_df[c] for c in parent_ref], [child_df[c] for c in cols]
    )
    return _positions(pd.Series(parent_codes), pd.Series(child_codes))


def take_rows(keys: pd.Series, positions: np.ndarray) -> pd.Series:
    """``keys`` at ``positions``, NULL where a position is -1, built in one
    pass (integer keys become nullable ``Int64``)."""
    values = keys.array
    if isinstance(values, pd.arrays.NumpyExtensionArray) and values.dtype.kind in "iu":
        raw = values.to_numpy().astype(np.int64, copy=False)
        taken = raw[np.maximum(positions, 0)] if len(raw) else np.zeros(len(positions), np.int64)
        return pd.Series(pd.arrays.IntegerArray(taken, positions < 0))
    if isinstance(values, pd.arrays.NumpyExtensionArray):
        values = values.to_numpy()
    return pd.Series(pd.api.extensions.take(values, positions, allow_fill=True))


def id_named(column: Hashable) -> bool:
    """``id``, ``..._id`` or ``...Id``/``...ID`` (``playerID``), not ``paid``: a
    name that says its values are identifiers."""
    name = str(column)
    return (name.lower() == "id" or name.lower().endswith("_id")
            or (len(name) > 2 and name[-2:] in ("Id", "ID")))
