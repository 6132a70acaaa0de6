"""Faults in the data and in the connection: stray values in numeric columns,
NULL spellings, empty tables, and a server connection dropped mid-read."""
from __future__ import annotations

import gc
import sqlite3
import sys
import time
from collections.abc import Callable

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa

import rdl
from rdl.db import SourceError
from rdl.db import sql_source
from rdl.db.schema_guess import guess_keys
from rdl.db.sql_source import SQLSource
from rdl.testing.files import write_sqlite


ROWS = 3000
KEYED = {"tables": {"t": {"primary_key": "id"}}}


def numbers_with(strays: dict[int, str]) -> list[str]:
    """3,000 numbers written as text, with ``strays`` at the given rows."""
    values = [f"{x:.2f}" for x in np.arange(ROWS) * 1.25]
    for row, value in strays.items():
        values[row] = value
    return values


def write_csv(folder, **columns) -> str:
    folder.mkdir(exist_ok=True)
    pd.DataFrame({"id": range(ROWS), **columns}).to_csv(folder / "t.csv", index=False)
    return str(folder)


def issues_of(db, kind):
    return [(i.table, i.column, i.count) for i in db.issues if i.kind == kind]


# -- numbers stored as text ---------------------------------------------------

@pytest.mark.parametrize("stray", ["N/A", "\\N", "12,5", "twelve"])
def test_one_stray_value_keeps_a_csv_column_numerical(tmp_path, stray):
    db = rdl.connect(write_csv(tmp_path / "f", amount=numbers_with({1234: stray})), schema=KEYED)
    amount = db["t"].df["amount"]
    assert db["t"].stypes["amount"] == "numerical"
    assert amount.dtype == "float64" and amount.isna().tolist() == [i == 1234 for i in range(ROWS)]
    assert amount[1235] == 1235 * 1.25
    expected = [] if stray in ("N/A", "\\N") else [("t", "amount", 1)]  # a NULL, not a fault
    assert issues_of(db, "unparseable_number") == expected


def test_unparseable_numbers_are_counted_with_examples_and_first_row(tmp_path):
    strays = {100: "12,5", 200: "abc", 300: "12,5", 400: "N/A", 500: "-", 600: "null",
              700: "NA", 800: "nan", 900: "", 1000: "NULL", 1100: "1e3x"}
    db = rdl.connect(write_csv(tmp_path / "f", amount=numbers_with(strays)), schema=KEYED)
    assert db["t"].df["amount"].isna().sum() == len(strays)
    [issue] = [i for i in db.issues if i.kind == "unparseable_number"]
    assert (issue.table, issue.column, issue.count, issue.action) == ("t", "amount", 4, "value set to NULL")
    assert "e.g. '12,5', 'abc', '1e3x'" in issue.message
    assert "first at row 101" in issue.message  # the 101st data row of t.csv
    assert str(issue).startswith("t.amount: value is not a number")


def test_mostly_text_stays_text(tmp_path):
    sizes = (["S", "M", "L", "XL"] * ROWS)[:ROWS]
    sizes[:150] = ["10"] * 150  # 5% numbers
    codes = numbers_with({i: f"X{i}" for i in range(0, ROWS, 10)})  # 90% numbers: below 95%
    db = rdl.connect(write_csv(tmp_path / "f", size=sizes, code=codes), schema=KEYED)
    assert db["t"].stypes == {"size": "categorical", "code": "categorical"}
    assert db["t"].df["code"][0] == "X0" and db["t"].df["code"][1] == "1.25"
    assert issues_of(db, "unparseable_number") == []


def test_declared_stype_decides(tmp_path):
    half = numbers_with({i: "n/k" for i in range(0, ROWS, 2)})
    folder = write_csv(tmp_path / "f", half=half, kept=numbers_with({7: "12,5"}))
    schema = {"tables": {"t": {"primary_key": "id",
                               "stypes": {"half": "numerical", "kept": "categorical"}}}}
    db = rdl.connect(folder, schema=schema)
    assert db["t"].df["half"].isna().sum() == ROWS // 2  # declared numerical: converted anyway
    assert db["t"].df["kept"][7] == "12,5"  # declared categorical: the text is kept
    assert issues_of(db, "unparseable_number") == [("t", "half", ROWS // 2)]


def test_csv_null_spellings_are_null_in_text_columns_too(tmp_path):
    names = (["ann", "bob", "NA", "-", "null", "", "\\N"] * ROWS)[:ROWS]
    db = rdl.connect(write_csv(tmp_path / "f", name=names), schema=KEYED)
    assert set(db["t"].df["name"].dropna()) == {"ann", "bob"}


@pytest.mark.parametrize("writer", ["sqlite", "parquet", "duckdb"])
def test_same_rule_for_numbers_stored_as_text_in_other_sources(tmp_path, writer):
    df = pd.DataFrame({"id": range(ROWS), "amount": numbers_with({5: "12,5", 6: "N/A"}),
                       "name": (["ann", "bob"] * ROWS)[:ROWS]})
    if writer == "sqlite":
        source = write_sqlite(tmp_path / "t.db", {"t": df},
                              "CREATE TABLE t (id INTEGER, amount TEXT, name TEXT)")
    elif writer == "duckdb":
        con = duckdb.connect(str(tmp_path / "t.duckdb"))
        con.execute("CREATE TABLE t AS SELECT * FROM df")
        con.close()
        source = str(tmp_path / "t.duckdb")
    else:
        (tmp_path / "p").mkdir()
        df.to_parquet(tmp_path / "p" / "t.parquet", index=False)
        source = tmp_path / "p"
    db = rdl.connect(source, schema=KEYED)
    assert db["t"].stypes == {"amount": "numerical", "name": "categorical"}
    assert db["t"].df["amount"][5:7].isna().all()
    assert issues_of(db, "unparseable_number") == [("t", "amount", 1)]


# -- empty rows -----------------------------------------------------------------

def test_blank_spreadsheet_lines_are_dropped_and_counted(tmp_path):
    """A sheet saved as CSV keeps the blank lines below its data as commas (`,,,\\r\\n`;
    Olist's tables in one public copy: 10,000 orders over 89,442 such lines). Kept, each
    would be a node of missing values and hide the keys: the id column, NULL on every blank
    line, would not be unique."""
    folder = tmp_path / "f"
    folder.mkdir()
    lines = ["order_id,customer,placed,total"]
    lines += [f"o{i},c{i % 7},2024-01-{1 + i % 28:02d},{i}.5" for i in range(40)]
    lines += [",,,"] * 25 + ["o40,c0,2024-02-01,1.0"] + [",,,"] * 3
    (folder / "orders.csv").write_bytes(("\r\n".join(lines) + "\r\n").encode())
    db = rdl.connect(folder)
    assert len(db["orders"].df) == 41 and db["orders"].df["total"].notna().all()
    assert issues_of(db, "empty_row") == [("orders", None, 28)]
    assert db["orders"].time_column == "placed"
    assert guess_keys(db).primary_keys == {"orders": "order_id"}


@pytest.mark.parametrize("writer", ["sqlite", "parquet"])
def test_rows_null_in_every_column_are_dropped_from_any_source(tmp_path, writer):
    df = pd.DataFrame({"id": [1.0, None, 3.0, None], "name": ["a", None, "c", "d"]})
    if writer == "sqlite":
        source = write_sqlite(tmp_path / "t.db", {"t": df}, "CREATE TABLE t (id INTEGER, name TEXT)")
    else:
        (tmp_path / "p").mkdir()
        df.to_parquet(tmp_path / "p" / "t.parquet", index=False)
        source = tmp_path / "p"
    db = rdl.connect(source)
    assert db["t"].df["name"].tolist() == ["a", "c", "d"]  # the row with a name stays
    assert issues_of(db, "empty_row") == [("t", None, 1)]


# -- empty tables ---------------------------------------------------------------

EMPTY_DDL = ("CREATE TABLE t (id INTEGER PRIMARY KEY, price REAL, n INTEGER, d DOUBLE PRECISION, "
             "created_at TIMESTAMP, name VARCHAR(20));"
             "CREATE TABLE days (id INTEGER PRIMARY KEY, day DATE, w REAL)")
EMPTY_STYPES = {"price": "numerical", "n": "numerical", "d": "numerical",
                "created_at": "timestamp", "name": "categorical"}


def _assert_typed_from_the_schema(db) -> None:
    assert db["t"].time_column == "created_at"
    assert db["t"].stypes == EMPTY_STYPES
    assert db["days"].time_column == "day"
    assert db["days"].stypes == {"day": "timestamp", "w": "numerical"}
    assert sorted(issues_of(db, "empty_table")) == [("days", None, 0), ("t", None, 0)]


@pytest.mark.parametrize("writer", ["sqlite", "duckdb", "parquet"])
def test_empty_table_types_come_from_the_declared_types(tmp_path, writer):
    if writer == "sqlite":
        source = str(tmp_path / "e.db")
        con = sqlite3.connect(source)
        con.executescript(EMPTY_DDL)
        con.close()
    elif writer == "duckdb":
        source = str(tmp_path / "e.duckdb")
        con = duckdb.connect(source)
        for statement in EMPTY_DDL.split(";"):
            con.execute(statement)
        con.close()
    else:
        source = tmp_path / "p"
        source.mkdir()
        pq.write_table(pa.schema([
            ("id", pa.int64()), ("price", pa.float32()), ("n", pa.int32()), ("d", pa.float64()),
            ("created_at", pa.timestamp("us")), ("name", pa.string())]).empty_table(),
            source / "t.parquet")
        pq.write_table(pa.schema([("id", pa.int64()), ("day", pa.date32()), ("w", pa.float32())])
                       .empty_table(), source / "days.parquet")
    db = rdl.connect(source, schema={"tables": {"t": {"primary_key": "id"},
                                                "days": {"primary_key": "id"}}})
    _assert_typed_from_the_schema(db)


@pytest.mark.server
def test_empty_server_tables_are_typed_from_the_schema(postgres_db, mariadb_db):
    url, schema = postgres_db({}, EMPTY_DDL)
    _assert_typed_from_the_schema(rdl.connect(url, sql_schema=schema))
    _assert_typed_from_the_schema(rdl.connect(mariadb_db({}, EMPTY_DDL.replace("DOUBLE PRECISION", "DOUBLE"))))


# -- connections dropped mid-read ---------------------------------------------

CHUNK_ROWS = 100


def drop_rdl_connection(
    monkeypatch, url: str, table: str, mid_table: bool, own_id: str, kill: str,
    gone: str,
) -> None:
    """Kills rdl's own session from another connection while rdl reads
    ``table``: after rdl has fetched its first chunk of rows (``mid_table``),
    or just before it starts reading the table. ``own_id`` asks a session its
    id; ``kill`` and ``gone`` (which returns a row while the session lives)
    take it as ``:id``. Returns once the server has ended the session."""
    # Autocommit: PostgreSQL shows pg_stat_activity as of a transaction's start.
    admin = sa.create_engine(sql_source.with_available_driver(sa.make_url(url)),
                             isolation_level="AUTOCOMMIT")

    def end(session: int) -> None:
        with admin.connect() as conn:
            conn.execute(sa.text(kill), {"id": session})
            deadline = time.monotonic() + 10
            while conn.execute(sa.text(gone), {"id": session}).first() is not None:
                assert time.monotonic() < deadline, "the server did not end rdl's session"
                time.sleep(0.05)
        admin.dispose()

    armed: dict[str, int] = {}
    read, partitions = SQLSource.read, sql_source._partitions

    def read_then_kill(self, info, columns, bound=None, limit=None):
        if info.name == table and limit is None:
            session = self.conn.exec_driver_sql(own_id).scalar()
            if mid_table:
                armed["session"] = session
            else:
                end(session)
        return read(self, info, columns, bound, limit)

    def partitions_then_kill(result, size):
        for rows in partitions(result, size):
            yield rows
            if "session" in armed:
                end(armed.pop("session"))

    monkeypatch.setattr(SQLSource, "read", read_then_kill)
    monkeypatch.setattr(sql_source, "_partitions", partitions_then_kill)
    monkeypatch.setattr(sys.modules["rdl.db.connect"], "open_source",
                        lambda source, sql_schema=None: SQLSource(source, sql_schema, CHUNK_ROWS))


def assert_one_clear_error(monkeypatch, tmp_path, connect: Callable, table: str) -> None:
    """``connect`` fails with a one-line SourceError naming ``table`` that
    says the connection was lost, and nothing is written anywhere."""
    home = tmp_path / "rdl_home"
    home.mkdir()
    monkeypatch.setenv("RDL_HOME", str(home))
    with pytest.raises(SourceError) as err:
        connect()
    message = str(err.value)
    assert f"table {table!r}" in message and "connection to the server was lost" in message
    assert "\n" not in message and "sqlalchemy" not in message.lower()
    assert err.value.__cause__ is None and err.value.__suppress_context__
    assert list(home.iterdir()) == []  # no partial cache, no converted copy
    del err
    gc.collect()  # the driver's abandoned result is freed quietly (see the marks)


SERVER_ROWS = 1000


@pytest.mark.server
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("mid_table", [True, False], ids=["mid-table", "between-tables"])
def test_postgres_connection_terminated_mid_read(postgres_db, monkeypatch, tmp_path, mid_table):
    # 'at' has a time zone, so 'events' streams in chunks; 'shops' takes the COPY path
    url, schema = postgres_db({}, f"""
        CREATE TABLE shops (shop_id INTEGER PRIMARY KEY, city TEXT);
        INSERT INTO shops SELECT g, 'c' || g FROM generate_series(1, 10) g;
        CREATE TABLE events (event_id INTEGER PRIMARY KEY, shop_id INTEGER REFERENCES shops,
                             at TIMESTAMPTZ, amount REAL);
        INSERT INTO events SELECT g, 1 + g % 10, TIMESTAMPTZ '2024-01-01' + g * INTERVAL '1 minute', g
          FROM generate_series(1, {SERVER_ROWS}) g""")
    drop_rdl_connection(
        monkeypatch, url, "events" if mid_table else "shops", mid_table, "SELECT pg_backend_pid()",
        "SELECT pg_terminate_backend(:id)", "SELECT 1 FROM pg_stat_activity WHERE pid = :id")
    assert_one_clear_error(monkeypatch, tmp_path, lambda: rdl.connect(url, sql_schema=schema),
                           "events" if mid_table else "shops")


@pytest.mark.server
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("mid_table", [True, False], ids=["mid-table", "between-tables"])
def test_mariadb_connection_killed_mid_read(mariadb_db, monkeypatch, tmp_path, mid_table):
    # MariaDB streams a result as fast as the socket takes it: 'events' is
    # made far larger than the socket buffers, so the kill lands mid-result.
    url = mariadb_db({}, """
        CREATE TABLE shops (shop_id INTEGER PRIMARY KEY, city TEXT);
        INSERT INTO shops SELECT seq, CONCAT('c', seq) FROM seq_1_to_10;
        CREATE TABLE events (event_id INTEGER PRIMARY KEY, shop_id INTEGER,
                             at DATETIME, note VARCHAR(255),
                             FOREIGN KEY (shop_id) REFERENCES shops (shop_id));
        INSERT INTO events SELECT seq, 1 + seq % 10, '2024-01-01' + INTERVAL seq MINUTE,
                                  REPEAT('x', 250) FROM seq_1_to_200000""")
    drop_rdl_connection(
        monkeypatch, url, "events" if mid_table else "shops", mid_table, "SELECT CONNECTION_ID()",
        "KILL :id", "SELECT 1 FROM information_schema.processlist WHERE id = :id")
    assert_one_clear_error(monkeypatch, tmp_path, lambda: rdl.connect(url),
                           "events" if mid_table else "shops")


def test_a_link_to_a_row_dropped_for_its_time_says_so(tmp_path):
    """MovieLens' one film without a release date: the film is dropped (counted) and its
    ratings' links dangle (counted); the second count names the first as its cause."""
    pd.DataFrame({"item_id": [1, 2, 3], "released": ["2020-01-01", None, "2020-02-01"]}
                 ).to_csv(tmp_path / "items.csv", index=False)
    pd.DataFrame({"rating_id": range(6), "item_id": [1, 2, 2, 2, 9, 3],
                  "at": ["2021-01-0%d" % d for d in range(1, 7)]}
                 ).to_csv(tmp_path / "ratings.csv", index=False)
    schema = {"tables": {"items": {"primary_key": "item_id", "time_column": "released"},
                         "ratings": {"primary_key": "rating_id", "time_column": "at",
                                     "foreign_keys": {"item_id": "items"}}}}
    db = rdl.connect(tmp_path, schema=schema)
    assert issues_of(db, "null_time") == [("items", "released", 1)]
    [dangling] = [i for i in db.issues if i.kind == "dangling_foreign_key"]
    assert (dangling.table, dangling.column, dangling.count) == ("ratings", "item_id", 4)
    assert "3 of them name items rows dropped for having no usable released" in dangling.message
    assert db["ratings"].df["item_id"].isna().sum() == 4


def test_a_link_to_a_row_that_lost_its_inherited_time_says_so(tmp_path):
    """Formula 1's shape: results take their race's date; a race without one drops its
    results (counted), and the pit stops naming those results dangle (counted, named)."""
    pd.DataFrame({"race_id": [1, 2], "date": ["2020-03-01", None]}
                 ).to_csv(tmp_path / "races.csv", index=False)
    pd.DataFrame({"result_id": [10, 11, 12], "race_id": [1, 2, 2]}
                 ).to_csv(tmp_path / "results.csv", index=False)
    pd.DataFrame({"stop_id": range(4), "result_id": [10, 11, 12, 12],
                  "at": ["2020-03-01"] * 4}).to_csv(tmp_path / "stops.csv", index=False)
    schema = {"tables": {
        "races": {"primary_key": "race_id", "time_column": "date"},
        "results": {"primary_key": "result_id", "time_column": {"from": "race_id"},
                    "foreign_keys": {"race_id": "races"}},
        "stops": {"primary_key": "stop_id", "time_column": "at",
                  "foreign_keys": {"result_id": "results"}}}}
    db = rdl.connect(tmp_path, schema=schema)
    assert sorted(issues_of(db, "null_time")) == [("races", "date", 1),
                                                  ("results", db["results"].time_column, 2)]
    dangling = {(i.table, i.column): i for i in db.issues if i.kind == "dangling_foreign_key"}
    stops = dangling[("stops", "result_id")]
    assert stops.count == 3
    assert (f"3 of them name results rows dropped for having no usable "
            f"{db['results'].time_column}") in stops.message
    assert db["stops"].df["result_id"].isna().sum() == 3
