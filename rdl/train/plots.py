r"""Pictures of a run, for a look instead of a read of ``metrics.csv``:
learning curves, and for the test split ROC and precision-recall curves
(binary), predicted against true values (regression) or the hit rate by rank
(recommendation). :class:`RunPlots` writes them into the run folder.

Figures are drawn on matplotlib's Agg canvas without ``pyplot``, so nothing
needs a display and no global figure state is touched.
"""
from __future__ import annotations

from pathlib import Path

import lightning as L
import numpy as np
import pandas as pd
import torch
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.utilities import rank_zero_info, rank_zero_warn
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from torch import Tensor

from rdl.tasks import task_types as types
from rdl.train.distributed import gather_on_rank_zero

LEARNING_CURVES = "learning_curves.png"
TEST_PICTURES = {types.BINARY: "test_roc_pr.png", types.REGRESSION: "test_predicted_vs_true.png",
                 types.RECOMMENDATION: "test_hit_rate.png"}
MAX_POINTS = 20_000  # scatter points drawn; more only blacken the picture


def new_figure(rows: int = 1, cols: int = 1, width: float = 5.0, height: float = 4.0) -> Figure:
    """An empty figure of ``rows`` x ``cols`` axes on an Agg canvas."""
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    figure.subplots(rows, cols, squeeze=False)
    return figure


def save_figure(figure: Figure, path: str | Path) -> Path:
    """Writes ``figure`` as a PNG to ``path`` (making its folder) and returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    return path


def learning_curves(metrics: str | Path | pd.DataFrame) -> Figure:
    r"""Losses and validation metrics per epoch, from a run's ``metrics.csv``:
    the training loss is the mean of the steps logged in an epoch, the
    validation values are the epoch's last validation. One panel for the
    losses, one per validation metric."""
    frame = metrics if isinstance(metrics, pd.DataFrame) else pd.read_csv(metrics)
    names = [c for c in frame.columns if c.startswith("val_") and c != "val_loss"]
    figure = new_figure(1, 1 + len(names), width=4 * (1 + len(names)), height=3.5)
    loss, *panels = figure.axes
    for column, label in (("train_loss", "train"), ("val_loss", "val")):
        if column in frame:
            values = _per_epoch(frame, column, "mean" if column == "train_loss" else "last")
            loss.plot(values.index, values.to_numpy(), marker="o", label=label)
    loss.set(xlabel="epoch", ylabel="loss", title="loss")
    loss.legend()
    for ax, name in zip(panels, names):
        values = _per_epoch(frame, name, "last")
        ax.plot(values.index, values.to_numpy(), marker="o")
        ax.set(xlabel="epoch", ylabel=name.removeprefix("val_"), title=name)
    for ax in figure.axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return figure


def _per_epoch(frame: pd.DataFrame, column: str, how: str) -> pd.Series:
    rows = frame.dropna(subset=[column])
    return rows.groupby(rows["epoch"].astype(int))[column].agg(how)


def roc_pr_curves(probability: np.ndarray | Tensor, label: np.ndarray | Tensor) -> Figure:
    r"""ROC and precision-recall curves of binary predictions; raises a
    :class:`ValueError` unless both classes occur in ``label``."""
    from sklearn.metrics import (average_precision_score, precision_recall_curve, roc_auc_score,
                                 roc_curve)

    probability, label = np.asarray(probability, dtype=float), np.asarray(label).astype(int)
    if len(np.unique(label)) < 2:
        raise ValueError("ROC and precision-recall curves need labels of both classes")
    figure = new_figure(1, 2, width=9, height=4)
    roc, pr = figure.axes
    fpr, tpr, _ = roc_curve(label, probability)
    roc.plot(fpr, tpr, label=f"AUROC {roc_auc_score(label, probability):.3f}")
    roc.plot([0, 1], [0, 1], color="grey", linestyle="--", label="chance")
    roc.set(xlabel="false positive rate", ylabel="true positive rate", title="ROC")
    precision, recall, _ = precision_recall_curve(label, probability)
    pr.plot(recall, precision,
            label=f"average precision {average_precision_score(label, probability):.3f}")
    pr.axhline(label.mean(), color="grey", linestyle="--", label="positive rate")
    pr.set(xlabel="recall", ylabel="precision", title="precision-recall", ylim=(0, 1.02))
    roc.legend(loc="lower right")
    pr.legend(loc="lower left")
    return figure


def predicted_vs_true(prediction: np.ndarray | Tensor, target: np.ndarray | Tensor) -> Figure:
    r"""Predicted against true values of a regression task (at most
    :data:`MAX_POINTS` of them, drawn at random), with the diagonal."""
    prediction, target = np.asarray(prediction, dtype=float), np.asarray(target, dtype=float)
    mae = np.abs(prediction - target).mean()
    r2 = 1 - ((prediction - target) ** 2).sum() / max(((target - target.mean()) ** 2).sum(), 1e-12)
    if len(target) > MAX_POINTS:
        keep = np.random.default_rng(0).choice(len(target), MAX_POINTS, replace=False)
        prediction, target = prediction[keep], target[keep]
    figure = new_figure(width=5, height=5)
    ax = figure.axes[0]
    ax.scatter(target, prediction, s=6, alpha=0.4, rasterized=True)
    low, high = min(target.min(), prediction.min()), max(target.max(), prediction.max())
    ax.plot([low, high], [low, high], color="grey", linestyle="--")
    ax.set(xlabel="true", ylabel="predicted", title=f"MAE {mae:.4g}, R² {r2:.3f}")
    return figure


def first_hit_rank(top: Tensor, positives: Tensor) -> Tensor:
    r"""For each entity with a positive, the rank (from 1) of its first
    correct item among ``top`` ``[B, k]`` (``k + 1`` if none); ``positives``
    ``[B, m]`` holds its items, both padded with ``-1``."""
    hit = ((top.unsqueeze(2) == positives.unsqueeze(1)) & (positives >= 0).unsqueeze(1)).any(2)
    rank = torch.where(hit.any(1), hit.to(torch.int8).argmax(1) + 1, top.size(1) + 1)
    return rank[(positives >= 0).any(1)]


def hit_rate_by_rank(first_hit: Tensor, k: int) -> Figure:
    r"""Share of entities with a correct item within the top ``r``, for
    ``r = 1 .. k``, from :func:`first_hit_rank`."""
    ranks = np.arange(1, k + 1)
    rates = (first_hit.numpy()[:, None] <= ranks).mean(0)
    figure = new_figure()
    ax = figure.axes[0]
    ax.plot(ranks, rates, marker="o")
    ax.set(xlabel="rank r", ylabel="hit rate within the top r", ylim=(0, 1),
           title=f"hit rate by rank ({len(first_hit):,} entities)")
    return figure


class RunPlots(L.Callback):
    r"""Writes pictures into the run folder: :data:`LEARNING_CURVES` when
    ``fit`` ends (from the CSV logger's ``metrics.csv``) and, when ``test``
    ends, :data:`TEST_PICTURES` of the task type (from the predictions and
    targets :meth:`RelationalTask.test_step` returns).

    Args:
        dirpath (str, optional): Where to write; default: the run folder
            (the first logger's ``log_dir``, else ``trainer.default_root_dir``).
    """

    def __init__(self, dirpath: str | None = None) -> None:
        self.dirpath = dirpath
        self._parts: list[dict[str, Tensor]] = []

    def on_fit_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        logger = next((lg for lg in trainer.loggers if isinstance(lg, CSVLogger)), None)
        if not trainer.is_global_zero or logger is None:
            return
        logger.save()  # rows still held in memory
        path = Path(logger.experiment.metrics_file_path)
        if path.is_file():
            written = save_figure(learning_curves(path), self._folder(trainer) / LEARNING_CURVES)
            rank_zero_info(f"wrote {written}")

    def on_test_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._parts = []

    def on_test_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs,
                          batch, batch_idx: int, dataloader_idx: int = 0) -> None:
        task_type = pl_module.info.task_type
        if task_type not in TEST_PICTURES:
            return
        prediction, target = outputs["prediction"].cpu(), outputs["target"].cpu()
        if task_type == types.RECOMMENDATION:
            self._parts.append({"first_hit": first_hit_rank(prediction, target),
                                "k": prediction.size(1)})
        else:
            self._parts.append({"prediction": prediction.float(), "target": target.float()})

    def on_test_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        parts = gather_on_rank_zero(self._parts, trainer.global_rank, trainer.world_size)
        self._parts = []
        if not parts:
            return
        task_type = pl_module.info.task_type
        try:
            figure = _test_figure(task_type, parts)
        except ValueError as exc:
            rank_zero_warn(f"No test picture: {exc}")
            return
        written = save_figure(figure, self._folder(trainer) / TEST_PICTURES[task_type])
        rank_zero_info(f"wrote {written}")

    def _folder(self, trainer: L.Trainer) -> Path:
        if self.dirpath is not None:
            return Path(self.dirpath)
        log_dir = getattr(trainer.loggers[0], "log_dir", None) if trainer.loggers else None
        return Path(log_dir or trainer.default_root_dir)


def _test_figure(task_type: str, parts: list[dict]) -> Figure:
    if task_type == types.RECOMMENDATION:
        return hit_rate_by_rank(torch.cat([p["first_hit"] for p in parts]), parts[0]["k"])
    prediction = torch.cat([p["prediction"] for p in parts]).numpy()
    target = torch.cat([p["target"] for p in parts]).numpy()
    if task_type == types.REGRESSION:
        return predicted_vs_true(prediction, target)
    return roc_pr_curves(prediction, target)
