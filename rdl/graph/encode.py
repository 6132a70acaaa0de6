"""Numerical, categorical and timestamp columns as PyTorch Frame tensors and
column stats, computed column by column with vectorised numpy/pandas.

They equal what ``torch_frame.data.Dataset.materialize`` gives (the tests
check value for value) without its intermediate copies: Dataset turns every
category into a Python string, merges each column against its categories and
sorts every timestamp column, which at ten million rows costs gigabytes and
minutes. Other stypes (text, tags, vectors) still go through Dataset.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import Tensor
from torch_frame.data.stats import StatType

FAST_STYPES = ("numerical", "categorical", "timestamp")
_NAN_QUANTILES = [np.nan] * 5


def numerical_values(series: pd.Series) -> np.ndarray:
    """Numbers as float64, with NaN for missing, unparseable and infinite values."""
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    return np.where(np.isfinite(values), values, np.nan)


def numerical_stats(values: np.ndarray) -> dict[StatType, Any]:
    """Mean, std and quantiles of the finite values (NaN when there are none)."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return {StatType.MEAN: np.nan, StatType.STD: np.nan,
                StatType.QUANTILES: list(_NAN_QUANTILES)}
    return {
        StatType.MEAN: float(finite.mean()),
        StatType.STD: float(finite.std()),
        StatType.QUANTILES: np.quantile(finite, q=[0, 0.25, 0.5, 0.75, 1]).tolist(),
    }


def categorical_codes(series: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Each value's code into its distinct values written as text, in order of
    first appearance (-1 for missing): categories are compared as text, as
    PyTorch Frame does after ``astype(str)``."""
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    names = pd.Series(uniques).astype(str).tolist()
    merged, distinct = pd.factorize(np.array(names, dtype=object))
    if len(distinct) < len(names):  # e.g. 1 and "1": one category
        codes = np.where(codes >= 0, merged[np.maximum(codes, 0)], -1)
        names = list(distinct)
    return codes.astype(np.int64, copy=False), names


def categorical_stats(codes: np.ndarray, names: list[str]) -> dict[StatType, Any]:
    """Categories by count, most frequent first, ties in order of first appearance."""
    counts = np.bincount(codes[codes >= 0], minlength=len(names))
    ranked = pd.Series(counts, index=pd.Index(names, dtype=object)).sort_values(
        ascending=False, kind="stable")
    return {StatType.COUNT: (ranked.index.tolist(), ranked.to_numpy().tolist())}


def categorical_index(codes: np.ndarray, names: list[str],
                      stats: dict[StatType, Any]) -> np.ndarray:
    """Each value's position in ``stats``' categories; -1 for missing or unseen values."""
    categories = stats[StatType.COUNT][0]
    position = pd.Index(categories, dtype=object).get_indexer(pd.Index(names, dtype=object))
    if position.size == 0:
        return np.full(len(codes), -1, dtype=np.int64)
    return np.where(codes >= 0, position[np.maximum(codes, 0)], -1).astype(np.int64)


def timestamp_parts(series: pd.Series, out: Tensor | None = None) -> Tensor:
    r"""Year, month-1, day-1, weekday, hour, minute, second per value (-1 for
    missing), as PyTorch Frame's ``TimestampTensorMapper``.

    Shapes:
        - **output:** :math:`(N, 7)` int64, written into :obj:`out` if given.
    """
    times = series.dt
    parts = (times.year, times.month - 1, times.day - 1, times.dayofweek, times.hour,
             times.minute, times.second)
    if out is None:
        out = torch.empty(len(series), 7, dtype=torch.long)
    for i, part in enumerate(parts):
        out[:, i] = torch.from_numpy(part.to_numpy(dtype=np.float64, na_value=-1).astype(np.int64))
    return out


def timestamp_stats(series: pd.Series) -> dict[StatType, Any]:
    """Year range and the oldest, newest and median time (as 7 parts each)."""
    present = series.dropna()
    if present.empty:
        missing = torch.full((7,), -1, dtype=torch.long)
        return {StatType.YEAR_RANGE: [-1, -1], StatType.NEWEST_TIME: missing,
                StatType.OLDEST_TIME: missing.clone(), StatType.MEDIAN_TIME: missing.clone()}
    order = present.array.asi8
    middle = len(order) // 2
    at = {
        StatType.OLDEST_TIME: int(np.argmin(order)),
        StatType.NEWEST_TIME: int(np.argmax(order)),
        StatType.MEDIAN_TIME: int(np.argpartition(order, middle)[middle]),
    }
    picked = present.iloc[list(at.values())].reset_index(drop=True)
    parts = timestamp_parts(picked)
    stats: dict[StatType, Any] = {StatType.YEAR_RANGE: [int(parts[0, 0]), int(parts[1, 0])]}
    stats.update({stat: parts[i] for i, stat in enumerate(at)})
    return stats
