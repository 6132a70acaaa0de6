"""The same database read through all five backends gives the same result."""
from __future__ import annotations

import pandas as pd
import pytest

import rdl
from rdl.datasets import nycflights13
from rdl.testing.files import write_duckdb, write_sqlite


FLIGHT_ROWS = 20_000


@pytest.fixture(scope="module")
def flights_tables() -> dict[str, pd.DataFrame]:
    """nycflights13 with a slice of flights, times as naive UTC (as servers store them)."""
    folder = nycflights13.path()
    tables = {}
    for name in nycflights13.TABLES:
        df = pd.read_parquet(folder / f"{name}.parquet")
        if name == "flights":
            df = df.head(FLIGHT_ROWS)
        for col in df.columns:
            if isinstance(df[col].dtype, pd.DatetimeTZDtype):
                df[col] = df[col].dt.tz_convert("UTC").dt.tz_localize(None)
        tables[name] = df
    return tables


@pytest.fixture(scope="module")
def parquet_reference(flights_tables, tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("flights_parquet")
    for name, df in flights_tables.items():
        df.to_parquet(folder / f"{name}.parquet", index=False)
    return rdl.connect(folder, schema=nycflights13.SCHEMA_FILE).summary()


def _assert_same(summary: dict, reference: dict) -> None:
    assert summary["tables"].keys() == reference["tables"].keys()
    for name, expected in reference["tables"].items():
        got = summary["tables"][name]
        for field in ("rows", "primary_key", "time_column", "foreign_keys", "columns"):
            assert got[field] == expected[field], (name, field)
    counted = lambda s: sorted((i["kind"], i["table"], i["column"], i["count"]) for i in s["issues"])  # noqa: E731
    assert counted(summary) == counted(reference)


def test_parquet_reference_is_the_real_thing(parquet_reference):
    tables = parquet_reference["tables"]
    assert tables["flights"]["rows"] == FLIGHT_ROWS
    assert tables["flights"]["foreign_keys"] == {
        "carrier": "airlines", "tailnum": "planes", "origin": "airports",
        "dest": "airports", "origin+time_hour": "weather",
    }
    assert tables["weather"]["primary_key"] == "_pk"
    assert tables["flights"]["time_column"] == "time_hour"


def test_sqlite_matches_parquet(flights_tables, parquet_reference, tmp_path):
    url = write_sqlite(tmp_path / "f.db", flights_tables)
    _assert_same(rdl.connect(url, schema=nycflights13.SCHEMA_FILE).summary(), parquet_reference)


def test_duckdb_matches_parquet(flights_tables, parquet_reference, tmp_path):
    url = write_duckdb(tmp_path / "f.duckdb", flights_tables)
    _assert_same(rdl.connect(url, schema=nycflights13.SCHEMA_FILE).summary(), parquet_reference)


@pytest.mark.server
def test_postgres_matches_parquet(flights_tables, parquet_reference, postgres_db):
    url, schema = postgres_db(flights_tables)
    db = rdl.connect(url, schema=nycflights13.SCHEMA_FILE, sql_schema=schema)
    _assert_same(db.summary(), parquet_reference)


@pytest.mark.server
def test_mariadb_matches_parquet(flights_tables, parquet_reference, mariadb_db):
    url = mariadb_db(flights_tables)
    _assert_same(rdl.connect(url, schema=nycflights13.SCHEMA_FILE).summary(), parquet_reference)
