"""Database: save/load round trip, cutting at a timestamp, summary shape."""
from __future__ import annotations

import pandas as pd
import pandas.testing as pdt
import pytest

import rdl
from rdl.db import Database, SourceError


def test_save_load_roundtrip_keeps_rows_metadata_and_issues(flights_db, tmp_path):
    flights_db.save(tmp_path / "snap")
    loaded = rdl.connect(tmp_path / "snap")
    assert loaded.summary() == flights_db.summary()
    for table in flights_db:
        pdt.assert_frame_equal(loaded[table.name].df, table.df)


def test_load_rejects_a_plain_folder(tmp_path):
    with pytest.raises(SourceError, match="not a saved rdl database"):
        Database.load(tmp_path)


def test_upto_keeps_only_rows_at_or_before_the_cut(flights_db):
    cut = pd.Timestamp("2013-03-01")
    past = flights_db.upto(cut)
    assert (past["flights"].df["time_hour"] <= cut).all()
    assert len(past["flights"]) == int((flights_db["flights"].df["time_hour"] <= cut).sum())
    assert len(past["planes"]) == len(flights_db["planes"])  # static tables are whole
    assert past.max_time <= cut
    assert len(flights_db["flights"]) == 336_776  # the original is untouched


def test_summary_shape(flights_db):
    summary = flights_db.summary()
    assert set(summary) == {"tables", "issues"}
    for info in summary["tables"].values():
        assert set(info) == {"rows", "primary_key", "time_column", "foreign_keys", "columns"}
    assert summary["tables"]["airlines"] == {
        "rows": 16, "primary_key": "carrier", "time_column": None,
        "foreign_keys": {}, "columns": {"name": "categorical"},
    }


def test_unknown_table_lists_the_valid_ones(flights_db):
    with pytest.raises(KeyError, match=r"No table 'flight'.*'flights'"):
        flights_db["flight"]
