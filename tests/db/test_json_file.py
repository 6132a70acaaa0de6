"""JSON files in a folder are tables: one object per line or an array of objects,
gzipped or not, nested objects split into a column per field, times recognised; a
file that is no table says why, naming it."""
from __future__ import annotations

import gzip
import json

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdl
from rdl.db import SourceError

RECORD = st.fixed_dictionaries({
    "count": st.integers(-10**6, 10**6),
    "score": st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False).map(lambda x: round(x, 3))),
    # Text that is no number or date (those are read as such, as from CSV).
    "name": st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]),
                    max_size=12).map(lambda text: f"user {text}"),
    "props": st.fixed_dictionaries({"device": st.sampled_from(["ios", "web", "android"]),
                                    "age": st.integers(0, 99)}),
})


def read_back(folder, name: str) -> pd.DataFrame:
    db = rdl.connect(folder, schema={"tables": {name: {"time_column": None}}})
    return db[name].df


@settings(max_examples=20, deadline=None)
@given(records=st.lists(RECORD, min_size=3, max_size=30), lines=st.booleans(),
       gzipped=st.booleans())
def test_records_read_back_as_written(tmp_path_factory, records, lines, gzipped):
    folder = tmp_path_factory.mktemp("json")
    text = "\n".join(json.dumps(r) for r in records) if lines else json.dumps(records)
    name = f"events.{'jsonl' if lines else 'json'}{'.gz' if gzipped else ''}"
    (folder / name).write_bytes(gzip.compress(text.encode()) if gzipped else text.encode())
    df = read_back(folder, "events")
    assert df["count"].tolist() == [r["count"] for r in records]
    scores = [r["score"] for r in records]
    if any(score is not None for score in scores):  # a column of NULLs only is dropped
        assert [None if pd.isna(v) else v for v in df["score"]] == scores
    else:
        assert "score" not in df
    assert df["name"].tolist() == [r["name"] for r in records]
    assert df["props.device"].tolist() == [r["props"]["device"] for r in records]
    assert df["props.age"].tolist() == [r["props"]["age"] for r in records]


def test_an_event_log_becomes_a_linked_timed_table(tmp_path):
    users = [{"user_id": i, "plan": "pro" if i % 2 else "free"} for i in range(5)]
    (tmp_path / "users.json").write_text(json.dumps(users))
    events = [{"event_id": e, "user_id": e % 5, "ts": f"2024-03-{1 + e:02d}T10:00:00Z",
               "tags": ["a", "b"][: 1 + e % 2]} for e in range(12)]
    (tmp_path / "events.ndjson").write_text("\n".join(json.dumps(e) for e in events))
    schema = {"tables": {"users": {"primary_key": "user_id"},
                         "events": {"primary_key": "event_id", "time_column": "ts",
                                    "foreign_keys": {"user_id": "users"}}}}
    db = rdl.connect(tmp_path, schema=schema)
    table = db["events"]
    assert table.time_column == "ts" and table.min_time == pd.Timestamp("2024-03-01 10:00")
    assert table.stypes["tags"] == "multicategorical"
    assert table.foreign_keys == {"user_id": "users"}
    cut = rdl.connect(tmp_path, schema=schema, upto="2024-03-05 10:00")
    assert cut["events"].df["event_id"].tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("late", ["X7", "12.5", None, "n.v."])
def test_a_late_value_of_another_type_reads_as_the_csv_of_the_same_values(tmp_path, late):
    """Types come from the whole file (a sample of the first rows would take the field
    for a number and fail the read at the text far below); a field whose values mix
    types is read as its text, as the same values in a CSV file are."""
    rows = [{"id": i, "value": i} for i in range(30000)] + [{"id": 30000, "value": late}]
    (tmp_path / "json").mkdir()
    (tmp_path / "json" / "codes.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "csv").mkdir()
    pd.DataFrame(rows).to_csv(tmp_path / "csv" / "codes.csv", index=False)
    from_json = read_back(tmp_path / "json", "codes")
    from_csv = read_back(tmp_path / "csv", "codes")
    assert len(from_json) == 30001
    pd.testing.assert_series_equal(from_json["value"], from_csv["value"], check_dtype=False)


@pytest.mark.parametrize("text, message", [
    ('{"id": 1}\n{"id": 2,, }\n', "Could not read JSON .*broken.jsonl: .*Malformed JSON"),
    ("[1, 2, 3]", "its values are not objects"),
])
def test_a_file_that_is_no_table_is_named(tmp_path, text, message):
    (tmp_path / "broken.jsonl").write_text(text)
    with pytest.raises(SourceError, match=message):
        rdl.connect(tmp_path)
