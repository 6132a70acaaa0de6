r"""Metric objects for each task type, by name.

This is the only module of :mod:`rdl.tasks` that imports torch. Binary,
multiclass and regression metrics are torchmetrics classes; the ranking
metrics (``map@k``, ``precision@k``, ``recall@k``, ``ndcg@k``) are a small
:class:`torchmetrics.Metric` of our own, because torchmetrics' retrieval
metrics only see the items that were scored and so cannot count relevant
items that a top-``k`` list missed (which recall and MAP need).

Inputs to :meth:`update`:

* binary: ``preds`` probabilities or logits ``[N]``, ``target`` 0/1 ``[N]``;
* multiclass: ``preds`` scores ``[N, C]`` or class indices ``[N]``,
  ``target`` class indices ``[N]``;
* regression: ``preds`` and ``target`` floats ``[N]``;
* recommendation: ``preds`` item indices ``[N, >= k]`` ranked best first
  (distinct per row), ``target`` the true item indices per row as a list of
  sequences or a ``[N, L]`` tensor padded with ``-1``.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
import torchmetrics
from torchmetrics import classification, regression

from rdl.tasks import task_types as types
from rdl.tasks.errors import TaskError


class RankingMetric(torchmetrics.Metric):
    r"""Mean of a per-row top-``k`` ranking score.

    Rows without any true item are skipped (their score is undefined).

    Args:
        name (str): ``"map"``, ``"precision"``, ``"recall"`` or ``"ndcg"``.
        k (int): Cut-off: only the first ``k`` predicted items count.
    """

    full_state_update = False

    def __init__(self, name: str, k: int, **kwargs):
        super().__init__(**kwargs)
        if name not in types.METRIC_NAMES[types.RECOMMENDATION]:
            raise TaskError(f"Unknown ranking metric {name!r}; use one of "
                            f"{list(types.METRIC_NAMES[types.RECOMMENDATION])}")
        if k < 1:
            raise TaskError(f"k={k} must be at least 1")
        self.name, self.k = name, k
        self.add_state("total", default=torch.tensor(0.0, dtype=torch.float64),
                       dist_reduce_fx="sum")
        self.add_state("rows", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: torch.Tensor, target: torch.Tensor | Sequence[Sequence[int]]) -> None:
        score = self.row_scores(preds, target)
        self.total += score.sum()
        self.rows += score.numel()

    def row_scores(self, preds: torch.Tensor,
                   target: torch.Tensor | Sequence[Sequence[int]]) -> torch.Tensor:
        r"""The score of each row with a true item (the rows :meth:`update`
        averages), in row order."""
        preds = torch.as_tensor(preds)
        if preds.dim() != 2 or preds.size(1) < self.k:
            raise TaskError(f"preds must be item indices of shape [N, >= {self.k}], got "
                            f"{tuple(preds.shape)}")
        target = _pad(target, preds.device) if not torch.is_tensor(target) else target
        if target.size(0) != preds.size(0):
            raise TaskError(f"preds has {preds.size(0)} rows but target has {target.size(0)}")
        top = preds[:, : self.k].long()
        valid = target >= 0
        hits = ((top.unsqueeze(-1) == target.unsqueeze(1)) & valid.unsqueeze(1)).any(-1).double()
        n_true = valid.sum(1).double()
        keep = n_true > 0
        return _score(self.name, hits[keep], n_true[keep], self.k)

    def compute(self) -> torch.Tensor:
        return self.total / self.rows.clamp(min=1)

    def __repr__(self) -> str:
        return f"RankingMetric({self.name}@{self.k})"


def _score(name: str, hits: torch.Tensor, n_true: torch.Tensor, k: int) -> torch.Tensor:
    """Per-row score from ``hits [N, k]`` (0/1) and the number of true items."""
    ranks = torch.arange(1, k + 1, dtype=torch.float64, device=hits.device)
    if name == "precision":
        return hits.sum(1) / k
    if name == "recall":
        return hits.sum(1) / n_true
    if name == "map":
        precision_at = hits.cumsum(1) / ranks
        return (precision_at * hits).sum(1) / n_true.clamp(max=k)
    discount = 1.0 / torch.log2(ranks + 1.0)
    dcg = (hits * discount).sum(1)
    ideal = torch.cumsum(discount, 0)[(n_true.clamp(max=k) - 1).long()]
    return dcg / ideal


def _pad(target: Sequence[Sequence[int]], device: torch.device) -> torch.Tensor:
    width = max((len(t) for t in target), default=0)
    out = torch.full((len(target), max(width, 1)), -1, dtype=torch.long, device=device)
    for i, items in enumerate(target):
        if len(items):
            out[i, : len(items)] = torch.as_tensor(list(items), dtype=torch.long)
    return out


def get_metric(name: str, task_type: str, *, num_classes: int | None = None,
               k: int | None = None) -> torchmetrics.Metric:
    r"""Builds one metric object by name.

    Args:
        name (str): e.g. ``"auroc"``, ``"rmse"`` or ``"ndcg@12"``.
        task_type (str): ``binary``, ``multiclass``, ``regression`` or
            ``recommendation``.
        num_classes (int, optional): Needed for multiclass metrics.
            (default: :obj:`None`)
        k (int, optional): Cut-off for ranking metrics written without
            ``@k``. (default: :obj:`None`)

    Raises:
        TaskError: Unknown names, listing the valid ones.
    """
    base, cut = types.split_metric_name(name, task_type, k)
    if task_type == types.BINARY:
        return {
            "auroc": classification.BinaryAUROC,
            "average_precision": classification.BinaryAveragePrecision,
            "accuracy": classification.BinaryAccuracy,
            "f1": classification.BinaryF1Score,
        }[base]()
    if task_type == types.MULTICLASS:
        if num_classes is None or num_classes < 2:
            raise TaskError(f"Metric {name!r} needs num_classes >= 2, got {num_classes!r}; "
                            "pass task.num_classes(db)")
        if base == "accuracy":
            return classification.MulticlassAccuracy(num_classes=num_classes, average="micro")
        return classification.MulticlassF1Score(num_classes=num_classes, average="macro")
    if task_type == types.REGRESSION:
        if base == "rmse":
            return regression.MeanSquaredError(squared=False)
        return {"mae": regression.MeanAbsoluteError, "r2": regression.R2Score}[base]()
    return RankingMetric(base, cut)


def get_metrics(names: Sequence[str], task_type: str, *, num_classes: int | None = None,
                k: int | None = None) -> dict[str, torchmetrics.Metric]:
    """Builds metric objects for several names (see :func:`get_metric`), keyed by name."""
    if isinstance(names, str):
        raise TaskError(f"names={names!r} must be a list of metric names, e.g. [{names!r}]")
    return {n: get_metric(n, task_type, num_classes=num_classes, k=k) for n in names}


def metric_names(task_type: str) -> tuple[str, ...]:
    """Metric names valid for :obj:`task_type` (ranking ones take ``@k``)."""
    return types.METRIC_NAMES[types.check_task_type(task_type)]


def metrics_for(task, db=None) -> dict[str, torchmetrics.Metric]:
    """The metric objects of a :class:`~rdl.tasks.task.Task` (``db`` for multiclass)."""
    if task.task_type is None or task.metrics is None:
        if db is None:
            raise TaskError("This task's type depends on the data; pass db to metrics_for()")
        task.check(db)
    num_classes = None
    if task.task_type == types.MULTICLASS:
        if db is None:
            raise TaskError("Multiclass metrics need the number of classes; pass db")
        num_classes = task.num_classes(db)
    return get_metrics(task.metrics, task.task_type, num_classes=num_classes, k=task.top_k)

