"""Reads a folder of parquet/CSV/JSON files and Excel workbooks, one table per
file (or per sub-folder of parquet parts, or per sheet), with Arrow's
multi-threaded readers (JSON with DuckDB's: :mod:`rdl.db.json_file`;
workbooks with openpyxl: :mod:`rdl.db.workbook_file`).

Parquet is read through ``pyarrow.dataset``: only the columns asked for are
decoded, and a time filter skips row groups by their statistics before
decoding. CSV files are parsed whole (only the columns asked for are
converted, the common spellings of NULL read as NULL) and cut by time after
parsing.
"""
from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pv
import pyarrow.dataset as ds

from rdl.db.headers import header_issues, unique_column_names
from rdl.db.issues import DataIssue, SourceError
from rdl.db.json_file import JSON_SUFFIXES, JsonTable
from rdl.db.text_numbers import NULL_SPELLINGS
from rdl.db.raw import TableInfo, TimeBound
from rdl.db.times import looks_like_dates
from rdl.db.workbook_file import WORKBOOK_SUFFIXES, SheetTable, workbook_tables

PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".tsv", ".tsv.gz")
_IGNORED_NAMES = {"rdl_metadata.json"}


class FolderSource:
    r"""The tables of a folder: ``orders.parquet``, ``orders/part-0.parquet``,
    ``orders.csv``, ... each named by its file stem.

    Args:
        folder (str or Path): The folder.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.shown = str(self.folder)
        self.issues: list[DataIssue] = []
        self._readers: dict[str, _ParquetTable | _CsvTable | JsonTable | SheetTable] = {}
        self._recoded: set[str] = set()
        for path in sorted(self.folder.iterdir()):
            if path.name.startswith(".") or path.name in _IGNORED_NAMES:
                continue
            if path.name.lower().endswith(WORKBOOK_SUFFIXES):
                for name, sheet in workbook_tables(path):
                    self._add(name, sheet)
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

    def _add(self, name: str, reader: _ParquetTable | _CsvTable | JsonTable | SheetTable) -> None:
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
            if isinstance(reader, (_CsvTable, SheetTable)):  # parquet's are unique
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


class _ParquetTable:
    """One parquet file, or a folder of parts (hive partitions become columns)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.dataset = ds.dataset(path, format="parquet", partitioning="hive")
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


class _CsvTable:
    """One CSV/TSV file, parsed whole when read. Its column types are only
    known once parsed, so it reports none as comparable and is never asked to
    filter."""

    def __init__(self, path: Path) -> None:
        self.path = path
        sniffed = sniff_csv(path)
        self.delimiter, self.encoding = sniffed.delimiter, sniffed.encoding
        self.preamble = sniffed.preamble
        # A first line of values (a fraction or a date) is the first row, not a header.
        self.has_header = not _first_line_is_data(sniffed.text, self.delimiter, self.preamble)
        self.header: list[str] = []  # the header's names, as written
        self.names: list[str] = []   # the columns' names: unique, none empty
        # Quoted values that span lines (reviews, comments) need Arrow's slower
        # parse, which a file gets once Arrow's fast one finds it cannot split it.
        self.multiline = False

    def info(self, name: str) -> TableInfo:
        try:
            parse_options = pv.ParseOptions(delimiter=self.delimiter)
            read_options = pv.ReadOptions(encoding=self.encoding, skip_rows=self.preamble)
            with pv.open_csv(self.path, read_options=read_options,
                             parse_options=parse_options) as reader:
                self.header = list(reader.schema.names)
        except UnicodeDecodeError:  # past the sniffed start, a byte cp1252 lacks
            self.encoding = "latin1"
            return self.info(name)
        except (pa.ArrowException, OSError) as exc:
            raise SourceError(f"Could not read CSV {self.path}: {exc}"
                              f"{_field_count_hint(str(exc))}") from None
        self.names = (unique_column_names(self.header) if self.has_header
                      else [f"column_{i + 1}" for i in range(len(self.header))])
        return TableInfo(name, self.names, decimal_comma=self.delimiter == ";")

    def header_issues(self, name: str) -> list[DataIssue]:
        if not self.has_header:
            shown = ", ".join(self.header[:4]) + (", ..." if len(self.header) > 4 else "")
            return [DataIssue(
                "csv_header", name, None, 0,
                f"columns named column_1 .. column_{len(self.names)}",
                f"the first line of {self.path.name} ({shown}) holds values, not names: the "
                "file has no header, so that line is read as the first row")]
        return header_issues(name, self.header, self.names, self.path.name)

    def read(self, columns: list[str], bound: TimeBound | None, limit: int | None) -> pa.Table:
        assert bound is None, "CSV columns are not comparable; the cut happens after parsing"
        data = self._parse(columns)
        if self.encoding == "utf8" and any(pa.types.is_binary(f.type) for f in data.schema):
            # Text that is not UTF-8 past the sniffed start comes as bytes: read it again.
            self.encoding = "cp1252"
            data = self._parse(columns)
        return data if limit is None else data.slice(0, limit)

    def _parse(self, columns: list[str]) -> pa.Table:
        try:
            renamed = self.names != self.header  # then the header is read as a row...
            skipped = int(renamed and self.has_header)  # ... and skipped, unless it is data
            return pv.read_csv(
                self.path,
                read_options=pv.ReadOptions(encoding=self.encoding,
                                            skip_rows=self.preamble + skipped,
                                            column_names=self.names if renamed else None),
                parse_options=pv.ParseOptions(delimiter=self.delimiter,
                                              newlines_in_values=self.multiline),
                convert_options=pv.ConvertOptions(
                    null_values=list(NULL_SPELLINGS), strings_can_be_null=True,
                    include_columns=columns,
                    # Files separated by ';' come from locales that write 12,5 (Excel's
                    # European CSV); a column of 12.5 there still reads, as text numbers.
                    decimal_point="," if self.delimiter == ";" else "."),
            )
        except UnicodeDecodeError:  # a byte cp1252 lacks: Latin-1 decodes every byte
            self.encoding = "latin1"
            return self._parse(columns)
        except (pa.ArrowException, OSError) as exc:
            if not self.multiline and "newlines_in_values" in str(exc):
                self.multiline = True
                return self._parse(columns)
            raise SourceError(f"Could not read CSV {self.path}: {exc}"
                              f"{_field_count_hint(str(exc))}") from None


# A number as a CSV field writes it (1, -2.5, 3,75, 1e-3); a fraction or an
# exponent never names a column, where a whole number may (a pivot's years).
_NUMBER = re.compile(r"[+-]?(\d+([.,]\d*)?|[.,]\d+)([eE][+-]?\d+)?")
_WHOLE = re.compile(r"[+-]?\d+")


def _first_line_is_data(text: str, delimiter: str, preamble: int) -> bool:
    """Whether a CSV file, whose start is ``text``, has no header: its first
    line holds a fraction or a date, and each of its fields is of the kind
    (number, date, text) the second line's is (``1,2021-01-01,5.0,web`` over
    ``2,2021-01-02,7.5,store``). A pivot's header of years over numbers, or
    of dates over numbers, stays a header."""
    rows = list(csv.reader(io.StringIO(text.lstrip("\ufeff")),
                           delimiter=delimiter))[preamble:preamble + 2]
    if len(rows) < 2 or len(rows[0]) != len(rows[1]):
        return False
    first, second = ([_kind(field) for field in row] for row in rows)
    strong = any(kind == "date" or (kind == "number" and not _WHOLE.fullmatch(field.strip()))
                 for kind, field in zip(first, rows[0]))
    return strong and all(a == b or None in (a, b) for a, b in zip(first, second))


def _kind(field: str) -> str | None:
    field = field.strip()
    if not field:
        return None
    if _NUMBER.fullmatch(field):
        return "number"
    return "date" if looks_like_dates(pd.Series([field])) else "text"


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
            f"numbers: if they are one table split by period, put their rows in one file, or "
            f"their parquet files in one folder {whole}/, to read them as table {whole!r}"))
    return issues


def _field_count_hint(message: str) -> str:
    """What to do about a line whose fields the header's do not match."""
    found = re.search(r"Expected (\d+) columns, got (\d+)", message)
    if found is None:
        return ""
    if found.group(1) == "1":
        return (" (the header, the file's first line, has one field: delete any lines of "
                "title above it)")
    return (f" (every line needs the header's {found.group(1)} fields: delete lines of totals "
            "or notes below the data, and quote values that hold the delimiter)")


_DELIMITERS = (",", ";", "\t", "|")
# Files a folder of tables often holds beside them, and what makes them readable.
_WORKBOOKS = (".xls", ".ods")  # .xlsx and .xlsm are read (rdl.db.workbook_file)
_DATABASES = (".sqlite", ".sqlite3", ".db", ".duckdb")
_TEXT = (".txt", ".asc", ".dat", ".tab")
_SNIFF_BYTES = 1 << 16


class CsvSniff(NamedTuple):
    delimiter: str
    encoding: str
    preamble: int  # lines before the header
    text: str      # the file's first 64 kB, decoded


def sniff_csv(path: Path) -> CsvSniff:
    """The delimiter, encoding and lines before the header of a CSV file,
    and its start as text, from its first 64 kB: the delimiter that splits its header line most
    (the suffix's, ``,`` or tab, on a tie), or the one a first line ``sep=;``
    names (as Excel reads and writes it, a line then skipped); UTF-8 unless
    those bytes are not, then Windows' cp1252 (as Excel writes), or Latin-1,
    which decodes any byte."""
    with pa.input_stream(str(path), compression="detect") as stream:
        sample = stream.read(_SNIFF_BYTES)
    encoding = "utf8"
    try:
        text = sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(sample) - 3 and len(sample) == _SNIFF_BYTES:
            text = sample[:exc.start].decode("utf-8")  # a character cut by the sample's end
        else:
            encoding = "cp1252"
            try:
                text = sample.decode(encoding)
            except UnicodeDecodeError:
                encoding, text = "latin1", sample.decode("latin1")
    header = (text.lstrip("\ufeff").splitlines() or [""])[0]
    named = re.fullmatch(r"sep=(.)", header.strip())
    if named:
        return CsvSniff(named.group(1), encoding, 1, text)
    default = "\t" if ".tsv" in path.name else ","
    best = max(_DELIMITERS, key=lambda d: (header.count(d), d == default))
    return CsvSniff(best if header.count(best) else default, encoding, 0, text)


def _why_ignored(path: Path) -> str:
    """Why a file of the folder is no table, and how to make it one."""
    stem, suffix = path.stem, path.suffix.lower()
    if suffix in (".gz", ".bz2"):
        stem, suffix = Path(stem).stem, Path(stem).suffix.lower()
    if path.is_dir():
        return "a folder without parquet files (a table's parts are parquet files)"
    if suffix in _WORKBOOKS:
        return ("an old Excel or OpenDocument workbook, which rdl does not read: save it as "
                ".xlsx (Excel: Save As, Excel Workbook), or each sheet as a CSV file")
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
            lines = stream.read(_SNIFF_BYTES).decode("latin1").splitlines()[:2]
    except (OSError, pa.ArrowException):
        return None
    if len(lines) < 2:
        return None
    for delimiter in _DELIMITERS:
        fields = {line.count(delimiter) for line in lines}
        if len(fields) == 1 and fields.pop() >= 1:
            return delimiter
    return None


def is_table_file(path: Path) -> bool:
    """Whether ``path`` is a file a folder source reads as a table."""
    return path.is_file() and _table_name_and_reader(path)[1] is not None


def _table_name_and_reader(path: Path) -> tuple[str, Callable | None]:
    name = path.name
    if path.is_dir():
        if any(p.suffix in PARQUET_SUFFIXES for p in path.iterdir()):
            return name, _ParquetTable
        return name, None
    for suffix in PARQUET_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)], _ParquetTable
    for suffix in CSV_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)], _CsvTable
    for suffix in JSON_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)], JsonTable
    return name, None
