"""``rdl labels``: config forms, the parquet it writes, its summary and its errors."""
from __future__ import annotations

import argparse

import pandas as pd
import pytest
import yaml

from rdl.tasks import Task
from rdl.tasks import cli
from rdl.tasks.label_table import describe_labels, describe_split
from rdl.tasks.run_data import RunData
from rdl.testing.shops import TEST, VAL

QUERY = ("PREDICT COUNT(orders.*, 0, 30, days) = 0 FOR EACH customers.customer_id "
         "WHERE COUNT(orders.*, -90, 0, days) > 0")


@pytest.fixture
def opened(monkeypatch, shop):
    """Replaces opening the config's source with the shop database and
    records what was asked for."""
    calls = []

    def fake_connect(run, upto=None):
        calls.append((run.source, run.schema))
        return shop

    monkeypatch.setattr(RunData, "connect", fake_connect)
    return calls


def write_config(tmp_path, data: dict, task: dict) -> str:
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump({"data": data, "task": task}))
    return str(path)


TASK = {"query": QUERY, "val_timestamp": VAL, "test_timestamp": TEST}


@pytest.mark.parametrize("data", [
    {"source": "shop.duckdb", "schema": "schema.yaml"},
    {"class_path": "rdl.train.DataModule",
     "init_args": {"source": "shop.duckdb", "schema": "schema.yaml"}},
])
def test_labels_writes_parquet(tmp_path, opened, shop, capsys, data):
    out = tmp_path / "sub" / "val.parquet"
    cfg = write_config(tmp_path, data, TASK)
    assert cli.labels_main(["--config", cfg, "--split", "val", "--output", str(out)]) == 0
    assert opened == [("shop.duckdb", "schema.yaml")]
    got = pd.read_parquet(out)
    want = Task(query=QUERY, val_timestamp=VAL, test_timestamp=TEST).table(shop, "val")
    pd.testing.assert_frame_equal(got, want)
    printed = capsys.readouterr().out
    assert "wrote 6 rows (1 timestamp)" in printed
    assert "labels: 2 positive / 4 negative (33.3% positive)" in printed
    assert "task: binary, entity: customers.customer_id" in printed


def test_yaml_dates_and_recommendation_lists(tmp_path, opened, capsys):
    path = tmp_path / "cfg.yaml"
    path.write_text(
        "data: {source: shop}\n"
        "task:\n"
        "  query: PREDICT LIST_DISTINCT(orders.product_id, 0, 31, days) RANK TOP 2 "
        "FOR EACH customers.customer_id\n"
        "  val_timestamp: 2021-05-01\n"
        "  test_timestamp: 2021-06-01\n")
    out = tmp_path / "val.parquet"
    assert cli.labels_main(["--config", str(path), "--split", "val", "--output", str(out)]) == 0
    got = pd.read_parquet(out)
    assert [list(x) for x in got["label"]] == [[104], [102, 105], [105], [103]]
    printed = capsys.readouterr().out
    assert "1.25 items per entity on average (max 2)" in printed
    assert "dropped: {'empty_list': 3}" in printed


@pytest.mark.parametrize("data", [
    {"source": "shop.duckdb"}, {"class_path": "rdl.train.DataModule",
                                "init_args": {"source": "shop.duckdb"}},
])
def test_task_and_data_settings_from_the_command_line_as_for_fit(tmp_path, opened, shop,
                                                                  capsys, data):
    """`rdl labels --task.timedelta '30 days'` was refused (unrecognized arguments) while
    `rdl fit` takes it; the labels are those of the config with the setting in it."""
    from rdl.cli import main

    out = tmp_path / "train.parquet"
    cfg = write_config(tmp_path, data, TASK)
    everyone = QUERY.split(" WHERE")[0]
    assert main(["labels", "--config", cfg, "--split", "train", "--output", str(out),
                 "--task.query", everyone, "--task.timedelta", "10 days",
                 "--data.schema=other.yaml"]) == 0
    want = Task(query=everyone, val_timestamp=VAL, test_timestamp=TEST,
                timedelta="10 days").table(shop, "train")
    pd.testing.assert_frame_equal(pd.read_parquet(out), want)
    assert want["timestamp"].nunique() == 10  # 4 without the setting
    assert opened == [("shop.duckdb", "other.yaml")]
    assert yaml.safe_load(open(cfg)) == {"data": data, "task": TASK}  # the file is left alone
    capsys.readouterr()
    assert main(["labels", "--config", cfg, "--split", "train", "--output", str(out),
                 "--task.timedelta"]) == 2
    assert "rdl labels: error: --task.timedelta needs a value" in capsys.readouterr().err
    assert cli.labels_main(["--config", cfg, "--split", "train", "--output", str(out),
                            "--task.query", everyone, "--task.max_train_timestamps", "2"]) == 0
    assert pd.read_parquet(out)["timestamp"].nunique() == 2


def test_settings_of_other_sections_are_named():
    from rdl.tasks.errors import TaskError
    from rdl.tasks.run_data import with_overrides

    with pytest.raises(TaskError, match="--model.lr: only task: and data: settings"):
        with_overrides({"task": {}}, [("model.lr", "0.1")])
    assert with_overrides({"data": {"source": "x"}}, [("data.num_neighbors", "[4, 2]")]) == {
        "data": {"source": "x", "num_neighbors": [4, 2]}}


def test_regression_and_multiclass_summaries():
    df = pd.DataFrame({"label": [1.0, 2.0, 3.0]})
    assert describe_labels(df, "regression") == "mean 2, std 1, min 1, max 3"
    df = pd.DataFrame({"label": ["a", "b", "a"]})
    assert describe_labels(df, "multiclass") == "a: 2, b: 1"


def test_a_splits_line_names_its_seeds_times_labels_and_drops():
    times = pd.to_datetime(["2021-01-01 00:00", "2021-02-01 00:00", "2021-02-01 00:00",
                            "2021-03-01 12:00"])
    df = pd.DataFrame({"id": [1, 2, 3, 4], "timestamp": times, "label": [1, 0, 0, 1]})
    df.attrs["dropped"] = {"null_label": 3, "unknown_entity": 0}
    assert describe_split(df, "binary", "train") == (
        "train labels: 4 seeds at 3 prediction times (2021-01-01 .. 2021-03-01 12:00:00); "
        "2 positive / 2 negative (50.0% positive); dropped 3 (null label)")
    one_time = df.iloc[1:3].copy()  # attrs of a slice may differ by pandas version: set none
    one_time.attrs = {}
    assert describe_split(one_time, "binary", "val") == (
        "val labels: 2 seeds at 2021-02-01; 0 positive / 2 negative (0.0% positive)")
    empty = df.iloc[:0].copy()
    empty.attrs = {}
    assert describe_split(empty, "binary", "test") == "test labels: 0 seeds (none); none"


@pytest.mark.parametrize("config, message", [
    ({"task": TASK}, "the config needs a data: section"),
    ({"data": {"schema": "x"}, "task": TASK}, "data: needs source:"),
    ({"data": {"source": "x"}}, "the config needs a task: section"),
    ({"data": {"source": "x"}, "task": {**TASK, "window": 3}},
     "unknown task setting(s) ['window']; valid ones are ['val_timestamp'"),
    ({"data": {"source": "x"}, "task": {**TASK, "query": "PREDICT x"}},
     "Expected '.' and a column after 'x'"),
    ({"data": {"source": "x"}, "task": {**TASK, "val_timestamp": "2020-01-01"}},
     "val_timestamp=2020-01-01 00:00:00 is outside the data"),
])
def test_config_errors(tmp_path, opened, capsys, config, message):
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(config))
    out = tmp_path / "x.parquet"
    assert cli.labels_main(["--config", str(path), "--split", "val", "--output", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_an_output_that_cannot_be_a_file_is_refused_before_labelling(tmp_path, opened, capsys):
    cfg = write_config(tmp_path, {"source": "shop"}, TASK)
    assert cli.labels_main(["--config", cfg, "--split", "val", "--output", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"rdl labels: error: --output {tmp_path} is a folder; "
                                       f"name a file in it, e.g. {tmp_path}/labels.parquet\n")
    assert opened == []  # refused before the database was opened


def test_missing_config_file(tmp_path, capsys):
    code = cli.labels_main(["--config", str(tmp_path / "nope.yaml"), "--split", "val",
                            "--output", str(tmp_path / "x.parquet")])
    assert code == 2 and "nope.yaml" in capsys.readouterr().err


def test_split_choices(capsys):
    with pytest.raises(SystemExit):
        cli.labels_main(["--config", "c.yaml", "--split", "dev", "--output", "x.parquet"])
    assert "invalid choice: 'dev'" in capsys.readouterr().err


def test_subparser_helper():
    parser = argparse.ArgumentParser(prog="rdl")
    sub = parser.add_subparsers(dest="command")
    cli.add_labels_parser(sub)
    args = parser.parse_args(["labels", "--config", "c.yaml", "--split", "test", "--output", "o"])
    assert (args.command, args.split, args.run) == ("labels", "test", cli.run_labels)
