"""The bundled nycflights13: R's ``NA`` in text columns is NULL, not a value,
a folder converted by an older rdl is converted again, and processes that
convert at once all succeed."""
from __future__ import annotations

import multiprocessing
import os

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


def _convert_after(barrier, home: str, results) -> None:
    os.environ["RDL_HOME"] = home
    barrier.wait()
    try:
        results.put(str(nycflights13.path()))
    except Exception as error:  # noqa: BLE001 - reported to the test, which fails on it
        results.put(repr(error))


def test_processes_converting_at_once_all_get_the_whole_folder(tmp_path):
    # fits started together on a new machine once crashed when one process
    # moved a temporary file that another was still writing
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(3), context.Queue()
    workers = [context.Process(target=_convert_after, args=(barrier, str(tmp_path), results))
               for _ in range(3)]
    for worker in workers:
        worker.start()
    answers = [results.get(timeout=300) for _ in workers]
    for worker in workers:
        worker.join()
    folder = tmp_path / "nycflights13"
    assert answers == [str(folder)] * 3
    flights = pq.read_table(folder / "flights.parquet", columns=["tailnum"])
    assert flights.num_rows == 336_776
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nycflights13"]  # no temporary left
