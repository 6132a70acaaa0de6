"""Workbooks (Excel's .xlsx and old .xls, OpenDocument's .ods) in a folder are tables,
one per sheet with data, read as the same cells saved as CSV are; a workbook alone is a
database of its sheets; a header's blank or repeated names and a damaged file are
reported, naming the sheet or file."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdl
from rdl.db import SourceError

STATIC = {"time_column": None}


def retail(rows: int, seed: int = 0) -> pd.DataFrame:
    """Online Retail's shape: invoice numbers that are numbers, except cancellations."""
    rng = np.random.default_rng(seed)
    numbers = 536365 + np.arange(rows)
    return pd.DataFrame({
        "InvoiceNo": [f"C{n}" if i % 7 == 0 else int(n) for i, n in enumerate(numbers)],
        "Quantity": rng.integers(-3, 12, rows),
        "UnitPrice": rng.choice([2.55, 3.39, 7.65, np.nan], rows),
        "Description": rng.choice(["WHITE METAL LANTERN", "CREAM CUPID HEARTS", None], rows),
        "InvoiceDate": pd.Timestamp("2010-12-01 08:26")
        + pd.to_timedelta(rng.integers(0, 10**6, rows), unit="min"),
    })


def write_workbook(frame: pd.DataFrame, path) -> None:
    """``frame`` as a one-sheet workbook in the format ``path``'s suffix names:
    .xls through xlwt (pandas writes .xlsx and .ods, not .xls)."""
    if path.suffix != ".xls":
        frame.to_excel(path, index=False)
        return
    import xlwt

    book = xlwt.Workbook()
    sheet = book.add_sheet("Sheet1")
    dates = xlwt.easyxf(num_format_str="YYYY-MM-DD HH:MM")
    for j, name in enumerate(frame.columns):
        sheet.write(0, j, name)
    for i, row in enumerate(frame.itertuples(index=False), start=1):
        for j, value in enumerate(row):
            if isinstance(value, pd.Timestamp):
                sheet.write(i, j, value.to_pydatetime(), dates)
            elif not pd.isna(value):
                sheet.write(i, j, value.item() if hasattr(value, "item") else value)
    book.save(str(path))


@settings(max_examples=8, deadline=None)
@given(rows=st.integers(2, 40), seed=st.integers(0, 999),
       suffix=st.sampled_from([".xlsx", ".xls", ".ods"]))
def test_a_sheet_reads_as_the_same_cells_saved_as_csv(tmp_path_factory, rows, seed, suffix):
    frame = retail(rows, seed)
    folder = tmp_path_factory.mktemp("sheets")
    (folder / "book").mkdir()
    (folder / "csv").mkdir()
    write_workbook(frame, folder / "book" / f"invoices{suffix}")
    frame.to_csv(folder / "csv" / "invoices.csv", index=False)
    schema = {"tables": {"invoices": {"time_column": "InvoiceDate"}}}
    from_sheet = rdl.connect(folder / "book", schema=schema)["invoices"]
    from_csv = rdl.connect(folder / "csv", schema=schema)["invoices"]
    assert from_sheet.stypes == from_csv.stypes
    pd.testing.assert_frame_equal(from_sheet.df, from_csv.df, check_dtype=False)
    assert from_sheet.df["InvoiceNo"].iloc[1] == "536366"  # not 536366.0


def test_each_sheet_with_data_is_a_table_named_by_it(tmp_path):
    customers = pd.DataFrame({"CustomerID": [1, 2, 3], "Country": ["UK", "FR", "UK"]})
    invoices = retail(12).assign(CustomerID=[1, 2, 3] * 4)
    with pd.ExcelWriter(tmp_path / "shop.xlsx") as book:
        customers.to_excel(book, sheet_name="customers", index=False)
        invoices.to_excel(book, sheet_name="invoices", index=False)
        pd.DataFrame().to_excel(book, sheet_name="notes", index=False)
    schema = {"tables": {"customers": {"primary_key": "CustomerID", **STATIC},
                         "invoices": {"time_column": "InvoiceDate",
                                      "foreign_keys": {"CustomerID": "customers"}}}}
    db = rdl.connect(tmp_path, schema=schema)
    assert sorted(db.tables) == ["customers", "invoices"]
    assert db["customers"].df["Country"].tolist() == ["UK", "FR", "UK"]
    assert db["invoices"].df["InvoiceDate"].tolist() == invoices["InvoiceDate"].tolist()
    assert db["invoices"].foreign_keys == {"CustomerID": "customers"}


def test_a_workbook_alone_is_a_database_of_its_sheets(tmp_path):
    """``rdl inspect shop.xlsx``: its sheets are the tables, as in a folder."""
    customers = pd.DataFrame({"CustomerID": [1, 2, 3], "Country": ["UK", "FR", "UK"]})
    with pd.ExcelWriter(tmp_path / "shop.ods") as book:
        customers.to_excel(book, sheet_name="customers", index=False)
        retail(6).assign(CustomerID=[1, 2, 3] * 2).to_excel(book, sheet_name="invoices",
                                                             index=False)
    db = rdl.connect(tmp_path / "shop.ods", schema={"tables": {
        "customers": {"primary_key": "CustomerID", **STATIC},
        "invoices": {"foreign_keys": {"CustomerID": "customers"}}}})
    assert sorted(db.tables) == ["customers", "invoices"]
    assert db["invoices"].time_column == "InvoiceDate" and len(db["invoices"]) == 6


def test_a_workbook_of_one_sheet_is_the_table_named_by_the_file(tmp_path):
    retail(5).to_excel(tmp_path / "online_retail.xlsx", sheet_name="Online Retail", index=False)
    db = rdl.connect(tmp_path, schema={"tables": {"online_retail": STATIC}})
    assert list(db.tables) == ["online_retail"] and len(db["online_retail"]) == 5


def test_blank_and_repeated_header_cells_are_named_and_reported(tmp_path):
    cells = pd.DataFrame([["id", "amount", None, "amount"], [1, 2.5, "x", 3.0],
                          [2, 4.0, "y", 1.0]])
    cells.to_excel(tmp_path / "orders.xlsx", header=False, index=False)
    db = rdl.connect(tmp_path, schema={"tables": {"orders": STATIC}})
    assert list(db["orders"].df.columns) == ["_pk", "id", "amount", "column_3", "amount_2"]
    found = sorted(str(i) for i in db.issues if i.kind == "csv_header")
    assert found == [
        "orders.amount_2: the header names 'amount' again in column 4 of sheet 'Sheet1' of "
        "orders.xlsx (read as 'amount_2')",
        "orders.column_3: column 3 has no name in the header of sheet 'Sheet1' of orders.xlsx "
        "(read as 'column_3')"]


def test_a_sheet_and_a_file_of_one_name_and_a_damaged_workbook_are_named(tmp_path):
    retail(3).to_excel(tmp_path / "invoices.xlsx", index=False)
    retail(3).to_csv(tmp_path / "invoices.csv", index=False)
    with pytest.raises(SourceError, match="would both be table 'invoices'"):
        rdl.connect(tmp_path)
    (tmp_path / "invoices.csv").unlink()
    (tmp_path / "broken.xlsx").write_bytes(b"PK\x03\x04 not a workbook")
    with pytest.raises(SourceError, match="Could not read workbook .*broken.xlsx"):
        rdl.connect(tmp_path)


def test_blank_rows_above_the_header_are_skipped_and_below_it_counted(tmp_path):
    cells = pd.DataFrame([[None, None], [None, None], ["id", "amount"], [1, 2.5], [None, None],
                          [2, 4.0]])
    cells.to_excel(tmp_path / "orders_v2.xlsx", header=False, index=False)
    db = rdl.connect(tmp_path, schema={"tables": {"orders_v2": STATIC}})
    assert db["orders_v2"].df["amount"].tolist() == [2.5, 4.0]
    assert [(i.kind, i.count) for i in db.issues if i.table == "orders_v2"] == [("empty_row", 1)]


@settings(max_examples=8, deadline=None)
@given(rows=st.integers(2, 30), seed=st.integers(0, 999),
       titles=st.lists(st.sampled_from(["Table 4: Sales by invoice", "Provisional", "2010-11"]),
                       max_size=2),
       notes=st.lists(st.sampled_from(["Source: ONS", "Note: C marks a cancellation", "1"]),
                      max_size=2))
def test_a_title_above_and_notes_below_the_table_are_not_rows(tmp_path_factory, rows, seed,
                                                               titles, notes):
    """A published sheet: a title and a blank line above the header, a blank line and
    notes below the data. The table reads as the bare sheet does; the lines around it
    are counted, never rows."""
    frame = retail(rows, seed)
    bare, dressed = tmp_path_factory.mktemp("bare"), tmp_path_factory.mktemp("dressed")
    frame.to_excel(bare / "invoices.xlsx", index=False)
    width = len(frame.columns)
    cells = pd.DataFrame(
        [[title] + [None] * (width - 1) for title in titles] + [[None] * width]
        + [list(frame.columns)] + frame.astype(object).values.tolist()
        + [[None] * width] * bool(notes) + [[note] + [None] * (width - 1) for note in notes])
    cells.to_excel(dressed / "invoices.xlsx", header=False, index=False)
    schema = {"tables": {"invoices": {"time_column": "InvoiceDate"}}}
    expected = rdl.connect(bare, schema=schema)
    got = rdl.connect(dressed, schema=schema)
    pd.testing.assert_frame_equal(got["invoices"].df, expected["invoices"].df)
    counted = {i.kind: i.count for i in got.issues if i.kind.startswith("sheet_")}
    assert counted == {**({"sheet_title": len(titles)} if titles else {}),
                       **({"sheet_notes": len(notes)} if notes else {})}
    if titles:
        [title] = [i for i in got.issues if i.kind == "sheet_title"]
        assert f"above the header of sheet 'Sheet1' of invoices.xlsx fill too few cells to be " \
               f"rows (first: {titles[0]!r})" in str(title)


def test_a_last_row_of_one_cell_without_a_blank_line_above_is_a_row(tmp_path):
    """Notes are told by the blank line that sets them apart; a sparse last row stays."""
    cells = pd.DataFrame([["id", "amount", "shop"], [1, 2.5, "a"], [2, None, None]])
    cells.to_excel(tmp_path / "orders.xlsx", header=False, index=False)
    db = rdl.connect(tmp_path, schema={"tables": {"orders": STATIC}})
    assert db["orders"].df["id"].tolist() == [1, 2]
    assert not [i for i in db.issues if i.kind.startswith("sheet_")]
