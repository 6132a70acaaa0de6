r"""Stacking the GNN with the LightGBM baseline, weighted on the validation split.

After fit, LightGBM learns the task from the baseline's aggregate features
(:mod:`rdl.baseline.features`) of the training seeds, early-stopped on the
validation seeds. Predictions then mix the two, in logit space for binary
tasks and in label units for regression: ``w * gnn + (1 - w) * lightgbm``,
with the GNN's share ``w`` from 0, 0.1, ..., 1 chosen by the task's first
validation metric. The share is bagged: on each of :obj:`BOOTSTRAP_ROUNDS`
bootstrap resamples of the validation seeds the best share wins (a tie goes
to the larger share of the GNN), and ``w`` is the mean of the winners,
rounded to the grid. On a few hundred validation seeds the single best share
is mostly noise, and so is the GNN's validation score, already the best of its
epochs; bagging pulls such a share towards the middle, while a clear winner on
a large split wins every resample and keeps its share. The GNN is trained
and selected exactly as without the blend; the blend only adds a second
opinion at test and prediction time, and a checkpoint carries it. With fewer
validation seeds than :obj:`MIN_VAL_SEEDS` gives the task type (or one class
only) there is no blend. A regression seed says more about the share than a
binary one, where a few hundred seeds may hold a dozen positives: choosing the
share on 50 validation seeds drawn from three regression tasks' splits scored
above the GNN alone on test on every task's mean (benchmarks/REPORT.md).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
import torch
from torch import Tensor
from torchmetrics.classification import BinaryAUROC

from rdl.baseline import model as booster_lib
from rdl.baseline.features import Features, compute_features
from rdl.db.database import Database
from rdl.tasks import Task, task_types as types
from rdl.train.seeds import Seeds

BLEND_KEY = "rdl_blend"
GNN_SHARES = tuple(i / 10 for i in range(10, -1, -1))  # from GNN alone to LightGBM alone
# the task types a blend serves, and the fewest validation seeds each may choose a share on
MIN_VAL_SEEDS = {types.BINARY: 100, types.REGRESSION: 50}
BOOTSTRAP_ROUNDS = 100
_EPS = 1e-6
MEMO_BYTES = 64 * 2**20  # seed features kept for the next reader, up to this size


@dataclass
class BaselineBlend:
    r"""A trained LightGBM model and the GNN's share in the final prediction.

    Args:
        booster: LightGBM's model, as text (``Booster.model_to_string``).
        gnn_share: Weight ``w`` of the GNN's logit (or value).
        task_type: ``binary`` or ``regression``.
        windows: The baseline's past windows in days (chosen from the data's
            time step when the blend was fitted, then kept).
        hops: The baseline's foreign-key hops.
        exclude_columns: Table -> columns no feature reads (as for the GNN).
        category_min_rows: Categories of the entity table that fewer rows
            hold read as missing (as for the GNN).
        val_metric: The metric ``w`` was chosen by, and its validation value
            for the GNN, LightGBM and the blend.
    """

    booster: str
    gnn_share: float
    task_type: str
    windows: tuple[float, ...]
    hops: int = 2
    exclude_columns: dict[str, list[str]] = field(default_factory=dict)
    val_metric: dict[str, float | str] = field(default_factory=dict)
    category_min_rows: int = 1

    def __post_init__(self) -> None:
        self._model = None

    def prior(self, db: Database, task: Task, seeds: Seeds) -> Tensor:
        """LightGBM's output for every seed ``[S]``: a logit or a value."""
        features = seed_features(db, task, seeds, self.windows, self.hops, self.exclude_columns,
                                 self.category_min_rows)
        return self.score(features.frame)

    def score(self, features: pd.DataFrame) -> Tensor:
        """LightGBM's logit or value for each row of baseline ``features``."""
        if self._model is None:
            self._model = booster_lib.lightgbm().Booster(model_str=self.booster)
        out = np.asarray(self._model.predict(features), dtype=np.float64)
        if self.task_type == types.BINARY:
            out = np.clip(out, _EPS, 1 - _EPS)
            out = np.log(out / (1 - out))
        return torch.from_numpy(out.astype(np.float32))

    def combine(self, gnn: Tensor, prior: Tensor) -> Tensor:
        """The blended logit or value of the GNN's :obj:`gnn` and LightGBM's :obj:`prior`."""
        return self.gnn_share * gnn + (1.0 - self.gnn_share) * prior.to(gnn.dtype)

    def describe(self) -> str:
        """One line: the share and the validation metric of each part."""
        m = self.val_metric
        return (f"Blend with LightGBM: GNN share {self.gnn_share:.1f}; val {m['name']} "
                f"{m['blend']:.4f} (GNN {m['gnn']:.4f}, LightGBM {m['lightgbm']:.4f})")

    def to_plain(self) -> dict:
        """What a checkpoint stores (strings, numbers, lists and dicts)."""
        plain = asdict(self)
        plain["windows"] = list(self.windows)
        return plain

    @classmethod
    def from_plain(cls, plain: dict) -> BaselineBlend:
        return cls(**{**plain, "windows": tuple(plain["windows"])})


def blend_refusal(task_type: str, val_label: Tensor) -> str | None:
    """Why a task or validation split cannot choose a blend; ``None`` if it can."""
    if task_type not in MIN_VAL_SEEDS:
        return f"a {task_type} task is not blended (only binary and regression are)"
    if len(val_label) < MIN_VAL_SEEDS[task_type]:
        return (f"no blend with LightGBM: {len(val_label)} validation seeds are too few to "
                f"choose it by (at least {MIN_VAL_SEEDS[task_type]} for a {task_type} task)")
    if task_type == types.BINARY and val_label.min() == val_label.max():
        return "no blend with LightGBM: the validation split has one class only"
    return None


def fit_blend(db: Database, task: Task, seeds: dict[str, Seeds], gnn_val: Tensor,
              metric, exclude_columns: dict[str, list[str]], seed: int,
              windows: tuple[float, ...] | None = None, hops: int = 2,
              category_min_rows: int = 1) -> BaselineBlend:
    r"""Trains LightGBM and picks the GNN's share by :obj:`metric` on validation.

    Args:
        db (Database): The database.
        task (Task): A binary or regression task.
        seeds (dict): ``train`` and ``val`` seeds, with their labels.
        gnn_val (Tensor): The GNN's logit (binary) or value (regression) of
            every validation seed, in seed order.
        metric (torchmetrics.Metric): The task's first validation metric.
        exclude_columns (dict): Columns no feature may read.
        seed (int): LightGBM's seed.
        windows (tuple[float], optional): Past windows in days; by default
            from the data's time step, as ``rdl baseline`` picks them.
        hops (int): Foreign-key hops of aggregates.
        category_min_rows (int): Categories of the entity table that fewer
            rows hold read as missing.
    """
    task_type = task.task_type
    refusal = blend_refusal(task_type, seeds["val"].label)
    if refusal is not None:
        raise ValueError(refusal)
    x, y = {}, {}
    for split in ("train", "val"):
        features = seed_features(db, task, seeds[split], windows, hops, exclude_columns,
                                 category_min_rows)
        windows = features.windows  # the validation rows get the training rows' windows
        x[split], y[split] = features.frame, seeds[split].label.double().numpy()
    booster = booster_lib.fit(x["train"], y["train"], x["val"], y["val"], task_type,
                              booster_lib.BoosterSettings(seed=seed, num_threads=1))
    blend = BaselineBlend(booster.model_to_string(num_iteration=booster.best_iteration or None),
                          1.0, task_type, tuple(windows), hops, exclude_columns,
                          category_min_rows=category_min_rows)
    prior = blend.score(x["val"])  # the validation features, not computed again
    target = seeds["val"].label
    target = target.long() if task_type == types.BINARY else target
    blended = {}
    for share in GNN_SHARES:
        blend.gnn_share = share
        blended[share] = blend.combine(gnn_val, prior)
    best = bagged_share(metric, blended, target, task_type, seed)
    scores = {share: _metric_value(metric, blended[share], target, task_type)
              for share in (1.0, 0.0, best)}
    blend.gnn_share = best
    blend.val_metric = {"name": type(metric).__name__, "gnn": scores[1.0],
                        "lightgbm": scores[0.0], "blend": scores[best]}
    return blend


def bagged_share(metric, blended: dict[float, Tensor], target: Tensor, task_type: str,
                 seed: int, rounds: int = BOOTSTRAP_ROUNDS) -> float:
    r"""The mean over :obj:`rounds` bootstrap resamples of the validation seeds
    of the share whose blend scores best on each (ties to the larger share),
    rounded to the grid of :obj:`blended`'s keys (:data:`GNN_SHARES`).

    Args:
        metric (torchmetrics.Metric): The task's first validation metric.
        blended (dict): Share -> blended logit or value of every validation
            seed, from the largest share to the smallest.
        target (Tensor): The validation labels.
        task_type (str): ``binary`` or ``regression``.
        seed (int): Seeds the resampling.
        rounds (int): Bootstrap resamples.
    """
    generator = torch.Generator().manual_seed(seed)
    num = len(target)
    draws = torch.randint(num, (rounds, num), generator=generator)
    shares = list(blended)
    if isinstance(metric, BinaryAUROC):  # AUROC of every resample at once, from seed counts
        counts = torch.zeros(rounds, num).scatter_add_(1, draws, torch.ones(rounds, num))
        scores = torch.stack([_resampled_auroc(blended[s], target, counts) for s in shares])
    else:  # each resample's seeds are one row of draws
        scores = torch.tensor([[_metric_value(metric, blended[s][row], target[row], task_type)
                                for row in draws] for s in shares])
    if getattr(metric, "higher_is_better", True) is False:
        scores = -scores
    valid = ~scores.isnan().any(dim=0)  # a binary resample with one class has no AUROC
    if not valid.any():
        raise ValueError("no bootstrap resample of the validation seeds has both classes")
    winners = torch.tensor(shares)[scores[:, valid].argmax(dim=0)]  # the first best: larger
    mean = float(winners.mean())
    return min(shares, key=lambda share: (abs(share - mean), -share))


def _resampled_auroc(score: Tensor, target: Tensor, counts: Tensor) -> Tensor:
    """AUROC of :obj:`score` on each resample given by how often each seed is
    drawn (``counts`` ``[R, N]``), ties counted half, as torchmetrics does;
    NaN where a resample lacks a class."""
    order = score.argsort()
    positive = target[order].bool()
    weight = counts[:, order]
    _, group = torch.unique_consecutive(score[order], return_inverse=True)
    negatives = weight * ~positive
    per_group = torch.zeros(len(counts), int(group.max()) + 1).index_add_(1, group, negatives)
    below = per_group.cumsum(dim=1) - per_group  # negatives scored lower than each group
    credit = below[:, group] + 0.5 * per_group[:, group]
    positives = weight * positive
    return (positives * credit).sum(dim=1) / (positives.sum(dim=1) * negatives.sum(dim=1))


def seed_features(db: Database, task: Task, seeds: Seeds, windows: tuple[float, ...] | None,
                  hops: int, exclude_columns: dict[str, list[str]],
                  category_min_rows: int = 1) -> Features:
    """The baseline's features of every seed, at its own time: computed once
    per database, task and settings, since the blend and the model's input
    (``model.baseline_features``) both read them. Callers must not change
    the returned frame in place."""
    def key(windows: tuple[float, ...] | None) -> tuple:
        return (None if windows is None else tuple(windows), hops,
                tuple(sorted((table, tuple(cols)) for table, cols in exclude_columns.items())),
                category_min_rows)

    for memo_db, memo_task, memo_key, features in seeds.feature_memo:
        if memo_db is db and memo_task is task and memo_key == key(windows):
            return features
    labels = pd.DataFrame({"id": seeds.ids.to_numpy(), "timestamp": seeds.timestamps})
    features = compute_features(db, task, labels, windows=windows, hops=hops,
                                exclude_columns=exclude_columns,
                                category_min_rows=category_min_rows,
                                threads=torch.get_num_threads())  # the fit's share, not all
    if features.frame.memory_usage().sum() <= MEMO_BYTES:  # a large split's would stay in RAM
        for asked in {key(windows), key(features.windows)}:  # None: the data's windows
            seeds.feature_memo.append((db, task, asked, features))
    return features


def _metric_value(metric, blended: Tensor, target: Tensor, task_type: str) -> float:
    metric.reset()
    metric.update(torch.sigmoid(blended) if task_type == types.BINARY else blended, target)
    value = float(metric.compute())
    metric.reset()
    return value
