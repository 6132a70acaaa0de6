"""The same database read through all five backends gives the same result; and what each
backend holds beyond plain columns (open-ended dates, times of day, uuid and hash keys,
partitions, other schemas) reads as a model can use it, or is reported."""
from __future__ import annotations

import re
import sqlite3
import warnings

import pandas as pd
import pytest
import sqlalchemy as sa

import rdl
from rdl.datasets import nycflights13
from rdl.db import SchemaError
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


# Job titles held from a date "until further notice": 9999-01-01, as MySQL's employees sample
# and most validity-range tables store an open end; PostgreSQL can store 'infinity'.
TITLES_DDL = """
CREATE TABLE employees (emp_no INTEGER PRIMARY KEY, hired DATE);
CREATE TABLE titles (id INTEGER PRIMARY KEY, emp_no INTEGER REFERENCES employees (emp_no),
    title VARCHAR(20), from_date DATE, to_date DATE{extra});
INSERT INTO employees VALUES (1, '1990-01-01'), (2, '1991-05-01');
INSERT INTO titles VALUES (1, 1, 'engineer', '1990-01-01', '1995-01-01'{one}),
    (2, 1, 'senior', '1995-01-01', '9999-01-01'{two}), (3, 2, 'staff', '1991-05-01', {end}{three})
"""


def _assert_open_ends_counted(db, counted: dict[str, int], stored_nulls: int = 0) -> None:
    """``counted``: the open ends each column holds, NULL now and reported."""
    titles = db["titles"]
    assert titles.time_column == "from_date"
    assert titles.df["to_date"].tolist()[0] == pd.Timestamp("1995-01-01")
    for column, count in counted.items():
        assert titles.df[column].dtype == "datetime64[ns]"
        assert int(titles.df[column].isna().sum()) == count + (column != "to_date") * stored_nulls
    assert sorted((i.column, i.count) for i in db.issues if i.kind == "unparseable_time") == \
        sorted(counted.items())


def test_an_open_end_date_reads_as_a_counted_null_in_files(tmp_path):
    ddl = TITLES_DDL.format(extra="", one="", two="", three="", end="'9999-12-31'")
    con = sqlite3.connect(tmp_path / "hr.db")
    con.executescript(ddl + ";")
    con.close()
    _assert_open_ends_counted(rdl.connect(str(tmp_path / "hr.db")), {"to_date": 2})
    tables = {name: pd.read_sql(f"SELECT * FROM {name}", sqlite3.connect(tmp_path / "hr.db"))
              for name in ("employees", "titles")}
    url = write_duckdb(tmp_path / "hr.duckdb", tables)
    schema = {"tables": {"titles": {"time_column": "from_date",
                                    "foreign_keys": {"emp_no": "employees"}},
                         "employees": {"primary_key": "emp_no", "time_column": "hired"}}}
    _assert_open_ends_counted(rdl.connect(url, schema=schema), {"to_date": 2})


@pytest.mark.server
def test_postgres_infinity_reads_as_a_counted_null(postgres_db):
    url, schema = postgres_db({}, TITLES_DDL.format(
        extra=", seen TIMESTAMP, seen_tz TIMESTAMPTZ", end="'infinity'",
        one=", '-infinity', '2000-01-01 10:00+02'", two=", '2000-01-01', 'infinity'",
        three=", NULL, NULL"))
    _assert_open_ends_counted(rdl.connect(url, sql_schema=schema),
                              {"to_date": 2, "seen": 1, "seen_tz": 1}, stored_nulls=1)


@pytest.mark.server
def test_mariadb_open_end_reads_as_a_counted_null(mariadb_db):
    url = mariadb_db({}, TITLES_DDL.format(extra="", one="", two="", three="",
                                           end="'9999-12-31'"))
    _assert_open_ends_counted(rdl.connect(url), {"to_date": 2})


def _assert_times_as_seconds(db, columns: dict[str, list]) -> None:
    """Times of day, durations and intervals read as seconds, which a model can use."""
    events = db["ev"]
    for column, expected in columns.items():
        assert events.stypes[column] in ("numerical", "categorical"), column
        assert events.df[column].tolist()[:2] == expected, column
        assert events.df[column].isna().tolist()[2], column


def test_duckdb_times_of_day_and_intervals_read_as_seconds(tmp_path):
    import duckdb

    con = duckdb.connect(str(tmp_path / "ev.duckdb"))
    con.execute("CREATE TABLE ev (id INT PRIMARY KEY, ts TIMESTAMP, tod TIME, span INTERVAL)")
    con.execute("INSERT INTO ev VALUES (1, '2020-01-01', '01:30:00', INTERVAL 90 MINUTE), "
                "(2, '2020-01-02', '23:59:59.5', INTERVAL 1 MONTH), (3, '2020-01-03', NULL, NULL)")
    con.close()
    _assert_times_as_seconds(rdl.connect(str(tmp_path / "ev.duckdb")),
                             {"tod": [5400.0, 86399.5], "span": [5400.0, 365.25 / 12 * 86400]})



def test_struct_columns_are_read_as_their_fields(tmp_path):
    """A DuckDB STRUCT (and a parquet group) is an age, a city and a zip code to a model,
    not the text of a record: one column per field, nested ones too, NULL where the
    struct is; a struct whose field names are taken stays whole."""
    import duckdb

    con = duckdb.connect(str(tmp_path / "users.duckdb"))
    con.execute("CREATE TABLE users (id INT PRIMARY KEY, "
                "profile STRUCT(age INT, home STRUCT(city VARCHAR, zip VARCHAR)), "
                "pair STRUCT(a INT, b INT), \"pair.a\" INT)")
    con.execute("INSERT INTO users VALUES "
                "(1, {'age': 30, 'home': {'city': 'Paris', 'zip': '75001'}}, {'a': 1, 'b': 2}, 5), "
                "(2, {'age': 41, 'home': NULL}, NULL, 6), (3, NULL, {'a': 3, 'b': 4}, 7)")
    (tmp_path / "files").mkdir()
    con.execute(f"COPY users TO '{tmp_path / 'files' / 'users.parquet'}' (FORMAT parquet)")
    con.close()
    for source in (str(tmp_path / "users.duckdb"), str(tmp_path / "files")):
        users = rdl.connect(source)["users"]
        columns = [c for c in users.df.columns if c != "_pk"]  # a parquet file declares no key
        assert columns == ["id", "profile.age", "profile.home.city", "profile.home.zip", "pair",
                           "pair.a"], source
        assert users.df["profile.age"].tolist()[:2] == [30, 41]
        assert users.df["profile.age"].isna().tolist() == [False, False, True]
        assert users.df["profile.home.city"].tolist()[0] == "Paris"
        assert users.df["profile.home.zip"].isna().tolist() == [False, True, True]
        assert {c: users.stypes[c] for c in ("profile.age", "profile.home.city")} == {
            "profile.age": "numerical", "profile.home.city": "categorical"}
        assert users.df["pair.a"].tolist() == [5, 6, 7]
    declared = {"tables": {"users": {"stypes": {"profile.age": "categorical"}}}}
    users = rdl.connect(str(tmp_path / "users.duckdb"), schema=declared)["users"]
    assert users.stypes["profile.age"] == "categorical"
    typo = {"tables": {"users": {"stypes": {"profile.agee": "categorical"}}}}
    with pytest.raises(SchemaError, match=re.escape(
            "table 'users' has no column 'profile.agee'; the fields of 'profile' are "
            "['profile.age', 'profile.home.city', 'profile.home.zip']")):
        rdl.connect(str(tmp_path / "users.duckdb"), schema=typo)
    with pytest.raises(SchemaError, match="table 'users' has no column 'nothing.age'"):
        rdl.connect(str(tmp_path / "users.duckdb"),
                    schema={"tables": {"users": {"stypes": {"nothing.age": "numerical"}}}})

@pytest.mark.server
def test_postgres_times_intervals_and_bits_read_as_numbers(postgres_db):
    """... and a full-text search index (Sakila's ``film.fulltext``) is dropped, by name."""
    url, schema = postgres_db({}, """
        CREATE TABLE ev (id INT PRIMARY KEY, ts TIMESTAMP, tod TIME, span INTERVAL, flag BIT(1),
            words TSVECTOR);
        INSERT INTO ev VALUES (1, '2020-01-01', '01:30:00', '90 minutes', B'1', 'a:1 fat:2'),
            (2, '2020-01-02', '23:59:59.5', '2 days', B'0', NULL),
            (3, '2020-01-03', NULL, NULL, NULL, NULL)""")
    db = rdl.connect(url, sql_schema=schema)
    _assert_times_as_seconds(db, {"tod": [5400.0, 86399.5], "span": [5400.0, 172800.0],
                                  "flag": [1, 0]})
    [dropped] = [i for i in db.issues if i.kind == "unsupported_column"]
    assert (dropped.column, dropped.count) == ("words", 3)
    assert "full-text search index (type TSVECTOR)" in dropped.message


@pytest.mark.server
def test_mariadb_times_bits_and_geometry(mariadb_db):
    """MySQL's BIT(1) is its usual flag and TIME a duration; a geometry column, whose
    type SQLAlchemy does not know, is dropped by its own name, without a library warning."""
    url = mariadb_db({}, """
        CREATE TABLE ev (id INT PRIMARY KEY, ts DATETIME, tod TIME, flag BIT(1), mask BIT(8),
            place GEOMETRY);
        INSERT INTO ev VALUES (1, '2020-01-01', '01:30:00', b'1', b'101', POINT(1, 1)),
            (2, '2020-01-02', '-02:00:00', b'0', b'11111111', POINT(2, 2)),
            (3, '2020-01-03', NULL, NULL, NULL, NULL)""")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        db = rdl.connect(url)
    _assert_times_as_seconds(db, {"tod": [5400.0, -7200.0], "flag": [1, 0], "mask": [5, 255]})
    [dropped] = [i for i in db.issues if i.kind == "unsupported_column"]
    assert (dropped.column, dropped.message) == (
        "place", "binary column (type geometry) cannot be a feature")


@pytest.mark.server
def test_postgres_partitioned_table_is_read_once_with_its_partition_column_as_time(postgres_db):
    """Each partition is also a table in the catalog; read beside the partitioned table,
    every payment would be seen twice. Its key must hold the partition column, which is
    still the table's time."""
    url, schema = postgres_db({}, """
        CREATE TABLE customer (customer_id INT PRIMARY KEY, name TEXT);
        CREATE TABLE payment (payment_id INT, customer_id INT REFERENCES customer,
            amount NUMERIC, payment_date TIMESTAMP NOT NULL, PRIMARY KEY (payment_date, payment_id))
            PARTITION BY RANGE (payment_date);
        CREATE TABLE payment_2022 PARTITION OF payment FOR VALUES FROM ('2022-01-01')
            TO ('2023-01-01') PARTITION BY RANGE (payment_date);
        CREATE TABLE payment_2022_01 PARTITION OF payment_2022 FOR VALUES FROM ('2022-01-01')
            TO ('2022-02-01');
        CREATE TABLE payment_2022_rest PARTITION OF payment_2022 FOR VALUES FROM ('2022-02-01')
            TO ('2023-01-01');
        CREATE TABLE payment_2023 PARTITION OF payment FOR VALUES FROM ('2023-01-01')
            TO ('2024-01-01');
        INSERT INTO customer VALUES (1, 'a'), (2, 'b');
        INSERT INTO payment VALUES (1, 1, 9.99, '2022-01-05'), (2, 2, 4.99, '2022-03-20'),
            (3, 1, 2.99, '2023-02-03');
        CREATE MATERIALIZED VIEW totals AS SELECT customer_id, sum(amount) FROM payment GROUP BY 1""")
    db = rdl.connect(url, sql_schema=schema)
    assert sorted(db.tables) == ["customer", "payment"]
    assert [i.table for i in db.issues if i.kind == "view"] == ["totals"]
    payments = db["payment"]
    assert sorted(payments.df["payment_id"]) == [1, 2, 3]
    assert payments.time_column == "payment_date"
    assert payments.foreign_keys == {"customer_id": "customer"}
    [issue] = [i for i in db.issues if i.kind == "partitions"]
    assert (issue.table, issue.count) == ("payment", 3)
    assert "payment_2022_01, payment_2022_rest, payment_2023" in issue.message


@pytest.mark.server
def test_postgres_tables_that_inherit_are_read_once_through_their_parent(postgres_db):
    """Partitioning before PostgreSQL 10 (Sakila's PostgreSQL port): monthly tables
    ``INHERITS (payment)``, each declaring its own foreign key. ``payment`` returns their
    rows with its own, so read as tables too, each of theirs would count twice."""
    url, schema = postgres_db({}, """
        CREATE TABLE customer (customer_id INT PRIMARY KEY, name TEXT);
        CREATE TABLE payment (payment_id INT PRIMARY KEY, customer_id INT REFERENCES customer,
            amount NUMERIC, payment_date TIMESTAMP NOT NULL);
        CREATE TABLE payment_2022 (CHECK (payment_date < '2023-01-01'), note TEXT)
            INHERITS (payment);
        CREATE TABLE payment_2022_12 () INHERITS (payment_2022);
        CREATE TABLE payment_2023 () INHERITS (payment);
        ALTER TABLE payment_2022 ADD FOREIGN KEY (customer_id) REFERENCES customer;
        INSERT INTO customer VALUES (1, 'a'), (2, 'b');
        INSERT INTO payment VALUES (1, 1, 9.99, '2024-01-05');
        INSERT INTO payment_2022 VALUES (2, 2, 4.99, '2022-03-20', 'late'),
            (3, 1, 2.99, '2022-05-03', NULL);
        INSERT INTO payment_2022_12 VALUES (4, 2, 1.99, '2022-12-24', NULL)""")
    db = rdl.connect(url, sql_schema=schema)
    assert sorted(db.tables) == ["customer", "payment"]
    payments = db["payment"].df.sort_values("payment_id")
    assert payments["payment_id"].tolist() == [1, 2, 3, 4]
    assert payments["customer_id"].tolist() == [1, 2, 1, 2]
    assert "note" not in payments
    [issue] = [i for i in db.issues if i.kind == "partitions"]
    assert (issue.table, issue.count) == ("payment", 3)
    assert issue.message.startswith(
        "3 tables inherit from it (payment_2022, payment_2022_12, payment_2023)")
    assert "(payment_2022.note)" in issue.message  # its own column is named, not lost silently
    summary = db.summary()["tables"]
    assert summary["payment"]["rows"] == 4 and summary["customer"]["rows"] == 2


@pytest.mark.server
def test_mariadb_zero_dates_are_counted_without_pandas_warnings(mariadb_db):
    """MySQL outside strict mode stores 0000-00-00 (and 2020-01-00) for unknown dates."""
    url = mariadb_db({}, """
        SET SESSION sql_mode = '';
        CREATE TABLE orders (id INT PRIMARY KEY, placed DATETIME, shipped DATE);
        INSERT INTO orders VALUES (1, '2020-01-01 10:00:00', '0000-00-00'),
            (2, '2020-01-02 10:00:00', '2020-01-05'), (3, '0000-00-00 00:00:00', '2020-01-06'),
            (4, '2020-01-04 10:00:00', '2020-01-00')""")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        db = rdl.connect(url)
    orders = db["orders"]
    assert orders.time_column == "placed"
    assert orders.df["id"].tolist() == [1, 2, 4]  # no time: the row cannot be placed
    assert orders.df["shipped"].isna().tolist() == [True, False, True]
    assert sorted((i.column, i.count) for i in db.issues) == [("placed", 1), ("shipped", 2)]


@pytest.mark.server
def test_postgres_uuid_keys_money_enums_and_arrays(postgres_db):
    """Types a PostgreSQL application schema uses: uuid keys (Arrow's uuid type had no
    kernel to join them), money (text in the server's locale), enums, domains, arrays."""
    film_a, film_b = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12"
    url, schema = postgres_db({}, f"""
        CREATE TYPE mpaa AS ENUM ('G', 'PG', 'R');
        CREATE DOMAIN release_year AS integer CHECK (VALUE > 1900);
        CREATE TABLE film (film_id uuid PRIMARY KEY, rating mpaa, released release_year,
            features text[], price money, created timestamptz);
        INSERT INTO film VALUES
            ('{film_a}', 'PG', 2006, ARRAY['Trailers', 'Commentaries'], 4.99, '2020-01-01'),
            ('{film_b}', 'R', 2007, ARRAY['Trailers'], 0.99, '2020-02-01');
        CREATE TABLE rental (rental_id bigserial PRIMARY KEY, film_id uuid REFERENCES film,
            rented timestamptz);
        INSERT INTO rental (film_id, rented) VALUES ('{film_a}', '2020-04-01'),
            ('{film_b}', '2020-04-02'), ('{film_a}', '2020-04-03')""")
    db = rdl.connect(url, sql_schema=schema)
    films, rentals = db["film"], db["rental"]
    assert films.df["film_id"].tolist() == [film_a, film_b]
    assert rentals.foreign_keys == {"film_id": "film"}
    assert rentals.df["film_id"].tolist() == [film_a, film_b, film_a]
    assert films.df["price"].tolist() == [4.99, 0.99] and films.stypes["price"] == "numerical"
    assert films.stypes["rating"] == "categorical" and films.stypes["released"] == "numerical"
    assert list(films.df["features"].tolist()[0]) == ["Trailers", "Commentaries"]
    assert films.stypes["features"] == "multicategorical"


def test_duckdb_uuid_and_64_bit_hash_keys_link_their_rows(tmp_path):
    """UUID keys, and unsigned 64-bit hash ids past int64 (pandas' Int64 cannot hold them;
    as floats, neighbouring ids would collide), are read as text and still join."""
    import duckdb

    con = duckdb.connect(str(tmp_path / "k.duckdb"))
    con.execute("CREATE TABLE users (id UUID PRIMARY KEY, visits UBIGINT)")
    con.execute("CREATE TABLE items (item_id UBIGINT PRIMARY KEY, name VARCHAR)")
    con.execute("CREATE TABLE events (eid INT PRIMARY KEY, user_id UUID REFERENCES users (id), "
                "item_id UBIGINT REFERENCES items (item_id), happened TIMESTAMP)")
    users = ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12"]
    items = [2**64 - 1, 2**64 - 2]  # equal as float64
    con.execute(f"INSERT INTO users VALUES ('{users[0]}', 3), ('{users[1]}', 5)")
    con.execute(f"INSERT INTO items VALUES ({items[0]}, 'x'), ({items[1]}, 'y')")
    con.execute(f"INSERT INTO events VALUES (1, '{users[0]}', {items[1]}, '2020-02-01'), "
                f"(2, '{users[1]}', {items[0]}, '2020-02-02')")
    con.close()
    db = rdl.connect(str(tmp_path / "k.duckdb"))
    assert db["users"].df["id"].tolist() == users
    assert db["items"].df["item_id"].tolist() == [str(i) for i in items]
    events = db["events"]
    assert events.foreign_keys == {"user_id": "users", "item_id": "items"}
    assert events.df["user_id"].tolist() == users
    assert events.df["item_id"].tolist() == [str(items[1]), str(items[0])]
    assert not [i for i in db.issues if i.kind == "dangling_foreign_key"]


@pytest.mark.server
def test_postgres_key_into_another_schema_is_reported_not_followed_to_a_namesake(postgres_db):
    """orders.user_id names core.users; the schema read has a users table of its own,
    which the key must not be taken to mean."""
    url, schema = postgres_db({}, """
        CREATE TABLE users (user_id INT PRIMARY KEY, nick TEXT);
        INSERT INTO users VALUES (7, 'z')""")
    engine = sa.create_engine(url)
    core = f"{schema}_core"
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(
                f"CREATE SCHEMA {core}; CREATE TABLE {core}.users (user_id INT PRIMARY KEY); "
                f"INSERT INTO {core}.users VALUES (1); CREATE TABLE {schema}.orders (order_id INT "
                f"PRIMARY KEY, user_id INT REFERENCES {core}.users, placed TIMESTAMP); "
                f"INSERT INTO {schema}.orders VALUES (1, 1, '2020-01-01')"))
        db = rdl.connect(url, sql_schema=schema)
        assert db["orders"].foreign_keys == {}
        [issue] = [i for i in db.issues if i.kind == "missing_parent_table"]
        assert f"'{core}.users', which is not among the tables read" in issue.message
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {core} CASCADE"))
        engine.dispose()
