r"""The baseline's aggregates of each seed as a model input (``model.baseline_features``).

The LightGBM baseline's features of a seed (:mod:`rdl.baseline.features`:
counts, sums and recencies over past windows and foreign-key hops, at the
seed's own time) are numbers the GNN could only estimate from a sample of at
most a few dozen neighbours. With this option on, they are computed once per
split, scaled by statistics of the training seeds (a signed ``log1p``, then
standardised; missing values become the mean, values are clipped to +-5
standard deviations) and added to each seed's embedding through a small MLP
(:class:`~rdl.nn.RelationalModel`'s ``seed_features``). Categorical features
are left out. The scaling and the windows travel in the checkpoint, so test
and prediction compute the same columns the same way.

``auto`` (the default) turns them on for binary tasks with fewer than
:obj:`SMALL_TRAINING_SEEDS` training seeds: with a few thousand seeds the GNN
cannot learn to count from its samples, and there they were worth +0.7 and
+1.1 points of test AUROC to the blend on the benchmark's two small shops
(seeds 0-2; the second over five draws of its data) and +0.0 and +1.5 on
the same two shapes grown to 7-8k seeds, while on the large tasks they moved
the blend by -0.7 to +0.6, on three binary tasks of 11-15k training seeds by
-0.3 to +0.0, and on the one small regression task (about 100 airports) they
cost most of its r2 (benchmarks/REPORT.md). ``auto`` also wants at least
:obj:`MIN_RARER_PER_AGGREGATE` training seeds of the rarer class per
aggregate, the relaxed form of the one-in-ten rule of thumb for a
regression's inputs (five to nine events per variable rarely hurt, Vittinghoff
and McCulloch 2007). The real databases bound it from both sides: 493
aggregates against 466 positive seeds (Formula 1, a driver qualifies in the
top three: 0.9 per aggregate) cost the blend 1.0 point, 33 against 252
(MovieLens churn: 7.6) were worth +0.9, and the shops have 18 and 26 rarer
seeds per aggregate.
"""
from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from rdl.db.database import Database
from rdl.tasks import Task
from rdl.tasks import task_types as types
from rdl.train.blend import seed_features
from rdl.train.seeds import Seeds

BASELINE_FEATURES_KEY = "rdl_baseline_features"
CLIP = 5.0
# "auto" feeds the aggregates to binary tasks with fewer training seeds than this
SMALL_TRAINING_SEEDS = 10_000
# ...and at least this many training seeds of the rarer class per aggregate
MIN_RARER_PER_AGGREGATE = 5


class NoBaselineFeatures(ValueError):
    """The database gives the task's entities no numeric baseline feature."""


def check_baseline_features_setting(setting: object) -> None:
    """Raises for anything but ``True``, ``False`` or ``"auto"``."""
    if setting not in (True, False, "auto"):
        raise ValueError(f"model.baseline_features={setting!r} is not true, false or auto")


def resolve_baseline_features(setting: bool | str, task_type: str,
                              num_train_seeds: int) -> tuple[bool, str | None]:
    """Whether a model reads the baseline's aggregates, and for ``"auto"`` a
    line saying why. ``True`` on a recommendation task is an error."""
    check_baseline_features_setting(setting)
    if setting is True and task_type == types.RECOMMENDATION:
        raise ValueError("model.baseline_features feeds classification and regression "
                         "heads; a recommendation task takes none (remove it)")
    if setting != "auto":
        return bool(setting), None
    if task_type == types.RECOMMENDATION:  # nothing to say: it never applies there
        return False, None
    if task_type != types.BINARY:
        return False, (f"baseline_features auto: off (a {task_type} task; on for small binary "
                       "ones); model.baseline_features: true turns it on")
    if num_train_seeds >= SMALL_TRAINING_SEEDS:
        return False, (f"baseline_features auto: off ({num_train_seeds:,} training seeds; on "
                       f"below {SMALL_TRAINING_SEEDS:,}); model.baseline_features: true turns "
                       "it on")
    return True, (f"baseline_features auto: on ({num_train_seeds:,} training seeds of a binary "
                  f"task, fewer than {SMALL_TRAINING_SEEDS:,}); model.baseline_features: false "
                  "turns it off")


def too_wide(labels: Tensor, width: int) -> str | None:
    """For ``auto``: why ``width`` aggregates are too many for the binary
    training ``labels`` (fewer than :obj:`MIN_RARER_PER_AGGREGATE` of the
    rarer class per aggregate), or ``None`` when they are not."""
    positives = int((labels > 0.5).sum())
    rarer = min(positives, len(labels) - positives)
    if rarer >= MIN_RARER_PER_AGGREGATE * width:
        return None
    return (f"baseline_features auto: off ({width:,} aggregates for {rarer:,} training seeds "
            f"of the rarer class; on from {MIN_RARER_PER_AGGREGATE} per aggregate); "
            "model.baseline_features: true turns it on")


@dataclass
class BaselineFeatures:
    r"""Which baseline features a model reads, and how they are scaled.

    Args:
        names (list[str]): The numeric feature columns, in input order.
        mean (list[float]): Training mean of each, after the signed ``log1p``.
        std (list[float]): Training standard deviation of each (``1`` where
            a column is constant).
        windows (tuple[float]): The baseline's past windows in days.
        hops (int): Its foreign-key hops.
        exclude_columns (dict): Table -> columns no feature reads.
        category_min_rows (int): Categories of the entity table that fewer
            rows hold read as missing.
    """

    names: list[str]
    mean: list[float]
    std: list[float]
    windows: tuple[float, ...]
    hops: int = 2
    exclude_columns: dict[str, list[str]] = field(default_factory=dict)
    category_min_rows: int = 1

    @property
    def width(self) -> int:
        return len(self.names)

    @classmethod
    def fit(cls, db: Database, task: Task, seeds: Seeds,
            exclude_columns: dict[str, list[str]], hops: int = 2, category_min_rows: int = 1
            ) -> tuple[BaselineFeatures, Tensor]:
        """The scaling of the training :obj:`seeds`' features, and those
        features scaled ``[S, width]``."""
        features = seed_features(db, task, seeds, None, hops, exclude_columns, category_min_rows)
        frame = features.frame.drop(columns=features.categorical)
        if frame.shape[1] == 0:
            raise NoBaselineFeatures("the baseline finds no numeric feature of the task's "
                                     "entities in this database")
        values = _signed_log(frame)
        with warnings.catch_warnings():  # an all-missing column: mean 0, std 1
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nan_to_num(np.nanmean(values, axis=0), nan=0.0)
            std = np.nanstd(values, axis=0)
        std = np.where(np.isfinite(std) & (std > 0), std, 1.0)
        scaling = cls(list(frame.columns), mean.tolist(), std.tolist(),
                      tuple(features.windows), hops, dict(exclude_columns), category_min_rows)
        return scaling, scaling._scale(values)

    def compute(self, db: Database, task: Task, seeds: Seeds) -> Tensor:
        """The scaled features of every seed of :obj:`seeds` ``[S, width]``."""
        features = seed_features(db, task, seeds, self.windows, self.hops, self.exclude_columns,
                                 self.category_min_rows)
        missing = [name for name in self.names if name not in features.frame.columns]
        if missing:
            raise ValueError(f"model.baseline_features: the model was trained with baseline "
                             f"features that this database does not give: {missing[:5]} "
                             f"({len(missing)} in all); its tables or columns differ")
        return self._scale(_signed_log(features.frame[self.names]))

    def _scale(self, values: np.ndarray) -> Tensor:
        scaled = (values - np.asarray(self.mean)) / np.asarray(self.std)
        scaled = np.nan_to_num(scaled, nan=0.0, posinf=CLIP, neginf=-CLIP).clip(-CLIP, CLIP)
        return torch.from_numpy(scaled.astype(np.float32))

    def to_plain(self) -> dict:
        """What a checkpoint stores (strings, numbers, lists and dicts)."""
        plain = asdict(self)
        plain["windows"] = list(self.windows)
        return plain

    @classmethod
    def from_plain(cls, plain: dict) -> BaselineFeatures:
        return cls(**{**plain, "windows": tuple(plain["windows"])})


def _signed_log(frame: pd.DataFrame) -> np.ndarray:
    """``sign(x) * log1p(|x|)`` of every column as float64 (NaN stays NaN):
    counts and sums span orders of magnitude, and a few huge ones would
    otherwise dominate the standardised scale. The baseline's numeric
    columns are already float32 (:func:`rdl.baseline.features.compute_features`)."""
    values = frame.to_numpy(dtype=np.float64, na_value=np.nan)
    return np.sign(values) * np.log1p(np.abs(values))
