"""RelationalDataModule: seeds, labels and exclusions line up with the task tables."""
from __future__ import annotations

import dataclasses
import re
import logging
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
import torch_frame
from torch_frame.data.stats import StatType

from rdl.datasets import nycflights13
from rdl.graph import safe_name
from rdl.tasks import Task
from rdl.tasks.run_data import RunData
from rdl.testing.memory_maps import backing_file, mapped_files
from rdl.train import RelationalDataModule


@pytest.fixture(scope="module")
def cancellation(tmp_path_factory):
    task = Task(query="PREDICT flights.dep_time IS NULL FOR EACH flights._pk",
                val_timestamp="2013-10-01", test_timestamp="2013-11-01")
    return RelationalDataModule("nycflights13", task, exclude_columns={"flights": ["arr_time"]},
                                max_seeds=500, cache_dir=str(tmp_path_factory.mktemp("cache")))


def test_target_and_excluded_columns_are_not_features(cancellation):
    graph = cancellation.prepare_graph()
    numerical = graph["flights"].tf.col_names_dict[torch_frame.numerical]
    assert "dep_time" not in numerical and "arr_time" not in numerical
    assert "dep_delay" in numerical


def test_time_columns_are_features_unless_turned_off(cancellation):
    graph, db = cancellation.prepare_graph(), cancellation.db
    timed = {t.name: t.time_column for t in db if t.time_column in t.stypes}
    assert "flights" in timed
    for name, column in timed.items():
        assert column in graph[safe_name(name)].tf.col_names_dict[torch_frame.timestamp]
    assert cancellation.excluded_columns() == cancellation.task.excluded_columns(
        {"flights": ["arr_time"]})
    off = dataclasses.replace(cancellation.run, time_column_features=False)
    extra = {name: [column] for name, column in timed.items()}
    extra["flights"].append("arr_time")
    expected = cancellation.task.excluded_columns(extra)
    assert {t: sorted(c) for t, c in off.model_exclusions(db).items()} == {
        t: sorted(c) for t, c in expected.items()}
    named = dataclasses.replace(off, exclude_columns={"flights": [timed["flights"]]})
    assert named.model_exclusions(db)["flights"].count(timed["flights"]) == 1


def test_checkpoints_from_before_the_option_read_their_time_columns(cancellation):
    plain = dataclasses.replace(cancellation.run, time_column_features=False).to_plain()
    assert RunData.from_plain(plain, cancellation.task).time_column_features is False
    del plain["time_column_features"]
    assert RunData.from_plain(plain, cancellation.task).time_column_features is True
    with pytest.raises(ValueError, match="time_column_features='no' must be true or false"):
        RunData("nycflights13", cancellation.task, time_column_features="no")


def test_seeds_match_the_task_table(cancellation, flights_db):
    seeds = cancellation.split_seeds("val")
    keys = cancellation.graph.key_index["flights"]
    assert keys.take(seeds.node.numpy()).tolist() == seeds.ids.tolist()
    flights = flights_db["flights"].df.set_index("_pk")
    expected = flights.loc[seeds.ids, "dep_time"].isna().astype(float).to_numpy()
    assert torch.equal(seeds.label, torch.from_numpy(expected).float())
    assert (seeds.timestamps == flights.loc[seeds.ids, "time_hour"].to_numpy()).all()


def test_fit_logs_each_splits_labels_before_training(cancellation, caplog):
    caplog.set_level(logging.INFO)
    cancellation.setup("fit")
    lines = [r.getMessage() for r in caplog.records if " labels: " in r.getMessage()]
    assert [line.split()[0] for line in lines] == ["train", "val"]
    for split, line in zip(("train", "val"), lines):
        seeds = cancellation.split_seeds(split)
        positive = int(seeds.label.sum())
        times = seeds.timestamps.nunique()
        assert f"{len(seeds):,} seeds at {times:,} prediction times" in line
        assert f"{positive} positive / {len(seeds) - positive} negative" in line


def test_test_and_validate_log_the_labels_they_score(cancellation, caplog):
    """`rdl test` printed no seed count or positive rate of the split it scored."""
    caplog.set_level(logging.INFO)
    for stage, split in (("test", "test"), ("validate", "val")):
        caplog.clear()
        cancellation.setup(stage)
        lines = [r.getMessage() for r in caplog.records if " labels: " in r.getMessage()]
        assert lines == [cancellation.label_lines[split]] and lines[0].startswith(f"{split} ")


def test_categories_few_entity_rows_hold_are_unseen_when_asked(cancellation, caplog,
                                                               tmp_path):
    """A flight number flown once or twice names those flights;
    ``entity_category_min_rows`` keeps the model from learning flights by it.
    Counted by brute force from the table; by default every category stays."""
    numbers = cancellation.db["flights"].df["flight"].astype(str).value_counts()
    kept = cancellation.prepare_graph().col_stats_dict["flights"]["flight"][StatType.COUNT]
    assert cancellation.forgotten_categories == {} and len(kept[0]) == len(numbers)
    forgetting = RelationalDataModule("nycflights13", cancellation.task, max_seeds=50,
                                      cache_dir=str(tmp_path), entity_category_min_rows=3)
    graph = forgetting.prepare_graph()
    rare = int((numbers < 3).sum())
    assert rare > int((numbers == 1).sum()) > 0
    assert forgetting.forgotten_categories == {"flight": rare}
    categories = graph.col_stats_dict["flights"]["flight"][StatType.COUNT][0]
    assert sorted(categories) == sorted(numbers[numbers >= 3].index)
    caplog.set_level(logging.INFO)
    forgetting.setup("fit")
    assert (f"entity_category_min_rows: 3: categories held by fewer than 3 flights rows are "
            f"unseen (flight {rare:,})") in caplog.text
    for bad in (0, 2.5, True, "2"):
        with pytest.raises(ValueError, match="entity_category_min_rows=.* must be a whole"):
            RelationalDataModule("nycflights13", cancellation.task, entity_category_min_rows=bad)


def test_loader_batches_carry_each_seeds_own_label(cancellation):
    seeds = cancellation.split_seeds("val")
    for batch in cancellation.loader(seeds, train=True):
        assert torch.equal(batch.y, seeds.label[batch.position])
        assert torch.equal(batch.inputs["flights"].n_id[: batch.num_seeds], seeds.node[batch.position])


def test_recommendation_labels_are_gathered_per_seed(tmp_path):
    task = Task(query="PREDICT LIST_DISTINCT(flights.dest, 0, 30, days) RANK TOP 10 "
                      "FOR EACH planes.tailnum",
                val_timestamp="2013-10-01", test_timestamp="2013-11-01")
    datamodule = RelationalDataModule("nycflights13", task, batch_size=64, max_seeds=300,
                                      cache_dir=str(tmp_path))
    seeds = datamodule.split_seeds("val")
    table = task.table(datamodule.db, "val").set_index("tailnum")["label"]
    airports = datamodule.graph.key_index["airports"]
    for batch in datamodule.loader(seeds, train=True):
        for row, position in enumerate(batch.position.tolist()):
            got = sorted(airports.take(batch.y[batch.y_seed == row].numpy()))
            assert got == sorted(table[seeds.ids[position]])


def test_unknown_predict_split_is_rejected():
    task = Task(query="PREDICT flights.dep_time IS NULL FOR EACH flights._pk",
                val_timestamp="2013-10-01", test_timestamp="2013-11-01")
    with pytest.raises(ValueError, match="predict_split='future' is not one of"):
        RelationalDataModule("nycflights13", task, predict_split="future")


def test_evaluated_splits_need_a_seed_per_process(cancellation, monkeypatch):
    seeds = len(cancellation.split_seeds("val"))
    monkeypatch.setattr(cancellation, "trainer", SimpleNamespace(global_rank=0, world_size=seeds + 1))
    with pytest.raises(ValueError, match=f"val split has {seeds} seeds, fewer than the {seeds + 1} "):
        cancellation.val_dataloader()
    # Padded: every process trains, at least min_steps_per_epoch batches.
    floor = cancellation.min_steps_per_epoch * cancellation.batch_size
    assert len(cancellation.train_dataloader().sampler) == max(floor, 1)


def test_graph_file_is_built_once_then_mapped_and_rebuilt_when_stale(tmp_path):
    task = Task(query="PREDICT flights.dep_time IS NULL FOR EACH flights._pk",
                val_timestamp="2013-10-01", test_timestamp="2013-11-01")
    graph_file = tmp_path / "graph.pt"

    def module(**extra):
        return RelationalDataModule("nycflights13", task, graph_file=str(graph_file),
                                    cache_dir=str(tmp_path / "cache"), **extra)

    built = module().prepare_graph()
    assert graph_file.is_file()
    first_write = graph_file.stat().st_mtime_ns
    mapped = module().prepare_graph()
    assert graph_file.stat().st_mtime_ns == first_write  # reused, not rebuilt
    time = mapped["flights"].time
    assert backing_file(time, mapped_files()) == str(graph_file)  # the file's pages
    assert torch.equal(time, built["flights"].time)
    for nt in built.node_types:
        if "tf" in built[nt]:
            for st, x in built[nt].tf.feat_dict.items():
                assert torch.equal(torch.nan_to_num(mapped[nt].tf.feat_dict[st], -1.0),
                                   torch.nan_to_num(x, -1.0))
    with pytest.warns(UserWarning, match="does not match nycflights13: table 'flights' had feature columns"):
        rebuilt = module(exclude_columns={"flights": ["arr_time"]}).prepare_graph()
    assert "arr_time" not in rebuilt["flights"].tf.col_names_dict[torch_frame.numerical]
    assert graph_file.stat().st_mtime_ns != first_write
    # a key removed (or declared, or taken from a parent) changes the edges, not the features
    schema = tmp_path / "schema.yaml"
    bundled = (Path(nycflights13.__file__).parent / "nycflights13.yaml").read_text()
    schema.write_text(bundled.replace("      dest: airports\n", "      dest: null\n", 1))
    with pytest.warns(UserWarning, match=r"the links none are new, \[flights.dest -> airports\] "
                                         "gone; rebuilding it"):  # dest, now a column, left out
        unlinked = module(exclude_columns={"flights": ["arr_time", "dest"]},
                          schema=str(schema)).prepare_graph()
    assert ("flights", "f2p_dest", "airports") not in unlinked.edge_types
    assert ("flights", "f2p_dest", "airports") in rebuilt.edge_types


DAY = 86_400


@pytest.mark.parametrize("timedelta", [None, "2d", "5d", "10d"])
def test_count_windows_follow_the_target_window_not_the_training_step(timedelta):
    """A 10-day target window gives counts over 2.5, 10 and 40 days, however
    often the training timestamps come."""
    task = Task(query="PREDICT EXISTS(views.*, 0, 10, days) FOR EACH users.user_id",
                val_timestamp="2022-03-22", test_timestamp="2022-04-01", timedelta=timedelta)
    assert task.horizon == pd.Timedelta(days=10)
    data = RelationalDataModule("unused", task)
    assert data.stat_window_seconds() == [DAY * 10 // 4, DAY * 10, DAY * 40]


def test_count_windows_can_be_set_and_must_be_three():
    task = Task(query="PREDICT COUNT(views.*, 0, 1, months) FOR EACH users.user_id",
                val_timestamp="2022-03-22", test_timestamp="2022-05-01")
    assert task.horizon == pd.Timedelta(days=31)  # March 22 to April 22
    data = RelationalDataModule("unused", task, stat_windows=["1d", "7d", "2mo"])
    assert data.stat_window_seconds() == [DAY, 7 * DAY, 61 * DAY]  # to May 22
    with pytest.raises(ValueError,
                       match=r"data.stat_windows needs 3 durations .* \(got \['7d'\]\)"):
        RelationalDataModule("unused", task, stat_windows=["7d"]).stat_window_seconds()


@pytest.mark.parametrize("keys, asked, hint", [
    ([103, 104], ["103", "999"], "the table's keys are int values: write 103, not '103'"),
    (["103", "x"], [103], "the table's keys are str values: write '103', not 103"),
])
def test_ids_of_the_wrong_kind_say_how_to_write_them(keys, asked, hint):
    """classicmodels' customerNumber is an integer; `predict(ids=["103"])` only said the id
    was not in the table."""
    from rdl.train.seeds import node_indices

    graph = SimpleNamespace(key_index={"c": pd.Index(keys)}, table_of={"c": "customers"})
    with pytest.raises(ValueError, match=re.escape(hint)):
        node_indices(graph, "c", pd.Series(asked), "entity")
    assert node_indices(graph, "c", pd.Series(keys[::-1]), "entity").tolist() == [1, 0]
    with pytest.raises(ValueError) as caught:
        node_indices(graph, "c", pd.Series(["nope"]), "entity")
    assert str(caught.value) == "1 entity id(s) are not in table 'customers', e.g. ['nope']"
