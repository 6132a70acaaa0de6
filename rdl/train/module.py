"""The LightningModule: the model from ``rdl.nn``, its loss, and the task's metrics."""
from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Literal

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.utilities import rank_zero_info, rank_zero_warn
from torch import Tensor
from torch_geometric.utils import to_dense_batch

from rdl.graph import safe_name
from rdl.nn import GraphSpec, ModelSettings, RelationalModel, compile_model
from rdl.nn.settings import settings_names
from rdl.nn.trained_categories import share_trained_categories
from rdl.tasks import task_types as types
from rdl.tasks.history import describe_exclude_seen, resolve_exclude_seen
from rdl.train.after_fit import ChoicesAfterFit
from rdl.train.baseline_features import (
    BASELINE_FEATURES_KEY,
    BaselineFeatures,
    NoBaselineFeatures,
    check_baseline_features_setting,
    resolve_baseline_features,
    too_wide,
)
from rdl.train.blend import BaselineBlend
from rdl.train.checkpoint import CheckpointError, add_checksum, checked_weights
from rdl.train.compile_choice import CompileSetting, check_compile_setting, choose_compile
from rdl.train.data import LabeledBatch, RelationalDataModule
from rdl.train.info import CHECKPOINT_KEY, TaskInfo, task_arguments
from rdl.train.optim import (
    AUTO_LR, AUTO_LR_CHANNELS, adamw, check_lr_setting, resolve_lr, warmup_cosine_schedule,
)
from rdl.train.past_labels import shows_past_labels
from rdl.train.recommend import ExcludedPositives, loss_and_topk
from rdl.train.seen_boost import check_boost_setting

HIGHER_IS_BETTER = {"auroc", "average_precision", "accuracy", "f1", "r2", "map", "precision",
                    "recall", "ndcg"}


class RelationalTask(ChoicesAfterFit, L.LightningModule):
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
        net (ModelSettings): The model's settings (the config's
            ``model.net:`` section: ``channels``, ``gnn``, ``num_layers``,
            ``aggr``, ...; see :class:`~rdl.nn.ModelSettings`).
            (default: the defaults of :class:`~rdl.nn.ModelSettings`)
        exclude_seen (bool or str): Recommendation: never recommend an item
            the entity already had (``true``), keep such items and learn a
            bonus for them (``false``), or decide by the share of training
            positives the entity had already (``auto``: exclude below 5%).
            (default: ``"auto"``)
        temporal_stats (bool): Give every node its temporal in-degrees, window
            counts and recency per incoming edge type, counted over all its
            neighbours, not only the sampled ones. (default: :obj:`True`)
        lr (float or str): Peak AdamW learning rate. ``"auto"``: 0.003 for
            up to 64 hidden channels and ``0.003 * 64 / channels`` above, since
            Adam moves every weight by about ``lr`` a step and a layer's output
            by about ``lr`` times its width. At 0.003, channels 128 with 3
            layers lost 2.7 test AUROC points to the default on the 1k-customer
            shop; at 0.0015 it gained 0.5 (benchmarks/REPORT.md). A number is used
            as given. (default: ``"auto"``)
        weight_decay (float): AdamW's decoupled weight decay of the weight
            matrices and embeddings (biases and norms are not decayed, as in
            nanoGPT). Each step shrinks them by ``lr * weight_decay``: about
            nothing over a few hundred steps, a mild pull towards zero over
            the hundreds of thousands of a large database. (default: :obj:`0.01`)
        lr_schedule (str): ``"cosine"``: the learning rate rises linearly
            over the first ``warmup`` of the optimizer steps, then follows a
            cosine down to ``lr * lr_floor`` at the last step (the steps are
            counted by ``trainer.max_epochs``/``max_steps``; with neither,
            training runs at a constant ``lr``). ``"constant"``: ``lr``
            throughout. Constant is the default: over seeds 0-2 it gave test
            AUROC 0.884 vs 0.847 (cosine) on retail fraud (3 epochs) and
            0.743 vs 0.736 on the 1k-customer shop. (default: ``"constant"``)
        warmup (float): Share of the optimizer steps spent warming up; at
            least 5 steps (at most half of them) unless :obj:`0`.
            (default: :obj:`0.05`)
        lr_floor (float): Learning rate at the end of the cosine, as a
            fraction of ``lr``. (default: :obj:`0.1`)
        compile (bool or str): Run the model under
            ``torch.compile(dynamic=True)``. ``"auto"`` decides when fit
            starts and says why: always on a CUDA GPU; on the CPU only for fits of
            at least 2,000 optimizer steps, since a cold compile (about a
            minute) repays itself only after about 1,800 (see
            :mod:`rdl.train.compile_choice`). ``rdl test``/``predict`` run
            eager under ``"auto"``. (default: ``"auto"``)
        blend_baseline (bool): Binary and regression tasks: when fit ends,
            train LightGBM on the baseline's aggregate features and blend it
            with the GNN, by a weight chosen on the validation split (see
            :mod:`rdl.train.blend`); ``rdl test``, ``rdl predict`` and the
            Predictor then use the blend. On by default: over seeds 0-2 it
            never lost to the GNN alone by more than 0.05 points of test
            AUROC and gained up to 1.4 (retail fraud 0.898 vs 0.884, LightGBM
            0.893; the 1k-customer shop 0.755 vs 0.743, LightGBM 0.750); see
            benchmarks/REPORT.md. (default: :obj:`True`)
        baseline_features (bool or str): Classification and regression
            tasks: give the model the baseline's aggregate features of each
            seed (counts, sums and recencies per past window, at the seed's
            time) as an input beside its sampled subgraph (see
            :mod:`rdl.train.baseline_features`). ``"auto"``: on for binary
            tasks with fewer than 10,000 training seeds and at least 5 of
            the rarer class per aggregate, where it helped both small shops
            of the benchmark; elsewhere it helped some tasks and hurt others
            (benchmarks/REPORT.md). (default: :obj:`"auto"`)
        seen_boost (float or str): Recommendation with seen items kept: how
            much more an entity's own past items count, as ``boost * log(1 +
            count)`` on top of the learned bonus. ``"auto"``: chosen when fit
            ends from 0-16 by the first validation metric (see
            :mod:`rdl.train.seen_boost`); a number fixes it. (default: ``"auto"``)
        popularity_boost (float or str): Recommendation: how much what was
            popular in the target window before the seed's time counts, as
            ``boost * log(1 + rows)`` added to every item's score.
            ``"auto"``: chosen when fit ends from 0-64 by the first
            validation metric (see :mod:`rdl.train.popularity`); a number
            fixes it. (default: ``"auto"``)
    """

    def __init__(
        self,
        net: ModelSettings = ModelSettings(),
        exclude_seen: bool | Literal["auto"] = "auto",
        lr: float | Literal["auto"] = "auto",
        weight_decay: float = 0.01,
        lr_schedule: Literal["cosine", "constant"] = "constant",
        warmup: float = 0.05,
        lr_floor: float = 0.1,
        compile: CompileSetting = "auto",
        blend_baseline: bool = True,
        baseline_features: bool | Literal["auto"] = "auto",
        seen_boost: float | Literal["auto"] = "auto",
        popularity_boost: float | Literal["auto"] = "auto",
    ) -> None:
        super().__init__()
        check_compile_setting(compile)
        check_lr_setting(lr)
        if lr_schedule not in ("cosine", "constant"):
            raise ValueError(f"lr_schedule={lr_schedule!r} is not 'cosine' or 'constant'")
        if not (0.0 <= warmup < 1.0 and 0.0 <= lr_floor <= 1.0):
            raise ValueError(f"warmup={warmup} must lie in [0, 1) and lr_floor={lr_floor} "
                             "in [0, 1] (both are fractions)")
        resolve_exclude_seen(exclude_seen, 0.0)  # raises for anything but auto/true/false
        check_baseline_features_setting(baseline_features)
        check_boost_setting("seen_boost", seen_boost, "the learned bonus alone")
        check_boost_setting("popularity_boost", popularity_boost, "the model's own ranking")
        self.net = ModelSettings.coerce(net)
        # Plain values only: checkpoints are read with torch.load(weights_only=True).
        self.save_hyperparameters({"net": self.net.to_plain(), "exclude_seen": exclude_seen,
                                   "lr": lr, "weight_decay": weight_decay,
                                   "lr_schedule": lr_schedule, "warmup": warmup,
                                   "lr_floor": lr_floor, "compile": compile,
                                   "blend_baseline": blend_baseline,
                                   "baseline_features": baseline_features,
                                   "seen_boost": seen_boost,
                                   "popularity_boost": popularity_boost})
        self.info: TaskInfo | None = None
        self.model: RelationalModel | None = None
        self.metrics = torch.nn.ModuleDict()
        self.blend: BaselineBlend | None = None
        self.baseline_features: BaselineFeatures | None = None
        self.popularity_boost = 0.0
        self._epoch_started: float | None = None  # None in an epoch resumed mid-way

    # -- building ------------------------------------------------------------
    def configure_model(self) -> None:
        if self.model is not None:
            return
        datamodule = getattr(self.trainer, "datamodule", None) if self._trainer else None
        if not isinstance(datamodule, RelationalDataModule):
            raise ValueError("RelationalTask trains with a RelationalDataModule (rdl fit "
                             "--config ... sets one up); load trained models with "
                             "RelationalTask.load_from_checkpoint or rdl.Predictor")
        hops = len(datamodule.num_neighbors)
        if hops != self.net.num_layers:
            rank_zero_warn(f"data.num_neighbors samples {hops} hops but model.net.num_layers is "
                           f"{self.net.num_layers}: give one fan-out per layer (e.g. "
                           f"num_neighbors: {[16] * self.net.num_layers})")
        info = info_from_datamodule(datamodule)
        if self.trainer.state.fn == "fit":  # elsewhere the checkpoint brings its own
            self._fit_baseline_features(datamodule, info.task_type)
        self.build(info)
        self.model.fill_item_features(datamodule.graph)
        if self.model.item_features is not None:
            rank_zero_info(f"item_features: the embedding of each {info.item_type} row reads its "
                           f"{', '.join(self.model.item_features.columns)} "
                           "(model.net.item_features: false to score items without them)")

    def _fit_baseline_features(self, datamodule: RelationalDataModule, task_type: str) -> None:
        """Scales the training seeds' baseline features, where the setting
        (``auto``: by task type and size) feeds them to the model."""
        setting = self.hparams.get("baseline_features", False)
        train = datamodule.split_seeds("train")
        on, why = resolve_baseline_features(setting, task_type, len(train))
        if not on:
            if why is not None:
                rank_zero_info(why)
            return
        try:
            self.baseline_features, train.features = BaselineFeatures.fit(
                datamodule.db, datamodule.task, train, datamodule.exclusions,
                category_min_rows=datamodule.entity_category_min_rows)
        except NoBaselineFeatures as exc:
            if setting is True:
                raise NoBaselineFeatures(f"model.baseline_features: true, but {exc}; set it "
                                         "to false or auto") from None
            rank_zero_info(f"baseline_features auto: off ({exc})")
            return
        if setting == "auto":
            crowded = too_wide(train.label, self.baseline_features.width)
            if crowded is not None:
                rank_zero_info(crowded)
                self.baseline_features = train.features = None
                return
            rank_zero_info(why)
        rank_zero_info(f"baseline_features: {self.baseline_features.width} aggregates of "
                       "each seed feed the model")

    def build(self, info: TaskInfo) -> None:
        """Creates the model, its batch transform and the metrics for ``info``."""
        hp = self.hparams
        self.info = info
        net = self._resolve_aggr(info.task_type)
        self.model = RelationalModel(
            info.spec, seed_type=info.seed_type, task_type=info.task_type,
            out_channels=info.out_channels, item_type=info.item_type, settings=net,
            shallow_types=_node_types(net.shallow_types),
            past_labels=net.past_labels and shows_past_labels(info.make_task(), info.task_type),
            seed_features=self.baseline_features.width if self.baseline_features else 0,
        )
        self.exclude_seen = False
        if info.task_type == types.RECOMMENDATION:
            self.exclude_seen = resolve_exclude_seen(hp.exclude_seen, info.repeat_rate)
            rank_zero_info(describe_exclude_seen(hp.exclude_seen, info.repeat_rate,
                                                 self.exclude_seen))
            self.excluded = ExcludedPositives()
            self.set_seen_boost(0.0 if hp.get("seen_boost", "auto") == "auto"
                                else float(hp.seen_boost))
            setting = hp.get("popularity_boost", "auto")
            self.popularity_boost = 0.0 if setting == "auto" else float(setting)
        self._use_compiled(hp.compile is True)
        from rdl.tasks.metrics import get_metrics

        task = info.make_task()
        for stage in ("val", "test"):
            self.metrics[stage] = torch.nn.ModuleDict(get_metrics(
                task.metrics or types.DEFAULT_METRICS[info.task_type], info.task_type,
                num_classes=info.out_channels if info.task_type == types.MULTICLASS else None,
                k=task.top_k,
            ))

    def _resolve_aggr(self, task_type: str) -> ModelSettings:
        """The settings with ``aggr: auto`` made concrete, stored so that the
        checkpoint carries the aggregation its weights were trained with."""
        net = self.net.resolved(task_type)
        if net.aggr != self.net.aggr:
            if net.gnn == "sage":  # the other GNNs do not aggregate this way
                rank_zero_info(f"aggr auto: {net.aggr} for a {task_type} task (mean+last for "
                               "binary tasks, mean for others); model.net.aggr sets it")
            self.net = net
            self.hparams["net"] = net.to_plain()
        return net

    @property
    def batch_transform(self):
        return self.model.packer

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        checkpoint[CHECKPOINT_KEY] = self.info.to_plain()
        if self.baseline_features is not None:
            checkpoint[BASELINE_FEATURES_KEY] = self.baseline_features.to_plain()
        self.save_choices(checkpoint)
        add_checksum(checkpoint)

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        path = self._trainer.ckpt_path if self._trainer is not None else None
        if CHECKPOINT_KEY not in checkpoint:
            raise CheckpointError(f"{path or 'The checkpoint'} was not written by rdl (it has "
                                  "no task description)")
        checkpoint["state_dict"] = checked_weights(checkpoint, path)
        info = TaskInfo.from_plain(checkpoint[CHECKPOINT_KEY])
        if self.info is None:
            self.baseline_features = stored_baseline_features(checkpoint)
            self.build(info)
        elif (why := info.difference(self.info)) is not None:
            raise ValueError("The checkpoint was trained on another schema or task than this "
                             f"run's data: {why}")
        else:
            self.match_baseline_features(stored_baseline_features(checkpoint))
        self.match_weights(checkpoint["state_dict"])
        self.adopt_choices(checkpoint)

    def match_baseline_features(self, stored: BaselineFeatures | None) -> None:
        """Reads the baseline features the checkpoint's model was trained
        with (or none), rebuilding the model where this run built it for
        others: ``auto`` decides at the first fit, and a checkpoint written
        before ``auto`` existed, or with another setting, keeps its own."""
        if stored == self.baseline_features:
            return
        if self.trainer.state.fn == "fit":  # the optimizer already holds this model
            setting = "true" if stored is not None else "false"
            raise ValueError(f"The checkpoint's model was trained with model.baseline_features: "
                             f"{setting}; resume it with that setting")
        self.baseline_features = stored
        self.build(self.info)

    def match_weights(self, state_dict: dict) -> None:
        """Rebuilds the model without item features when ``state_dict`` has
        none: it was written before ``model.net.item_features`` existed (or
        without them), and scores items as it was trained."""
        if self.model.item_features is None or any(".item_features." in key
                                                    for key in state_dict):
            return
        self.net = replace(self.net, item_features=False)
        self.hparams["net"] = self.net.to_plain()
        self.build(self.info)

    def configure_optimizers(self) -> torch.optim.Optimizer | dict:
        """AdamW, with the learning rate of ``lr_schedule`` set every step."""
        hp = self.hparams
        lr = resolve_lr(hp.lr, self.net.channels)
        if hp.lr == "auto" and lr != AUTO_LR:
            rank_zero_info(f"lr auto: {lr:g} for {self.net.channels} channels ({AUTO_LR:g} up "
                           f"to {AUTO_LR_CHANNELS} channels, {AUTO_LR:g} * {AUTO_LR_CHANNELS} / "
                           "channels above); model.lr sets it")
        optimizer = adamw([p for p in self.parameters() if p.requires_grad], lr,
                          hp.weight_decay)
        if hp.lr_schedule == "constant":
            return optimizer
        total = self.trainer.estimated_stepping_batches
        if not math.isfinite(total):
            rank_zero_warn("lr_schedule='cosine' needs a known number of steps "
                           "(trainer.max_epochs or trainer.max_steps); training at a constant lr")
            return optimizer
        schedule = warmup_cosine_schedule(optimizer, int(total), hp.warmup, hp.lr_floor)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": schedule, "interval": "step"}}

    def on_fit_start(self) -> None:
        self.forget_choices()
        for split in ("train", "val"):
            self._attach_features(split, again=split != "train")
        if self.hparams.compile == "auto":  # now the number of steps is known
            link_types = len(self.trainer.datamodule.graph.edge_types)
            link_layers = link_types * self.model.num_layers
            on, why = choose_compile("auto", self.device.type,
                                     self.trainer.estimated_stepping_batches, link_layers)
            rank_zero_info(why)
            self._use_compiled(on)

    def _use_compiled(self, on: bool) -> None:
        # Not a registered submodule: the weights are saved once, under `model.`,
        # whichever way the model runs.
        object.__setattr__(self, "run_model", compile_model(self.model) if on else self.model)

    def on_validation_start(self) -> None:
        if self.trainer.state.fn == "validate":  # not the validation rounds of fit
            self._attach_features("val")
            self._attach_prior("val")

    def on_test_start(self) -> None:
        split = getattr(self.trainer.datamodule, "test_split", "test")
        self._attach_features(split)
        self._attach_prior(split)

    def on_predict_start(self) -> None:
        self._attach_features(self.trainer.datamodule.predict_split)
        self._attach_prior(self.trainer.datamodule.predict_split)

    def _attach_features(self, split: str, again: bool = True) -> None:
        """Gives the seeds of ``split`` the baseline features this model reads
        (computed again unless ``again`` is off and they have some)."""
        datamodule = self.trainer.datamodule
        if datamodule is None:
            return
        seeds = datamodule.split_seeds(split)
        if self.baseline_features is None:
            seeds.features = None
        elif again or seeds.features is None:
            seeds.features = self.baseline_features.compute(datamodule.db, datamodule.task, seeds)

    def _attach_prior(self, split: str) -> None:
        """Gives the seeds of ``split`` this module's LightGBM outputs (another
        module may have evaluated the same seeds before)."""
        datamodule = self.trainer.datamodule
        if datamodule is None:
            return
        seeds = datamodule.split_seeds(split)
        seeds.prior = None if self.blend is None else self.blend.prior(
            datamodule.db, datamodule.task, seeds)

    @torch.no_grad()
    def gnn_scores(self, datamodule: RelationalDataModule, seeds) -> Tensor:
        """The GNN's logit or value of every seed of ``seeds``, in order."""
        was_training = self.training
        self.eval()
        scores = torch.empty(len(seeds))
        for batch in datamodule.loader(seeds):
            batch = self.transfer_batch_to_device(batch, self.device, 0)
            scores[batch.position.cpu()] = self._score(self(batch)).float().cpu()
        self.train(was_training)
        return scores

    def _score(self, out: Tensor) -> Tensor:
        """Binary: the logit; regression: the value in the label's units."""
        value = out.squeeze(-1)
        if self.info.task_type == types.REGRESSION:
            return value * self.info.target_std + self.info.target_mean
        return value

    def _blended(self, score: Tensor, batch: LabeledBatch) -> Tensor:
        if self.blend is None or batch.prior is None:
            return score
        return self.blend.combine(score, batch.prior)

    # -- steps ---------------------------------------------------------------
    def forward(self, batch: LabeledBatch) -> Tensor:
        return self.run_model(batch.inputs)

    def training_step(self, batch: LabeledBatch, batch_idx: int) -> Tensor:
        loss, _ = self._loss_and_predictions(batch, self(batch), with_predictions=False)
        self.log("train_loss", loss, batch_size=batch.num_seeds, prog_bar=True)
        self.log("lr", self.optimizers().param_groups[0]["lr"], batch_size=batch.num_seeds)
        self.log("train_seeds", float(batch.num_seeds), reduce_fx="sum", on_step=False,
                 on_epoch=True, sync_dist=True, batch_size=batch.num_seeds)
        return loss

    def on_train_batch_end(self, outputs, batch: LabeledBatch, batch_idx: int) -> None:
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            share_trained_categories(self.model)

    def on_train_epoch_start(self) -> None:
        self._epoch_started = time.perf_counter()

    def on_train_epoch_end(self) -> None:
        if self._epoch_started is not None:
            self.log("epoch_seconds", time.perf_counter() - self._epoch_started)
        self._epoch_started = None

    def validation_step(self, batch: LabeledBatch, batch_idx: int) -> None:
        self._evaluate(batch, "val")

    def test_step(self, batch: LabeledBatch, batch_idx: int) -> dict[str, Tensor]:
        return self._evaluate(batch, "test")

    def predict_step(self, batch: LabeledBatch, batch_idx: int) -> dict[str, Tensor]:
        _, predictions = self._loss_and_predictions(batch, self(batch), with_loss=False)
        return {"position": batch.position, "prediction": predictions}

    def on_validation_epoch_end(self) -> None:
        self._log_metrics("val")

    def on_test_epoch_end(self) -> None:
        self._log_metrics("test")

    def _evaluate(self, batch: LabeledBatch, stage: str) -> dict[str, Tensor]:
        """Logs the loss, updates the metrics and returns the metric-ready
        predictions and targets (which callbacks such as
        :class:`~rdl.train.plots.RunPlots` receive from :meth:`test_step`)."""
        loss, predictions = self._loss_and_predictions(batch, self(batch))
        self.log(f"{stage}_loss", loss, batch_size=batch.num_seeds, prog_bar=stage == "val",
                 sync_dist=True)
        target = self.metric_target(batch)
        for metric in self.metrics[stage].values():
            metric.update(predictions, target)
        if self.exclude_seen:
            self.excluded.update(batch, self.info.spec.num_nodes[self.info.item_type])
        return {"prediction": predictions, "target": target}

    def _log_metrics(self, stage: str) -> None:
        # Logged as Metric objects: Lightning computes them (torchmetrics syncs
        # their states across processes) and resets them after the epoch.
        for name, metric in self.metrics[stage].items():
            self.log(metric_key(stage, name), metric, prog_bar=True)
        if self.exclude_seen:
            self.excluded.finish(stage, lambda t: self.trainer.strategy.reduce(t, reduce_op="sum"))

    def metric_target(self, batch: LabeledBatch) -> Tensor:
        task_type = self.info.task_type
        if task_type == types.RECOMMENDATION:
            dense, _ = to_dense_batch(batch.y, batch.y_seed, fill_value=-1,
                                      batch_size=batch.num_seeds)
            return dense
        if task_type == types.BINARY:
            return batch.y.long()
        return batch.y

    def _loss_and_predictions(self, batch: LabeledBatch, out: Tensor, with_loss: bool = True,
                              with_predictions: bool = True
                              ) -> tuple[Tensor | None, Tensor | None]:
        """Loss and metric-ready predictions (probabilities, values or top-k
        items; the top-k lists not made without :obj:`with_predictions`)."""
        info = self.info
        loss = None
        if info.task_type == types.BINARY:
            logit = out.squeeze(-1)
            if with_loss:
                loss = F.binary_cross_entropy_with_logits(logit, batch.y)
            return loss, torch.sigmoid(self._blended(logit, batch))
        if info.task_type == types.REGRESSION:
            value = out.squeeze(-1)
            if with_loss:
                loss = F.mse_loss(value, (batch.y - info.target_mean) / info.target_std)
            predicted = self._blended(self._score(out), batch)
            if info.target_floor is not None:  # a count or a total is never below 0
                predicted = predicted.clamp(min=info.target_floor)
            return loss, predicted
        if info.task_type == types.MULTICLASS:
            if with_loss:
                loss = F.cross_entropy(out, batch.y)
            return loss, out.softmax(-1)
        k = info.make_task().top_k or 10
        return loss_and_topk(self.model, out, batch, k, self.exclude_seen, with_loss,
                             with_predictions, self.popularity_boost)


def metric_key(stage: str, name: str) -> str:
    """The logged name of metric ``name`` (``map@10`` -> ``val_map_at_10``):
    loggers and checkpoint file names do not like ``@``."""
    return f"{stage}_{name.replace('@', '_at_')}"


def info_from_datamodule(datamodule: RelationalDataModule) -> TaskInfo:
    """The task and graph description of what ``datamodule`` serves."""
    graph = datamodule.prepare_graph()
    task = datamodule.task
    mean, std = datamodule.label_scale()
    if task.task_type == types.RECOMMENDATION:
        datamodule.split_seeds("train")  # measures the repeat rate
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
        target_floor=task.value_floor(datamodule.db),
        data=datamodule.data_description(),
        repeat_rate=datamodule.repeat_rate,
    )


def module_arguments(hparams: dict) -> dict:
    """A checkpoint's hyperparameters as :class:`RelationalTask` arguments;
    checkpoints written before ``model.net`` held the model's settings
    beside the training ones, and those move into ``net``."""
    arguments = {k: v for k, v in hparams.items() if not k.startswith("_")}
    flat = {k: arguments.pop(k) for k in settings_names() if k in arguments}
    if flat:
        arguments["net"] = {**flat, **arguments.get("net", {})}
    return arguments


def stored_baseline_features(checkpoint: dict) -> BaselineFeatures | None:
    """The baseline-feature scaling a checkpoint's model reads, if any."""
    plain = checkpoint.get(BASELINE_FEATURES_KEY)
    return None if plain is None else BaselineFeatures.from_plain(plain)


def _node_types(tables: list[str] | None) -> list[str] | None:
    """Table names (as configs give them) -> node types."""
    return [safe_name(t) for t in tables] if tables else None
