"""Recommending new items with the GNN: seen items looked up per seed, excluded
when users do not repeat (two-tower, ID-GNN hybrid, rdl predict and
Predictor.recommend), learned as a bonus when they do."""
from __future__ import annotations

import lightning as L
import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from lightning.pytorch.cli import LightningArgumentParser
from hypothesis import strategies as st
from torch_frame import stype

import rdl
from rdl.tasks import Task
from rdl.testing.brute_force import seen_by_brute_force
from rdl.testing.views import VIEWS_TASK, make_views
from rdl.train import RelationalDataModule, RelationalTask
from rdl.train.module import module_arguments
from rdl.train.callbacks import TaskCheckpoint
from rdl.train.checkpoint import add_checksum
from rdl.train.data import LabeledBatch
from rdl.train.recommend import ExcludedPositives
from rdl.train.seen import SeenIndex, SeenItems
from rdl.train.seen_boost import BOOSTS, SEEN_BOOST_KEY

DAY = 86_400


@settings(max_examples=50, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4), st.integers(-5, 30)),
                     max_size=40),
       queries=st.lists(st.tuples(st.integers(0, 3), st.integers(-10, 40)), min_size=1,
                        max_size=6))
def test_seen_index_lookup_equals_brute_force(rows, queries):
    entity, item, day = (torch.tensor(list(c), dtype=torch.long).reshape(-1)
                         for c in (zip(*rows) if rows else ([], [], [])))
    index = SeenIndex(entity, item, day * DAY, num_entities=4, num_items=5)
    node = torch.tensor([q[0] for q in queries])
    time = torch.tensor([q[1] for q in queries]) * DAY
    got = index.lookup(node, time)
    expected = []
    for s, (e, t) in enumerate(queries):
        past = [(i, d) for ee, i, d in rows if ee == e and d <= t]
        for i in sorted({i for i, _ in past}):
            days = [d for ii, d in past if ii == i]
            expected.append((s, i, len(days), float(t - max(days))))
    assert list(zip(got.seed.tolist(), got.item.tolist(), got.count.tolist(),
                    got.age.tolist())) == expected


def fit(folder, tmp_path, **model) -> tuple[RelationalTask, RelationalDataModule, str]:
    datamodule = RelationalDataModule(str(folder), Task(**VIEWS_TASK), num_neighbors=[4, 4],
                                      batch_size=32, min_steps_per_epoch=10,
                                      cache_dir=str(tmp_path / "cache"))
    checkpoint = TaskCheckpoint(dirpath=str(tmp_path / "ckpt"))
    trainer = L.Trainer(max_epochs=2, logger=False, callbacks=[checkpoint],
                        enable_progress_bar=False, enable_model_summary=False)
    module = RelationalTask(**module_arguments({"channels": 8, **model}))
    trainer.fit(module, datamodule)
    return module, datamodule, checkpoint.best_model_path


@pytest.fixture(scope="module")
def no_repeats(tmp_path_factory):
    folder = tmp_path_factory.mktemp("views")
    make_views().save(folder)
    return folder


@pytest.fixture(scope="module", params=["two_tower", "idgnn"])
def trained(request, no_repeats, tmp_path_factory):
    torch.manual_seed(0)
    return fit(no_repeats, tmp_path_factory.mktemp(request.param), rec_head=request.param)


def assert_never_seen(db, ids, times, recommended) -> None:
    for user, at, items in zip(ids, times, recommended):
        assert items, f"nothing recommended to {user}"
        assert not set(items) & seen_by_brute_force(db, user, at), (user, at, items)


def test_without_repeats_auto_excludes_and_no_split_returns_a_seen_item(trained):
    module, datamodule, _ = trained
    assert module.info.repeat_rate == 0.0 and module.exclude_seen is True
    db = make_views()
    trainer = L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False)
    items = datamodule.graph.key_index["items"]
    for split in ("val", "test"):
        datamodule.predict_split = split
        outputs = trainer.predict(module, datamodule)
        seeds = datamodule.split_seeds(split)
        for out in outputs:
            ranked = [items.take(row[row >= 0].numpy()).tolist() for row in out["prediction"]]
            position = out["position"].numpy()
            assert_never_seen(db, seeds.ids.iloc[position], seeds.timestamps.iloc[position],
                              ranked)


def test_predictor_recommend_never_returns_a_seen_item(trained):
    _, _, checkpoint = trained
    predictor = rdl.Predictor.from_checkpoint(checkpoint)
    db = make_views()
    users, at = [f"u{i}" for i in range(24)], pd.Timestamp("2022-03-10")
    out = predictor.recommend(ids=users, at=at, k=5)
    ranked = out.groupby("user_id", sort=False)["item"].apply(list)
    assert list(ranked.index) == users and (ranked.map(len) == 5).all()
    assert_never_seen(db, users, [at] * len(users), ranked.tolist())


def test_item_columns_fill_the_head_and_older_checkpoints_load_without_them(trained,
                                                                            tmp_path):
    module, datamodule, checkpoint = trained
    columns = datamodule.graph["items"].tf.feat_dict
    features = module.model.item_features
    assert torch.equal(features.codes, columns[stype.categorical])
    # A checkpoint from before item_features: no such weights, no such setting.
    old = torch.load(checkpoint, map_location="cpu", weights_only=True)
    old["state_dict"] = {k: v for k, v in old["state_dict"].items() if ".item_features." not in k}
    del old["hyper_parameters"]["net"]["item_features"]
    add_checksum(old)
    torch.save(old, tmp_path / "old.ckpt")
    out = rdl.Predictor.from_checkpoint(str(tmp_path / "old.ckpt")).recommend(
        ids=["u0", "u1"], at=pd.Timestamp("2022-03-10"), k=5)
    assert out.groupby("user_id").size().tolist() == [5, 5]
    fresh = RelationalTask(**module_arguments({"channels": 8, "rec_head": module.net.rec_head}))
    L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False).test(
        fresh, datamodule, ckpt_path=str(tmp_path / "old.ckpt"), verbose=False)
    assert fresh.model.item_features is None and fresh.net.item_features is False


@pytest.mark.parametrize("trained", ["idgnn"], indirect=True)
def test_idgnn_recommends_items_outside_each_seeds_subgraph(trained):
    module, datamodule, _ = trained
    module.eval()
    outside = 0
    with torch.no_grad():
        for batch in datamodule.loader(datamodule.split_seeds("test")):
            _, top = module._loss_and_predictions(batch, module(batch), with_loss=False)
            inside = set(zip(batch.inputs.seed_index["items"].tolist(),
                             batch.inputs.node_id["items"].tolist()))
            outside += sum((s, i) not in inside for s, row in enumerate(top.tolist())
                           for i in row if i >= 0)
    assert outside > 0


@pytest.mark.parametrize("rec_head", ["two_tower", "idgnn"])
def test_with_repeats_seen_items_stay_and_get_a_learned_bonus(tmp_path, rec_head):
    make_views(repeat=True).save(tmp_path / "db")
    torch.manual_seed(0)
    module, datamodule, checkpoint = fit(tmp_path / "db", tmp_path, rec_head=rec_head)
    assert module.info.repeat_rate > 0.5 and module.exclude_seen is False
    start = torch.tensor([1.0, 1.0, 0.0]) / module.model.head.seen.gain
    assert not torch.allclose(module.model.head.seen.weight, start)  # learned
    metrics = L.Trainer(logger=False, enable_progress_bar=False,
                        enable_model_summary=False).test(module, datamodule, verbose=False)[0]
    assert metrics["test_map_at_5"] > 0.5  # users only re-view their own three items

    # The boost chosen on validation goes with the checkpoint to the Predictor and rdl test;
    # a number in the module's settings wins over it.
    stored = torch.load(checkpoint, weights_only=True)
    assert stored[SEEN_BOOST_KEY] == float(module.model.head.seen.boost) in BOOSTS
    stored[SEEN_BOOST_KEY] = 4.0
    torch.save(stored, tmp_path / "boosted.ckpt")
    boosted = str(tmp_path / "boosted.ckpt")
    assert float(rdl.Predictor.from_checkpoint(boosted).module.model.head.seen.boost) == 4.0
    for setting, expected in (("auto", 4.0), (3.0, 3.0)):
        again = RelationalTask(**module_arguments({"channels": 8, "rec_head": rec_head,
                                                   "seen_boost": setting}))
        L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False).test(
            again, datamodule, ckpt_path=boosted, verbose=False)
        assert float(again.model.head.seen.boost) == expected

    # A fit resumed from it trains without the boost, and chooses one again at its end.
    class BoostSeen(L.Callback):
        def __init__(self):
            self.boosts: list[float] = []

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            self.boosts.append(float(pl_module.model.head.seen.boost))

    seen_boosts = BoostSeen()
    resumed = RelationalTask(**module_arguments({"channels": 8, "rec_head": rec_head}))
    L.Trainer(max_epochs=3, logger=False, callbacks=[seen_boosts, TaskCheckpoint(
        dirpath=str(tmp_path / "resumed"))], enable_progress_bar=False,
              enable_model_summary=False).fit(resumed, datamodule, ckpt_path=boosted)
    assert seen_boosts.boosts and set(seen_boosts.boosts) == {0.0}
    assert float(resumed.model.head.seen.boost) in BOOSTS


def test_excluded_positives_warn_when_every_correct_item_was_seen():
    counter = ExcludedPositives()
    seen = SeenItems(torch.tensor([0, 1]), torch.tensor([3, 4]), torch.ones(2), torch.ones(2))
    batch = LabeledBatch(None, torch.tensor([3, 4]), torch.arange(2), torch.tensor([0, 1]), seen)
    counter.update(batch, num_items=10)
    with pytest.warns(UserWarning, match="exclude_seen hid every correct item of the val split"):
        counter.finish("val", lambda t: t)
    counter.update(LabeledBatch(None, torch.tensor([5]), torch.arange(1), torch.tensor([0]),
                                seen), num_items=10)
    counter.finish("val", lambda t: t)  # one positive left to find: no warning


def test_shallow_types_and_exclude_seen_come_from_the_config(no_repeats, tmp_path):
    module, _, _ = fit(no_repeats, tmp_path, shallow_types=["items"], exclude_seen=False)
    assert module.model.encoder.shallow["n_items"].num_embeddings == 30
    assert module.exclude_seen is False
    with pytest.raises(ValueError, match="exclude_seen='never' must be auto, true or false"):
        RelationalTask(exclude_seen="never")
    parser = LightningArgumentParser()
    parser.add_class_arguments(RelationalTask, "model")
    for value, expected in (("true", True), ("false", False), ("auto", "auto")):
        config = parser.parse_args(["--model.net.shallow_types", "[articles]",
                                    "--model.exclude_seen", value])
        assert config.model.net.shallow_types == ["articles"]
        assert config.model.exclude_seen == expected


def test_recommendation_scores_are_dense_for_both_heads(trained):
    module, datamodule, _ = trained
    batch = next(iter(datamodule.loader(datamodule.split_seeds("val"))))
    out = module(batch)
    assert out.shape == (batch.num_seeds, 30) and np.isfinite(out.detach().numpy()).all()
