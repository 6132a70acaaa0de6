"""``implied_tables``: an event log's users and items as tables of their own, one row per
distinct key value, first seen at the earliest row naming it (checked against pandas)."""
from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdl
from rdl.db.issues import SchemaError
from rdl.graph import build_graph
from rdl.tasks import Task

DAY = pd.Timedelta(days=1)
START = pd.Timestamp("2024-01-01")
IMPLIED = {"tables": {"events": {"primary_key": "event_id"}},
           "implied_tables": {"users": "events.user_id"}}


def _log(folder, users: list[int | None], days: list[int]):
    """One events file: event i by user ``users[i]`` (None: nobody) on day ``days[i]``."""
    folder.mkdir(exist_ok=True)
    pd.DataFrame({"event_id": range(len(users)), "user_id": pd.array(users, dtype="Int64"),
                  "ts": [START + d * DAY for d in days],
                  "amount": [float(i) for i in range(len(users))]}
                 ).to_parquet(folder / "events.parquet")
    return folder


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.integers(0, 6)), st.integers(0, 40)),
                min_size=1, max_size=30),
       st.one_of(st.none(), st.integers(0, 40)))
def test_one_row_per_value_first_seen_at_its_earliest_event(tmp_path_factory, events, upto):
    folder = _log(tmp_path_factory.mktemp("log"), [u for u, _ in events], [d for _, d in events])
    cut = None if upto is None else START + upto * DAY
    db = rdl.connect(folder, schema=IMPLIED, upto=cut)
    frame = pd.DataFrame(events, columns=["user_id", "day"]).dropna()
    if upto is not None:
        frame = frame[frame.day <= upto]
    want = frame.groupby("user_id").day.min().sort_index()
    users = db["users"]
    assert (users.primary_key, users.time_column) == ("user_id", "first_seen")
    assert users.df["user_id"].tolist() == want.index.tolist()
    assert users.df["first_seen"].tolist() == [START + d * DAY for d in want]
    assert db["events"].foreign_keys == {"user_id": "users"}
    assert "user_id" not in db["events"].stypes  # a key, not a number to learn from
    linked = db["events"].df.dropna(subset=["user_id"])
    assert len(linked) == len(frame)  # every event named a user row: nothing dangles
    if upto is not None:  # reading up to t holds what reading all and cutting at t holds
        whole = rdl.connect(folder, schema=IMPLIED).upto(cut)["users"].df
        pd.testing.assert_frame_equal(users.df, whole, check_dtype=False)  # all-NULL: float


def test_several_columns_feed_one_table_and_a_static_one_makes_it_static(tmp_path):
    folder = _log(tmp_path / "log", [1, 2, 1], [5, 3, 1])
    pd.DataFrame({"rating_id": [0, 1], "user_id": [2, 9], "ts": [START, START + 9 * DAY]}
                 ).to_parquet(folder / "ratings.parquet")
    schema = {"tables": {"events": {"primary_key": "event_id"},
                         "ratings": {"primary_key": "rating_id"}},
              "implied_tables": {"users": ["events.user_id", "ratings.user_id"]}}
    users = rdl.connect(folder, schema=schema)["users"].df
    assert users["user_id"].tolist() == [1, 2, 9]
    assert users["first_seen"].tolist() == [START + DAY, START, START + 9 * DAY]
    schema["tables"]["ratings"]["time_column"] = None  # ratings seen at every time
    db = rdl.connect(folder, schema=schema)
    assert db["users"].time_column is None
    assert db["users"].df["user_id"].tolist() == [1, 2, 9]


def test_text_ids_beside_numbers_are_compared_as_text_and_reported(tmp_path):
    folder = _log(tmp_path / "log", [1, 2], [0, 1])
    pd.DataFrame({"visit_id": [0, 1], "user_id": ["2", "7"], "ts": [START, START]}
                 ).to_parquet(folder / "visits.parquet")
    schema = {"tables": {"events": {"primary_key": "event_id"},
                         "visits": {"primary_key": "visit_id"}},
              "implied_tables": {"users": ["events.user_id", "visits.user_id"]}}
    db = rdl.connect(folder, schema=schema)
    assert db["users"].df["user_id"].tolist() == ["1", "2", "7"]
    assert [i.kind for i in db.issues if i.table == "users"] == ["mixed_key_types"]
    assert db["events"].df["user_id"].notna().all() and db["visits"].df["user_id"].notna().all()


def test_whole_floats_beside_integers_are_one_kind_of_id(tmp_path):
    """A CSV column of ids with a gap reads as floats (2.0): the same users as 2."""
    folder = tmp_path / "log"
    folder.mkdir()
    pd.DataFrame({"event_id": [0, 1, 2], "user_id": [1.0, None, 2.0], "ts": [START] * 3}
                 ).to_parquet(folder / "events.parquet")
    pd.DataFrame({"visit_id": [0, 1], "user_id": [2, 7], "ts": [START, START]}
                 ).to_parquet(folder / "visits.parquet")
    schema = {"tables": {"events": {"primary_key": "event_id"},
                         "visits": {"primary_key": "visit_id"}},
              "implied_tables": {"users": ["events.user_id", "visits.user_id"]}}
    db = rdl.connect(folder, schema=schema)
    assert db["users"].df["user_id"].tolist() == [1, 2, 7]
    assert not [i for i in db.issues if i.table == "users"]
    assert db["visits"].df["user_id"].notna().all()


def test_an_entity_task_asks_only_about_users_seen_by_its_time(tmp_path):
    """Churn of an implied table: at each time, the users with an event in the 10 days
    before, labelled by whether they have none in the 10 after (pandas by hand)."""
    users = [1, 2, 3, 1, 2, 4, 1, 5, 4, 3]
    days = [0, 2, 4, 12, 15, 21, 25, 33, 35, 38]
    db = rdl.connect(_log(tmp_path / "log", users, days), schema=IMPLIED)
    task = Task(query="PREDICT COUNT(events.*, 0, 10, days) = 0 FOR EACH users.user_id "
                      "WHERE COUNT(events.*, -10, 0, days) > 0",
                val_timestamp=START + 30 * DAY, test_timestamp=START + 40 * DAY)
    times = [START + d * DAY for d in (10, 20, 30)]
    got = task.make_table(db, times)
    log = pd.DataFrame({"user_id": users, "ts": [START + d * DAY for d in days]})
    want = []
    for t in times:
        before = set(log[(log.ts > t - 10 * DAY) & (log.ts <= t)].user_id)
        after = set(log[(log.ts > t) & (log.ts <= t + 10 * DAY)].user_id)
        want += [(u, t, int(u not in after)) for u in sorted(before)]
    assert list(zip(got["user_id"], got["timestamp"], got["label"])) == want
    graph = build_graph(db)  # a node per user, an edge from each of its events
    assert graph["users"].num_nodes == 5
    src, dst = graph["events", "f2p_user_id", "users"].edge_index
    assert sorted(zip(src.tolist(), dst.tolist())) == [(i, u - 1) for i, u in enumerate(users)]


@pytest.mark.parametrize("implied, tables, message", [
    ({"events": "events.user_id"}, {}, "already has a table of that name"),
    ({"users": "user_id"}, {}, "must be written table.column"),
    ({"users": "clicks.user_id"}, {}, "names table 'clicks', which is not read"),
    ({"users": "events.uid"}, {}, "has no column 'uid'"),
    ({"users": "events.user_id"}, {"events": {"foreign_keys": {"user_id": "events"}}},
     "also declared as a foreign key"),
    ({"users": "events.user_id", "people": "events.user_id"}, {}, "already feeds"),
    ({"users": "events.user_id"}, {"users": {"primary_key": "user_id"}},
     "takes no settings under tables"),
])
def test_a_wrong_implied_table_is_refused_with_its_name(tmp_path, implied, tables, message):
    folder = _log(tmp_path / "log", [1], [0])
    schema = {"tables": {"events": {"primary_key": "event_id"}, **tables},
              "implied_tables": implied}
    with pytest.raises(SchemaError, match=message):
        rdl.connect(folder, schema=schema)
