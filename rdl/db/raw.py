"""What a source reader hands over: rows as Arrow plus the keys it reflected."""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rdl.db.issues import DataIssue
from rdl.db.schema import ForeignKey


@dataclass
class RawTable:
    r"""A table as read from a source, before rdl interprets it.

    Args:
        name: Table name.
        data: The rows.
        primary_key: Reflected primary key columns (empty if none).
        foreign_keys: Reflected foreign keys.
        source_types: Column -> the source's own type name, for messages.
    """

    name: str
    data: pa.Table
    primary_key: tuple[str, ...] = ()
    foreign_keys: list[ForeignKey] = field(default_factory=list)
    source_types: dict[str, str] = field(default_factory=dict)


def arrow_to_pandas(name: str, data: pa.Table) -> tuple[pd.DataFrame, list[DataIssue]]:
    """Converts Arrow rows to pandas, dropping columns rdl cannot use.

    Binary columns (BLOBs) have no feature meaning and are dropped with a note;
    decimals become float64; integer columns with NULLs become nullable
    ``Int64`` rather than float, so that keys keep their values exactly.
    """
    issues: list[DataIssue] = []
    keep = []
    for i, f in enumerate(data.schema):
        if pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type) or pa.types.is_fixed_size_binary(f.type):
            issues.append(DataIssue(
                "unsupported_column", name, f.name, len(data), "column dropped",
                f"binary column (type {f.type}) cannot be a feature",
            ))
            continue
        col = data.column(i)
        if pa.types.is_decimal(f.type):
            col = pc.cast(col, pa.float64())
        elif pa.types.is_null(f.type):
            issues.append(DataIssue(
                "empty_column", name, f.name, len(data), "column dropped",
                "column holds only NULL values",
            ))
            continue
        keep.append((f.name, col))
    table = pa.table({n: c for n, c in keep}) if keep else pa.table({})
    df = table.to_pandas(types_mapper=_nullable_integers, self_destruct=True)
    if not keep:
        df = pd.DataFrame(index=range(len(data)))
    for col in df.columns:
        if isinstance(df[col].dtype, pd.Int64Dtype) and not df[col].hasnans:
            df[col] = df[col].astype("int64")
    return df, issues


def _nullable_integers(arrow_type: pa.DataType):
    if pa.types.is_integer(arrow_type):
        return pd.Int64Dtype()
    return None
