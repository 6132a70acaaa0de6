"""Reads a folder of parquet/CSV/JSON files and Excel workbooks, one table per
file, per sheet, or per sub-folder of a table's parts, each format with its
own reader: :mod:`rdl.db.parquet_file` (Arrow's dataset), :mod:`rdl.db.csv_file`
(Arrow's multi-threaded parser), :mod:`rdl.db.json_file` (DuckDB's),
:mod:`rdl.db.workbook_file` (calamine) and :mod:`rdl.db.part_folder`.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from rdl.db.csv_file import CSV_SUFFIXES, DELIMITERS, SNIFF_BYTES, CsvTable
from rdl.db.issues import DataIssue, SourceError
from rdl.db.json_file import JSON_SUFFIXES, JsonTable
from rdl.db.parquet_file import PARQUET_SUFFIXES, ParquetTable
from rdl.db.part_folder import CsvPartsTable, NotOneTable, part_folder_table
from rdl.db.raw import TableInfo, TimeBound
from rdl.db.workbook_file import WORKBOOK_SUFFIXES, SheetTable, workbook_tables

_IGNORED_NAMES = {"rdl_metadata.json"}
_Reader = ParquetTable | CsvTable | CsvPartsTable | JsonTable | SheetTable


class FolderSource:
    r"""The tables of a folder: ``orders.parquet``, ``orders/part-0.parquet``,
    ``orders.csv``, ... each named by its file stem, and a workbook's sheets.

    Args:
        folder (str or Path): The folder, or one workbook.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.shown = str(self.folder)
        self.issues: list[DataIssue] = []
        self._readers: dict[str, _Reader] = {}
        self._recoded: set[str] = set()
        # A workbook alone is a database of its sheets, as a folder is of its files.
        entries = [self.folder] if self.folder.is_file() else sorted(self.folder.iterdir())
        for path in entries:
            if path.name.startswith(".") or path.name in _IGNORED_NAMES:
                continue
            if path.is_file() and path.stat().st_size == 0:
                # An export cut short leaves such a file beside the others.
                self.issues.append(DataIssue(
                    "ignored_file", path.name, None, 0, "file ignored", "the file is empty"))
                continue
            if path.name.lower().endswith(WORKBOOK_SUFFIXES):
                for name, sheet in workbook_tables(path):
                    self._add(name, sheet)
                continue
            if path.is_dir():
                try:
                    self._add(path.name, part_folder_table(path))
                except NotOneTable as why:
                    self.issues.append(DataIssue(
                        "ignored_file", path.name, None, 0, "folder ignored", str(why)))
                continue
            name, reader = _table_name_and_reader(path)
            if reader is None:
                if path.suffix not in (".yaml", ".yml", ".md"):
                    self.issues.append(DataIssue(
                        "ignored_file", path.name, None, 0, "file ignored", _why_ignored(path)))
                continue
            self._add(name, reader(path))
        if not self._readers:
            found = "".join(f" {issue.table}: {issue.message}." for issue in self.issues[:3])
            raise SourceError(
                f"No readable tables in folder {str(self.folder)!r}: expected parquet files "
                f"({', '.join(PARQUET_SUFFIXES)}), CSV files ({', '.join(CSV_SUFFIXES)}), "
                f"JSON files ({', '.join(JSON_SUFFIXES)}) or workbooks "
                f"({', '.join(WORKBOOK_SUFFIXES)})."
                + found
            )

    def _add(self, name: str, reader: _Reader) -> None:
        if name in self._readers:
            raise SourceError(
                f"Two files (or sheets) in {self.folder} would both be table {name!r}; "
                "keep one file per table."
            )
        self._readers[name] = reader
        self._report_encoding(name)

    def tables(self) -> list[TableInfo]:
        infos = [reader.info(name) for name, reader in self._readers.items()]
        for name, reader in self._readers.items():
            if isinstance(reader, (CsvTable, CsvPartsTable, SheetTable)):  # parquet's are unique
                self.issues.extend(reader.header_issues(name))
        self.issues.extend(_split_table_issues(infos))
        return infos

    def read(self, info: TableInfo, columns: list[str], bound: TimeBound | None = None,
             limit: int | None = None) -> pa.Table:
        data = self._readers[info.name].read(columns, bound, limit)
        self._report_encoding(info.name)
        return data

    def _report_encoding(self, name: str) -> None:
        """Reports, once, a CSV file read in an encoding other than UTF-8."""
        reader = self._readers[name]
        encoding = getattr(reader, "encoding", "utf8")
        if encoding != "utf8" and name not in self._recoded:
            self._recoded.add(name)
            self.issues.append(DataIssue(
                "csv_encoding", name, None, 0, f"read as {encoding}",
                f"{reader.path.name} is not UTF-8; its text is decoded as {encoding} "
                "(check accented letters)"))

    def close(self) -> None:
        self._readers.clear()


def _split_table_issues(infos: list[TableInfo]) -> list[DataIssue]:
    """A report per group of tables with the same columns whose names differ
    only in their numbers (``orders_2023``, ``orders_2024``): exports of one
    table by period, read as tables of their own, so that no key links the
    rows of one part to another's and a task sees one part."""
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for info in infos:
        pattern = re.sub(r"\d+", "#", info.name)
        if pattern != info.name:
            groups.setdefault((pattern, tuple(info.columns)), []).append(info.name)
    issues = []
    for (pattern, _), names in sorted(groups.items()):
        if len(names) < 2:
            continue
        whole = re.sub(r"[-_. ]*#", "", pattern) or "table"
        issues.append(DataIssue(
            "split_table", names[0], None, 0, "read as separate tables",
            f"{', '.join(names)} have the same columns and names that differ only in their "
            f"numbers: if they are one table split by period, put their files in one folder "
            f"{whole}/ to read them as table {whole!r}"))
    return issues


# Files a folder of tables often holds beside them, and what makes them readable.
_DATABASES = (".sqlite", ".sqlite3", ".db", ".duckdb")
_TEXT = (".txt", ".asc", ".dat", ".tab")


def _why_ignored(path: Path) -> str:
    """Why a file of the folder is no table, and how to make it one."""
    stem, suffix = path.stem, path.suffix.lower()
    if suffix in (".gz", ".bz2"):
        stem, suffix = Path(stem).stem, Path(stem).suffix.lower()
    if suffix in _DATABASES:
        return f"a database file: point rdl at it instead (rdl inspect {path})"
    if suffix in _TEXT and (delimiter := _table_delimiter(path)):
        return (f"its first lines are a table separated by {delimiter!r}: rename it "
                f"{stem}.csv to read it")
    return "not a parquet, CSV, JSON or workbook file"


def _table_delimiter(path: Path) -> str | None:
    """The delimiter that splits a text file's first two lines into the same
    two or more fields (Berka's ``.asc`` files are ``;``-separated), if any."""
    try:
        with pa.input_stream(str(path), compression="detect") as stream:
            lines = stream.read(SNIFF_BYTES).decode("latin1").splitlines()[:2]
    except (OSError, pa.ArrowException):
        return None
    if len(lines) < 2:
        return None
    for delimiter in DELIMITERS:
        fields = {line.count(delimiter) for line in lines}
        if len(fields) == 1 and fields.pop() >= 1:
            return delimiter
    return None


def is_table_file(path: Path) -> bool:
    """Whether ``path`` is a file a folder source reads as a table."""
    return path.is_file() and _table_name_and_reader(path)[1] is not None


def _table_name_and_reader(path: Path) -> tuple[str, Callable | None]:
    name = path.name
    for suffixes, reader in ((PARQUET_SUFFIXES, ParquetTable), (CSV_SUFFIXES, CsvTable),
                             (JSON_SUFFIXES, JsonTable)):
        for suffix in suffixes:
            if name.endswith(suffix):
                return name[: -len(suffix)], reader
    return name, None
