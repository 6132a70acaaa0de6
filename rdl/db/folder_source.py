"""Reads a folder of parquet/CSV files, one table per file (or per sub-folder
of parquet parts), with Arrow's multi-threaded readers."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pv
import pyarrow.parquet as pq

from rdl.db.issues import DataIssue, SourceError
from rdl.db.raw import RawTable

PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".tsv", ".tsv.gz")
_IGNORED_NAMES = {"rdl_metadata.json"}


def read_folder_source(folder: str | Path) -> tuple[list[RawTable], list[DataIssue]]:
    """Reads every parquet/CSV file of ``folder`` as a table named by the file stem."""
    folder = Path(folder)
    tables: dict[str, RawTable] = {}
    issues: list[DataIssue] = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or path.name in _IGNORED_NAMES:
            continue
        name, reader = _table_name_and_reader(path)
        if reader is None:
            if path.suffix not in (".yaml", ".yml", ".md"):
                issues.append(DataIssue(
                    "ignored_file", path.name, None, 0, "file ignored",
                    "not a parquet or CSV file",
                ))
            continue
        if name in tables:
            raise SourceError(
                f"Two files in {folder} would both be table {name!r}; "
                "keep one file per table."
            )
        tables[name] = RawTable(name, reader(path))
    if not tables:
        raise SourceError(
            f"No readable tables in folder {str(folder)!r}: expected parquet files "
            f"({', '.join(PARQUET_SUFFIXES)}) or CSV files ({', '.join(CSV_SUFFIXES)})."
        )
    return list(tables.values()), issues


def _table_name_and_reader(path: Path):
    name = path.name
    if path.is_dir():
        if any(p.suffix in PARQUET_SUFFIXES for p in path.iterdir()):
            return name, _read_parquet
        return name, None
    for suffix in PARQUET_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)], _read_parquet
    for suffix in CSV_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)], _read_csv
    return name, None


def _read_parquet(path: Path) -> pa.Table:
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise SourceError(f"Could not read parquet {path}: {exc}") from None


def _read_csv(path: Path) -> pa.Table:
    delimiter = "\t" if ".tsv" in path.name else ","
    try:
        return pv.read_csv(
            path,
            parse_options=pv.ParseOptions(delimiter=delimiter),
            convert_options=pv.ConvertOptions(strings_can_be_null=True),
        )
    except (pa.ArrowException, OSError) as exc:
        raise SourceError(f"Could not read CSV {path}: {exc}") from None
