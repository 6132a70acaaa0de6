"""``rdl labels``, ``rdl baseline`` and ``rdl fit`` read a config's data and task
alike, so they label the same seeds: for every example config, and on a
database whose tables live in a named SQL schema beside a decoy."""
from __future__ import annotations

import dataclasses

import duckdb
import numpy as np
import pandas as pd
import pytest
import yaml

from rdl.baseline.run import read_config, run_baseline
from rdl.tasks import cli as labels_cli
from rdl.tasks import Task
from rdl.tasks.run_data import RunData
from rdl.testing.cli import CONFIGS
from rdl.train.info import task_arguments

CHURN = ("PREDICT COUNT(orders.*, 0, 30, days) = 0 FOR EACH customers.customer_id "
         "WHERE COUNT(orders.*, -60, 0, days) > 0")


def fit_reader(config, monkeypatch, tmp_path):
    """The data module LightningCLI builds from ``config``, as ``rdl fit`` does."""
    from rdl.train.cli import RelationalCLI
    from rdl.train.data import RelationalDataModule
    from rdl.train.module import RelationalTask

    monkeypatch.chdir(tmp_path)
    return RelationalCLI(RelationalTask, RelationalDataModule, run=False,
                         args=["--config", str(config)]).datamodule


def described(run: RunData) -> dict:
    return {**run.to_plain(), "task": task_arguments(run.task)}


@pytest.mark.parametrize("config", sorted(CONFIGS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_config_is_read_alike_by_labels_baseline_and_fit(config, monkeypatch, tmp_path):
    labels = RunData.from_config(config)
    baseline, _ = read_config(config)
    fit = fit_reader(config, monkeypatch, tmp_path).run
    assert described(labels) == described(baseline) == described(fit)
    assert labels.source and labels.task.query


def write_shop(path, seed: int = 0) -> str:
    """A DuckDB file with customers and orders in schema ``shop``, and in
    ``main`` the same customers with a third of the orders (a decoy whose
    labels differ)."""
    rng = np.random.default_rng(seed)
    customers = pd.DataFrame({"customer_id": np.arange(300),
                              "age": rng.integers(18, 80, 300).astype(float)})
    n = 6000
    orders = pd.DataFrame({
        "order_id": np.arange(n),
        "customer_id": rng.integers(0, 300, n),
        "ordered_at": pd.Timestamp("2021-01-01")
        + pd.to_timedelta(rng.integers(0, 270 * 24, n), unit="h"),
        "amount": rng.gamma(2.0, 20.0, n),
    })
    con = duckdb.connect(str(path))
    con.execute("CREATE SCHEMA shop")
    for schema, frame in (("shop", orders), ("main", orders.iloc[::3])):
        con.register("c", customers)
        con.register("o", frame)
        con.execute(f"CREATE TABLE {schema}.customers (customer_id BIGINT PRIMARY KEY, "
                    "age DOUBLE)")
        con.execute(f"INSERT INTO {schema}.customers SELECT * FROM c")
        con.execute(f"CREATE TABLE {schema}.orders (order_id BIGINT PRIMARY KEY, customer_id "
                    f"BIGINT REFERENCES {schema}.customers (customer_id), ordered_at TIMESTAMP, "
                    "amount DOUBLE)")
        con.execute(f"INSERT INTO {schema}.orders SELECT * FROM o")
    con.close()
    return f"duckdb:///{path}"


def test_named_sql_schema_and_seed_subset_give_identical_seeds(tmp_path, monkeypatch, capsys):
    url = write_shop(tmp_path / "store.duckdb")
    config = {"data": {"source": url, "sql_schema": "shop", "max_seeds": 80, "seed": 3,
                       "num_neighbors": [4, 4]},
              "task": {"query": CHURN, "val_timestamp": "2021-07-01",
                       "test_timestamp": "2021-08-01"}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))

    out = tmp_path / "test.parquet"
    assert labels_cli.labels_main(["--config", str(path), "--split", "test",
                                   "--output", str(out)]) == 0
    from_labels = pd.read_parquet(out)
    assert len(from_labels) == 80  # the max_seeds subset

    seeds = fit_reader(path, monkeypatch, tmp_path).split_seeds("test")
    from_fit = pd.DataFrame({"customer_id": seeds.ids.to_numpy(),
                             "timestamp": seeds.timestamps.to_numpy(),
                             "label": seeds.label.numpy().astype("int64")})
    pd.testing.assert_frame_equal(from_fit, from_labels.reset_index(drop=True),
                                  check_dtype=False)

    result = run_baseline(config, num_boost_round=5)
    from_baseline = result.predictions.iloc[:, :2]
    pd.testing.assert_frame_equal(from_baseline, from_labels.iloc[:, :2].reset_index(drop=True),
                                  check_dtype=False)

    # The decoy in the default schema has other labels: the readers did read "shop".
    decoy = RunData.from_config({**config, "data": {**config["data"], "sql_schema": None}})
    decoy = dataclasses.replace(decoy, max_seeds=None)
    everything = RunData.from_config({**config, "data": {**config["data"], "max_seeds": None}})
    assert not decoy.labels(decoy.connect(), "test").equals(
        everything.labels(everything.connect(), "test"))


def test_split_times_left_out_are_chosen_alike_printed_and_kept_by_the_checkpoint(
        tmp_path, monkeypatch, capsys):
    """A config without val_timestamp and test_timestamp: labels, baseline and fit choose the
    same times from the data and say so, and the checkpoint's task arguments hold them, so a
    model predicts with the times it was trained on once the data has grown."""
    url = write_shop(tmp_path / "store.duckdb")
    config = {"data": {"source": url, "sql_schema": "shop", "num_neighbors": [4, 4]},
              "task": {"query": CHURN}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))

    assert labels_cli.labels_main(["--config", str(path), "--split", "test",
                                   "--output", str(tmp_path / "test.parquet")]) == 0
    printed = capsys.readouterr().out
    assert "task: val_timestamp 2021-07-29 and test_timestamp 2021-08-28 chosen" in printed
    from_labels = pd.read_parquet(tmp_path / "test.parquet")
    assert from_labels["timestamp"].unique().tolist() == [pd.Timestamp("2021-08-28")]

    result = run_baseline(config, num_boost_round=5)
    assert result.notes[0].startswith("task: val_timestamp 2021-07-29 and test_timestamp")
    fit = fit_reader(path, monkeypatch, tmp_path)
    assert len(fit.split_seeds("test")) == len(from_labels)

    arguments = task_arguments(fit.run.task)
    assert (arguments["val_timestamp"], arguments["test_timestamp"]) == (
        "2021-07-29 00:00:00", "2021-08-28 00:00:00")
    assert Task(**arguments).split_times == fit.run.task.split_times
