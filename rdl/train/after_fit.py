"""What ``rdl fit`` chooses on the validation split once training ends, for
the best weights: the LightGBM blend of binary and regression tasks, and the
seen items' and the popular items' boosts of recommendation. Each choice is
stored in ``best.ckpt`` beside the weights it was chosen for, and a checkpoint
brings it back."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from lightning.pytorch.utilities import rank_zero_info, rank_zero_warn
from torch import Tensor

from rdl.graph.cache_file import save_atomically
from rdl.tasks import task_types as types
from rdl.train.blend import BLEND_KEY, BaselineBlend, blend_refusal, fit_blend
from rdl.train.data import LabeledBatch
from rdl.train.popularity import POPULARITY_KEY, WEIGHTS, WIN_SHARE, row_scores_per_weight
from rdl.train.popularity import describe as describe_popularity
from rdl.train.recommend import item_scores
from rdl.train.seen_boost import BOOSTS, SEEN_BOOST_KEY, choose_boost, row_scores_per_boost
from rdl.train.seen_boost import describe as describe_seen_boost


class ChoicesAfterFit:
    """The part of :class:`~rdl.train.RelationalTask` that makes, stores and
    takes back the choices above. It reads the module's ``info``,
    ``hparams``, ``trainer``, ``metrics``, ``model`` and ``exclude_seen``,
    calls it on batches, and asks it for :meth:`gnn_scores` and
    :meth:`metric_target`."""

    blend: BaselineBlend | None
    popularity_boost: float

    def chosen_after_fit(self, setting: str) -> bool:
        """Whether recommendation ``setting`` (``seen_boost``,
        ``popularity_boost``) is ``auto``: chosen when fit ends, not fixed."""
        return (self.info.task_type == types.RECOMMENDATION
                and self.hparams.get(setting, "auto") == "auto")

    def set_seen_boost(self, boost: float) -> None:
        """Sets the recommendation head's :attr:`~rdl.nn.SeenBonus.boost`."""
        self.model.head.seen.boost.fill_(float(boost))

    def forget_choices(self) -> None:
        """Drops the choices a resumed run brought: they belong to other
        weights and are made again when this fit ends."""
        self.blend = None
        if self.chosen_after_fit("seen_boost"):
            self.set_seen_boost(0.0)
        if self.chosen_after_fit("popularity_boost"):
            self.popularity_boost = 0.0

    def save_choices(self, checkpoint: dict) -> None:
        """Writes the choices in force into ``checkpoint``."""
        if self.blend is not None:
            checkpoint[BLEND_KEY] = self.blend.to_plain()
        if self.info.task_type == types.RECOMMENDATION:
            checkpoint[SEEN_BOOST_KEY] = float(self.model.head.seen.boost)
            checkpoint[POPULARITY_KEY] = self.popularity_boost

    def adopt_choices(self, checkpoint: dict) -> None:
        """Takes the choices stored beside a checkpoint's weights (the boosts
        unless this module's setting is a number)."""
        blend = checkpoint.get(BLEND_KEY)
        self.blend = BaselineBlend.from_plain(blend) if blend is not None else None
        if self.chosen_after_fit("seen_boost"):
            self.set_seen_boost(checkpoint.get(SEEN_BOOST_KEY, 0.0))
        if self.chosen_after_fit("popularity_boost"):
            self.popularity_boost = float(checkpoint.get(POPULARITY_KEY, 0.0))

    def on_fit_end(self) -> None:
        """Blends the best weights (which :class:`TaskCheckpoint` put back)
        with LightGBM, or for recommendation chooses the seen items' and the
        popular items' boosts, and stores the result in ``best.ckpt``."""
        if self.info.task_type == types.RECOMMENDATION:
            self._choose_seen_boost()
            self._choose_popularity_boost()
        elif self.hparams.blend_baseline:
            self._choose_blend()

    def _choose_blend(self) -> None:
        trainer = self.trainer
        if trainer.limit_val_batches == 0:
            rank_zero_info("no blend with LightGBM: validation is off (limit_val_batches 0)")
            return
        if trainer.world_size > 1:
            rank_zero_warn("blend_baseline is skipped under several processes; "
                           "run rdl fit on one device to blend")
            return
        datamodule = trainer.datamodule
        seeds = {split: datamodule.split_seeds(split) for split in ("train", "val")}
        refusal = blend_refusal(self.info.task_type, seeds["val"].label)
        if refusal is not None:
            rank_zero_info(refusal)
            return
        self.blend = fit_blend(datamodule.db, datamodule.task, seeds,
                               self.gnn_scores(datamodule, seeds["val"]), self._first_metric(),
                               datamodule.exclusions, seed=datamodule.seed,
                               category_min_rows=datamodule.entity_category_min_rows)
        rank_zero_info(self.blend.describe())
        self._store_choice(BLEND_KEY, self.blend.to_plain())

    def _choose_seen_boost(self) -> None:
        """``auto`` with seen items kept: the boost of an entity's own past items."""
        if not self.chosen_after_fit("seen_boost") or self.exclude_seen:
            return
        metric = self._first_metric()
        per_row = self._per_validation_row("seen_boost", len(BOOSTS), lambda batch: (
            row_scores_per_boost(self(batch), batch.seen, self.model.head.seen, metric,
                                 self.metric_target(batch), metric.k)))
        if per_row is None:
            return
        boost = choose_boost(per_row, seed=self.trainer.datamodule.seed)
        self.set_seen_boost(boost)
        rank_zero_info(describe_seen_boost(boost, per_row, f"{metric.name}@{metric.k}"))
        self._store_choice(SEEN_BOOST_KEY, boost)

    def _choose_popularity_boost(self) -> None:
        """``auto``: the weight of recent popularity, after the seen items' boost."""
        if not self.chosen_after_fit("popularity_boost"):
            return
        metric = self._first_metric()
        per_row = self._per_validation_row("popularity_boost", len(WEIGHTS), lambda batch: (
            row_scores_per_weight(item_scores(self.model, self(batch), batch.seen,
                                              self.exclude_seen),
                                  batch.popular, metric, self.metric_target(batch), metric.k)))
        if per_row is None:
            return
        self.popularity_boost = choose_boost(per_row, seed=self.trainer.datamodule.seed,
                                             grid=WEIGHTS, min_win_share=WIN_SHARE)
        rank_zero_info(describe_popularity(self.popularity_boost, per_row,
                                           f"{metric.name}@{metric.k}"))
        self._store_choice(POPULARITY_KEY, self.popularity_boost)

    def _first_metric(self):
        """A fresh copy of the task's first validation metric, which decides."""
        return next(iter(self.metrics["val"].values())).clone()

    @torch.no_grad()
    def _per_validation_row(self, setting: str, width: int,
                            row_scores: Callable[[LabeledBatch], Tensor]) -> np.ndarray | None:
        """``row_scores`` of every validation batch, :math:`(N, width)`, the
        model in eval mode; ``None`` (and ``setting`` says it is 0) where
        validation is off or runs in several processes."""
        trainer = self.trainer
        if trainer.limit_val_batches == 0 or trainer.world_size > 1:
            rank_zero_info(f"{setting} auto: 0 (choosing it needs the validation split "
                           "on one process)")
            return None
        datamodule = trainer.datamodule
        was_training = self.training
        self.eval()
        rows = [row_scores(self.transfer_batch_to_device(batch, self.device, 0)).cpu()
                for batch in datamodule.loader(datamodule.split_seeds("val"))]
        self.train(was_training)
        return torch.cat(rows).numpy() if rows else np.zeros((0, width))

    def _store_choice(self, key: str, value: object) -> None:
        """Writes a choice into ``best.ckpt``, replacing the file atomically."""
        callback = self.trainer.checkpoint_callback
        if callback is None or not callback.best_model_path:
            return
        path = callback.best_model_path
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
        checkpoint[key] = value
        save_atomically(checkpoint, path)
