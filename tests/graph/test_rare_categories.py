"""Categories that fewer than ``min_rows`` rows hold are made unseen on the
entity table, as a brute-force count of each value's rows says, and stay
unseen when a trained model's stats encode the data again."""
from __future__ import annotations

import pandas as pd
import torch
import torch_frame
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_frame.data.stats import StatType

from rdl.db import Database, Table
from rdl.graph import build_graph
from rdl.graph.rare_categories import forget_rare_categories

_VALUES = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "d", "e", "f"]))


def _players(names: list, teams: list) -> Database:
    df = pd.DataFrame({"player": range(len(names)), "name": names, "team": teams,
                       "weight": [float(i) for i in range(len(names))]})
    return Database({"players": Table("players", df, primary_key="player",
                                      stypes={"name": "categorical", "team": "categorical",
                                              "weight": "numerical"})})


def _decoded(graph, column: str) -> list:
    """Each row's category as text (None where missing or unseen)."""
    tf = graph["players"].tf
    position = tf.col_names_dict[torch_frame.categorical].index(column)
    categories = graph.col_stats_dict["players"][column][StatType.COUNT][0]
    return [None if i < 0 else categories[i]
            for i in tf.feat_dict[torch_frame.categorical][:, position].tolist()]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(st.lists(_VALUES, min_size=n, max_size=n),
                                                      st.lists(_VALUES, min_size=n, max_size=n))),
       st.integers(1, 4))
def test_a_category_is_unseen_exactly_when_fewer_rows_hold_it(columns, min_rows):
    names, teams = columns
    graph = build_graph(_players(names, teams))
    before = {c: graph.col_stats_dict["players"][c] for c in ("name", "team")}
    numerical = graph["players"].tf.feat_dict[torch_frame.numerical].clone()
    forgotten = forget_rare_categories(graph, "players", min_rows)
    for column, values in (("name", names), ("team", teams)):
        rows = pd.Series(values).value_counts()
        common = rows[rows >= min_rows]
        expected = [v if v is not None and rows[v] >= min_rows else None for v in values]
        assert _decoded(graph, column) == expected
        assert forgotten.get(column, 0) == int((rows < min_rows).sum())
        kept = graph.col_stats_dict["players"][column][StatType.COUNT]
        assert sorted(kept[0]) == sorted(common.index)
        assert dict(zip(*kept)) == {v: int(n) for v, n in common.items()}
        if not forgotten.get(column):
            assert graph.col_stats_dict["players"][column] == before[column]
    assert torch.equal(graph["players"].tf.feat_dict[torch_frame.numerical], numerical)


def test_a_trained_models_stats_keep_those_categories_unseen_on_new_rows():
    names = ["ann", "bob", "bob", "cid", "dan", "dan", "dan"]
    graph = build_graph(_players(names, ["x"] * 7))
    assert forget_rare_categories(graph, "players", 2) == {"name": 2}
    # Newer data: ann now holds two rows, but the model never learned her.
    newer = build_graph(_players([*names, "ann", "eve"], ["x"] * 9),
                        col_stats_dict=graph.col_stats_dict)
    assert _decoded(newer, "name") == [None, "bob", "bob", None, "dan", "dan", "dan", None, None]
    assert forget_rare_categories(graph, "players", 2) == {}  # nothing left to forget


def test_a_memory_mapped_graph_is_left_as_it_was(tmp_path):
    from rdl.graph import load_graph, save_graph

    save_graph(build_graph(_players(["a", "b", "b"], ["x", "y", "y"])), tmp_path / "g.rdlgraph")
    graph = load_graph(tmp_path / "g.rdlgraph")
    stored = graph["players"].tf.feat_dict[torch_frame.categorical]
    copy = stored.clone()
    forget_rare_categories(graph, "players", 2)
    assert torch.equal(stored, copy)
    assert torch.equal(load_graph(tmp_path / "g.rdlgraph")["players"].tf.feat_dict[
        torch_frame.categorical], copy)
