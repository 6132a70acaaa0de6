"""Dates that stand for "unknown" (1900-01-01, 1970-01-01, 2099-12-31, ...) are
dropped from time columns and set to NULL in timestamp features, counted, when
they lie a year or more away from every real date of their column."""
from __future__ import annotations

import datetime

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

import rdl
from rdl.db.placeholder_times import (EARLY_PLACEHOLDERS, ISOLATION, LATE_PLACEHOLDERS,
                                      placeholder_times)
from rdl.testing.files import write_sqlite

REAL_DAYS = st.datetimes(min_value=datetime.datetime(2005, 1, 1),
                         max_value=datetime.datetime(2030, 1, 1))
PLACEHOLDERS = st.sampled_from(list(EARLY_PLACEHOLDERS) + list(LATE_PLACEHOLDERS))


@given(real=st.lists(REAL_DAYS, min_size=1, max_size=30),
       stand_ins=st.lists(PLACEHOLDERS, max_size=5), nulls=st.integers(0, 3))
def test_a_placeholder_day_far_from_the_real_dates_is_flagged_and_nothing_else(
        real, stand_ins, nulls):
    times = pd.Series(pd.to_datetime(real + stand_ins + [None] * nulls)).sample(
        frac=1, random_state=0)
    mask = placeholder_times(times)
    first, last = min(real), max(real)
    for value, flagged in zip(times, mask):
        early = value in set(EARLY_PLACEHOLDERS) and value + ISOLATION < first
        late = value in set(LATE_PLACEHOLDERS) and value - ISOLATION > last
        assert flagged == (early or late)


@given(real=st.lists(st.datetimes(min_value=datetime.datetime(1940, 1, 1),
                                  max_value=datetime.datetime(2005, 1, 1))),
       earliest=st.datetimes(min_value=datetime.datetime(1940, 1, 1),
                             max_value=datetime.datetime(1970, 12, 31)).filter(
                                 lambda day: day.date() != datetime.date(1970, 1, 1)),
       epoch_births=st.integers(1, 5))
def test_a_placeholder_day_among_real_dates_is_kept(real, earliest, epoch_births):
    """A customer born on 1970-01-01 among others born from 1940 to 2005, one of
    them within a year of it or before."""
    births = real + [earliest] + [datetime.datetime(1970, 1, 1)] * epoch_births
    times = pd.Series(pd.to_datetime(births))
    assert not placeholder_times(times).any()


def test_a_column_of_placeholders_only_keeps_them():
    times = pd.Series(pd.to_datetime(["1900-01-01", "1900-01-01", None]))
    assert not placeholder_times(times).any()


def test_placeholder_rows_leave_the_time_column_and_features_lose_the_value(tmp_path):
    """SQL Server's empty-string date in a time column: its rows are dropped and
    counted (a row at 1900 would be seen at every prediction time and make the data
    start 121 years early); an open end in a feature column becomes NULL."""
    orders = pd.DataFrame({
        "order_id": range(1, 7),
        "placed_at": ["2021-03-01", "1900-01-01 00:00:00", "2021-05-02", "2022-01-09",
                      "1900-01-01", "2023-07-30"],
        "valid_until": ["2021-04-01", "2099-12-31", "2099-12-31", "2022-02-01", None,
                        "2023-08-30"],
        "amount": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    })
    db = rdl.connect(write_sqlite(tmp_path / "shop.db", {"orders": orders}),
                     schema={"tables": {"orders": {"primary_key": "order_id",
                                                   "time_column": "placed_at"}}})
    table = db["orders"]
    assert table.df["order_id"].tolist() == [1, 3, 4, 6]
    assert db.min_time == pd.Timestamp("2021-03-01")
    assert table.df["valid_until"].isna().tolist() == [False, True, False, False]
    found = {(i.table, i.column, i.count, i.action) for i in db.issues
             if i.kind == "placeholder_time"}
    assert found == {("orders", "placed_at", 2, "rows dropped"),
                     ("orders", "valid_until", 1, "value set to NULL")}
    message = next(str(i) for i in db.issues if i.column == "placed_at")
    assert "1900-01-01 stands for an unknown date" in message
    assert "2021-03-01 00:00:00 .. 2023-07-30 00:00:00" in message
