"""Callbacks that follow the task: checkpoint and stop on its first metric,
and write predictions with the user's own ids."""
from __future__ import annotations

from pathlib import Path

import lightning as L
import numpy as np
import pandas as pd
import torch
from lightning.pytorch.callbacks import BasePredictionWriter, EarlyStopping, ModelCheckpoint

from rdl.tasks import types
from rdl.train.distributed import gather_on_rank_zero


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
    ``last.ckpt`` (the last epoch's, to resume from).

    When ``fit`` ends (at ``max_epochs`` or stopped early), the module gets
    the weights of ``best.ckpt`` back, so that a test or prediction that
    follows in the same process (``trainer.test(module)``) uses the best
    weights, as ``rdl test --ckpt_path .../best.ckpt`` does.

    Args:
        dirpath (str, optional): Where to write; default: the run's folder.
    """

    def __init__(self, dirpath: str | None = None) -> None:
        super().__init__(dirpath=dirpath, filename="best", save_last=True, save_top_k=1)

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        if stage == "fit":
            self.monitor, self.mode = monitored_metric(trainer, pl_module)
            self.kth_value = torch.tensor(torch.inf if self.mode == "min" else -torch.inf)
        super().setup(trainer, pl_module, stage)

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

    def on_fit_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.best_model_path:  # empty when no validation ran
            checkpoint = trainer.strategy.load_checkpoint(self.best_model_path)
            pl_module.load_state_dict(checkpoint["state_dict"])


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
        super().__init__(monitor="val_loss", patience=patience)

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        if stage == "fit":
            self.monitor, mode = monitored_metric(trainer, pl_module)
            self.mode = mode  # monitor_op follows the mode
            self.best_score = torch.tensor(-np.inf if mode == "max" else np.inf)
        super().setup(trainer, pl_module, stage)


class PredictionWriter(BasePredictionWriter):
    r"""Writes ``rdl predict`` results to parquet: entity id (the user's own
    key values), timestamp and prediction (for recommendation: rank and item).

    Under DDP every process predicts its shard of the seeds; the first
    process gathers all of them and writes the one file, in the order a
    single process would.

    Args:
        output (str): Parquet file to write. (default: ``"predictions.parquet"``)
    """

    def __init__(self, output: str = "predictions.parquet") -> None:
        super().__init__(write_interval="epoch")
        self.output = output

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
        Path(self.output).parent.mkdir(parents=True, exist_ok=True)
        frame.to_parquet(self.output, index=False)
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
