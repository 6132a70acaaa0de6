"""Time columns in years, months and days, placed at the start or the end of
their period (``at:`` in the schema file)."""
from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdl
from rdl.db import SchemaError
from rdl.db.schema import TimeColumn
from rdl.db.times import parse_times
from rdl.tasks import Task


@pytest.mark.parametrize("unit, values, expected", [
    ("year", [1999, 2000], ["1999-12-31 23:59:59", "2000-12-31 23:59:59"]),
    ("month", [199902, 200002, 199912], ["1999-02-28 23:59:59", "2000-02-29 23:59:59",
                                         "1999-12-31 23:59:59"]),
    ("day", [19991231, 20000228], ["1999-12-31 23:59:59", "2000-02-28 23:59:59"]),
])
def test_at_end_is_the_next_period_start_minus_one_second(unit, values, expected):
    parsed, bad = parse_times(pd.Series(values + [None]), TimeColumn("t", unit, at="end"))
    assert bad == 0
    assert parsed.tolist()[:-1] == [pd.Timestamp(e) for e in expected]
    assert pd.isna(parsed.iloc[-1])


def yearly_folder(tmp_path) -> str:
    """Players (static) and their seasons, one row per player and year: p1
    plays only in 1999, p2 every year from 1995 to 2003."""
    folder = tmp_path / "yearly"
    folder.mkdir()
    pd.DataFrame({"pid": ["p1", "p2"], "name": ["Ann", "Bob"]}).to_parquet(folder / "players.parquet")
    years = [1999] + list(range(1995, 2004))
    pd.DataFrame({"sid": range(len(years)), "pid": ["p1"] + ["p2"] * 9, "yearID": years,
                  "hits": [10] + [20] * 9}).to_parquet(folder / "seasons.parquet")
    return str(folder)


def yearly_schema(at: str | None) -> dict:
    time = {"column": "yearID", "unit": "year"} | ({"at": at} if at else {})
    return {"tables": {
        "players": {"primary_key": "pid", "time_column": None},
        "seasons": {"primary_key": "sid", "foreign_keys": {"pid": "players"}, "time_column": time},
    }}


def task(query: str) -> Task:
    return Task(query=query, val_timestamp="2001-01-01", test_timestamp="2002-01-01")


PLAYED_BEFORE = ("PREDICT COUNT(seasons.*, 0, 12, months) FOR EACH players.pid "
                 "WHERE COUNT(seasons.*, -120, 0, months) > 0")
NEXT_YEAR = "PREDICT COUNT(seasons.*, 0, 12, months) FOR EACH players.pid"
MID_1999, START_2000 = pd.Timestamp("1999-07-01"), pd.Timestamp("2000-01-01")


def labels(db, query: str) -> dict:
    table = task(query).make_table(db, [MID_1999, START_2000])
    return {(pid, str(t.date())): label
            for pid, t, label in zip(table["pid"], table["timestamp"], table["label"])}


def test_a_year_at_its_end_is_visible_only_once_the_year_is_over(tmp_path):
    db = rdl.connect(yearly_folder(tmp_path), schema=yearly_schema("end"))
    assert db["seasons"].df["yearID"].iloc[0] == pd.Timestamp("1999-12-31 23:59:59")
    # p1's 1999 season is not in the past at mid-1999, and is at the start of 2000
    played = labels(db, PLAYED_BEFORE)
    assert ("p1", "1999-07-01") not in played and ("p1", "2000-01-01") in played
    # ... it is still to come at mid-1999 (a label), and over by 2000
    assert labels(db, NEXT_YEAR)[("p1", "1999-07-01")] == 1
    assert labels(db, NEXT_YEAR)[("p1", "2000-01-01")] == 0
    # the next year's label at 2000-01-01 counts the season of 2000, not of 2001
    assert labels(db, NEXT_YEAR)[("p2", "2000-01-01")] == 1


@pytest.mark.parametrize("at", [None, "start"])
def test_a_year_at_its_start_is_visible_from_1_january(tmp_path, at):
    db = rdl.connect(yearly_folder(tmp_path), schema=yearly_schema(at))
    assert db["seasons"].df["yearID"].iloc[0] == pd.Timestamp("1999-01-01")
    played = labels(db, PLAYED_BEFORE)
    assert ("p1", "1999-07-01") in played and ("p1", "2000-01-01") in played
    assert labels(db, NEXT_YEAR)[("p1", "1999-07-01")] == 0


@pytest.mark.parametrize("upto, last_year", [
    (MID_1999, 1998), (pd.Timestamp("1999-12-31 23:59:58"), 1998),
    (pd.Timestamp("1999-12-31 23:59:59"), 1999), (START_2000, 1999),
])
def test_reading_up_to_a_time_keeps_the_years_over_by_then(tmp_path, upto, last_year):
    folder, schema = yearly_folder(tmp_path), yearly_schema("end")
    cut = rdl.connect(folder, schema=schema, upto=upto)["seasons"].df
    pd.testing.assert_frame_equal(cut, rdl.connect(folder, schema=schema).upto(upto)["seasons"].df)
    assert cut["yearID"].dt.year.max() == last_year


@pytest.mark.parametrize("time_column, message", [
    ({"column": "yearID", "unit": "year", "at": "middle"},
     r"table 'seasons': time_column 'yearID' has at: 'middle'; use 'start'"),
    ({"column": "yearID", "unit": "s", "at": "end"},
     r"table 'seasons': time_column 'yearID' has at: end, which needs unit year \| month \| day"),
    ({"column": "yearID", "at": "end"}, r"'yearID' has at: end, which needs unit"),
])
def test_bad_placements_name_table_and_column(tmp_path, time_column, message):
    schema = yearly_schema(None)
    schema["tables"]["seasons"]["time_column"] = time_column
    with pytest.raises(SchemaError, match=message):
        rdl.connect(yearly_folder(tmp_path), schema=schema)


@pytest.mark.parametrize("timed", ["stats", "teams", "both"])
def test_a_key_column_that_is_a_time_column_on_either_side_still_links(tmp_path, timed):
    """(yearID, teamID) names a team-season whether yearID is the time column of the
    statistics, of the teams, or of both; each side is matched as the time it becomes."""
    pd.DataFrame({"yearID": [1999, 1999, 2000], "teamID": ["ATL", "SFN", "ATL"],
                  "W": [90, 80, 85]}).to_parquet(tmp_path / "teams.parquet")
    pd.DataFrame({"pid": ["p1", "p2", "p1"], "yearID": [1999, 1999, 2000],
                  "teamID": ["SFN", "ATL", "ATL"]}).to_parquet(tmp_path / "stats.parquet")
    season = {"column": "yearID", "unit": "year", "at": "end"}
    tables = {"teams": {"primary_key": ["yearID", "teamID"]},
              "stats": {"foreign_keys": {"teams": {"columns": ["yearID", "teamID"],
                                                   "table": "teams"}}}}
    for name in ("stats", "teams") if timed == "both" else (timed,):
        tables[name]["time_column"] = season
    db = rdl.connect(str(tmp_path), schema={"tables": tables})
    assert not db.issues
    teams = db["teams"].df.set_index("_pk")
    named = teams.loc[db["stats"].df["yearID+teamID"], "W"].tolist()
    assert named == [80, 90, 85]


@pytest.mark.parametrize("unit, at, expected", [
    ("days", "start", ["2020-01-01", "2020-01-02", "2020-03-01"]),
    ("days", "end", ["2020-01-01 23:59:59", "2020-01-02 23:59:59", "2020-03-01 23:59:59"]),
    ("weeks", "start", ["2020-01-07", "2020-01-14", "2021-02-09"]),
    ("weeks", "end", ["2020-01-13 23:59:59", "2020-01-20 23:59:59", "2021-02-15 23:59:59"]),
])
def test_day_and_week_numbers_count_from_their_origin(unit, at, expected):
    """An export's DAY 1, 2, ... (or WEEK_NO) is origin + that many days (weeks)."""
    spec = TimeColumn("DAY", unit, at=at, origin=pd.Timestamp("2019-12-31"))
    values = [1, 2, 61] if unit == "days" else [1, 2, 58]
    parsed, bad = parse_times(pd.Series(values + [None]), spec)
    assert bad == 0 and pd.isna(parsed.iloc[-1])
    assert parsed.tolist()[:-1] == [pd.Timestamp(e) for e in expected]


@pytest.mark.parametrize("time_column, match", [
    ({"column": "DAY", "unit": "year", "origin": "2020-01-01"},
     "has an origin, which only numbers counted from it have"),
    ({"column": "DAY", "unit": "days", "origin": "the first day"}, "which is no date"),
    ({"column": "DAY", "unit": "s", "at": "end"}, "at: end, which needs unit year | month | day "
                                                  "| days | weeks"),
])
def test_a_bad_origin_or_placement_names_the_table_and_column(tmp_path, time_column, match):
    pd.DataFrame({"DAY": [1, 2]}).to_parquet(tmp_path / "sales.parquet")
    with pytest.raises(SchemaError, match=f"sales.*{match}"):
        rdl.connect(str(tmp_path), schema={"tables": {"sales": {"time_column": time_column}}})


@settings(max_examples=25, deadline=None)
@given(day=st.integers(-3, 40), seconds=st.integers(0, 86_399),
       at=st.sampled_from(["start", "end"]), unit=st.sampled_from(["days", "weeks", "s"]))
def test_rows_counted_from_an_origin_read_up_to_a_time_are_those_cut_after_reading(
        tmp_path_factory, day, seconds, at, unit):
    """The source's filter on the stored numbers (a pushdown) keeps what the exact cut keeps."""
    folder = tmp_path_factory.mktemp("counted")
    numbers = [0, 1, 2, 3, 5, 8, 13, 21, 34] if unit != "s" else [0, 86_400, 90_000, 10**6]
    pd.DataFrame({"sale_id": range(len(numbers)), "DAY": numbers}).to_parquet(
        folder / "sales.parquet")
    time = {"column": "DAY", "unit": unit, "origin": "2019-12-31"} | (
        {"at": at} if unit != "s" else {})
    schema = {"tables": {"sales": {"primary_key": "sale_id", "time_column": time}}}
    upto = pd.Timestamp("2019-12-31") + pd.Timedelta(days=day, seconds=seconds)
    pushed = rdl.connect(str(folder), schema=schema, upto=upto)
    pd.testing.assert_frame_equal(pushed["sales"].df,
                                  rdl.connect(str(folder), schema=schema).upto(upto)["sales"].df)
