"""Baseline windows chosen from the data's time step: yearly data gets windows of
1, 2 and 5 years that hold exactly those years' rows, with rows placed at the
start or the end of their year."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import rdl
from rdl.baseline import DEFAULT_WINDOWS, compute_features, data_windows, run_baseline
from rdl.baseline.windows import MONTHLY_WINDOWS, YEARLY_WINDOWS, time_step
from rdl.tasks import Task

QUERY = "PREDICT SUM(seasons.hits, 0, 12, months) FOR EACH players.pid"
TASK = {"query": QUERY, "val_timestamp": "2009-01-01", "test_timestamp": "2010-01-01"}


@pytest.fixture(scope="module")
def yearly_folder(tmp_path_factory) -> str:
    """40 players (static, with a multicategorical ``positions`` column), each
    with a season in most years from 1990 to 2011; p0 plays every year."""
    rng = np.random.default_rng(0)
    folder = tmp_path_factory.mktemp("yearly")
    pd.DataFrame({
        "pid": [f"p{i}" for i in range(40)],
        "positions": ["|".join(rng.choice(["P", "C", "1B", "2B", "SS", "OF"], rng.integers(1, 4),
                                          replace=False)) for _ in range(40)],
        "height": rng.normal(185, 7, 40),
    }).to_csv(folder / "players.csv", index=False)
    rows = [(f"p{i}", year, float(rng.poisson(20 + i)), float(rng.integers(50, 160)))
            for i in range(40) for year in range(1990, 2012) if i == 0 or rng.random() < 0.8]
    pid, year, hits, games = zip(*rows)
    pd.DataFrame({"sid": range(len(rows)), "pid": pid, "yearID": year, "hits": hits,
                  "games": games}).to_parquet(folder / "seasons.parquet")
    return str(folder)


def schema(at: str = "start", unit: str = "year") -> dict:
    return {"tables": {
        "players": {"primary_key": "pid", "time_column": None},
        "seasons": {"primary_key": "sid", "foreign_keys": {"pid": "players"},
                    "time_column": {"column": "yearID", "unit": unit, "at": at}},
    }}


@pytest.mark.parametrize("at", ["start", "end"])
def test_yearly_data_gets_windows_of_1_2_and_5_years(yearly_folder, at):
    db = rdl.connect(yearly_folder, schema=schema(at))
    windows, note = data_windows(db, "players", hops=2)
    assert windows == YEARLY_WINDOWS
    assert "1, 2 and 5 years" in note and "seasons" in note and "365 days" in note


@pytest.mark.parametrize("at", ["start", "end"])
def test_each_window_holds_exactly_its_years(yearly_folder, at):
    db = rdl.connect(yearly_folder, schema=schema(at))
    labels = pd.DataFrame({"pid": ["p0"] * 3, "timestamp": pd.to_datetime(
        ["2000-01-01", "2001-01-01", "2005-01-01"])})  # after a leap year, a plain one, ...
    feats = compute_features(db, Task(**TASK), labels, threads=1)
    assert feats.windows == YEARLY_WINDOWS and feats.notes[0].startswith("baseline windows")
    for window, years in zip(YEARLY_WINDOWS, (1, 2, 5)):
        assert feats.frame[f"seasons.pid.count_{window:g}d"].tolist() == [years] * 3


def test_monthly_and_finer_data(tmp_path):
    months = pd.date_range("2000-01-01", periods=30, freq="MS")
    folder = tmp_path / "monthly"
    folder.mkdir()
    pd.DataFrame({"pid": ["p0"]}).to_parquet(folder / "players.parquet")
    pd.DataFrame({"sid": range(30), "pid": "p0", "yearID": months.strftime("%Y%m").astype(int)}) \
        .to_parquet(folder / "seasons.parquet")
    for at in ("start", "end"):
        db = rdl.connect(folder, schema=schema(at, unit="month"))
        assert data_windows(db, "players", hops=1)[0] == MONTHLY_WINDOWS
    hourly = pd.Series(pd.date_range("2000-01-01", periods=50, freq="h"))
    assert time_step(hourly) == pd.Timedelta(hours=1)
    assert time_step(pd.Series([pd.Timestamp("2000-01-01")] * 3)) is None


def test_finer_data_keeps_the_default_windows(flights_db):
    windows, note = data_windows(flights_db, "planes", hops=2)
    assert windows == DEFAULT_WINDOWS and "the defaults" in note


def config(folder: str, **baseline) -> dict:
    return {"task": TASK, "data": {"source": folder, "schema": schema("end")},
            "baseline": baseline}


def test_run_baseline_picks_yearly_windows_and_says_so(yearly_folder):
    result = run_baseline(config(yearly_folder), num_threads=1, num_boost_round=20)
    assert result.options["windows"] == list(YEARLY_WINDOWS)
    assert any("1, 2 and 5 years" in note for note in result.notes)
    db = rdl.connect(yearly_folder, schema=schema("end"))
    labels = Task(**TASK).table(db, "train")
    frame = compute_features(db, Task(**TASK), labels, threads=1).frame
    for window in YEARLY_WINDOWS:
        counts = frame[f"seasons.pid.count_{window:g}d"]
        hits = frame[f"seasons.pid.sum_hits_{window:g}d"]
        assert (counts > 0).mean() > 0.5 and hits.notna().mean() > 0.5
    # the multicategorical column is left out of the features, and does no harm
    assert db["players"].stypes["positions"] == "multicategorical"
    assert not any("positions" in name for name in result.feature_names)


def test_explicit_windows_win(yearly_folder):
    result = run_baseline(config(yearly_folder, windows=[30, 400]), num_threads=1,
                          num_boost_round=5)
    assert result.options["windows"] == [30.0, 400.0]
    assert not any("baseline windows" in note for note in result.notes)
    assert "seasons.pid.count_400d" in result.feature_names
