"""model.baseline_features: the baseline's aggregates of each seed, scaled on
the training seeds, reach the model, travel in the checkpoint and are computed
again the same way by rdl test, the Predictor and explain."""
from __future__ import annotations

import warnings
from dataclasses import replace

import lightning as L
import numpy as np
import pandas as pd
import pytest
import torch

from rdl.baseline.features import compute_features
from rdl.nn import RelationalModel
from rdl.predict import Predictor
from rdl.tasks import Task
from rdl.testing.graphs import synthetic_graph
from rdl.train import RelationalDataModule, RelationalTask
import rdl.train.baseline_features as baseline_features_module
from rdl.train.baseline_features import (
    CLIP,
    MIN_RARER_PER_AGGREGATE,
    SMALL_TRAINING_SEEDS,
    BaselineFeatures,
    resolve_baseline_features,
    too_wide,
)
from rdl.train.blend import seed_features
from rdl.train.callbacks import TaskCheckpoint

TASK = Task(query="PREDICT EXISTS(flights.* WHERE flights.dest = 'ORD', 0, 30, days) "
                  "FOR EACH planes.tailnum",
            val_timestamp="2013-10-01", test_timestamp="2013-11-01")


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    where = tmp_path_factory.mktemp("baseline_features")
    L.seed_everything(0)
    datamodule = RelationalDataModule("nycflights13", TASK, num_neighbors=[4, 2], batch_size=64,
                                      max_seeds=400, cache_dir=str(where / "cache"))
    checkpoint = TaskCheckpoint(dirpath=str(where / "checkpoints"))
    trainer = L.Trainer(max_epochs=2, logger=False, num_sanity_val_steps=0,
                        callbacks=[checkpoint], enable_progress_bar=False,
                        enable_model_summary=False)
    module = RelationalTask(net={"channels": 8}, blend_baseline=False, baseline_features=True)
    trainer.fit(module, datamodule)
    return module, datamodule, checkpoint.best_model_path


def test_auto_feeds_them_to_small_binary_tasks_only():
    small, large = SMALL_TRAINING_SEEDS - 1, SMALL_TRAINING_SEEDS
    assert resolve_baseline_features("auto", "binary", small)[0] is True
    for task_type, seeds in (("binary", large), ("regression", small), ("multiclass", small)):
        on, why = resolve_baseline_features("auto", task_type, seeds)
        assert on is False and "auto: off" in why
    assert resolve_baseline_features("auto", "recommendation", small) == (False, None)
    assert resolve_baseline_features(True, "regression", large) == (True, None)
    assert resolve_baseline_features(False, "binary", small) == (False, None)
    with pytest.raises(ValueError, match="recommendation"):
        resolve_baseline_features(True, "recommendation", small)
    with pytest.raises(ValueError, match="'yes' is not true, false or auto"):
        RelationalTask(baseline_features="yes")


@pytest.mark.parametrize("positives, seeds, width", [
    (466, 3726, 493), (1265, 6292, 49), (879, 4259, 49), (252, 824, 33), (5, 10, 1), (0, 10, 1),
])
def test_auto_wants_ten_of_the_rarer_class_per_aggregate(positives, seeds, width):
    """Formula 1's top three (466 positives, 493 aggregates) is too wide, the small shops
    are not; counted by brute force over the labels."""
    labels = torch.zeros(seeds)
    labels[torch.randperm(seeds)[:positives]] = 1.0
    rarer = min(positives, seeds - positives)
    why = too_wide(labels, width)
    assert (why is None) == (rarer >= MIN_RARER_PER_AGGREGATE * width)
    if why is not None:
        assert why.startswith(f"baseline_features auto: off ({width:,} aggregates for "
                              f"{rarer:,} training seeds of the rarer class")


def test_auto_fits_them_on_a_small_binary_task_and_reads_older_checkpoints(tmp_path,
                                                                          monkeypatch):
    """The default on 400 seeds turns them on (their aggregates allowed to be many); a
    checkpoint written without them (as before ``auto``) is tested and resumed as it was
    trained."""
    monkeypatch.setattr(baseline_features_module, "MIN_RARER_PER_AGGREGATE", 0)
    datamodule = RelationalDataModule("nycflights13", TASK, num_neighbors=[4, 2], batch_size=64,
                                      max_seeds=400, cache_dir=str(tmp_path / "cache"))
    assert len(datamodule.split_seeds("train")) < SMALL_TRAINING_SEEDS

    def trainer(epochs: int, checkpoint: TaskCheckpoint | None = None) -> L.Trainer:
        return L.Trainer(max_epochs=epochs, logger=False, num_sanity_val_steps=0,
                         callbacks=[checkpoint] if checkpoint else None,
                         enable_checkpointing=checkpoint is not None,
                         enable_progress_bar=False, enable_model_summary=False)

    L.seed_everything(0)
    auto_checkpoint = TaskCheckpoint(dirpath=str(tmp_path / "auto"))
    auto = RelationalTask(net={"channels": 8}, blend_baseline=False)
    trainer(1, auto_checkpoint).fit(auto, datamodule)
    assert auto.baseline_features is not None and auto.model.seed_mlp is not None
    expected = trainer(1).test(auto, datamodule, verbose=False)[0]["test_auroc"]
    fresh = RelationalTask(net={"channels": 8}, blend_baseline=False)  # rdl test's module
    got = trainer(1).test(fresh, datamodule, ckpt_path=auto_checkpoint.best_model_path,
                          verbose=False)[0]["test_auroc"]
    assert fresh.baseline_features == auto.baseline_features
    assert got == pytest.approx(expected, abs=1e-6)

    L.seed_everything(0)
    checkpoint = TaskCheckpoint(dirpath=str(tmp_path / "off"))
    without = RelationalTask(net={"channels": 8}, blend_baseline=False, baseline_features=False)
    trainer(1, checkpoint).fit(without, datamodule)
    assert without.baseline_features is None
    expected = trainer(1).test(without, datamodule, verbose=False)[0]["test_auroc"]
    tested = RelationalTask(net={"channels": 8}, blend_baseline=False)  # auto, as a user runs it
    got = trainer(1).test(tested, datamodule, ckpt_path=checkpoint.best_model_path,
                          verbose=False)[0]["test_auroc"]
    assert tested.baseline_features is None and got == pytest.approx(expected, abs=1e-6)
    with pytest.raises(ValueError, match="trained with model.baseline_features: false"):
        trainer(2).fit(RelationalTask(net={"channels": 8}, blend_baseline=False), datamodule,
                       ckpt_path=checkpoint.last_model_path)


def test_auto_fits_without_them_where_the_aggregates_outnumber_the_rarer_labels(tmp_path,
                                                                                caplog):
    """400 planes, a few dozen flying to Chicago, against the baseline's aggregates of
    planes: ``auto`` says so and fits without them; ``true`` keeps them."""
    datamodule = RelationalDataModule("nycflights13", TASK, num_neighbors=[4, 2], batch_size=64,
                                      max_seeds=400, cache_dir=str(tmp_path / "cache"))

    def fit(module: RelationalTask) -> RelationalTask:
        L.Trainer(max_epochs=1, logger=False, num_sanity_val_steps=0, limit_val_batches=0,
                  enable_checkpointing=False, enable_progress_bar=False,
                  enable_model_summary=False).fit(module, datamodule)
        return module

    with caplog.at_level("INFO"):
        auto = fit(RelationalTask(net={"channels": 8}, blend_baseline=False))
    assert auto.baseline_features is None and auto.model.seed_mlp is None
    assert datamodule.split_seeds("train").features is None
    assert "training seeds of the rarer class; on from 5 per aggregate" in caplog.text
    forced = fit(RelationalTask(net={"channels": 8}, blend_baseline=False,
                                baseline_features=True))
    labels = datamodule.split_seeds("train").label
    rarer = min(int(labels.sum()), len(labels) - int(labels.sum()))
    assert rarer < MIN_RARER_PER_AGGREGATE * forced.baseline_features.width


def test_auto_fits_without_them_where_the_baseline_gives_no_numeric_feature(
        tmp_path, monkeypatch, caplog):
    """Only categorical features (none reach the model): ``auto`` fits
    without them and says why; ``true`` stops with what to set."""
    import rdl.train.baseline_features as module_of_fit

    def categorical_only(*args, **kwargs):
        features = seed_features(*args, **kwargs)
        return replace(features, frame=features.frame[features.categorical])

    monkeypatch.setattr(module_of_fit, "seed_features", categorical_only)
    datamodule = RelationalDataModule("nycflights13", TASK, num_neighbors=[4, 2], batch_size=64,
                                      max_seeds=200, cache_dir=str(tmp_path / "cache"))
    trainer = L.Trainer(max_epochs=1, logger=False, num_sanity_val_steps=0,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    auto = RelationalTask(net={"channels": 8}, blend_baseline=False)
    with caplog.at_level("INFO"):
        trainer.fit(auto, datamodule)
    assert auto.baseline_features is None and auto.model.seed_mlp is None
    assert ("baseline_features auto: off (the baseline finds no numeric feature of the "
            "task's entities in this database)") in caplog.text
    forced = RelationalTask(net={"channels": 8}, blend_baseline=False, baseline_features=True)
    with pytest.raises(ValueError, match="true, but the baseline finds no numeric feature.*"
                                         "set it to false or auto"):
        trainer.fit(forced, datamodule)


def test_the_blend_and_the_model_input_compute_a_split_once(fitted):
    _, datamodule, _ = fitted
    db, task, exclusions = datamodule.db, datamodule.task, datamodule.exclusions
    val = replace(datamodule.split_seeds("val"))  # a copy starts without any
    assert val.feature_memo == []
    first = seed_features(db, task, val, None, 2, exclusions)
    assert seed_features(db, task, val, None, 2, exclusions) is first
    assert seed_features(db, task, val, first.windows, 2, exclusions) is first
    other = seed_features(db, task, val, (7.0,), 2, exclusions)
    assert other is not first and list(other.windows) == [7.0]
    fewer = replace(val, ids=val.ids[:5], timestamps=val.timestamps[:5])
    assert len(seed_features(db, task, fewer, None, 2, exclusions).frame) == 5


def by_hand(frame: pd.DataFrame, train: pd.DataFrame) -> np.ndarray:
    """Signed log, standardised by the training rows' non-missing values,
    missing as 0, clipped."""
    def signed_log(values: pd.DataFrame) -> pd.DataFrame:
        values = values.astype("float64")
        return np.sign(values) * np.log1p(values.abs())

    reference = signed_log(train)
    std = reference.std(ddof=0).where(lambda s: s > 0, 1.0).fillna(1.0)
    scaled = (signed_log(frame) - reference.mean().fillna(0.0)) / std
    return scaled.fillna(0.0).clip(-CLIP, CLIP).to_numpy()


def test_training_and_test_seeds_get_the_baseline_features_scaled_on_training(fitted):
    module, datamodule, _ = fitted
    scaling = module.baseline_features
    seeds = {split: datamodule.split_seeds(split) for split in ("train", "test")}
    frames = {}
    for split, split_seeds in seeds.items():
        labels = pd.DataFrame({"id": split_seeds.ids.to_numpy(),
                               "timestamp": split_seeds.timestamps})
        features = compute_features(datamodule.db, datamodule.task, labels,
                                    windows=scaling.windows, exclude_columns=datamodule.exclusions)
        frames[split] = features.frame.drop(columns=features.categorical)
    assert scaling.names == list(frames["train"].columns) and scaling.width > 10
    datamodule.trainer.test(module, datamodule, verbose=False)  # attaches the test features
    for split in ("train", "test"):
        got = seeds[split].features.numpy()
        np.testing.assert_allclose(got, by_hand(frames[split], frames["train"]),
                                   rtol=1e-4, atol=1e-4)
        assert not np.isnan(got).any()
    missing = frames["test"].isna().to_numpy()
    assert missing.any() and (seeds["test"].features.numpy()[missing] == 0).all()


def test_the_model_reads_them(fitted):
    module, datamodule, _ = fitted
    batch = next(iter(datamodule.loader(datamodule.split_seeds("val"))))
    model = module.model.eval()
    with torch.no_grad():
        out = model(batch.inputs)
        batch.inputs.seed_features = torch.zeros_like(batch.inputs.seed_features)
        without = model(batch.inputs)
        batch.inputs.seed_features = None
        with pytest.raises(ValueError, match="per-seed features"):
            model(batch.inputs)
    assert not torch.allclose(out, without)


def test_the_checkpoint_carries_them_to_test_and_the_predictor(fitted):
    module, datamodule, path = fitted
    expected = datamodule.trainer.test(module, datamodule, ckpt_path=path, verbose=False)[0]
    predictor = Predictor.from_checkpoint(path)
    assert predictor.module.baseline_features == module.baseline_features
    assert predictor.evaluate()["auroc"] == pytest.approx(expected["test_auroc"], abs=1e-6)
    test = datamodule.split_seeds("test")
    ids = test.ids[:3].tolist()
    frame = predictor.predict(ids, "2013-11-01")
    assert frame["prediction"].between(0, 1).all() and len(frame) == 3
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        explanation = predictor.explain(ids[0], "2013-11-01")
    assert any("held fixed" in str(w.message) for w in caught)
    assert (explanation["level"] == "table").any()


def test_a_database_without_a_trained_feature_is_an_error_naming_it(fitted):
    module, datamodule, _ = fitted
    stale = BaselineFeatures.from_plain(module.baseline_features.to_plain())
    stale.names = [*stale.names, "planes.no_such_column"]
    stale.mean, stale.std = [*stale.mean, 0.0], [*stale.std, 1.0]
    with pytest.raises(ValueError, match="planes.no_such_column"):
        stale.compute(datamodule.db, datamodule.task, datamodule.split_seeds("val"))


def test_recommendation_takes_no_seed_features(tmp_path):
    with pytest.raises(ValueError, match="recommendation"):
        RelationalModel(synthetic_graph(), seed_type="customers", task_type="recommendation",
                        item_type="items", channels=8, seed_features=4)
    task = Task(query="PREDICT LIST_DISTINCT(flights.dest, 0, 30, days) RANK TOP 10 "
                      "FOR EACH planes.tailnum",
                val_timestamp="2013-10-01", test_timestamp="2013-11-01")
    datamodule = RelationalDataModule("nycflights13", task, num_neighbors=[4, 2],
                                      max_seeds=50, cache_dir=str(tmp_path / "cache"))
    trainer = L.Trainer(max_epochs=1, logger=False, enable_progress_bar=False,
                        enable_model_summary=False)
    with pytest.raises(ValueError, match="model.baseline_features .* recommendation"):
        trainer.fit(RelationalTask(net={"channels": 8}, baseline_features=True), datamodule)
