r"""LightGBM on the feature table, a trivial reference predictor, and the task's metrics.

Binary tasks predict a probability, regression a value and multiclass one
probability per class (classes in :meth:`rdl.tasks.Task.classes` order), so
the metric objects of :mod:`rdl.tasks.metrics` score them exactly as they
score rdl's GNN.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rdl.tasks import task_types as types

OBJECTIVES = {types.BINARY: "binary", types.REGRESSION: "regression",
              types.MULTICLASS: "multiclass"}


@dataclass
class BoosterSettings:
    r"""LightGBM settings (the ``baseline:`` section of a config).

    Args:
        num_boost_round: Most boosting rounds.
        learning_rate: Shrinkage per round.
        num_leaves: Leaves per tree.
        min_data_in_leaf: Fewest label rows in a leaf.
        feature_fraction: Share of features each tree may use.
        early_stopping_rounds: Stop when the validation loss has not improved
            for this many rounds.
        num_threads: Threads; ``0`` uses all cores.
        seed: Seed of every random choice (training is deterministic).
    """

    num_boost_round: int = 1000
    learning_rate: float = 0.05
    num_leaves: int = 31
    min_data_in_leaf: int = 20
    feature_fraction: float = 0.8
    early_stopping_rounds: int = 50
    num_threads: int = 0
    seed: int = 0


def lightgbm():
    """The ``lightgbm`` module, or an error saying how to install it."""
    try:
        import lightgbm as lgb
    except ImportError:
        raise ImportError("The baseline needs LightGBM: pip install lightgbm==4.7.0") from None
    return lgb


def fit(x_train: pd.DataFrame, y_train: np.ndarray, x_val: pd.DataFrame, y_val: np.ndarray,
        task_type: str, settings: BoosterSettings, num_classes: int | None = None):
    r"""Trains a booster, early-stopped on the validation rows.

    Args:
        x_train (pandas.DataFrame): Training features (``category`` columns
            are LightGBM categoricals).
        y_train (numpy.ndarray): 0/1 labels, values or class indices.
        x_val (pandas.DataFrame): Validation features.
        y_val (numpy.ndarray): Validation labels.
        task_type (str): ``binary``, ``regression`` or ``multiclass``.
        settings (BoosterSettings): LightGBM settings.
        num_classes (int, optional): Needed for multiclass. (default: :obj:`None`)

    Returns:
        lightgbm.Booster: With ``best_iteration`` set.
    """
    lgb = lightgbm()
    params = {
        "objective": OBJECTIVES[task_type],
        "learning_rate": settings.learning_rate,
        "num_leaves": settings.num_leaves,
        "min_data_in_leaf": settings.min_data_in_leaf,
        "feature_fraction": settings.feature_fraction,
        "seed": settings.seed,
        "deterministic": True,
        "force_col_wise": True,
        "num_threads": settings.num_threads,
        "verbosity": -1,
    }
    if task_type == types.MULTICLASS:
        params["num_class"] = num_classes
    train = lgb.Dataset(x_train, label=y_train, params={"verbosity": -1}, free_raw_data=False)
    val = lgb.Dataset(x_val, label=y_val, reference=train, free_raw_data=False)
    return lgb.train(params, train, num_boost_round=settings.num_boost_round, valid_sets=[val],
                     callbacks=[lgb.early_stopping(settings.early_stopping_rounds,
                                                   verbose=False)])


def predict(booster, x: pd.DataFrame) -> np.ndarray:
    """Probabilities ``[N]`` (binary), values ``[N]`` or class probabilities ``[N, C]``."""
    return booster.predict(x, num_iteration=booster.best_iteration or None)


def importances(booster, top: int | None = None) -> dict[str, float]:
    """Total gain per feature, largest first (the first :obj:`top`)."""
    gain = booster.feature_importance(importance_type="gain")
    order = np.argsort(-gain, kind="stable")[:top]
    names = booster.feature_name()
    return {names[i]: float(gain[i]) for i in order}


def trivial(y_train: np.ndarray, n: int, task_type: str,
            num_classes: int | None = None) -> np.ndarray:
    r"""A predictor that ignores the features, for reference: the training
    positive rate (binary), the training mean (regression) or the training
    majority class (multiclass)."""
    if task_type == types.MULTICLASS:
        majority = np.bincount(y_train.astype(np.int64), minlength=num_classes).argmax()
        out = np.zeros((n, num_classes))
        out[:, majority] = 1.0
        return out
    return np.full(n, float(np.mean(y_train)))


def evaluate(predictions: np.ndarray, target: np.ndarray, task_type: str, names: list[str],
             num_classes: int | None = None) -> dict[str, float]:
    """The task's metrics (names as in ``task.metrics``), computed by :mod:`rdl.tasks.metrics`."""
    import torch

    from rdl.tasks.metrics import get_metrics

    preds = torch.as_tensor(np.array(predictions, dtype=np.float64))
    if task_type == types.REGRESSION:
        y = torch.as_tensor(np.array(target, dtype=np.float64))
    else:
        y = torch.as_tensor(np.array(target, dtype=np.int64))
    out = {}
    for name, metric in get_metrics(names, task_type, num_classes=num_classes).items():
        metric.update(preds, y)
        out[name] = float(metric.compute())
    return out
