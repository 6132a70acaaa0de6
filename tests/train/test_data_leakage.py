"""RelationalDataModule's leakage guard: warns by default, excludes on request."""
from __future__ import annotations

import warnings

import lightning as L
import pytest

import rdl
from rdl.tasks import Task
from rdl.train import RelationalDataModule, RelationalTask
from rdl.train.callbacks import TaskCheckpoint
from rdl.testing.shops import RETURNED, TEST, VAL, leaky_shop


@pytest.fixture(scope="module")
def shop_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("planted") / "shop"
    leaky_shop().save(path)
    return str(path)


def datamodule(source: str, tmp_path, **kwargs) -> RelationalDataModule:
    task = Task(query=RETURNED, val_timestamp=VAL, test_timestamp=TEST)
    return RelationalDataModule(source, task, cache_dir=str(tmp_path), **kwargs)


def features(dm: RelationalDataModule, table: str) -> set[str]:
    return {c for cols in dm.prepare_graph()[table].tf.col_names_dict.values() for c in cols}


def test_warns_once_and_keeps_the_columns(shop_dir, tmp_path):
    dm = datamodule(shop_dir, tmp_path, exclude_columns={"orders": ["refunded_at"]})
    with pytest.warns(UserWarning, match=r"(?s)orders\.rating: NULL in 100\.0%.*"
                                         r"Exclude them with data\.exclude_columns: "
                                         r"\{customers: \[last_order_at\], orders: \[rating\]\}"):
        dm.prepare_graph()
    assert "rating" in features(dm, "orders") and "refunded_at" not in features(dm, "orders")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Leakage guard")
        dm.prepare_graph()  # built once: no second warning


def test_exclude_drops_the_flagged_columns(shop_dir, tmp_path):
    dm = datamodule(shop_dir, tmp_path, leakage_guard="exclude")
    with pytest.warns(UserWarning, match="Leakage guard: excluded 3 feature column"):
        dm.prepare_graph()
    assert features(dm, "orders") & {"rating", "refunded_at"} == set()
    assert "last_order_at" not in features(dm, "customers")
    assert {"amount", "confirmed_at"} <= features(dm, "orders")
    # a checkpoint records them, so that rdl predict builds the same graph
    assert dm.data_description()["exclude_columns"] == {
        "customers": ["last_order_at"], "orders": ["rating", "refunded_at"]}


def test_off_skips_the_check(shop_dir, tmp_path):
    dm = datamodule(shop_dir, tmp_path, leakage_guard="off")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Leakage guard")
        dm.prepare_graph()
    assert "rating" in features(dm, "orders")


def test_unknown_mode_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="leakage_guard='strict' is not one of"):
        datamodule("nycflights13", tmp_path, leakage_guard="strict")


def test_predictor_leaves_out_what_training_excluded(shop_dir, tmp_path):
    dm = datamodule(shop_dir, tmp_path, leakage_guard="exclude", batch_size=8)
    checkpoint = TaskCheckpoint(dirpath=str(tmp_path))
    trainer = L.Trainer(max_epochs=1, logger=False, callbacks=[checkpoint],
                        enable_progress_bar=False, enable_model_summary=False)
    with pytest.warns(UserWarning, match="Leakage guard: excluded"):
        trainer.fit(RelationalTask(net={"channels": 8}), dm)
    predictor = rdl.Predictor.from_checkpoint(checkpoint.best_model_path)
    columns = {c for cols in predictor.graph["orders"].tf.col_names_dict.values() for c in cols}
    assert columns == {"amount", "channel", "confirmed_at"}


def test_the_guard_and_training_share_one_computation_of_the_training_labels(
        shop_dir, tmp_path, monkeypatch):
    """The guard reads the training labels of an event-level task; training then takes the
    same table instead of computing it again, and trains on what it would have computed."""
    computed = []
    table = Task.table

    def counted(self, db, split):
        computed.append(split)
        return table(self, db, split)

    monkeypatch.setattr(Task, "table", counted)
    guarded = datamodule(shop_dir, tmp_path)
    with pytest.warns(UserWarning, match="Leakage guard"):
        guarded.prepare_graph()
    seeds = guarded.split_seeds("train")
    assert computed == ["train"]
    unguarded = datamodule(shop_dir, tmp_path, leakage_guard="off")
    plain = unguarded.split_seeds("train")
    assert computed == ["train", "train"]
    for name in ("node", "time", "label"):
        assert getattr(seeds, name).equal(getattr(plain, name))
