"""Callbacks that follow the task: checkpoint and stop on its first metric,
resume where a checkpoint left off, and write predictions with the user's
own ids."""
from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterator

import lightning as L
import numpy as np
import pandas as pd
import torch
from lightning.pytorch.callbacks import BasePredictionWriter, EarlyStopping, ModelCheckpoint
from lightning.pytorch.utilities.warnings import PossibleUserWarning
from torch.utils.data import DataLoader, Sampler

from rdl.output_file import check_output_path, write_atomically
from rdl.tasks import task_types as types
from rdl.train.checkpoint import checked_weights
from rdl.train.distributed import gather_on_rank_zero
from rdl.train.epoch_lines import within_epoch


def monitored_metric(trainer: L.Trainer, module: L.LightningModule) -> tuple[str, str]:
    """The validation metric to select models by, and whether higher is better.

    Callbacks are set up before the module builds its model (and its
    ``info``), so a new run reads the task from the data module, which has
    already checked it against the database."""
    from rdl.train.module import HIGHER_IS_BETTER, metric_key

    if module.info is not None:
        task, task_type = module.info.make_task(), module.info.task_type
    else:
        task = trainer.datamodule.task
        task_type = task.task_type
    name = (task.metrics or types.DEFAULT_METRICS[task_type])[0]
    base = name.split("@")[0]
    return metric_key("val", name), "max" if base in HIGHER_IS_BETTER else "min"


class TaskCheckpoint(ModelCheckpoint):
    r"""Keeps ``best.ckpt`` by the task's first validation metric, and
    ``last.ckpt`` to resume from: written after every epoch and every
    ``every_n_steps`` optimizer steps, so that a long epoch cut short loses
    at most that many steps.

    When ``fit`` ends (at ``max_epochs`` or stopped early), the module gets
    the weights of ``best.ckpt`` back, so that a test or prediction that
    follows in the same process (``trainer.test(module)``) uses the best
    weights, as ``rdl test --ckpt_path .../best.ckpt`` does.
    :attr:`best_metrics` holds the validation metrics of the best epoch.

    Args:
        dirpath (str, optional): Where to write; default: the run's folder.
        every_n_steps (int): Also write ``last.ckpt`` every this many
            optimizer steps; ``0``: only after every epoch. 500 steps take
            1-8 minutes at 0.1-1 s a step, so a long epoch cut short loses
            minutes, not the epoch; writing a checkpoint of a few million
            weights takes well under a second. Models with large
            ``shallow_types`` embeddings write larger checkpoints: raise it
            for them. (default: :obj:`500`)
    """

    def __init__(self, dirpath: str | None = None, every_n_steps: int = 500) -> None:
        if every_n_steps < 0:
            raise ValueError(f"every_n_steps={every_n_steps} must be 0 (off) or more")
        super().__init__(dirpath=dirpath, filename="best", save_last=True, save_top_k=1)
        self.every_n_steps = every_n_steps
        self.best_metrics: dict[str, float] = {}
        self._step_saved = -1

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        if stage == "fit":
            self.monitor, self.mode = monitored_metric(trainer, pl_module)
            self.kth_value = torch.tensor(torch.inf if self.mode == "min" else -torch.inf)
        super().setup(trainer, pl_module, stage)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs,
                           batch, batch_idx: int) -> None:
        super().on_train_batch_end(trainer, pl_module, outputs, batch, batch_idx)
        step = trainer.global_step
        if (self.every_n_steps and step % self.every_n_steps == 0 and step != self._step_saved
                and not self._should_skip_saving_checkpoint(trainer)):
            self._step_saved = step
            saved = self._last_global_step_saved
            self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))
            # a validation at this same step must still be able to write best.ckpt
            self._last_global_step_saved = saved

    # Lightning >= 2.6 writes last.ckpt only along with a new best.ckpt; resuming
    # (--ckpt_path last) needs the last epoch's, so write it after every check.
    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        super().on_train_epoch_end(trainer, pl_module)
        if self._should_save_on_train_epoch_end(trainer):
            self._save_last_unless_saved(trainer)

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        super().on_validation_end(trainer, pl_module)
        if not self._should_save_on_train_epoch_end(trainer):
            self._save_last_unless_saved(trainer)

    def _save_last_unless_saved(self, trainer: L.Trainer) -> None:
        if not self._should_skip_saving_checkpoint(trainer):  # skipped: saved at this step
            self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))

    def _update_best_and_save(self, current: torch.Tensor, trainer: L.Trainer,
                              monitor_candidates: dict[str, torch.Tensor]) -> None:
        # With save_top_k=1, called exactly when a new best.ckpt is written.
        # a check inside an epoch (trainer.val_check_interval) is named by its step too
        step = {"step": trainer.global_step} if within_epoch(trainer) else {}
        self.best_metrics = {"epoch": trainer.current_epoch, **step} | {
            key: float(value) for key, value in monitor_candidates.items()
            if key.startswith("val_")}
        super()._update_best_and_save(current, trainer, monitor_candidates)

    def state_dict(self) -> dict:
        return super().state_dict() | {"best_metrics": self.best_metrics}

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        self.best_metrics = state_dict.get("best_metrics", {})

    def on_fit_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.best_model_path:  # empty when no validation ran
            checkpoint = trainer.strategy.load_checkpoint(self.best_model_path)
            pl_module.load_state_dict(checked_weights(checkpoint, self.best_model_path))


class TaskEarlyStopping(EarlyStopping):
    r"""Stops when the task's first validation metric stops improving;
    :class:`TaskCheckpoint` then puts the best weights back.

    Args:
        patience (int): Validation rounds without improvement before stopping:
            5, because a decaying learning rate often improves a model again
            late in training, while the best weights are kept anyway, so
            stopping only saves time. (default: :obj:`5`)
    """

    def __init__(self, patience: int = 5) -> None:
        # checked after each validation only, so that a fit without validation
        # (trainer.limit_val_batches: 0) trains to its end instead of failing
        super().__init__(monitor="val_loss", patience=patience, check_on_train_epoch_end=False)

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        if stage == "fit":
            self.monitor, mode = monitored_metric(trainer, pl_module)
            self.mode = mode  # monitor_op follows the mode
            self.best_score = torch.tensor(-np.inf if mode == "max" else np.inf)
        super().setup(trainer, pl_module, stage)


class ResumeInOrder(L.Callback):
    r"""Makes a fit resumed from a checkpoint train on the batches that an
    uninterrupted fit would have trained on next.

    Lightning restarts a training loader that cannot save its position at its
    first batch, so a fit resumed from a ``last.ckpt`` written mid-epoch would
    train on the first batches of the epoch again and never on the rest; and
    loader workers start drawing batches before Lightning sets the sampler's
    epoch. This restarts the loader in the resumed epoch's order, after the
    batches the checkpoint had done. The order of rdl's
    :class:`~rdl.train.distributed.ShardSampler` depends only on the seed and
    the epoch, and the default ``last`` neighbour sampling draws nothing at
    random, so a resumed fit then equals an uninterrupted one (``uniform``
    sampling and dropout draw other random numbers after a restart). Epoch
    totals logged with ``on_epoch`` (``train_seeds``, ``epoch_seconds``)
    count only the batches after a mid-epoch restart: Lightning does not
    keep them in checkpoints.
    """

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        loop = trainer.fit_loop
        loader = trainer.train_dataloader
        if (trainer.ckpt_path is None or not isinstance(loader, DataLoader)
                or loader.batch_sampler is None or math.isinf(trainer.num_training_batches)):
            return
        if hasattr(loader.sampler, "set_epoch"):
            loader.sampler.set_epoch(loop.epoch_progress.current.processed)
        done = loop.epoch_loop.batch_progress.current.processed % trainer.num_training_batches
        batches = loader.batch_sampler
        batches.sampler = _SkipFirst(batches.sampler, done * batches.batch_size)
        iter(loop._data_fetcher)  # a new iterator, from the sampler as set now
        # Lightning's warning that the loader cannot resume mid-epoch no longer holds
        warnings.filterwarnings("ignore", message="You're resuming from a checkpoint that ended "
                                "before the epoch ended", category=PossibleUserWarning)


class _SkipFirst(Sampler):
    """``sampler``, but its next pass starts after the first ``count`` indices."""

    def __init__(self, sampler: Sampler, count: int) -> None:
        self.sampler, self.count = sampler, count

    def __iter__(self) -> Iterator[int]:
        count, self.count = self.count, 0
        return itertools.islice(iter(self.sampler), count, None)

    def __len__(self) -> int:  # the epoch's, as Lightning counts the skipped batches as done
        return len(self.sampler)


class PredictionWriter(BasePredictionWriter):
    r"""Writes ``rdl predict`` results to parquet: entity id (the user's own
    key values), timestamp and prediction (for recommendation: rank and item).

    Under DDP every process predicts its shard of the seeds; the first
    process gathers all of them and writes the one file, in the order a
    single process would.

    The file is written whole or not at all (a failed write keeps the file
    there before), and an output that cannot be a file (an existing folder)
    is refused before predicting starts.

    Args:
        output (str): Parquet file to write. (default: ``"predictions.parquet"``)
    """

    def __init__(self, output: str = "predictions.parquet") -> None:
        super().__init__(write_interval="epoch")
        self.output = output

    def setup(self, trainer, pl_module, stage: str) -> None:
        """Refuses an output that cannot be a file, when predicting only: every
        command builds this writer, and ``fit`` must not trip on a folder that
        happens to bear the default name (a partitioned parquet dataset)."""
        if stage == "predict":
            check_output_path(self.output, "--prediction_writer.output", "predictions.parquet")

    def write_on_epoch_end(self, trainer, pl_module, predictions, batch_indices) -> None:
        local = [{key: value.cpu() for key, value in p.items()} for p in predictions]
        gathered = gather_on_rank_zero(local, trainer.global_rank, trainer.world_size)
        if gathered is None:
            return
        position = torch.cat([p["position"] for p in gathered])
        order = position.argsort()
        merged = [{"position": position[order],
                   "prediction": torch.cat([p["prediction"] for p in gathered])[order]}]
        datamodule = trainer.datamodule
        seeds = datamodule.split_seeds(datamodule.predict_split)
        frame = prediction_frame(pl_module, datamodule, seeds, merged)
        write_atomically(self.output, lambda file: frame.to_parquet(file, index=False))
        print(f"wrote {len(frame):,} predictions to {self.output}")


def prediction_frame(module, datamodule, seeds, predictions: list[dict]) -> pd.DataFrame:
    """Predict-step outputs -> one DataFrame in the user's ids."""
    position = torch.cat([p["position"] for p in predictions]).numpy()
    values = torch.cat([p["prediction"] for p in predictions])
    ids = seeds.ids.iloc[position].reset_index(drop=True)
    times = seeds.timestamps.iloc[position].reset_index(drop=True)
    id_col = seeds.ids.name or "id"
    info = module.info
    if info.task_type == types.RECOMMENDATION:
        k = values.size(1)
        items = datamodule.graph.key_index[info.item_type]
        flat = values.reshape(-1).numpy()
        return pd.DataFrame({
            id_col: np.repeat(ids.to_numpy(), k), "timestamp": np.repeat(times.to_numpy(), k),
            "rank": np.tile(np.arange(1, k + 1), len(ids)),
            "item": items.take(np.maximum(flat, 0)).where(flat >= 0),
        }).dropna(subset=["item"])
    if info.task_type == types.MULTICLASS:
        best = values.argmax(-1).numpy()
        return pd.DataFrame({id_col: ids, "timestamp": times,
                             "prediction": [info.classes[i] for i in best],
                             "probability": values.max(-1).values.numpy()})
    return pd.DataFrame({id_col: ids, "timestamp": times, "prediction": values.numpy()})
