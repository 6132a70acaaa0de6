"""The bundled nycflights13: R's ``NA`` in text columns is NULL, not a value,
and a folder converted by an older rdl is converted again."""
from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq

from rdl.datasets import nycflights13

NA_TAILNUMS = 2512  # flights whose plane the data does not know


def test_na_tailnums_are_null_keys_not_dangling_ones(flights_db):
    raw = pq.read_table(nycflights13.path() / "flights.parquet", columns=["tailnum"]).to_pandas()
    assert not (raw["tailnum"] == "NA").any()
    assert int(raw["tailnum"].isna().sum()) == NA_TAILNUMS
    flights = flights_db["flights"].df
    assert len(flights) == 336_776 and not (flights["tailnum"] == "NA").any()
    assert flights["tailnum"][raw["tailnum"].isna()].isna().all()
    dangling = {i.column: i.count for i in flights_db.issues
                if i.kind == "dangling_foreign_key" and i.table == "flights"}
    assert dangling["tailnum"] == 52_606 - NA_TAILNUMS  # "NA" is no longer a missing plane


def test_a_folder_converted_before_is_converted_again(tmp_path, monkeypatch):
    monkeypatch.setenv("RDL_HOME", str(tmp_path))
    old = tmp_path / "nycflights13"
    old.mkdir()
    for table in nycflights13.TABLES:  # an old conversion: every file there, "NA" kept
        pd.DataFrame({"tailnum": ["N1", "NA"]}).to_parquet(old / f"{table}.parquet")
    folder = nycflights13.path()
    assert folder == old
    flights = pd.read_parquet(folder / "flights.parquet", columns=["tailnum"])
    assert len(flights) == 336_776 and int(flights["tailnum"].isna().sum()) == NA_TAILNUMS
    assert nycflights13.path() == folder  # converted once: the marker says it is current
