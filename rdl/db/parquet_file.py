"""Reads one parquet file, or a folder of a table's parquet parts, through
``pyarrow.dataset``: only the columns asked for are decoded, and a time filter
skips row groups by their statistics before decoding."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from rdl.db.issues import SourceError
from rdl.db.raw import TableInfo, TimeBound

PARQUET_SUFFIXES = (".parquet", ".pq")


class ParquetTable:
    """One parquet file, or a folder's parts (``key=value`` folders become columns)."""

    def __init__(self, path: Path, parts: list[Path] | None = None) -> None:
        self.path = path
        try:
            if parts is None:
                self.dataset = ds.dataset(path, format="parquet")
            else:
                self.dataset = _parts_dataset(path, parts)
        except (pa.ArrowException, OSError) as exc:
            raise SourceError(f"Could not read parquet {path}: {exc}") from None

    def info(self, name: str) -> TableInfo:
        schema = self.dataset.schema
        return TableInfo(
            name, list(schema.names),
            source_types={f.name: str(f.type) for f in schema},
            comparable={f.name: f.type for f in schema},
        )

    def read(self, columns: list[str], bound: TimeBound | None, limit: int | None) -> pa.Table:
        where = None
        if bound is not None:
            field = ds.field(bound.column)
            where = (field <= bound.value) | field.is_null()
        try:
            if limit is not None:
                return self.dataset.head(limit, columns=columns, filter=where)
            return self.dataset.to_table(columns=columns, filter=where)
        except (pa.ArrowException, OSError) as exc:
            raise SourceError(f"Could not read parquet {self.path}: {exc}") from None



def _parts_dataset(folder: Path, parts: list[Path]) -> ds.Dataset:
    """The parts as one dataset whose schema holds every part's columns (a
    column added in later parts is not lost to the first part's schema; an
    int column that became a float is a float), NULL where a part lacks one."""
    files = [str(part) for part in parts]
    first = ds.dataset(files, format="parquet", partitioning="hive",
                       partition_base_dir=str(folder))
    schema = pa.unify_schemas([first.schema, *(pq.read_schema(f) for f in files)],
                              promote_options="permissive")
    return ds.dataset(files, schema=schema, format="parquet", partitioning="hive",
                      partition_base_dir=str(folder))
