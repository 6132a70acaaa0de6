"""Reads a workbook of a folder as tables: one per sheet that holds data.

Small businesses keep their tables in workbooks, and public datasets ship as
them (UCI's Online Retail is one ``.xlsx``, many statistics offices publish
``.xls``). Calamine (Rust, through pandas) reads Excel's ``.xlsx``, ``.xlsm``,
``.xlsb`` and old ``.xls`` and OpenDocument's ``.ods`` alike, about nine
times faster than openpyxl. A sheet's header is its first row to fill more
than half of its columns (a title above it and notes below the data are not
rows: :func:`sheet_cells`), read as a CSV header is (:mod:`rdl.db.headers`);
cells keep the types Excel stored (numbers, dates, text), and a column that
mixes numbers with text is read as text, as the same cells saved as CSV
would be. A workbook of
one sheet is the table named by the file; one of several gives a table per
sheet, named by the sheet.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pandas as pd
import pyarrow as pa

from rdl.db.headers import (
    around_table_issues, header_issues, header_row, notes_start, unique_column_names,
)
from rdl.db.issues import DataIssue, SourceError
from rdl.db.raw import TableInfo, TimeBound

WORKBOOK_SUFFIXES = (".xlsx", ".xlsm", ".xlsb", ".xls", ".ods")


def workbook_tables(path: Path) -> list[tuple[str, SheetTable]]:
    """The tables of the workbook at ``path``: (name, reader) per sheet with a
    header row, named by the file if it is the only one, else by the sheet."""
    try:
        sheets = pd.read_excel(path, sheet_name=None, header=None, engine="calamine")
    except ImportError:
        raise SourceError(f"Reading {path.name} needs python-calamine: "
                          "pip install python-calamine") from None
    except Exception as exc:  # calamine raises its own kinds for a damaged file
        raise SourceError(f"Could not read workbook {path}: {exc}") from None
    tables = {sheet: SheetTable(path, sheet, cells) for sheet, cells in sheets.items()}
    tables = {sheet: table for sheet, table in tables.items() if table.names}
    if len(tables) == 1:
        (table,) = tables.values()
        return [(path.stem, table)]
    return list(tables.items())


class SheetCells(NamedTuple):
    table: pd.DataFrame  # the header's row and the rows below it
    titles: list[str]    # lines above the header
    notes: list[str]     # lines below the data


def sheet_cells(cells: pd.DataFrame) -> SheetCells:
    """A sheet's table without the columns that hold nothing, and the lines
    around it that are no rows: a title above the header (the header is the
    first row to fill more than half of the table's columns: ``header_row``)
    and notes below the data (rows of at most one cell at the sheet's end, set
    apart from the data by a blank row, such as "Source: ONS"). Blank rows
    within the data stay, for the reader to count."""
    cells = cells.dropna(axis=1, how="all")
    counts = cells.notna().sum(axis=1)
    if not counts.any():
        return SheetCells(cells.iloc[:0], [], [])
    start = counts.index[header_row(counts.tolist())]
    titles = [_line(row) for _, row in cells.loc[:start].iloc[:-1].iterrows()
              if row.notna().any()]
    cells, counts = cells.loc[start:], counts.loc[start:]
    end = notes_start(counts.tolist())
    if end is None:
        return SheetCells(cells, titles, [])
    notes = [_line(row) for _, row in cells.iloc[end:].iterrows() if row.notna().any()]
    return SheetCells(cells.iloc[:end], titles, notes)


def _line(row: pd.Series) -> str:
    return " ".join(str(value) for value in row.dropna())


class SheetTable:
    """One sheet's cells, parsed when the workbook was opened. Its types are
    pandas' reading of the cells, so it reports none as comparable and is
    never asked to filter; a time cut happens after reading."""

    def __init__(self, path: Path, sheet: str, cells: pd.DataFrame) -> None:
        self.path, self.sheet = path, sheet
        table, self.titles, self.notes = sheet_cells(cells)
        self.header = ["" if pd.isna(v) else str(v) for v in table.iloc[0]] if len(table) else []
        self.names = unique_column_names(self.header)
        rows = table.iloc[1:].reset_index(drop=True)
        rows.columns = self.names
        self.frame = rows.infer_objects().apply(_as_one_type)

    def info(self, name: str) -> TableInfo:
        return TableInfo(name, list(self.names),
                         source_types={c: str(t) for c, t in self.frame.dtypes.items()})

    def header_issues(self, name: str) -> list[DataIssue]:
        where = f"sheet {self.sheet!r} of {self.path.name}"
        return (header_issues(name, self.header, self.names, where)
                + around_table_issues(name, "sheet", self.titles, self.notes, where, "cells"))

    def read(self, columns: list[str], bound: TimeBound | None, limit: int | None) -> pa.Table:
        assert bound is None, "sheet columns are not comparable; the cut happens after reading"
        frame = self.frame[columns] if limit is None else self.frame[columns].head(limit)
        return pa.Table.from_pandas(frame, preserve_index=False)


def _as_one_type(column: pd.Series) -> pd.Series:
    """A column whose cells hold values of several types (numbers and text,
    Online Retail's InvoiceNo 536365 beside C536379) as text, as CSV holds it;
    a whole number Excel stored as 536365.0 is written 536365."""
    if column.dtype != object:
        return column
    if len({type(v) for v in column.dropna()}) <= 1:
        return column
    return column.map(_cell_text, na_action="ignore").astype("string")


def _cell_text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
