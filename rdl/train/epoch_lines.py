"""One line per epoch where no progress bar can redraw itself: ``rdl fit >
fit.log``, a pipe, a scheduler's log. A progress bar redraws its line with a
carriage return after every step, and a file keeps every one of them (a
six-epoch fit of 20 steps an epoch left 55 kB of them). Off a terminal, and
unless ``trainer.enable_progress_bar`` says otherwise, rdl turns the bar off;
whenever it is off, each epoch prints its mean training loss and its
validation metrics instead, and a validation inside an epoch
(``trainer.val_check_interval``) a line of its own, named by its step."""
from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any

import lightning as L
from torch import Tensor


def draws_progress() -> bool:
    """Whether a progress bar can redraw in place: standard error is a
    terminal, or a notebook's kernel shows it."""
    return sys.stderr.isatty() or "ipykernel" in sys.modules


def within_epoch(trainer: L.Trainer) -> bool:
    """Whether a validation of ``fit`` runs inside a training epoch (with
    ``trainer.val_check_interval`` below the epoch's batches), not after its
    last batch."""
    done = trainer.fit_loop.epoch_loop.batch_progress.current.completed
    return done < trainer.num_training_batches


class EpochLines(L.Callback):
    """Prints ``epoch N: train_loss ..., val_<metric> ... (S s)`` when each
    training epoch ends (after its validation), and ``epoch N, step K: ...``
    after a validation inside an epoch, on the first process only."""

    def __init__(self) -> None:
        self._start = time.perf_counter()
        self._loss_sum: Tensor | float = 0.0
        self._steps = 0
        self._validated_at: int | None = None  # the step of a check the epoch's line shows

    def on_train_epoch_start(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        self._start = time.perf_counter()
        self._loss_sum, self._steps = 0.0, 0

    def on_train_batch_end(self, trainer: L.Trainer, module: L.LightningModule, outputs: Any,
                           batch: Any, batch_idx: int) -> None:
        loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
        if isinstance(loss, Tensor):
            self._loss_sum = self._loss_sum + loss.detach()  # read once an epoch: no sync a step
            self._steps += 1

    def on_validation_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        if trainer.state.fn != "fit" or trainer.sanity_checking:
            return
        if not within_epoch(trainer):
            self._validated_at = trainer.global_step  # the epoch's line shows this check
        elif trainer.is_global_zero:  # a check inside the epoch: a line of its own
            self._print(trainer, f"epoch {trainer.current_epoch}, step {trainer.global_step}",
                        trainer.callback_metrics)

    def on_train_epoch_end(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        if trainer.is_global_zero:  # validation metrics only from a check at the epoch's end
            validated = self._validated_at == trainer.global_step
            self._print(trainer, f"epoch {trainer.current_epoch}",
                        trainer.callback_metrics if validated else {})

    def _print(self, trainer: L.Trainer, label: str, metrics: Mapping[str, Tensor]) -> None:
        mean_loss = float(self._loss_sum) / self._steps if self._steps else None
        print(epoch_line(label, mean_loss, metrics, time.perf_counter() - self._start),
              flush=True)


def epoch_line(label: str, train_loss: float | None, metrics: Mapping[str, Tensor],
               seconds: float) -> str:
    """The line for one epoch (or a check inside it): the mean training loss
    of the epoch so far, then the validation metrics by name, each to four
    significant digits; the seconds since the epoch began."""
    shown = {"train_loss": train_loss} if train_loss is not None else {}
    shown.update(sorted((name, float(value)) for name, value in metrics.items()
                        if name.startswith("val_") and value.numel() == 1))
    values = ", ".join(f"{name} {value:.4g}" for name, value in shown.items())
    return f"{label}: {values} ({seconds:.0f} s)" if values else f"{label} ({seconds:.0f} s)"
