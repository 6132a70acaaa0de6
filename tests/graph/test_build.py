"""build_graph: nodes, edges, times and features match the database exactly."""
from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
import torch_frame
from torch_frame.data.stats import StatType, compute_col_stats

import rdl
from rdl.db import Database, Table
from rdl.graph import HashTextEmbedder, build_graph
from rdl.graph.materialize import column_stats, feature_frame


@pytest.fixture(scope="module")
def flights_graph(flights_db):
    return build_graph(flights_db)


def test_one_node_per_row_and_times_in_seconds(flights_db, flights_graph):
    for table in flights_db:
        assert flights_graph[table.name].num_nodes == len(table)
    expected = flights_db["flights"].df["time_hour"].astype("int64") // 10**9
    assert torch.equal(flights_graph["flights"].time, torch.from_numpy(expected.to_numpy()))
    assert "time" not in flights_graph["planes"]


def test_every_foreign_key_is_an_edge_both_ways(flights_db, flights_graph):
    keys = flights_graph.key_index
    for table in flights_db:
        for column, parent in table.foreign_keys.items():
            rel = "f2p_" + column.replace("+", "_")
            src, dst = flights_graph[table.name, rel, parent].edge_index
            references = table.df[column]
            assert src.numel() == int(references.notna().sum())
            # each edge joins a child row to the parent row with that key value
            np.testing.assert_array_equal(
                keys[parent][dst.numpy()].to_numpy(), references.iloc[src.numpy()].to_numpy()
            )
            back = flights_graph[parent, "rev_" + rel, table.name].edge_index
            assert torch.equal(back, torch.stack([dst, src]))


def test_key_index_maps_nodes_back_to_user_ids(flights_db, flights_graph):
    planes = flights_graph.key_index["planes"]
    assert planes.get_loc("N14228") == flights_db["planes"].df.index[
        flights_db["planes"].df["tailnum"] == "N14228"][0]


def test_features_cover_every_stype_column(flights_db, flights_graph):
    for table in flights_db:
        tf = flights_graph[table.name].tf
        assert tf.num_rows == len(table)
        assert sorted(c for cols in tf.col_names_dict.values() for c in cols) == sorted(table.stypes)


@pytest.mark.parametrize("table", ["flights", "weather", "planes"])
def test_vectorised_stats_equal_pytorch_frames(flights_db, table):
    t = flights_db[table]
    frame = feature_frame(t.df.head(20_000), t.stypes)  # PyTorch Frame's own path is slow
    ours = column_stats(frame, t.stypes)
    for col, stype in t.stypes.items():
        reference = compute_col_stats(frame[col], torch_frame.stype(stype))
        assert ours[col].keys() == reference.keys()
        for stat, value in reference.items():
            if stat in (StatType.MEAN, StatType.STD, StatType.QUANTILES):
                np.testing.assert_allclose(ours[col][stat], value, rtol=1e-12)


def _tiny_db(tmp_path, **extra_columns):
    folder = tmp_path / "db"
    folder.mkdir(exist_ok=True)
    users = pd.DataFrame({"user id": [1, 2, 3], **extra_columns})
    users.to_parquet(folder / "user table.parquet")
    pd.DataFrame({"id": [1, 2], "user": [1, 3], "when": ["2024-01-01", "2024-02-01"]}) \
        .to_parquet(folder / "2024.events.parquet")
    return rdl.connect(folder, schema={"tables": {
        "user table": {"primary_key": "user id"},
        "2024.events": {"primary_key": "id", "foreign_keys": {"user": "user table"}},
    }})


def test_names_are_safe_module_dict_keys(tmp_path):
    data = build_graph(_tiny_db(tmp_path))
    assert set(data.node_types) == {"user_table", "t_2024_events"}
    assert data.table_of["t_2024_events"] == "2024.events"
    torch.nn.ModuleDict({"__".join(et): torch.nn.Identity() for et in data.edge_types})
    assert "tf" not in data["user_table"]  # no features: the model embeds these nodes


def test_a_table_no_key_links_is_named_in_rdls_words_not_pygs():
    """PyG warned 'The node types {'SeriesPost'} are isolated' from inside the library; rdl
    names the table and what to do, and only where other tables are linked."""
    users = Table("users", pd.DataFrame({"uid": [1, 2]}), "uid")
    orders = Table("orders", pd.DataFrame({"oid": [1], "uid": [2]}), "oid", {"uid": "users"})
    series = Table("Series Post", pd.DataFrame({"sid": [1, 2], "winner": ["BOS", "NYA"]}), "sid")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = build_graph(Database({"users": users, "orders": orders, "Series Post": series}))
    messages = [str(w.message) for w in caught]
    assert not any("isolated" in m for m in messages)
    assert [m for m in messages if "no foreign key links" in m] == [
        "no foreign key links table(s) 'Series Post' to the others: a model sees their rows "
        "only as a task's own seeds, never beside other rows. Declare their foreign keys in a "
        "schema file (rdl inspect SOURCE --suggest-schema FILE.yaml guesses keys) or leave them "
        "out with drop_tables: [Series Post]"]
    assert graph["Series_Post"].num_nodes == 2
    for alone in ({"users": users}, {"users": users, "Series Post": series}):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            build_graph(Database(alone))  # nothing linked anywhere: nothing to single out
        assert not any("links" in str(w.message) or "isolated" in str(w.message)
                       for w in caught)


def test_text_tags_and_vectors_materialise(tmp_path):
    db = _tiny_db(tmp_path, bio=["likes long walks on the beach", None, "writes code all night long"],
                  tags=[["a", "b"], None, ["b"]], vec=[[0.1, 0.2], [0.3, 0.4], None])
    db["user table"].stypes.update(bio="text_embedded", tags="multicategorical", vec="embedding")
    tf = build_graph(db)["user_table"].tf
    assert tf.num_rows == 3
    assert set(tf.col_names_dict) == {torch_frame.embedding, torch_frame.multicategorical}


def test_text_embedder_is_reproducible_across_processes():
    texts = ["a delayed flight", "on time", ""]
    here = HashTextEmbedder(16)(texts)
    code = ("from rdl.graph import HashTextEmbedder; import sys;"
            f"sys.stdout.write(repr(HashTextEmbedder(16)({texts!r}).tolist()))")
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert here.tolist() == eval(there.stdout)  # noqa: S307 - our own output
    assert torch.allclose(here[0].norm(), torch.tensor(1.0))


def test_exclude_columns_drops_a_target_and_rejects_unknown(flights_db):
    data = build_graph(flights_db, exclude_columns={"flights": ["dep_delay"]})
    assert "dep_delay" not in data["flights"].tf.col_names_dict[torch_frame.numerical]
    with pytest.raises(ValueError, match=r"\['delay'\] which are not feature columns of table 'flights'"):
        build_graph(flights_db, exclude_columns={"flights": ["delay"]})


def test_cache_reuses_rebuilds_changed_tables_only_and_repairs_corruption(tmp_path, monkeypatch):
    from rdl.graph import materialize

    db = _tiny_db(tmp_path, age=[30.0, 40.0, 50.0])
    cache = tmp_path / "cache"
    first = build_graph(db, cache_dir=cache)
    calls = []
    original = materialize._encode
    monkeypatch.setattr(materialize, "_encode", lambda *a: calls.append(1) or original(*a))

    again = build_graph(db, cache_dir=cache)
    assert calls == []  # everything came from the cache
    assert torch.equal(again["user_table"].tf.feat_dict[torch_frame.numerical],
                       first["user_table"].tf.feat_dict[torch_frame.numerical])

    db["user table"].df.loc[0, "age"] = 31.0
    with pytest.warns(UserWarning, match="'user table' are changed since it was cached"):
        changed = build_graph(db, cache_dir=cache)
    assert len(calls) == 1  # only the changed table
    assert changed["user_table"].tf.feat_dict[torch_frame.numerical][0, 0] == 31.0

    for path in cache.glob("user table.*.frame.pt"):
        path.write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="'user table' are unreadable"):
        build_graph(db, cache_dir=cache)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build_graph(db, cache_dir=cache)  # repaired: quiet again


def test_tasks_excluding_other_columns_keep_a_cache_file_each(tmp_path, monkeypatch):
    # two tasks on one database, one with a column excluded (a leakage guard,
    # say), used to rebuild each other's cache file on every switch
    from rdl.graph import materialize

    db = _tiny_db(tmp_path, age=[30.0, 40.0, 50.0], score=[1.0, 2.0, 3.0])
    cache = tmp_path / "cache"
    without_score = {"user table": ["score"]}
    build_graph(db, cache_dir=cache)
    build_graph(db, cache_dir=cache, exclude_columns=without_score)
    assert len(list(cache.glob("user table.*.frame.pt"))) == 2
    calls = []
    original = materialize._encode
    monkeypatch.setattr(materialize, "_encode", lambda *a: calls.append(1) or original(*a))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        both = build_graph(db, cache_dir=cache)
        age_only = build_graph(db, cache_dir=cache, exclude_columns=without_score)
    assert calls == []  # each from its own file
    assert both["user_table"].tf.col_names_dict[torch_frame.numerical] == ["age", "score"]
    assert age_only["user_table"].tf.col_names_dict[torch_frame.numerical] == ["age"]


def test_given_column_stats_keep_category_indices_on_other_data(flights_db, flights_graph):
    """A model's stats applied to a smaller copy encode each category as before."""
    past = flights_db.upto("2013-02-01")
    own = build_graph(past)
    shared = build_graph(past, col_stats_dict=flights_graph.col_stats_dict)
    kept = np.flatnonzero(flights_db["flights"].df["time_hour"] <= pd.Timestamp("2013-02-01"))
    full = flights_graph["flights"].tf.feat_dict[torch_frame.categorical][kept]
    assert torch.equal(shared["flights"].tf.feat_dict[torch_frame.categorical], full)
    assert not torch.equal(own["flights"].tf.feat_dict[torch_frame.categorical], full)
