"""PostgreSQL's COPY fast path returns exactly what the generic row path does."""
from __future__ import annotations

import datetime as dt

import pandas as pd
import pytest
import sqlalchemy as sa

from rdl.db.postgres_copy import copy_arrow_type, fetch_with_copy
from rdl.db.sql_source import _fetch_arrow, create_readonly_engine

DDL = """
CREATE TABLE tricky (
    id INTEGER PRIMARY KEY, flag BOOLEAN, amount NUMERIC(10, 2), score DOUBLE PRECISION,
    note TEXT, day DATE, at TIMESTAMP)
"""
ROWS = pd.DataFrame({
    "id": [1, 2, 3, 4],
    "flag": [True, False, None, True],
    "amount": [1.5, None, -2.25, 0.0],
    "score": [0.1, 2e10, None, -1.0],
    "note": ["", None, "NA", 'comma, "quote"\nand a newline'],
    "day": [dt.date(2024, 1, 2), None, dt.date(1999, 12, 31), dt.date(2024, 2, 29)],
    "at": [dt.datetime(2024, 1, 2, 3, 4, 5), None, dt.datetime(2000, 1, 1), dt.datetime(2024, 2, 29, 23, 59, 59)],
})


@pytest.mark.server
def test_copy_matches_the_row_path(postgres_db):
    url, schema = postgres_db({"tricky": ROWS}, DDL)
    engine = create_readonly_engine(url)
    with engine.connect() as conn:
        columns = sa.inspect(conn).get_columns("tricky", schema=schema)
        table = sa.table("tricky", *[sa.column(c["name"]) for c in columns], schema=schema)
        fast = fetch_with_copy(conn, sa.select(*table.columns), columns)
        slow = _fetch_arrow(conn, sa.select(*table.columns), columns, 2)
    assert fast is not None
    fast_df, slow_df = fast.to_pandas(), slow.to_pandas()
    slow_df["amount"] = slow_df["amount"].astype(float)
    pd.testing.assert_frame_equal(fast_df, slow_df, check_dtype=False)
    note = fast_df["note"]
    assert note[0] == "" and pd.isna(note[1]) and note[2] == "NA"  # '' and 'NA' are not NULL


def test_types_without_an_exact_csv_form_take_the_row_path():
    assert copy_arrow_type(sa.DateTime(timezone=True)) is None
    assert copy_arrow_type(sa.JSON()) is None
    assert copy_arrow_type(sa.BigInteger()) is not None
