"""Predictive tasks: a query language, leakage-proof temporal splits and metrics.

``import rdl.tasks`` does not import torch; :mod:`rdl.tasks.metrics` does, and
is loaded only when one of its names is first used.
"""
from rdl.tasks.query.resolve import ResolvedQuery, resolve_query
from rdl.tasks.query.to_sql import label_sql
from rdl.tasks.errors import QueryError, TaskError
from rdl.tasks.history import (
    RepeatRate,
    item_history,
    repeat_rate,
    resolve_exclude_seen,
    seen_items,
)
from rdl.tasks.leakage import Leak, find_leaks
from rdl.tasks.query.parser import parse
from rdl.tasks.task import Task
from rdl.tasks.splits import SPLITS, parse_timedelta
from rdl.tasks.task_types import TASK_TYPES, default_metrics

_LAZY = ("get_metrics", "metrics_for", "metric_names")

__all__ = [
    "Task",
    "parse",
    "resolve_query",
    "ResolvedQuery",
    "label_sql",
    "Leak",
    "find_leaks",
    "QueryError",
    "TaskError",
    "SPLITS",
    "TASK_TYPES",
    "parse_timedelta",
    "RepeatRate",
    "item_history",
    "seen_items",
    "repeat_rate",
    "resolve_exclude_seen",
    "default_metrics",
    *_LAZY,
]


def __getattr__(name: str):
    if name in _LAZY:
        from rdl.tasks import metrics

        return getattr(metrics, name)
    raise AttributeError(f"module 'rdl.tasks' has no attribute {name!r}")
