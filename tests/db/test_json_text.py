"""JSON objects stored as text (MySQL/MariaDB ``JSON``, SQLite, CSV) read as the records
they are: a column per field, as PostgreSQL's ``jsonb`` and DuckDB's ``STRUCT`` already were."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdl
from rdl.db.json_text import MAX_FIELDS


def _users(props: list) -> pd.DataFrame:
    return pd.DataFrame({"user_id": range(len(props)),
                         "props": [None if p is None else json.dumps(p) for p in props]})


@settings(max_examples=25, deadline=None)
@given(st.lists(st.one_of(st.none(), st.fixed_dictionaries(
    {"plan": st.sampled_from(["free", "pro"]), "age": st.integers(18, 90)},
    optional={"address": st.fixed_dictionaries({"city": st.sampled_from(["Lyon", "Oslo"])}),
              "tags": st.lists(st.sampled_from(["a", "b", "c"]), max_size=3)})),
    min_size=1, max_size=30).filter(lambda props: any(props)))
def test_each_field_of_json_text_is_a_column_of_its_values(props):
    """Brute force: the value of every row's field, or NULL where the row lacks it."""
    with tempfile.TemporaryDirectory() as folder:
        _users(props).to_csv(Path(folder) / "users.csv", index=False)
        db = rdl.connect(folder, schema={"tables": {"users": {"primary_key": "user_id"}}})
    users = db["users"].df.set_index("user_id").sort_index()
    assert "props" not in users
    assert not [i for i in db.issues if i.kind == "json_text"]
    for field in ("plan", "age"):
        expected = [None if p is None else p[field] for p in props]
        assert [None if pd.isna(v) else v for v in users[f"props.{field}"]] == expected
    if any(p and "address" in p for p in props):
        assert [None if pd.isna(v) else v for v in users["props.address.city"]] == [
            p["address"]["city"] if p and "address" in p else None for p in props]
    if any(p and p.get("tags") for p in props):
        assert db["users"].stypes["props.tags"] == "multicategorical"


@pytest.mark.server
def test_mariadb_json_columns_are_records(mariadb_db):
    url = mariadb_db({}, """
        CREATE TABLE users (id INT PRIMARY KEY, created DATETIME, props JSON);
        INSERT INTO users VALUES (1, '2024-01-01', '{"plan": "pro", "age": 21}'),
            (2, '2024-01-02', '{"plan": "free", "age": 22}'), (3, '2024-01-03', NULL)""")
    users = rdl.connect(url)["users"]
    assert users.stypes == {"created": "timestamp", "props.plan": "categorical",
                            "props.age": "numerical"}
    assert users.df["props.plan"].tolist()[:2] == ["pro", "free"]


def test_json_a_model_cannot_split_stays_text_and_says_why(tmp_path):
    wide = {f"k{i}": i for i in range(MAX_FIELDS + 1)}
    columns = {
        "mixed": [{"age": 21}, {"age": "twenty"}],            # one field, two JSON types
        "nested": [{"items": [{"sku": 1}]}, {"items": []}],   # arrays of objects
        "wide": [wide, wide],                                 # an event's free-form properties
    }
    frame = pd.DataFrame({"id": [1, 2], **{k: [json.dumps(v) for v in values]
                                           for k, values in columns.items()}})
    frame.to_csv(tmp_path / "events.csv", index=False)
    db = rdl.connect(tmp_path)
    events = db["events"].df
    assert events["mixed"].tolist() == frame["mixed"].tolist()
    why = {i.column: i.message for i in db.issues if i.kind == "json_text"}
    assert why == {"mixed": "JSON whose fields hold values of different types",
                   "nested": "JSON arrays that hold objects or arrays",
                   "wide": f"JSON objects with {MAX_FIELDS + 1} fields in all, more than "
                           f"{MAX_FIELDS} columns a model could use"}


def test_a_value_that_is_no_json_is_counted(tmp_path):
    texts = [json.dumps({"plan": "pro"})] * 250 + ["{plan: pro"]
    pd.DataFrame({"id": range(251), "props": texts}).to_csv(tmp_path / "users.csv", index=False)
    db = rdl.connect(tmp_path)
    assert db["users"].df["props.plan"].isna().tolist() == [False] * 250 + [True]
    [issue] = [i for i in db.issues if i.kind == "json_text"]
    assert (issue.column, issue.count, issue.action) == ("props", 1, "value set to NULL")
