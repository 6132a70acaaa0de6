"""WeightAverage: validation and ``best.ckpt`` see the exponential moving
average of the weights, recomputed here by hand from the weights after every
optimizer step, while training goes on with (and ``last.ckpt`` keeps) the
current ones."""
from __future__ import annotations

import warnings

import lightning as L
import pytest
import torch

from rdl.tasks import Task
from rdl.train import RelationalDataModule, RelationalTask
from rdl.train.callbacks import TaskCheckpoint
from rdl.train.checkpoint import CheckpointError, checked_weights
from rdl.train.weight_average import WeightAverage

TASK = Task(query="PREDICT EXISTS(flights.* WHERE flights.dest = 'ORD', 0, 30, days) "
                  "FOR EACH planes.tailnum",
            val_timestamp="2013-10-01", test_timestamp="2013-11-01")
DECAY = 0.8
STEPS = 7  # optimizer steps per epoch: 400 seeds in batches of 64


class StepWeights(L.Callback):
    """The parameters after every optimizer step, and those each validation saw."""

    def __init__(self) -> None:
        self.steps: list[dict[str, torch.Tensor]] = []
        self.validated: list[dict[str, torch.Tensor]] = []
        self.marks: list[dict[str, torch.Tensor]] = []  # categories trained, after each step
        self.validated_marks: list[dict[str, torch.Tensor]] = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.steps.append(_parameters(pl_module))
        self.marks.append(_marks(pl_module))

    def on_validation_batch_start(self, trainer, pl_module, batch, batch_idx, *_) -> None:
        if batch_idx == 0 and not trainer.sanity_checking:
            self.validated.append(_parameters(pl_module))
            self.validated_marks.append(_marks(pl_module))


def _parameters(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in module.named_parameters()}


def _marks(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: b.clone() for name, b in module.named_buffers() if name.endswith("trained")}


def by_hand(steps: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """The average after ``steps``: the first step's weights, then
    ``decay * average + (1 - decay) * weights`` after each later one."""
    average = dict(steps[0])
    for weights in steps[1:]:
        average = {k: DECAY * average[k] + (1 - DECAY) * weights[k] for k in average}
    return average


def _datamodule(where) -> RelationalDataModule:
    return RelationalDataModule("nycflights13", TASK, num_neighbors=[4, 2], batch_size=64,
                                max_seeds=400, min_steps_per_epoch=STEPS,
                                cache_dir=str(where / "cache"))


def _fit(where, decay: float, epochs: int = 2):
    L.seed_everything(0)
    datamodule = _datamodule(where)
    checkpoint, spy = TaskCheckpoint(dirpath=str(where / "checkpoints")), StepWeights()
    trainer = L.Trainer(max_epochs=epochs, logger=False, num_sanity_val_steps=0,
                        callbacks=[checkpoint, WeightAverage(decay), spy],
                        enable_progress_bar=False, enable_model_summary=False)
    module = RelationalTask(net={"channels": 8}, blend_baseline=False)
    trainer.fit(module, datamodule)
    return module, checkpoint, spy


@pytest.fixture(scope="module")
def averaged(tmp_path_factory):
    return _fit(tmp_path_factory.mktemp("averaged"), DECAY)


def assert_close(got: dict, want: dict) -> None:
    assert set(want) <= set(got)
    for name in want:
        torch.testing.assert_close(got[name], want[name], rtol=1e-5, atol=1e-6, msg=name)


def test_each_validation_sees_the_average_of_the_steps_so_far(averaged):
    _, _, spy = averaged
    assert len(spy.steps) == 2 * STEPS and len(spy.validated) == 2
    for epoch, seen in enumerate(spy.validated):
        average = by_hand(spy.steps[:(epoch + 1) * STEPS])
        assert_close(seen, average)
        current = spy.steps[(epoch + 1) * STEPS - 1]
        assert any(not torch.allclose(seen[k], current[k]) for k in seen)  # not the last step's


def test_last_ckpt_keeps_both_and_training_went_on_unaveraged(averaged):
    module, checkpoint, spy = averaged
    last = torch.load(checkpoint.last_model_path, weights_only=True)
    assert_close(checked_weights(last), by_hand(spy.steps))
    assert_close(last["current_model_state"], spy.steps[-1])
    best = torch.load(checkpoint.best_model_path, weights_only=True)
    assert_close(checked_weights(best), by_hand(spy.steps[:(best["epoch"] + 1) * STEPS]))
    assert_close(module.state_dict(), checked_weights(best))  # fit ends on the best weights


def test_the_average_reads_the_categories_training_read(averaged):
    """Validation and the checkpoints read the average's buffers (Lightning swaps and saves
    them with its weights); they must mark the categories training read (torch's
    AveragedModel copies buffers it does not average at every update), or the average
    would read them as never trained (rdl.nn.trained_categories)."""
    module, checkpoint, spy = averaged
    assert len(spy.validated_marks) == 2 and sum(int(m.sum()) for m in spy.marks[0].values())
    for epoch, seen in enumerate(spy.validated_marks):
        assert_equal(seen, spy.marks[(epoch + 1) * STEPS - 1])
    best = torch.load(checkpoint.best_model_path, weights_only=True)
    assert_equal(checked_weights(best), spy.marks[(best["epoch"] + 1) * STEPS - 1])
    assert_equal(checked_weights(torch.load(checkpoint.last_model_path, weights_only=True)),
                 spy.marks[-1])


def assert_equal(got: dict, marks: dict) -> None:
    for name, want in marks.items():
        assert torch.equal(got[name], want), name


def test_a_flipped_training_weight_is_a_corrupt_checkpoint(averaged):
    _, checkpoint, _ = averaged
    last = torch.load(checkpoint.last_model_path, weights_only=True)
    name = next(iter(last["current_model_state"]))
    last["current_model_state"][name] = last["current_model_state"][name] + 1
    with pytest.raises(CheckpointError, match="corrupt"):
        checked_weights(last, "last.ckpt")


def test_decay_zero_averages_nothing(tmp_path):
    module, checkpoint, spy = _fit(tmp_path, 0.0, epochs=1)
    last = torch.load(checkpoint.last_model_path, weights_only=True)
    assert "current_model_state" not in last
    assert_close(checked_weights(last), spy.steps[-1])
    assert_close(spy.validated[0], spy.steps[-1])


class StartWeights(L.Callback):
    """The parameters training starts from."""

    def on_train_start(self, trainer, pl_module) -> None:
        self.weights = _parameters(pl_module)


def test_a_fit_resumed_with_the_average_off_trains_on_from_the_training_weights(averaged,
                                                                               tmp_path):
    module, checkpoint, _ = averaged
    last = torch.load(checkpoint.last_model_path, weights_only=True)
    start = StartWeights()
    trainer = L.Trainer(max_epochs=3, logger=False, num_sanity_val_steps=0, limit_train_batches=1,
                        limit_val_batches=1, callbacks=[WeightAverage(0.0), start],
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(RelationalTask(net={"channels": 8}, blend_baseline=False),
                module.trainer.datamodule, ckpt_path=checkpoint.last_model_path)
    assert_close(last["current_model_state"], start.weights)
    averaged = checked_weights(last)
    assert any(not torch.allclose(start.weights[k], averaged[k]) for k in start.weights)


def test_a_fit_resumed_with_the_average_on_starts_it_from_the_resumed_training(tmp_path,
                                                                               caplog):
    _, checkpoint, _ = _fit(tmp_path, 0.0, epochs=1)  # no average in its checkpoints
    spy = StepWeights()
    trainer = L.Trainer(max_epochs=2, logger=False, num_sanity_val_steps=0, limit_val_batches=1,
                        callbacks=[WeightAverage(DECAY), spy], enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not created with WeightAveraging")
        trainer.fit(RelationalTask(net={"channels": 8}, blend_baseline=False),
                    _datamodule(tmp_path), ckpt_path=checkpoint.last_model_path)
    assert "the average starts with the resumed training" in caplog.text
    assert len(spy.steps) == STEPS and len(spy.validated) == 1
    assert_close(spy.validated[0], by_hand(spy.steps))


@pytest.mark.parametrize("decay", [-0.1, 1.0])
def test_a_decay_outside_zero_to_one_is_refused(decay):
    with pytest.raises(ValueError, match=f"ema.decay={decay}"):
        WeightAverage(decay)
