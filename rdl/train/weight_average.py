"""An exponential moving average (EMA) of the weights, validated and saved in
place of the last weights: Lightning's ``EMAWeightAveraging`` with an off
switch, quiet about rdl's model being built in ``configure_model`` and about
checkpoints evaluated outside ``fit``, and resuming a run whatever the
setting was when its checkpoint was written."""
from __future__ import annotations

import warnings
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import EMAWeightAveraging
from lightning.pytorch.utilities import rank_zero_info

from rdl.train.checkpoint import CURRENT_KEY

AVERAGE_KEY = "averaging_state"  # where Lightning keeps the average's own state


class WeightAverage(EMAWeightAveraging):
    r"""An exponential moving average of the weights, validated and saved.

    Updated after every optimizer step. Validation scores it, so
    :class:`~rdl.train.callbacks.TaskCheckpoint` picks ``best.ckpt`` by the
    averaged weights and writes them, and ``rdl test``/``predict`` use them.
    Training goes on with the current weights, which checkpoints keep as
    well (checksummed like the others), so ``--ckpt_path last`` resumes both.

    Args:
        decay (float): How much of the average each update keeps; it then
            spans about ``1 / (1 - decay)`` steps. ``0`` turns the average off.
            ``0.99`` was ahead or level on nine of the ten bundled tasks and
            0.1 AUROC behind on flights_to_ord (benchmarks/REPORT.md), so it
            is not the default. (default: :obj:`0`)
    """

    def __init__(self, decay: float = 0.0) -> None:
        if not 0 <= decay < 1:
            raise ValueError(f"ema.decay={decay} must be at least 0 (0: off) and below 1")
        # buffers hold constants (offsets, column statistics): copied, not averaged
        super().__init__(decay=decay, use_buffers=False)
        self.decay = decay

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        if self.decay == 0:
            return
        with warnings.catch_warnings():  # rdl builds its model there on purpose
            warnings.filterwarnings("ignore", message=".*overrides the configure_model")
            super().setup(trainer, pl_module, stage)

    def should_update(self, step_idx: int | None = None, epoch_idx: int | None = None) -> bool:
        return self._average_model is not None and super().should_update(step_idx, epoch_idx)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self._average_model is not None:
            super().on_train_end(trainer, pl_module)

    def on_save_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule,
                           checkpoint: dict[str, Any]) -> None:
        if self._average_model is not None:
            super().on_save_checkpoint(trainer, pl_module, checkpoint)

    def on_load_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule,
                           checkpoint: dict[str, Any]) -> None:
        """In ``fit``: both sets of weights, or, from a checkpoint written
        with the average off, an average that starts with the resumed
        training. Outside ``fit`` the module already holds the averaged ones
        (``state_dict``)."""
        if self._average_model is not None and AVERAGE_KEY not in checkpoint:
            rank_zero_info("ema: the checkpoint holds no average of the weights (written with"
                           " the average off); the average starts with the resumed training")
            self._average_model.module.load_state_dict(checkpoint["state_dict"])  # copies
        elif self._average_model is not None:
            super().on_load_checkpoint(trainer, pl_module, checkpoint)
        elif trainer.state.fn == "fit" and CURRENT_KEY in checkpoint:
            # averaged when written, off now: train on from the current weights
            pl_module.load_state_dict(checkpoint[CURRENT_KEY])
