"""A sub-folder of a table's parts, as Spark, Dask and Hive write them, is one
table: its rows are those of the same rows in one file, whatever the split; a
sub-folder of separate tables, or of one table-named file, says what to do."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdl

ROW = st.fixed_dictionaries({
    "amount": st.one_of(st.none(), st.integers(0, 500), st.floats(0, 500).map(lambda x: round(x, 2))),
    "code": st.one_of(st.none(), st.integers(0, 99), st.sampled_from(["A7", "B12", "x"])),
    "day": st.one_of(st.none(), st.dates(pd.Timestamp("2020-01-01").date(),
                                         pd.Timestamp("2024-12-31").date())),
    "channel": st.one_of(st.none(), st.sampled_from(["web", "store", "phone"])),
})
WRITERS = {
    "csv": lambda frame, path: frame.to_csv(path, index=False),
    "parquet": lambda frame, path: frame.to_parquet(path, index=False),
    "json": lambda frame, path: path.write_text("\n".join(
        json.dumps({k: v for k, v in row.items() if v is not None})
        for row in frame.astype(object).where(frame.notna(), None).to_dict("records"))),
}


def read_back(folder, name: str) -> rdl.Database:
    return rdl.connect(folder, schema={"tables": {name: {"time_column": None}}})


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(ROW, min_size=2, max_size=25), data=st.data(),
       kind=st.sampled_from(["csv", "json"]))
def test_parts_read_as_the_whole_file_does(tmp_path_factory, rows, data, kind):
    """Split anywhere, each part typed alone (a column empty in one part, whole
    numbers in one and fractions or text in another), the parts read back as
    the one file of all rows."""
    frame = pd.DataFrame(rows)
    frame.insert(0, "order_id", range(1, len(frame) + 1))
    frame["day"] = frame["day"].map(lambda d: None if d is None else str(d))
    cuts = sorted(data.draw(st.sets(st.integers(1, len(frame) - 1), max_size=4)))
    whole, parts = tmp_path_factory.mktemp("whole"), tmp_path_factory.mktemp("parts")
    WRITERS[kind](frame, whole / f"orders.{kind}")
    (parts / "orders").mkdir()
    for i, (start, end) in enumerate(zip([0, *cuts], [*cuts, len(frame)])):
        WRITERS[kind](frame.iloc[start:end], parts / "orders" / f"part-{i:05d}-9f1c-c000.{kind}")
    (parts / "orders" / "_SUCCESS").write_text("")
    (parts / "orders" / ".part-00000-9f1c-c000.crc").write_bytes(b"\x00crc")
    expected, got = read_back(whole, "orders"), read_back(parts, "orders")
    pd.testing.assert_frame_equal(got["orders"].df, expected["orders"].df)
    assert [(i.kind, i.column, i.count) for i in got.issues] == [
        (i.kind, i.column, i.count) for i in expected.issues]


def test_hive_partitions_are_columns(tmp_path):
    """``year=2023/`` folders above the parts become a column, in parquet (no part
    at the top), CSV and JSON alike; Hive's NULL folder is NULL."""
    for kind in ("parquet", "csv", "json"):
        folder = tmp_path / kind / "sales"
        for year, amounts in (("2023", [1.5, 2.5]), ("2024", [4.0]),
                              ("__HIVE_DEFAULT_PARTITION__", [9.0])):
            (folder / f"year={year}").mkdir(parents=True)
            WRITERS[kind](pd.DataFrame({"amount": amounts}), folder / f"year={year}" /
                          f"part-0.{kind}")
        sales = read_back(tmp_path / kind, "sales")["sales"].df.sort_values("amount")
        assert sales["amount"].tolist() == [1.5, 2.5, 4.0, 9.0], kind
        assert sales["year"].tolist()[:3] == [2023, 2023, 2024], kind
        assert pd.isna(sales["year"].iloc[3]), kind


def test_a_column_added_in_later_parts_is_kept_and_reported(tmp_path):
    """A writer's schema that grew: the early parts' rows read NULL in the new
    column, counted, and the column is not lost to the first part's schema."""
    for kind in ("csv", "parquet"):
        folder = tmp_path / kind / "orders"
        folder.mkdir(parents=True)
        old = pd.DataFrame({"order_id": [1, 2], "amount": [3.0, 4.0], "shop": ["a", "b"]})
        new = pd.DataFrame({"order_id": [3], "amount": [5.0], "shop": ["c"],
                            "coupon": ["SPRING"]})
        WRITERS[kind](old, folder / f"part-00000.{kind}")
        WRITERS[kind](new, folder / f"part-00001.{kind}")
        db = read_back(tmp_path / kind, "orders")
        assert db["orders"].df["coupon"].isna().tolist() == [True, True, False], kind
        assert db["orders"].df["coupon"].iloc[2] == "SPRING", kind
    [issue] = [i for i in read_back(tmp_path / "csv", "orders").issues if i.kind == "csv_parts"]
    assert (issue.column, issue.count) == ("coupon", 1)
    assert "1 of 2 parts lack column 'coupon' (first part-00000.csv)" in str(issue)


def test_parts_without_a_header_all_read_as_rows(tmp_path):
    """Spark writes CSV without a header unless told: every part's first line is a row."""
    folder = tmp_path / "orders"
    folder.mkdir()
    (folder / "part-00000.csv").write_text("1,2021-01-01,5.5,web\n2,2021-01-02,7.5,store\n")
    (folder / "part-00001.csv").write_text("3,2021-01-03,8,web\n4,2021-01-04,9,web\n")
    orders = read_back(tmp_path, "orders")["orders"].df
    assert orders["column_1"].tolist() == [1, 2, 3, 4]
    assert orders["column_3"].tolist() == [5.5, 7.5, 8.0, 9.0]


def test_a_split_table_moved_into_one_folder_is_one_table(tmp_path):
    """What the report on ``orders_2023.csv`` beside ``orders_2024.csv`` advises works."""
    (tmp_path / "orders").mkdir()
    pd.DataFrame({"order_id": [1, 2], "amount": [1.0, 2.0]}).to_csv(
        tmp_path / "orders" / "orders_2023.csv", index=False)
    pd.DataFrame({"order_id": [3], "amount": [3.0]}).to_csv(
        tmp_path / "orders" / "orders_2024.csv", index=False)
    db = read_back(tmp_path, "orders")
    assert db["orders"].df["order_id"].tolist() == [1, 2, 3]
    assert not [i for i in db.issues if i.kind == "split_table"]


@pytest.mark.parametrize("files, why", [
    ({"customers.csv": "customer_id,name,city\n1,Ann,Oslo\n",
      "orders.csv": "order_id,amount,day\n1,2.0,2021-01-01\n"},
     "files with different columns (customers.csv: customer_id, name, city; orders.csv: "
     "order_id, amount, day) are not the parts of one table: put each table's file beside the "
     "others, or each table's parts in a folder of its own"),
    ({"customers.csv": "customer_id,name\n1,Ann\n"},
     "a folder holding one file, customers.csv: rdl reads the folder's own files, and a "
     "sub-folder as the parts of one table; move customers.csv beside the other files to "
     "read it as a table of its own"),
    ({"part-0.csv": "a\n1\n", "part-1.json": '{"a": 2}\n'},
     "a folder of CSV and JSON files: the parts of one table share one format"),
    ({"readme.md": "notes"}, "a folder without parquet, CSV or JSON files (the parts of a table)"),
])
def test_a_sub_folder_that_is_no_table_says_why(tmp_path, files, why):
    pd.DataFrame({"id": [1, 2]}).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "crm").mkdir()
    for name, text in files.items():
        (tmp_path / "crm" / name).write_text(text)
    db = rdl.connect(tmp_path)
    assert list(db.tables) == ["t"]
    [issue] = [i for i in db.issues if i.kind == "ignored_file"]
    assert (issue.table, issue.message) == ("crm", why)


@pytest.mark.parametrize("names", [
    ["part-00000-1b2f5c3e-77aa-4c1e-9d0b-2f3a4b5c6d7e-c000.csv"],  # Spark's coalesce(1)
    ["0.part", "1.part"],  # Dask's to_csv into a folder
    ["data_0.csv.gz", "data_1.csv.gz"],
])
def test_parts_named_by_their_writers_are_the_folders_table(tmp_path, names):
    (tmp_path / "orders").mkdir()
    for i, name in enumerate(names):
        pd.DataFrame({"order_id": [2 * i + 1, 2 * i + 2], "amount": [2.5, 3.5]}).to_csv(
            tmp_path / "orders" / name, index=False)
    orders = read_back(tmp_path, "orders")["orders"].df
    assert orders["order_id"].tolist() == list(range(1, 2 * len(names) + 1))
