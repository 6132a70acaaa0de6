"""Every kind of bad input gets a clear message or a counted, reported fix."""
from __future__ import annotations

import re
import sqlite3

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdl
from rdl.db import SchemaError, SourceError
from rdl.db.headers import unique_column_names
from rdl.db.schema_report import format_report
from rdl.testing.files import write_parquet, write_sqlite


def shop(**overrides) -> dict[str, pd.DataFrame]:
    tables = {
        "customers": pd.DataFrame({"customer_id": [1, 2, 3], "segment": ["a", "b", "a"]}),
        "orders": pd.DataFrame({
            "order_id": [10, 11, 12, 13],
            "customer_id": [1, 2, 9, None],
            "placed": ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"],
            "amount": [5.0, 7.5, 1.0, 2.0],
        }),
    }
    tables.update(overrides)
    return tables


SHOP_SCHEMA = {
    "tables": {
        "customers": {"primary_key": "customer_id"},
        "orders": {"primary_key": "order_id", "foreign_keys": {"customer_id": "customers"}},
    }
}


def issues_of(db, kind):
    return [(i.table, i.column, i.count) for i in db.issues if i.kind == kind]


def test_dangling_foreign_key_is_nulled_counted_and_row_kept(tmp_path):
    db = rdl.connect(write_parquet(tmp_path / "shop", shop()), schema=SHOP_SCHEMA)
    orders = db["orders"].df
    assert len(orders) == 4  # nothing dropped
    assert orders["customer_id"].isna().tolist() == [False, False, True, True]
    # the NULL that was already NULL is not a dangling reference; 9 is
    assert issues_of(db, "dangling_foreign_key") == [("orders", "customer_id", 1)]


def test_nycflights13_reports_its_real_dangling_planes(flights_db):
    from rdl.datasets import nycflights13

    counts = {(i.table, i.column): i.count for i in flights_db.issues if i.kind == "dangling_foreign_key"}
    assert counts[("flights", "tailnum")] == 50_094  # the 2,512 tailnums "NA" are NULL instead
    raw = pd.read_parquet(nycflights13.path() / "flights.parquet", columns=["tailnum"])
    planes = set(pd.read_parquet(nycflights13.path() / "planes.parquet")["tailnum"])
    assert int((raw["tailnum"].notna() & ~raw["tailnum"].isin(planes)).sum()) == 50_094
    flights = flights_db["flights"].df
    assert len(flights) == 336_776
    assert int(flights["tailnum"].isna().sum()) == 50_094 + int(raw["tailnum"].isna().sum())


def test_null_and_duplicate_primary_keys_drop_rows_and_say_how_many(tmp_path):
    customers = pd.DataFrame({"customer_id": [1, 2, 2, None, 3], "segment": list("abcde")})
    db = rdl.connect(write_parquet(tmp_path / "s", shop(customers=customers)), schema=SHOP_SCHEMA)
    assert db["customers"].df["customer_id"].tolist() == [1, 2, 3]
    assert db["customers"].df["segment"].tolist() == ["a", "b", "e"]  # first duplicate kept
    assert issues_of(db, "null_primary_key") == [("customers", "customer_id", 1)]
    assert issues_of(db, "duplicate_primary_key") == [("customers", "customer_id", 1)]


def test_foreign_key_to_missing_table_names_it(tmp_path):
    schema = {"tables": {"orders": {"foreign_keys": {"customer_id": "clients"}}}}
    with pytest.raises(SchemaError, match=r"orders\.customer_id references table 'clients'.*'customers'"):
        rdl.connect(write_parquet(tmp_path / "s", shop()), schema=schema)


DANGLING_DDL = """
CREATE TABLE address (address_id INTEGER PRIMARY KEY, district VARCHAR(20));
CREATE TABLE customer (customer_id INTEGER PRIMARY KEY, address_id INTEGER, store INTEGER,
    FOREIGN KEY (address_id) REFERENCES add1 (address_id));
INSERT INTO address VALUES (1, 'north'), (2, 'south');
INSERT INTO customer VALUES (1, 1, 7), (2, 2, 8), (3, 1, 7)
"""


def assert_dangling_key_left_out(db) -> None:
    """The customers of :data:`DANGLING_DDL` read, their key to ``add1`` reported."""
    assert db["customer"].df["customer_id"].tolist() == [1, 2, 3]
    assert db["customer"].foreign_keys == {}
    assert "address_id" not in db["customer"].stypes  # a key's values are no feature
    assert "store" in db["customer"].stypes
    [issue] = [i for i in db.issues if i.kind == "missing_parent_table"]
    assert (issue.table, issue.column) == ("customer", "address_id")
    assert "'add1'" in issue.message and "foreign_keys: {address_id: <table>}" in issue.message


def test_a_declared_key_of_the_database_into_a_missing_table_is_reported_not_fatal(tmp_path):
    """SQLite, like MySQL with FOREIGN_KEY_CHECKS=0 (a Sakila copy had three such keys),
    keeps a foreign key into a table that does not exist; the rest of the database reads."""
    con = sqlite3.connect(tmp_path / "shop.db")
    con.executescript(DANGLING_DDL + ";")
    con.close()
    assert_dangling_key_left_out(rdl.connect(str(tmp_path / "shop.db")))
    schema = {"tables": {"customer": {"foreign_keys": {"address_id": "address"}}}}
    linked = rdl.connect(str(tmp_path / "shop.db"), schema=schema)
    assert linked["customer"].foreign_keys == {"address_id": "address"}
    assert not [i for i in linked.issues if i.kind == "missing_parent_table"]


def test_views_are_reported_not_read_silently(tmp_path):
    """A view's rows are its tables' rows, and it declares no keys: rdl reads tables only,
    and says which views it left, so that a user does not look for them in the graph."""
    import duckdb

    con = sqlite3.connect(tmp_path / "shop.db")
    con.executescript(DANGLING_DDL + ";CREATE VIEW north AS SELECT * FROM address "
                      "WHERE district = 'north'; CREATE VIEW busy AS SELECT * FROM customer")
    con.close()
    duck = duckdb.connect(str(tmp_path / "shop.duckdb"))
    duck.execute("CREATE TABLE address (address_id INTEGER PRIMARY KEY, district VARCHAR)")
    duck.execute("CREATE VIEW north AS SELECT * FROM address WHERE district = 'north'")
    duck.close()
    for path, views in (("shop.db", ["busy", "north"]), ("shop.duckdb", ["north"])):
        db = rdl.connect(str(tmp_path / path))
        assert "north" not in db.tables
        assert [(i.table, i.action) for i in db.issues if i.kind == "view"] == [
            (view, "not read") for view in views]
        report = format_report(db)  # a table-level note counts no rows: no "[0]"
        assert "  - north: a view, not a table" in report and "[0]" not in report

@pytest.mark.server
def test_mariadb_key_into_a_missing_table_is_reported_not_fatal(mariadb_db):
    url = mariadb_db({}, "SET FOREIGN_KEY_CHECKS=0;" + DANGLING_DDL.replace(
        "FOREIGN KEY", "CONSTRAINT fk_address FOREIGN KEY"))
    assert_dangling_key_left_out(rdl.connect(url))

def test_foreign_key_to_missing_column_names_it(tmp_path):
    schema = {"tables": {
        "customers": {"primary_key": "customer_id"},
        "orders": {"foreign_keys": {"customer_id": "customers.client_no"}},
    }}
    with pytest.raises(SchemaError, match=r"referenced column\(s\) \['client_no'\] do not exist"):
        rdl.connect(write_parquet(tmp_path / "s", shop()), schema=schema)


def test_foreign_key_to_table_without_key_asks_for_one(tmp_path):
    schema = {"tables": {"orders": {"foreign_keys": {"customer_id": "customers"}}}}
    with pytest.raises(SchemaError, match="'customers' has no primary key.*declare"):
        rdl.connect(write_parquet(tmp_path / "s", shop()), schema=schema)


def test_unparseable_dates_drop_rows_with_a_count(tmp_path):
    orders = shop()["orders"].assign(placed=["2024-01-01", "yesterday", "2024-01-03", "2024-13-45"])
    schema = {"tables": {**SHOP_SCHEMA["tables"], "orders": {
        **SHOP_SCHEMA["tables"]["orders"], "time_column": "placed"}}}
    db = rdl.connect(write_parquet(tmp_path / "s", shop(orders=orders)), schema=schema)
    assert db["orders"].df["order_id"].tolist() == [10, 12]
    assert issues_of(db, "unparseable_time") == [("orders", "placed", 2)]


def test_empty_table_is_kept_and_reported(tmp_path):
    orders = shop()["orders"].iloc[:0]
    db = rdl.connect(write_parquet(tmp_path / "s", shop(orders=orders)), schema=SHOP_SCHEMA)
    assert len(db["orders"]) == 0
    assert issues_of(db, "empty_table") == [("orders", None, 0)]


def test_blob_column_is_dropped_with_a_note(tmp_path):
    customers = shop()["customers"].assign(avatar=[b"\x89PNG", b"", None])
    ddl = "CREATE TABLE customers (customer_id INTEGER, segment TEXT, avatar BLOB)"
    for declared in (ddl, ""):  # a BLOB column, and bytes stored in an untyped column
        url = write_sqlite(tmp_path / f"s{len(declared)}.db", shop(customers=customers), declared)
        db = rdl.connect(url, schema=SHOP_SCHEMA)
        assert "avatar" not in db["customers"].df
        assert issues_of(db, "unsupported_column") == [("customers", "avatar", 3)]


def test_all_null_column_is_dropped_with_a_note(tmp_path):
    customers = shop()["customers"].assign(notes=[None, None, None])
    db = rdl.connect(write_parquet(tmp_path / "s", shop(customers=customers)), schema=SHOP_SCHEMA)
    assert "notes" not in db["customers"].stypes
    assert issues_of(db, "empty_column") == [("customers", "notes", 3)]


def test_url_that_does_not_connect_says_where(tmp_path):
    with pytest.raises(SourceError, match=r"Could not read postgresql\+psycopg://nobody:\*\*\*@127\.0\.0\.1:1/x: .*refused"):
        rdl.connect("postgresql://nobody:secret@127.0.0.1:1/x")


def test_password_never_appears_in_errors():
    with pytest.raises(SourceError) as err:
        rdl.connect("postgresql://nobody:hunter2@127.0.0.1:1/x")
    assert "hunter2" not in str(err.value)


def test_missing_sqlite_file_is_not_created(tmp_path):
    target = tmp_path / "nope.db"
    with pytest.raises(SourceError, match="unable to open database file"):
        rdl.connect(f"sqlite:///{target}")
    assert not target.exists()


def test_unknown_driver_says_what_to_install():
    with pytest.raises(SourceError, match="pip install"):
        rdl.connect("oracle+cx_oracle://scott@localhost/orcl")


def test_folder_without_readable_files(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(SourceError, match="No readable tables in folder"):
        rdl.connect(tmp_path)
    (tmp_path / "shop.numbers").write_bytes(b"PK\x03\x04")
    with pytest.raises(SourceError, match=re.escape(
            "or workbooks (.xlsx, .xlsm, .xlsb, .xls, .ods). notes.txt: not a parquet, CSV, JSON "
            "or workbook file. shop.numbers: not a parquet, CSV, JSON or workbook file.")):
        rdl.connect(tmp_path)
    (tmp_path / "shop.xls").write_bytes(b"\xd0\xcf\x11\xe0")  # damaged: named
    with pytest.raises(SourceError, match="Could not read workbook .*shop.xls: "):
        rdl.connect(tmp_path)


def test_files_beside_the_tables_say_how_to_make_them_readable(tmp_path):
    """A database file, Berka's `;`-separated `.asc` and a sub-folder of images each get a
    line saying what to do; notes and a schema file get none; JSON lines are a table."""
    import gzip

    pd.DataFrame({"id": [1, 2]}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "events.jsonl.gz").write_bytes(gzip.compress(b'{"a": 1}\n'))
    (tmp_path / "shop.duckdb").write_bytes(b"DUCK")
    (tmp_path / "loan.asc").write_text('"loan_id";"date"\n5314;930705\n')
    (tmp_path / "notes.txt").write_text("About the data\nmore, later\n")
    (tmp_path / "schema.yaml").write_text("tables: {}\n")
    (tmp_path / "pictures").mkdir()
    db = rdl.connect(tmp_path)
    assert list(db.tables) == ["events", "t"]
    why = {i.table: i.message for i in db.issues if i.kind == "ignored_file"}
    assert sorted(why) == ["loan.asc", "notes.txt", "pictures", "shop.duckdb"]
    assert f"rdl inspect {tmp_path / 'shop.duckdb'}" in why["shop.duckdb"]
    assert why["loan.asc"] == ("its first lines are a table separated by ';': rename it "
                               "loan.csv to read it")
    assert why["notes.txt"] == "not a parquet, CSV, JSON or workbook file"
    assert why["pictures"].startswith("a folder without parquet, CSV or JSON files")


def test_an_empty_file_beside_the_tables_is_skipped_and_named(tmp_path):
    """An export cut short leaves a file of 0 bytes (a Kaggle mirror's reviews.csv): the
    other tables are read, the empty one is named; a folder of empty files says so."""
    pd.DataFrame({"id": [1, 2]}).to_csv(tmp_path / "orders.csv", index=False)
    for name in ("reviews.csv", "items.parquet", "shop.xlsx"):
        (tmp_path / name).write_bytes(b"")
    db = rdl.connect(tmp_path)
    assert list(db.tables) == ["orders"]
    why = {i.table: i.message for i in db.issues if i.kind == "ignored_file"}
    assert why == dict.fromkeys(["items.parquet", "reviews.csv", "shop.xlsx"], "the file is empty")
    (tmp_path / "orders.csv").write_bytes(b"")
    with pytest.raises(SourceError, match="items.parquet: the file is empty"):
        rdl.connect(tmp_path)


@pytest.mark.parametrize("name", ["orders.csv", "orders.parquet", "orders.jsonl.gz"])
def test_one_tables_file_points_at_its_folder(tmp_path, name):
    """A new user's first try is often the one file they have open."""
    folder = write_parquet(tmp_path / "shop", shop())
    (folder / name).write_bytes(b"")  # its content is not read
    with pytest.raises(SourceError, match=re.escape(
            f"is the file of one table; rdl reads a folder of such files, one per table, and "
            f"links them by their keys: point it at the folder that holds it, {str(folder)!r}")):
        rdl.connect(str(folder / name))


def test_nonsense_source():
    with pytest.raises(SourceError, match="not a database URL"):
        rdl.connect("definitely/not/here")


def test_malformed_csv_names_file_and_row(tmp_path):
    (tmp_path / "t.csv").write_text("a,b\n1,2\n3,4,5\n")
    with pytest.raises(SourceError, match=r"t\.csv.*(Expected 2 columns|row)"):
        rdl.connect(tmp_path)


def test_a_header_that_repeats_a_name_or_leaves_one_empty_hides_no_column(tmp_path):
    """Two `amount` columns were read as one, silently; a delimiter at the end of every
    line (as some exports write them) gave a column without a name."""
    (tmp_path / "sales.csv").write_text(
        "id;amount;amount;amount_2;;date;\n1;2,5;3;9;x;2024-01-01;\n2;3,5;4;8;y;2024-01-02;\n")
    db = rdl.connect(tmp_path)
    sales = db["sales"].df
    assert sales[["amount", "amount_3", "amount_2", "column_5"]].values.tolist() == [
        [2.5, 3, 9, "x"], [3.5, 4, 8, "y"]]
    assert db["sales"].time_column == "date" and "column_7" not in sales  # all NULL: dropped
    named = sorted((i.column, i.message) for i in db.issues if i.kind == "csv_header")
    assert named == [("amount_3", "the header names 'amount' again in column 3 of sales.csv"),
                     ("column_5", "column 5 has no name in the header of sales.csv"),
                     ("column_7", "column 7 has no name in the header of sales.csv")]


@given(st.lists(st.sampled_from(["", " ", "a", " a", "a_2", "b ", "column_1", "column_2"]),
                max_size=8))
def test_header_names_become_unique_and_named(header):
    names = unique_column_names(header)
    assert len(set(names)) == len(names) == len(header) and all(names)
    typed = [name.strip() for name in header]
    for written, name in zip(typed, names):  # a unique name is kept, without its spaces
        if written and typed.count(written) == 1:
            assert name == written


@pytest.mark.parametrize("text", [
    "id, amount, date\n1, 2.5, 2024-01-01\n2, 3.5, 2024-01-02\n",     # typed by hand
    "sep=;\nid;amount;date\n1;2,5;2024-01-01\n2;3,5;2024-01-02\n",     # Excel's delimiter line
])
def test_spaces_around_header_names_and_excels_sep_line_are_no_part_of_the_table(tmp_path,
                                                                                 text):
    (tmp_path / "sales.csv").write_text(text)
    db = rdl.connect(tmp_path)
    sales = db["sales"]
    assert sales.time_column == "date" and sales.df["amount"].tolist() == [2.5, 3.5]
    assert list(sales.df.columns) == ["_pk", "id", "amount", "date"] and db.issues == []


def test_notes_alone_on_their_lines_below_the_data_are_not_parsed(tmp_path):
    """Arrow refuses a line of one field in a table of three; set apart by a blank line,
    such lines are notes, and the parse stops before them."""
    (tmp_path / "sales.csv").write_text(
        "id,amount,region\n1,2.5,N\n2,3.5,S\n\nSource: ONS\nNote: provisional\n")
    db = rdl.connect(tmp_path, schema={"tables": {"sales": {"time_column": None}}})
    assert db["sales"].df["id"].tolist() == [1, 2]
    assert [(i.kind, i.count) for i in db.issues] == [("csv_notes", 2)]


def test_a_line_of_totals_says_what_to_delete(tmp_path):
    (tmp_path / "sales.csv").write_text("id,amount\n1,2.5\n2,3.5\nTotal,6.0,x\n")
    with pytest.raises(SourceError, match=re.escape("every line needs the header's 2 fields")):
        rdl.connect(tmp_path)


@settings(max_examples=10, deadline=None)
@given(titles=st.lists(st.sampled_from(["Table 4: Sales by region", "Provisional, 2024",
                                        "Source: ONS"]), min_size=1, max_size=3),
       padded=st.booleans(), blank=st.booleans(), delimiter=st.sampled_from([",", ";", "\t"]),
       notes=st.lists(st.sampled_from(["Source: ONS", "p: provisional", "2"]), max_size=2))
def test_lines_of_title_and_notes_around_a_csv_table_are_skipped_and_counted(
        tmp_path_factory, titles, padded, blank, delimiter, notes):
    """A published table saved as CSV: its title above the header, alone on its line or
    padded with delimiters as Excel writes it, then perhaps a blank line; below the data a
    blank line and notes (padded: Excel pads every line of a sheet it saves). The file
    reads as the bare table does, titles and notes counted, never a header or a row."""
    table = [line.replace(",", delimiter) for line in
             ["id,amount,region,date", "1,2.5,North,2024-01-05", "2,3.5,South,2024-02-07"]]
    lines = ([title + delimiter * 3 * padded for title in titles] + [""] * blank + table
             + ([delimiter * 3 * padded] + [note + delimiter * 3 for note in notes]) * bool(notes))
    bare, dressed = tmp_path_factory.mktemp("bare"), tmp_path_factory.mktemp("dressed")
    (bare / "sales.csv").write_text("\n".join(table) + "\n")
    (dressed / "sales.csv").write_text("\n".join(lines) + "\n")
    expected, got = rdl.connect(bare), rdl.connect(dressed)
    pd.testing.assert_frame_equal(got["sales"].df, expected["sales"].df)
    counted = {i.kind: i for i in got.issues}
    assert set(counted) == {"csv_title", *["csv_notes"] * bool(notes)}
    assert counted["csv_title"].count == len(titles)
    first = " ".join(f.strip() for f in titles[0].split(delimiter) if f.strip())
    assert f"(first: {first[:60]!r})" in str(counted["csv_title"])
    if notes:
        assert counted["csv_notes"].count == len(notes)
        assert f"below the data of sales.csv fill too few fields to be rows (first: " \
               f"{notes[0]!r})" in str(counted["csv_notes"])


def test_quoted_values_that_span_lines_read_past_arrows_first_block(tmp_path):
    """Reviews and comments hold line breaks; past the first megabyte Arrow's parallel reader
    stopped with "CSV parser got out of sync with chunker"."""
    rows = 60_000
    texts = [f"line one {i}\nline two, with a comma" for i in range(rows)]
    pd.DataFrame({"review_id": range(rows), "comment": texts,
                  "created": pd.date_range("2024-01-01", periods=rows, freq="min")}
                 ).to_csv(tmp_path / "reviews.csv", index=False)
    assert (tmp_path / "reviews.csv").stat().st_size > 2 << 20  # past Arrow's 1 MiB blocks
    reviews = rdl.connect(tmp_path)["reviews"].df.sort_values("review_id")
    assert reviews["comment"].tolist() == texts


ORDERS_ROWS = [("1", "Crème brûlée", "12.50", "2024-01-02"), ("2", "Café", "3.75", "2024-01-05")]


@pytest.mark.parametrize("name, delimiter, encoding, decimal", [
    ("orders.csv", ";", "utf-8", ","),        # Excel in a European locale
    ("orders.csv", ";", "utf-8", "."),
    ("orders.csv", "\t", "utf-8", "."),       # tabs in a .csv
    ("orders.tsv", ",", "utf-8", "."),        # commas in a .tsv
    ("orders.csv", "|", "utf-8-sig", "."),    # a byte-order mark
    ("orders.csv", ",", "cp1252", "."),       # Excel's Windows text
    ("orders.csv.gz", ";", "cp1252", ","),
])
def test_csv_files_are_read_in_their_own_dialect(tmp_path, name, delimiter, encoding, decimal):
    """The delimiter splits the header most; text that is not UTF-8 is decoded as cp1252
    and reported; ';' files read 12,50 as a number (12.50 too)."""
    import gzip

    lines = [delimiter.join(["order_id", "dessert", "amount", "placed"])] + [
        delimiter.join([i, d, a.replace(".", decimal), t]) for i, d, a, t in ORDERS_ROWS]
    data = ("\n".join(lines) + "\n").encode(encoding)
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    db = rdl.connect(tmp_path)
    orders = db["orders"]
    assert orders.df["dessert"].tolist() == ["Crème brûlée", "Café"]
    assert orders.df["amount"].tolist() == [12.5, 3.75]
    assert orders.stypes["amount"] == "numerical" and orders.time_column == "placed"
    assert [i.action for i in db.issues if i.kind == "csv_encoding"] == (
        ["read as cp1252"] if encoding == "cp1252" else [])


@pytest.mark.parametrize("tail, encoding, last", [
    (b"8000,caf\xe9\n", "cp1252", "café"),
    (b"8000,caf\xe9\n8001,\x81x\n", "latin1", "\x81x"),
])
def test_text_that_stops_being_utf8_past_the_sniffed_start_is_read_again(tmp_path, tail,
                                                                           encoding, last):
    """The first 64 kB are plain ASCII; Arrow would return the column as bytes (then dropped
    as binary), and a cp1252 decoder would fail on a byte it lacks."""
    head = "\n".join(["id,name"] + [f"{i},plain{i}" for i in range(8000)]) + "\n"
    (tmp_path / "t.csv").write_bytes(head.encode() + tail)
    db = rdl.connect(tmp_path)
    assert db["t"].df["name"].tolist()[-1] == last and db["t"].stypes["name"] == "categorical"
    assert [i.action for i in db.issues if i.kind == "csv_encoding"] == [f"read as {encoding}"]

def test_bytes_no_code_page_decodes_are_read_as_latin1(tmp_path):
    (tmp_path / "t.csv").write_bytes(b"id,name\n1,caf\xe9\n2,\x81x\n")  # 0x81: no cp1252
    db = rdl.connect(tmp_path)
    assert db["t"].df["name"].tolist() == ["café", "\x81x"]
    assert [i.action for i in db.issues if i.kind == "csv_encoding"] == ["read as latin1"]

@pytest.mark.parametrize("schema, message", [
    ({"tables": {"clients": {}}}, r"unknown table 'clients'; the source has \['customers', 'orders'\]"),
    ({"tables": {"orders": {"primary_key": "id"}}}, r"table 'orders' has no column 'id'; its columns are"),
    ({"tables": {"orders": {"stypes": {"amount": "money"}}}}, r"unknown stype 'money'; valid"),
    ({"tables": {"orders": {"primary_key": "order_id", "stypes": {"order_id": "numerical"}}}},
     r"column 'order_id' is a key, not a feature"),
    ({"tables": {"orders": {"pk": "order_id"}}}, r"unknown setting\(s\) \['pk'\]"),
    ({"tabels": {}}, r"unknown top-level key\(s\) \['tabels'\]"),
    ({"drop_tables": ["ghosts"]}, r"unknown table 'ghosts'"),
    ({"tables": {"orders": {"time_column": {"column": "placed", "unit": "fortnight"}}}},
     r"unit 'fortnight' is not one of"),
    ({"tables": {"orders": {"time_column": "amount"}}}, r"'amount' holds numbers; declare its unit"),
])
def test_schema_file_mistakes_are_named(tmp_path, schema, message):
    with pytest.raises(SchemaError, match=message):
        rdl.connect(write_parquet(tmp_path / "s", shop()), schema=schema)


def test_schema_file_that_is_not_yaml(tmp_path):
    bad = tmp_path / "schema.yaml"
    bad.write_text("tables: [unclosed\n")
    with pytest.raises(SchemaError, match="not valid YAML"):
        rdl.connect(write_parquet(tmp_path / "s", shop()), schema=bad)


def test_a_table_given_twice_in_a_schema_file_is_named_with_both_lines(tmp_path):
    """YAML keeps the later of two equal keys; appending a second ``orders:`` to a file
    would silently drop the first one's key, so the file is refused instead."""
    schema = tmp_path / "schema.yaml"
    schema.write_text("tables:\n  orders:\n    foreign_keys: {customer_id: customers}\n"
                      "  customers:\n    primary_key: customer_id\n"
                      "  orders:\n    time_column: placed\n")
    with pytest.raises(SchemaError, match=r"line 6: 'orders' is given twice in one mapping "
                                          r"\(first on line 2\)"):
        rdl.connect(write_parquet(tmp_path / "s", shop()), schema=schema)
    schema.write_text("tables:\n  orders:\n    foreign_keys: {customer_id: customers}\n"
                      "    time_column: placed\n  customers:\n    primary_key: customer_id\n")
    assert rdl.connect(write_parquet(tmp_path / "t", shop()), schema=schema)[
        "orders"].foreign_keys == {"customer_id": "customers"}

def test_missing_schema_file(tmp_path):
    with pytest.raises(SchemaError, match="does not exist"):
        rdl.connect(write_parquet(tmp_path / "s", shop()), schema=tmp_path / "nope.yaml")


def test_a_missing_relative_path_says_which_folder_it_was_read_from(tmp_path, monkeypatch):
    folder = write_parquet(tmp_path / "s", shop())
    monkeypatch.chdir(tmp_path)
    where = f"(a relative path, read from the folder rdl runs in, {tmp_path}, not from a config"
    with pytest.raises(SchemaError, match=re.escape(f"'nope.yaml' does not exist {where}")):
        rdl.connect(str(folder), schema="nope.yaml")
    with pytest.raises(SourceError, match=re.escape(where)):
        rdl.connect("sqlite:///nope.db")
    with pytest.raises(SourceError, match=re.escape(where)):
        rdl.connect("duckdb:///nope.duckdb")
    with pytest.raises(SourceError, match=re.escape(f"'data/' is not a database URL, a database "
                                                    f"file, a folder {where}")):
        rdl.connect("data/")
    with pytest.raises(SchemaError) as absolute:
        rdl.connect(str(folder), schema=tmp_path / "nope.yaml")
    assert "relative path" not in str(absolute.value)


KINDS = {
    "int": lambda rng, n: rng.integers(-50, 5000, n),
    "float": lambda rng, n: rng.integers(1, 10**6, n) / 100 + 0.01,
    "date": lambda rng, n: [f"2024-{m:02d}-{d:02d}" for m, d in
                            zip(rng.integers(1, 13, n), rng.integers(1, 29, n))],
    "text": lambda rng, n: rng.choice(["web", "store", "phone call"], n),
}


@given(kinds=st.lists(st.sampled_from(sorted(KINDS)), min_size=2, max_size=6),
       rows=st.integers(2, 30), seed=st.integers(0, 10**6), header=st.booleans())
@settings(max_examples=40, deadline=None)
def test_a_csv_without_header_keeps_its_first_row(tmp_path_factory, kinds, rows, seed, header):
    """Exports without a header line (mysqldump --tab, Hive) lost their first row to the
    header, which named the columns 1, 2021-01-01 and 5.0. A first line holding a fraction
    or a date, of the same kinds as the second line, is now the first row; names that are
    words always stay names."""
    rng = np.random.default_rng(seed)
    names = [f"{kind}_value_{i}" for i, kind in enumerate(kinds)]
    frame = pd.DataFrame({name: KINDS[kind](rng, rows) for name, kind in zip(names, kinds)})
    folder = tmp_path_factory.mktemp("csv")
    frame.to_csv(folder / "t.csv", index=False, header=header)
    db = rdl.connect(folder, schema={"tables": {"t": {"time_column": None}}})
    headerless = not header and bool({"float", "date"} & set(kinds))
    expected = [f"column_{i + 1}" for i in range(len(kinds))] if headerless else names
    if header or headerless:
        assert list(db["t"].df.columns) == ["_pk", *expected]
        assert len(db["t"]) == rows
    assert any(i.kind == "csv_header" and "holds values, not names" in i.message
               for i in db.issues) == headerless


def test_a_pivots_header_of_years_stays_a_header(tmp_path):
    (tmp_path / "sales.csv").write_text("region,2019,2020\nnorth,12.5,13.0\nsouth,1.5,2.0\n")
    db = rdl.connect(tmp_path, schema={"tables": {"sales": {"time_column": None}}})
    assert list(db["sales"].df.columns) == ["_pk", "region", "2019", "2020"]


def test_one_table_split_by_period_over_files_is_reported(tmp_path):
    """Exports by year, read as tables of their own: no key links one year's rows to
    another's, and a task counts one year."""
    orders = shop()["orders"]
    orders.to_csv(tmp_path / "orders_2023.csv", index=False)
    orders.to_csv(tmp_path / "orders_2024.csv", index=False)
    orders[["order_id", "amount"]].to_csv(tmp_path / "orders_2025.csv", index=False)
    pd.DataFrame({"q": [1, 2]}).to_csv(tmp_path / "report_q1.csv", index=False)
    pd.DataFrame({"x": [1, 2]}).to_csv(tmp_path / "report_q2.csv", index=False)
    db = rdl.connect(tmp_path, schema={"tables": {name: {"time_column": None} for name in (
        "orders_2023", "orders_2024", "orders_2025", "report_q1", "report_q2")}})
    found = [str(i) for i in db.issues if i.kind == "split_table"]
    assert found == [
        "orders_2023: orders_2023, orders_2024 have the same columns and names that differ "
        "only in their numbers: if they are one table split by period, put their files in "
        "one folder orders/ to read them as table 'orders' (read as separate tables)"]
