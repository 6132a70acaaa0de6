"""The LightningModule: the model from ``rdl.nn``, its loss, and the task's metrics."""
from __future__ import annotations

import hashlib
import time

import lightning as L
import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.utils import to_dense_batch

from rdl.nn import GraphSpec, RelationalModel, compile_model
from rdl.nn.ranking import (
    candidate_labels, candidate_loss, topk_candidates, topk_items, two_tower_loss,
)
from rdl.tasks import types
from rdl.train.data import LabeledBatch, RelationalDataModule
from rdl.train.info import CHECKPOINT_KEY, TaskInfo, task_arguments

HIGHER_IS_BETTER = {"auroc", "average_precision", "accuracy", "f1", "r2", "map", "precision",
                    "recall", "ndcg"}


class RelationalTask(L.LightningModule):
    r"""Trains a :class:`~rdl.nn.RelationalModel` on the task of the
    :class:`~rdl.train.RelationalDataModule` it is fitted with.

    The model is built in :meth:`configure_model` from the data module's graph
    (or, when loading a checkpoint, from the description stored in it), so a
    config only states the model's own settings.

    Under DDP, epoch-level values are reduced over all processes: the metrics
    are torchmetrics objects (AUROC and AP gather every prediction), the
    losses are seed-weighted means, and ``train_seeds`` sums the training
    seeds seen per epoch. ``train_loss`` per step is the first process's.
    ``epoch_seconds`` is the wall time of each training epoch (sampling
    included, validation excluded).

    Args:
        channels (int): Hidden channels. (default: :obj:`64`)
        gnn (str): ``"sage"``, ``"gat"`` or ``"hgt"``. (default: ``"sage"``)
        num_layers (int): Message passing layers. (default: :obj:`2`)
        aggr (str): Neighbour aggregation of ``"sage"``. (default: ``"mean"``)
        heads (int): Attention heads of ``"gat"``/``"hgt"``. (default: :obj:`4`)
        dropout (float): Dropout. (default: :obj:`0.0`)
        encoder (str): Row encoder ``"mlp"``, ``"resnet"`` or
            ``"fttransformer"``. (default: ``"mlp"``)
        encoder_layers (int): Layers of the row encoder. (default: :obj:`1`)
        head_layers (int): Layers of the output head. (default: :obj:`1`)
        rec_head (str): Recommendation head ``"two_tower"`` or ``"idgnn"``.
            (default: ``"two_tower"``)
        lr (float): Adam learning rate. (default: :obj:`0.003`)
        weight_decay (float): Adam weight decay. (default: :obj:`0.0`)
        compile (bool): Run the model under ``torch.compile(dynamic=True)``.
            (default: :obj:`False`)
    """

    def __init__(
        self,
        channels: int = 64,
        gnn: str = "sage",
        num_layers: int = 2,
        aggr: str = "mean",
        heads: int = 4,
        dropout: float = 0.0,
        encoder: str = "mlp",
        encoder_layers: int = 1,
        head_layers: int = 1,
        rec_head: str = "two_tower",
        lr: float = 0.003,
        weight_decay: float = 0.0,
        compile: bool = False,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.info: TaskInfo | None = None
        self.model: RelationalModel | None = None
        self.metrics = torch.nn.ModuleDict()

    # -- building ------------------------------------------------------------
    def configure_model(self) -> None:
        if self.model is not None:
            return
        datamodule = getattr(self.trainer, "datamodule", None) if self._trainer else None
        if not isinstance(datamodule, RelationalDataModule):
            raise ValueError("RelationalTask trains with a RelationalDataModule (rdl fit "
                             "--config ... sets one up); load trained models with "
                             "RelationalTask.load_from_checkpoint or rdl.Predictor")
        self.build(info_from_datamodule(datamodule))
        datamodule.batch_transform = self.model.packer

    def build(self, info: TaskInfo) -> None:
        """Creates the model, its batch transform and the metrics for ``info``."""
        hp = self.hparams
        self.info = info
        self.model = RelationalModel(
            info.spec, seed_type=info.seed_type, task_type=info.task_type,
            out_channels=info.out_channels, channels=hp.channels, gnn=hp.gnn,
            num_layers=hp.num_layers, aggr=hp.aggr, heads=hp.heads, dropout=hp.dropout,
            encoder=hp.encoder, encoder_layers=hp.encoder_layers, head_layers=hp.head_layers,
            item_type=info.item_type, rec_head=hp.rec_head,
        )
        self.run_model = compile_model(self.model) if hp.compile else self.model
        from rdl.tasks.metrics import get_metrics

        task = info.make_task()
        for stage in ("val", "test"):
            self.metrics[stage] = torch.nn.ModuleDict(get_metrics(
                task.metrics or types.DEFAULT_METRICS[info.task_type], info.task_type,
                num_classes=info.out_channels if info.task_type == types.MULTICLASS else None,
                k=task.top_k,
            ))

    @property
    def batch_transform(self):
        return self.model.packer

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint[CHECKPOINT_KEY] = self.info.to_plain()

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        if CHECKPOINT_KEY not in checkpoint:
            raise ValueError("This checkpoint was not written by rdl (it has no task description)")
        info = TaskInfo.from_plain(checkpoint[CHECKPOINT_KEY])
        if self.info is None:
            self.build(info)
        elif _fingerprint(info) != _fingerprint(self.info):
            raise ValueError(
                "The checkpoint was trained on another schema or task than this run's data: "
                f"checkpoint {_fingerprint(info)} vs data {_fingerprint(self.info)}"
            )

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr,
                                weight_decay=self.hparams.weight_decay)

    # -- steps ---------------------------------------------------------------
    def forward(self, batch: LabeledBatch) -> Tensor:
        return self.run_model(batch.inputs)

    def training_step(self, batch: LabeledBatch, batch_idx: int) -> Tensor:
        loss, _ = self._loss_and_predictions(batch, self(batch))
        self.log("train_loss", loss, batch_size=batch.num_seeds, prog_bar=True)
        self.log("train_seeds", float(batch.num_seeds), reduce_fx="sum", on_step=False,
                 on_epoch=True, sync_dist=True, batch_size=batch.num_seeds)
        return loss

    def on_train_epoch_start(self) -> None:
        self._epoch_started = time.perf_counter()

    def on_train_epoch_end(self) -> None:
        self.log("epoch_seconds", time.perf_counter() - self._epoch_started)

    def validation_step(self, batch: LabeledBatch, batch_idx: int) -> None:
        self._evaluate(batch, "val")

    def test_step(self, batch: LabeledBatch, batch_idx: int) -> None:
        self._evaluate(batch, "test")

    def predict_step(self, batch: LabeledBatch, batch_idx: int) -> dict[str, Tensor]:
        _, predictions = self._loss_and_predictions(batch, self(batch), with_loss=False)
        return {"position": batch.position, "prediction": predictions}

    def on_validation_epoch_end(self) -> None:
        self._log_metrics("val")

    def on_test_epoch_end(self) -> None:
        self._log_metrics("test")

    def _evaluate(self, batch: LabeledBatch, stage: str) -> None:
        loss, predictions = self._loss_and_predictions(batch, self(batch))
        self.log(f"{stage}_loss", loss, batch_size=batch.num_seeds, prog_bar=stage == "val",
                 sync_dist=True)
        target = self._metric_target(batch)
        for metric in self.metrics[stage].values():
            metric.update(predictions, target)

    def _log_metrics(self, stage: str) -> None:
        # Logged as Metric objects: Lightning computes them (torchmetrics syncs
        # their states across processes) and resets them after the epoch.
        for name, metric in self.metrics[stage].items():
            self.log(metric_key(stage, name), metric, prog_bar=True)

    def _metric_target(self, batch: LabeledBatch) -> Tensor:
        task_type = self.info.task_type
        if task_type == types.RECOMMENDATION:
            dense, _ = to_dense_batch(batch.y, batch.y_seed, fill_value=-1,
                                      batch_size=batch.num_seeds)
            return dense
        if task_type == types.BINARY:
            return batch.y.long()
        return batch.y

    def _loss_and_predictions(self, batch: LabeledBatch, out: Tensor,
                              with_loss: bool = True) -> tuple[Tensor | None, Tensor]:
        """Loss and metric-ready predictions (probabilities, values or top-k items)."""
        info = self.info
        loss = None
        if info.task_type == types.BINARY:
            logit = out.squeeze(-1)
            if with_loss:
                loss = F.binary_cross_entropy_with_logits(logit, batch.y)
            return loss, torch.sigmoid(logit)
        if info.task_type == types.REGRESSION:
            value = out.squeeze(-1)
            if with_loss:
                loss = F.mse_loss(value, (batch.y - info.target_mean) / info.target_std)
            return loss, value * info.target_std + info.target_mean
        if info.task_type == types.MULTICLASS:
            if with_loss:
                loss = F.cross_entropy(out, batch.y)
            return loss, out.softmax(-1)
        k = info.make_task().top_k or 10
        if self.model.rec_head == "two_tower":
            if with_loss:
                loss = two_tower_loss(out, batch.y_seed, batch.y)
            return loss, topk_items(out, k)
        seed = batch.inputs.seed_index[info.item_type]
        item = batch.inputs.node_id[info.item_type]
        if with_loss:
            label = candidate_labels(seed, item, batch.y_seed, batch.y,
                                     info.spec.num_nodes[info.item_type])
            loss = candidate_loss(out, label, seed, batch.num_seeds)
        return loss, topk_candidates(out, seed, item, batch.num_seeds, k)


def metric_key(stage: str, name: str) -> str:
    """The logged name of metric ``name`` (``map@10`` -> ``val_map_at_10``):
    loggers and checkpoint file names do not like ``@``."""
    return f"{stage}_{name.replace('@', '_at_')}"


def info_from_datamodule(datamodule: RelationalDataModule) -> TaskInfo:
    """The task and graph description of what ``datamodule`` serves."""
    graph = datamodule.prepare_graph()
    task = datamodule.task
    mean, std = 0.0, 1.0
    if task.task_type == types.REGRESSION:
        labels = datamodule.split_seeds("train").label
        mean, std = float(labels.mean()), float(labels.std().clamp(min=1e-6))
    classes = datamodule.classes
    return TaskInfo(
        spec=GraphSpec.from_data(graph),
        task=task_arguments(task),
        task_type=task.task_type,
        seed_type=datamodule.entity_type,
        item_type=datamodule.item_type,
        out_channels=len(classes) if classes else 1,
        classes=classes,
        target_mean=mean,
        target_std=std,
        data=datamodule.data_description(),
    )


def _fingerprint(info: TaskInfo) -> str:
    """Task, tables and feature columns, to tell checkpoints of other data apart."""
    spec = info.spec
    columns = sorted(f"{nt}.{col}:{getattr(st, 'value', st)}"
                     for nt, d in spec.col_names_dicts.items() for st, cols in d.items()
                     for col in cols)
    digest = hashlib.sha1("|".join(columns).encode()).hexdigest()[:8]
    return (f"task={info.task.get('query') or info.task.get('sql')!r}, "
            f"tables={sorted(spec.node_types)}, columns#{digest}")
