"""Task types: value kinds, type inference and the metric names of each type.

:mod:`rdl.tasks.metrics` builds the metric objects; this module only knows
their names so that a task can be validated without importing torch.
"""
from __future__ import annotations

import pandas as pd

from rdl.db.table import Table
from rdl.tasks.errors import QueryError, TaskError
from rdl.tasks.query.syntax import Column, Query

BINARY = "binary"
MULTICLASS = "multiclass"
REGRESSION = "regression"
RECOMMENDATION = "recommendation"
TASK_TYPES = (BINARY, MULTICLASS, REGRESSION, RECOMMENDATION)

# Metric names valid for each task type. Ranking metrics take ``@k``
# (``map@12``); without it the task's ``RANK TOP k`` is used.
METRIC_NAMES = {
    BINARY: ("auroc", "average_precision", "accuracy", "f1"),
    MULTICLASS: ("accuracy", "f1"),
    REGRESSION: ("mae", "rmse", "r2"),
    RECOMMENDATION: ("map", "precision", "recall", "ndcg"),
}
DEFAULT_METRICS = {
    BINARY: ["auroc", "average_precision", "accuracy", "f1"],
    MULTICLASS: ["accuracy", "f1"],
    REGRESSION: ["mae", "rmse", "r2"],
    RECOMMENDATION: ["map", "precision", "recall", "ndcg"],
}


def check_task_type(task_type: str) -> str:
    """Returns :obj:`task_type` if it is one of :obj:`TASK_TYPES`, else raises."""
    if task_type not in TASK_TYPES:
        raise TaskError(
            f"task_type={task_type!r} is not a task type; use one of {list(TASK_TYPES)}"
        )
    return task_type


def split_metric_name(name: str, task_type: str, k: int | None = None) -> tuple[str, int | None]:
    r"""Checks a metric name and splits off its ``@k``.

    Args:
        name (str): Metric name such as ``"auroc"`` or ``"ndcg@12"``.
        task_type (str): Task type the metric is meant for.
        k (int, optional): Default cut-off for ranking metrics given without
            ``@k``. (default: :obj:`None`)

    Returns:
        (base name, k), with ``k`` ``None`` for non-ranking metrics.
    """
    check_task_type(task_type)
    if not isinstance(name, str):
        raise TaskError(f"metrics must be a list of names; got {name!r}")
    base, _, cut = name.lower().partition("@")
    valid = METRIC_NAMES[task_type]
    if base not in valid:
        shown = [f"{m}@k" for m in valid] if task_type == RECOMMENDATION else list(valid)
        raise TaskError(
            f"Unknown metric {name!r} for a {task_type} task; valid metrics are {shown}"
        )
    if task_type != RECOMMENDATION:
        if cut:
            raise TaskError(f"Metric {name!r}: only ranking metrics take '@k'; use {base!r}")
        return base, None
    if cut:
        if not cut.isdigit() or int(cut) < 1:
            raise TaskError(f"Metric {name!r}: k in '@k' must be a positive whole number")
        return base, int(cut)
    if k is None:
        raise TaskError(f"Metric {name!r} needs a cut-off: write '{base}@k', e.g. '{base}@10'")
    return base, k


def default_metrics(task_type: str, k: int | None = None) -> list[str]:
    """Default metric names for :obj:`task_type` (ranking ones with ``@k``)."""
    names = DEFAULT_METRICS[check_task_type(task_type)]
    if task_type == RECOMMENDATION and k is not None:
        return [f"{n}@{k}" for n in names]
    return list(names)


def column_kind(series: pd.Series) -> str:
    """Classifies a column as ``bool``, ``number``, ``time`` or ``string``."""
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return "bool"
    if pd.api.types.is_numeric_dtype(dtype):
        return "number"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "time"
    if dtype == object:
        inferred = pd.api.types.infer_dtype(series, skipna=True)
        if inferred == "boolean":
            return "bool"
        if inferred in ("integer", "floating", "mixed-integer-float", "decimal"):
            return "number"
        if inferred in ("datetime", "datetime64", "date"):
            return "time"
    return "string"


def infer_type(kind: str, query: Query, entity: Table) -> str:
    """Task type implied by the target's value kind (and the column's stype)."""
    if kind == "list":
        return RECOMMENDATION
    if kind == "bool":
        return BINARY
    if kind == "number":
        target = query.target
        if isinstance(target, Column) and entity.stypes.get(target.column) == "categorical":
            return MULTICLASS
        return REGRESSION
    if kind == "string":
        return MULTICLASS
    raise QueryError(f"Cannot predict {query.target} of kind {kind!r}; predict a number, "
                     "a category or a condition", query.text, query.target.pos)


def check_override(task_type: str, inferred: str, kind: str | None, query: Query) -> None:
    """Raises when a given ``task_type`` cannot describe the query's target."""
    if (task_type == RECOMMENDATION) != (inferred == RECOMMENDATION):
        raise TaskError(
            f"task_type={task_type!r} does not fit the target {query.target}: recommendation "
            "goes with LIST_DISTINCT(...) RANK TOP k and only with it"
        )
    if task_type in (BINARY, REGRESSION) and kind == "string":
        raise TaskError(
            f"task_type={task_type!r} needs a numeric or boolean target, but {query.target} "
            "holds text; use task_type='multiclass' or compare it, e.g. = 'value'"
        )
