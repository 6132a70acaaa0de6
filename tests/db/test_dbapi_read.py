"""The DBAPI fast path of SQLite and MariaDB returns exactly what SQLAlchemy's
row path returns: the same Arrow table, the same frame, the same issues."""
from __future__ import annotations

import datetime as dt
import sqlite3
from decimal import Decimal
from types import SimpleNamespace

import pandas as pd
import pyarrow as pa
import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

import rdl
from rdl.db import SourceError, sql_source
from rdl.db.dbapi_read import has_dbapi_path
from rdl.db.raw import TimeBound, read_frame
from rdl.db.sql_source import SQLSource

SQLITE_DDL = """
CREATE TABLE kinds (
    id INTEGER PRIMARY KEY, n INTEGER, big BIGINT, x REAL, d DOUBLE PRECISION, f FLOAT,
    price NUMERIC(10, 2), amount DECIMAL(12, 4), name TEXT, code VARCHAR(8),
    day DATE, at TIMESTAMP, seen DATETIME, flag BOOLEAN, raw BLOB, loose,
    "odd %name"" q" INTEGER);
CREATE TABLE empty (id INTEGER PRIMARY KEY, x REAL, at TIMESTAMP, name TEXT, flag BOOLEAN);
"""
# Seven rows: read two at a time, some chunks hold only NULLs in a column.
SQLITE_ROWS = [
    (1, 5, 2**62, 1.5, -0.25, 3.0, 12.5, "1.2345", "a", "x", "2024-01-02", "2024-01-02 03:04:05",
     "2024-01-02 03:04:05.250000", 1, b"\x00\x01", 7, 1),
    (2, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None),
    (3, None, -1, float("inf"), 2e300, None, "7.10", 3, "", "NA", "1999-12-31", "1999-12-31 23:59:59",
     None, 0, None, "text", None),
    (4, -3, 0, 0.0, None, 1e-300, -0.5, None, 'comma, "quote"\nnewline', None, None,
     "2000-02-29 00:00:00", "2000-02-29T12:00:00", None, b"", 2.5, 3),
    (5, None, 9, None, 4.0, None, None, "0.0001", "ünïcode ✓", "y", "2024-02-29",
     None, None, 1, None, None, None),
    (6, 8, None, 2.0, None, None, 1, None, None, None, None, None, None, None, None, b"\xff", None),
    (7, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None),
]


def sqlite_file(path, ddl: str, inserts: dict[str, list[tuple]]) -> str:
    """A SQLite file of ``ddl`` holding the rows as given (SQLite keeps any
    value in any column); returns its URL."""
    con = sqlite3.connect(path)
    con.executescript(ddl)
    for table, rows in inserts.items():
        if rows:
            con.executemany(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(rows[0]))})', rows)
    con.commit()
    con.close()
    return f"sqlite:///{path}"


def _generic_path_not_taken(*args):
    raise AssertionError("the fast path fell back to SQLAlchemy's rows")


def read_both(url: str, table: str, chunk_rows: int = 2, columns: list[str] | None = None,
              bound: TimeBound | None = None, limit: int | None = None) -> list[tuple]:
    """``(Arrow table, frame, issues)`` of ``table`` read by the fast path,
    then by SQLAlchemy's rows, each by a fresh :class:`SQLSource`."""
    results = []
    for fast in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            if fast:
                mp.setattr(sql_source, "_fetch_arrow", _generic_path_not_taken)
            else:
                mp.setattr(sql_source, "has_dbapi_path", lambda conn: False)
            source = SQLSource(url, chunk_rows=chunk_rows)
            try:
                info = {t.name: t for t in source.tables()}[table]
                wanted = info.columns if columns is None else columns
                data = source.read(info, wanted, bound, limit)
                frame, issues = read_frame(source, info, wanted, bound, limit)
                results.append((data, frame, issues + source.issues))
            finally:
                source.close()
    return results


def assert_same(results: list[tuple]) -> pa.Table:
    """Both paths gave the same table (types included), frame (dtypes
    included) and issues; returns the table."""
    (fast, fast_frame, fast_issues), (slow, slow_frame, slow_issues) = results
    assert fast.schema == slow.schema
    assert fast.equals(slow), (fast.to_pydict(), slow.to_pydict())
    pd.testing.assert_frame_equal(fast_frame, slow_frame)
    assert fast_issues == slow_issues
    return fast


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return sqlite_file(tmp_path / "kinds.db", SQLITE_DDL, {"kinds": SQLITE_ROWS})


@pytest.mark.parametrize("chunk_rows", [1, 2, 3, 100])
def test_sqlite_every_kind_of_column(sqlite_url, chunk_rows):
    data = assert_same(read_both(sqlite_url, "kinds", chunk_rows))
    assert "raw" not in data.column_names  # a declared BLOB is dropped, with an issue
    assert data.column("n").type == pa.int64() and data.column("n").null_count == 4
    assert data.column("odd %name\" q").to_pylist() == [1, None, None, 3, None, None, None]
    assert data.column("name").to_pylist()[2:4] == ["", 'comma, "quote"\nnewline']


def test_sqlite_columns_bound_and_limit(sqlite_url):
    columns = ["id", "n", "at", "odd %name\" q"]
    for bound in (TimeBound("n", pa.scalar(5, pa.int64())),
                  TimeBound("at", pa.scalar(dt.datetime(2000, 2, 29), pa.timestamp("s"))),
                  TimeBound("day", pa.scalar(dt.date(2024, 1, 2), pa.date32()))):
        data = assert_same(read_both(sqlite_url, "kinds", 2, columns, bound))
        assert data.column_names == columns and 0 < data.num_rows < len(SQLITE_ROWS)
    data = assert_same(read_both(sqlite_url, "kinds", 2, columns, limit=3))
    assert data.num_rows == 3


def test_sqlite_empty_table_is_typed_from_the_declaration(tmp_path):
    url = sqlite_file(tmp_path / "empty.db", SQLITE_DDL, {})
    data = assert_same(read_both(url, "empty"))
    assert data.num_rows == 0 and data.schema.field("x").type == pa.float64()


def test_text_in_a_later_chunk_makes_the_column_text(tmp_path):
    """SQLite keeps text in an INTEGER column: a chunk of numbers then one
    holding text is the text column one chunk would have been."""
    url = sqlite_file(tmp_path / "dirty.db", "CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER, x REAL)",
                       {"t": [(1, 1, 1.0), (2, 2, 2.5), (3, "N/A", "?"), (4, None, None)]})
    for chunk_rows in (2, 10):
        data = assert_same(read_both(url, "t", chunk_rows))
        assert data.column("n").to_pylist() == ["1", "2", "N/A", None]
        assert data.column("x").to_pylist() == ["1.0", "2.5", "?", None]


def test_whole_database_is_the_same_either_way(sqlite_url):
    fast = rdl.connect(sqlite_url)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sql_source, "has_dbapi_path", lambda conn: False)
        slow = rdl.connect(sqlite_url)
    assert list(fast.tables) == list(slow.tables)
    for name, table in slow.tables.items():
        assert fast[name].stypes == table.stypes, name
        pd.testing.assert_frame_equal(fast[name].df, table.df, obj=name)


def test_failing_read_names_the_table(sqlite_url):
    source = SQLSource(sqlite_url)
    try:
        info = {t.name: t for t in source.tables()}["kinds"]
        con = sqlite3.connect(sa.make_url(sqlite_url).database)
        con.execute("ALTER TABLE kinds RENAME TO gone")
        con.commit()
        con.close()
        with pytest.raises(SourceError, match="table 'kinds' of .*no such table: kinds") as err:
            source.read(info, info.columns)
        assert "sqlalchemy" not in str(err.value).lower()
    finally:
        source.close()


def test_other_drivers_take_the_generic_path():
    for url, known in (("sqlite://", True), ("mysql+pymysql://", True), ("mariadb+pymysql://", True),
                       ("postgresql+psycopg://", False)):
        dialect = sa.create_engine(url).dialect
        assert has_dbapi_path(SimpleNamespace(dialect=dialect)) is known, url


# -- random small SQLite tables ------------------------------------------------

def texts(max_size: int) -> st.SearchStrategy[str]:
    return st.text(st.characters(codec="utf-8"), max_size=max_size)


KINDS = {  # declared type -> values SQLite may hold in such a column
    "INTEGER": st.integers(-(2**63), 2**63 - 1),
    "REAL": st.floats(allow_nan=False),
    "NUMERIC(8, 2)": st.decimals(-10**5, 10**5, places=2).map(str),
    "TEXT": texts(5),
    "BOOLEAN": st.sampled_from([0, 1]),
    "DATE": st.dates().map(str),
    "TIMESTAMP": st.datetimes().map(str),
    "": st.integers(-5, 5) | st.floats(-5, 5) | texts(3),
}


@st.composite
def sqlite_tables(draw) -> tuple[list[str], list[tuple]]:
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=5))
    strays = texts(2) | st.integers(-3, 3)  # SQLite stores what it is given
    cells = [st.none() | KINDS[k] | (strays if draw(st.booleans()) else st.nothing()) for k in kinds]
    rows = draw(st.lists(st.tuples(*cells), max_size=9))
    return kinds, rows


@settings(max_examples=40, deadline=None)
@given(table=sqlite_tables(), chunk_rows=st.integers(1, 4))
def test_random_sqlite_tables(tmp_path_factory, table, chunk_rows):
    kinds, rows = table
    columns = ", ".join(f"c{i} {kind}" for i, kind in enumerate(kinds))
    path = tmp_path_factory.mktemp("random") / "t.db"
    url = sqlite_file(path, f"CREATE TABLE t (id INTEGER PRIMARY KEY, {columns})",
                       {"t": [(i, *row) for i, row in enumerate(rows)]})
    assert_same(read_both(url, "t", chunk_rows))


# -- MariaDB -------------------------------------------------------------------

MARIADB_DDL = """
CREATE TABLE kinds (
    id INTEGER PRIMARY KEY, n INTEGER, big BIGINT, small SMALLINT, x FLOAT, d DOUBLE,
    price DECIMAL(10, 2), wide DECIMAL(30, 10), name TEXT, code VARCHAR(8), day DATE,
    at DATETIME, at6 DATETIME(6), stamp TIMESTAMP NULL, flag BOOLEAN, raw BLOB, yr YEAR,
    span TIME, doc JSON, kind ENUM('a', 'b'), `odd %name" q` INTEGER);
CREATE TABLE empty (id INTEGER PRIMARY KEY, x DOUBLE, at DATETIME, name TEXT, price DECIMAL(5, 1));
INSERT INTO kinds VALUES
    (1, 5, 4611686018427387904, 7, 1.5, -0.25, 12.5, 12345678901234567890.0123456789, 'a', 'x',
     '2024-01-02', '2024-01-02 03:04:05', '2024-01-02 03:04:05.250000', '2024-01-02 03:04:05',
     TRUE, x'0001', 2024, '12:30:00', '{"a": [1, 2]}', 'a', 1),
    (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL),
    (3, NULL, -1, NULL, 2e38, 2e300, -0.5, 0, '', 'NA', '1999-12-31', '1999-12-31 23:59:59', NULL,
     NULL, FALSE, NULL, NULL, '-01:00:00', NULL, 'b', NULL),
    (4, -3, 0, -32768, 0, NULL, 7.1, NULL, 'comma, "quote"\nnewline', NULL, NULL,
     '2000-02-29 00:00:00', '2000-02-29 12:00:00.000001', NULL, NULL, x'', 1999, NULL, 'null',
     NULL, 3),
    (5, NULL, 9, NULL, NULL, 4.0, NULL, 0.0000000001, 'ünïcode ✓', 'y', '2024-02-29', NULL, NULL,
     NULL, TRUE, NULL, NULL, NULL, NULL, NULL, NULL),
    (6, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL, NULL, NULL, NULL, NULL)
"""


@pytest.fixture
def mariadb_url(mariadb_db) -> str:
    return mariadb_db({}, MARIADB_DDL)


@pytest.mark.server
@pytest.mark.parametrize("chunk_rows", [1, 2, 100])
def test_mariadb_every_kind_of_column(mariadb_url, chunk_rows):
    data = assert_same(read_both(mariadb_url, "kinds", chunk_rows))
    assert "raw" not in data.column_names
    assert data.column("odd %name\" q").to_pylist() == [1, None, None, 3, None, None]
    assert data.column("wide").to_pylist()[0] == Decimal("12345678901234567890.0123456789")


@pytest.mark.server
def test_mariadb_bounds_limit_and_empty_table(mariadb_url):
    columns = ["id", "n", "day", "at", "odd %name\" q"]
    for bound in (TimeBound("n", pa.scalar(0, pa.int64())),
                  TimeBound("at", pa.scalar(dt.datetime(2000, 2, 29), pa.timestamp("s"))),
                  TimeBound("day", pa.scalar(dt.date(2024, 1, 2), pa.date32()))):
        data = assert_same(read_both(mariadb_url, "kinds", 2, columns, bound))
        assert data.column_names == columns and 0 < data.num_rows < 6
    assert assert_same(read_both(mariadb_url, "kinds", 2, columns, limit=2)).num_rows == 2
    empty = assert_same(read_both(mariadb_url, "empty"))
    assert empty.num_rows == 0 and empty.schema.field("price").type == pa.float64()


@pytest.mark.server
def test_mariadb_whole_database_is_the_same_either_way(mariadb_url):
    fast = rdl.connect(mariadb_url)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sql_source, "has_dbapi_path", lambda conn: False)
        slow = rdl.connect(mariadb_url)
    for name, table in slow.tables.items():
        assert fast[name].stypes == table.stypes, name
        pd.testing.assert_frame_equal(fast[name].df, table.df, obj=name)
