"""Reads one CSV/TSV file as a table with Arrow's multi-threaded parser.

A file is parsed whole (only the columns asked for are converted, the common
spellings of NULL read as NULL) and cut by time after parsing. What a file
does not say is sniffed from its first 64 kB: the delimiter, the encoding,
lines of title above the header, and whether it has a header at all.
"""
from __future__ import annotations

import csv
import io
import itertools
import re
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pv

from rdl.db.headers import (
    around_table_issues, header_issues, header_row, notes_start, unique_column_names,
)
from rdl.db.issues import DataIssue, SourceError
from rdl.db.raw import TableInfo, TimeBound
from rdl.db.text_numbers import NULL_SPELLINGS
from rdl.db.times import looks_like_dates

CSV_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".tsv", ".tsv.gz")
DELIMITERS = (",", ";", "\t", "|")
SNIFF_BYTES = 1 << 16
_TITLE_ROWS = 50  # the rows read to find the header below a title


class CsvTable:
    """One CSV/TSV file, parsed whole when read. Its column types are only
    known once parsed, so it reports none as comparable and is never asked to
    filter."""

    def __init__(self, path: Path) -> None:
        self.path = path
        sniffed = sniff_csv(path)
        self.delimiter, self.encoding = sniffed.delimiter, sniffed.encoding
        self.preamble, self.titles = sniffed.preamble, sniffed.titles
        # A first line of values (a fraction or a date) is the first row, not a header.
        self.has_header = not _first_line_is_data(sniffed.text, self.delimiter, self.preamble)
        self.header: list[str] = []  # the header's names, as written
        self.names: list[str] = []   # the columns' names: unique, none empty
        # Quoted values that span lines (reviews, comments) need Arrow's slower
        # parse, which a file gets once Arrow's fast one finds it cannot split it.
        self.multiline = False
        self._notes: Notes | None = None

    def info(self, name: str) -> TableInfo:
        try:
            parse_options = pv.ParseOptions(delimiter=self.delimiter)
            read_options = pv.ReadOptions(encoding=self.encoding, skip_rows=self.preamble)
            with pv.open_csv(self._data(), read_options=read_options,
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
        return around_table_issues(name, "csv", self.titles, self.notes().texts,
                                   self.path.name, "fields") + self._header_issues(name)

    def _data(self) -> Path | pa.BufferReader:
        """The file, or its bytes before its notes if it has any."""
        end = self.notes().start
        if end is None:
            return self.path
        return pa.BufferReader(pa.memory_map(str(self.path)).read_buffer(end))

    def notes(self) -> Notes:
        if self._notes is None:
            self._notes = _notes_below_data(self.path, self.delimiter, self.encoding)
        return self._notes

    def _header_issues(self, name: str) -> list[DataIssue]:
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
                self._data(),
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


class CsvSniff(NamedTuple):
    delimiter: str
    encoding: str
    preamble: int      # lines before the header
    text: str          # the file's first 64 kB, decoded
    titles: list[str]  # the lines of title among them


def sniff_csv(path: Path) -> CsvSniff:
    """The delimiter, encoding and lines before the header of a CSV file
    (Excel's ``sep=;``, a title: ``_rows_above_header``), and its start as text,
    from its first 64 kB: the delimiter that splits its header line most
    (the suffix's, ``,`` or tab, on a tie), or the one a first line ``sep=;``
    names (as Excel reads and writes it, a line then skipped); UTF-8 unless
    those bytes are not, then Windows' cp1252 (as Excel writes), or Latin-1,
    which decodes any byte."""
    with pa.input_stream(str(path), compression="detect") as stream:
        sample = stream.read(SNIFF_BYTES)
    encoding = "utf8"
    try:
        text = sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(sample) - 3 and len(sample) == SNIFF_BYTES:
            text = sample[:exc.start].decode("utf-8")  # a character cut by the sample's end
        else:
            encoding = "cp1252"
            try:
                text = sample.decode(encoding)
            except UnicodeDecodeError:
                encoding, text = "latin1", sample.decode("latin1")
    lines = text.lstrip("\ufeff").splitlines()[:_TITLE_ROWS] or [""]
    named = re.fullmatch(r"sep=(.)", lines[0].strip())
    if named:
        delimiter, skipped = named.group(1), 1
    else:
        delimiter = _delimiter(lines, "\t" if ".tsv" in path.name else ",")
        skipped = 0
    above = _rows_above_header(text, delimiter, skipped)
    titles = [_row_text(row) for row in above]
    return CsvSniff(delimiter, encoding, skipped + len(above), text, [t for t in titles if t])


def _row_text(row: list[str]) -> str:
    """A line's fields that hold something, as one text ("" for a blank line)."""
    return " ".join(field.strip() for field in row if field.strip())


class Notes(NamedTuple):
    start: int | None  # the byte where they begin, None without notes
    texts: list[str]   # the notes' text


def _notes_below_data(path: Path, delimiter: str, encoding: str) -> Notes:
    """The lines of notes at the end of a CSV file ("Source: ONS,,,", as Excel
    saves a published sheet): lines of at most one field after the data, set
    apart from it by a blank line, so that parsing stops before them (their
    text would make a column of numbers text). Read from the file's last
    64 kB; none in a compressed file, whose end is not at hand, or where a
    quote could make a line part of a value."""
    if path.name.endswith((".gz", ".bz2")):
        return Notes(None, [])
    with open(path, "rb") as file:
        start = max(0, file.seek(0, 2) - SNIFF_BYTES)
        file.seek(start)
        raw = file.read().splitlines(keepends=True)
    if start:  # the first line may be cut
        start, raw = start + len(raw[0]), raw[1:]
    lines = [line.decode(encoding, errors="replace").rstrip("\r\n") for line in raw]
    rows = [next(csv.reader([line], delimiter=delimiter), []) for line in lines]
    first = notes_start([sum(bool(field.strip()) for field in row) for row in rows])
    if first is None or any('"' in line for line in lines[first:]):
        return Notes(None, [])
    texts = [_row_text(row) for row in rows[first:]]
    return Notes(start + sum(map(len, raw[:first])), [text for text in texts if text])


def _delimiter(lines: list[str], default: str) -> str:
    """The delimiter that splits the header most, the header being the first
    of the longest run of lines that one delimiter splits alike (lines of
    title above it, "Sales, 2024" over ``id;amount``, make a shorter run, or
    one of fewer fields)."""
    filled = [line for line in lines if line.strip()] or [""]
    header, longest = 0, (0, 0)
    for d in sorted(DELIMITERS, key=lambda d: d != default):  # on a tie, the suffix's
        run, start = 0, 0
        for i, line in enumerate(filled):
            count = line.count(d)
            if count and run and count == filled[i - 1].count(d):
                run += 1
            else:
                run, start = int(count > 0), i
            if (run, count) > longest:  # as long a run: the one of more fields
                longest, header = (run, count), start
    best = max(DELIMITERS, key=lambda d: (filled[header].count(d), d == default))
    return best if filled[header].count(best) else default


def _rows_above_header(text: str, delimiter: str, skipped: int) -> list[list[str]]:
    """The lines of title (and blank lines) above a CSV file's header, as a
    published table exported from a spreadsheet has them."""
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")), delimiter=delimiter)
    try:
        rows = list(itertools.islice(reader, skipped, skipped + _TITLE_ROWS))
    except csv.Error:  # a quote the 64 kB sample cuts: no title is found
        return []
    return rows[:header_row([sum(bool(field.strip()) for field in row) for row in rows])]


