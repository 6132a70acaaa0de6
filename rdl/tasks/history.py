r"""What each entity already had: the items of a recommendation target up to a time.

Recommending *new* items needs, for a seed (entity ``e``, time ``t``), the
items ``e`` already had at or before ``t`` (the target's ``LIST_DISTINCT``
over the window ``(-inf, 0]``), and whether entities repeat items at all:
the share of training positives ``(e, item, t)`` that ``e`` already had at or
before ``t``. Both read the rows of :func:`~rdl.tasks.query.to_sql.history_sql`
in the same locked DuckDB as the labels, so the baseline and the GNN agree on
what "seen" means.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rdl.db.database import Database
from rdl.tasks import task_types as types
from rdl.tasks.query.to_sql import history_sql
from rdl.tasks.sandbox import open_connection, run
from rdl.tasks.errors import TaskError
from rdl.tasks.task import Task

REPEAT_THRESHOLD = 0.05
_HISTORY = "__rdl_history"
_LABELS = "__rdl_labels"


@dataclass(frozen=True)
class RepeatRate:
    r"""How often entities get an item they already had.

    Args:
        positives: Positive pairs ``(entity, item, t)`` counted.
        repeats: Those whose entity had the item at or before ``t``.
    """

    positives: int
    repeats: int

    @property
    def rate(self) -> float:
        return self.repeats / self.positives if self.positives else 0.0


def item_history(task: Task, db: Database) -> pd.DataFrame:
    r"""Every ``(entity, item, time)`` row the task's ``LIST_DISTINCT`` reads.

    Returns:
        Columns ``[<entity primary key>, "item", "time"]`` in the database's
        own key values, sorted by entity then time.
    """
    sql, params = history_sql(_plan(task, db))
    con = open_connection(db)
    try:
        out = run(con, sql + "\nORDER BY 1, 3, 2", params)
    finally:
        con.close()
    out.columns = [task.entity_column, "item", "time"]
    out["time"] = pd.to_datetime(out["time"]).astype("datetime64[ns]")
    return out


def seen_items(task: Task, db: Database, labels: pd.DataFrame) -> pd.DataFrame:
    r"""The items each label row's entity had at or before the row's time.

    Args:
        task (Task): A recommendation task.
        db (Database): The database.
        labels (pandas.DataFrame): ``[<entity key>, "timestamp", ...]`` rows.

    Returns:
        Columns ``row`` (position in :obj:`labels`), ``item`` (key),
        ``count`` (rows with that item) and ``last`` (time of the latest),
        sorted by row then item.
    """
    frame = pd.DataFrame({"__row": np.arange(len(labels)), "__id": labels.iloc[:, 0].to_numpy(),
                          "__t": _times(labels["timestamp"])})
    sql = (f"SELECT l.__row AS row, h.item, count(*) AS count, max(h.t) AS last "
           f"FROM {_LABELS} l JOIN {_HISTORY} h ON h.id = l.__id AND h.t <= l.__t "
           "GROUP BY 1, 2 ORDER BY 1, 2")
    out = _run_on_history(task, db, frame, sql)
    out["last"] = pd.to_datetime(out["last"]).astype("datetime64[ns]")
    out["count"] = out["count"].astype("int64")
    return out


def repeat_rate(task: Task, db: Database, labels: pd.DataFrame) -> RepeatRate:
    r"""Share of the positives of :obj:`labels` (a recommendation label table,
    e.g. the training split) whose entity already had the item at or before
    the row's time."""
    exploded = labels.explode("label")
    exploded = exploded[exploded["label"].notna()]
    frame = pd.DataFrame({"__id": exploded.iloc[:, 0].to_numpy(),
                          "__t": _times(exploded["timestamp"]),
                          "__item": exploded["label"].to_numpy()})
    if frame.empty:
        return RepeatRate(0, 0)
    sql = ("SELECT count(*) AS positives, count(f.first) AS repeats "
           f"FROM {_LABELS} l LEFT JOIN (SELECT id, item, min(t) AS first FROM {_HISTORY} "
           "GROUP BY 1, 2) f ON f.id = l.__id AND f.item = l.__item AND f.first <= l.__t")
    out = _run_on_history(task, db, frame, sql)
    return RepeatRate(int(out["positives"].iloc[0]), int(out["repeats"].iloc[0]))


def resolve_exclude_seen(option: bool | str, rate: float | None) -> bool:
    r"""Whether to exclude seen items: :obj:`option` when ``True``/``False``;
    for ``"auto"``, when the training repeat :obj:`rate` is below
    :obj:`REPEAT_THRESHOLD`."""
    if not (isinstance(option, bool) or option == "auto"):
        raise TaskError(f"exclude_seen={option!r} must be auto, true or false")
    if option != "auto":
        return bool(option)
    if rate is None:
        raise TaskError("exclude_seen=auto needs the training split's repeat rate")
    return rate < REPEAT_THRESHOLD


def describe_exclude_seen(option: bool | str, rate: float | None, exclude: bool) -> str:
    """One line saying what was chosen, and why."""
    measured = "" if rate is None else f"{rate:.1%} of training positives were already seen; "
    why = (f"auto: {'below' if exclude else 'at or above'} {REPEAT_THRESHOLD:.0%}"
           if option == "auto" else f"exclude_seen={str(option).lower()}")
    action = "left out of" if exclude else "stay in"
    return f"{measured}already-seen items {action} recommendations ({why})"


def _plan(task: Task, db: Database):
    plan = task.check(db)
    if task.task_type != types.RECOMMENDATION or plan is None or plan.item_table is None:
        raise TaskError(
            f"Seen items need a recommendation query (PREDICT LIST_DISTINCT(...) RANK TOP k); "
            f"this task is {task.task_type} ({task.query or 'sql'})"
        )
    return plan


def _run_on_history(task: Task, db: Database, labels: pd.DataFrame, sql: str) -> pd.DataFrame:
    history, params = history_sql(_plan(task, db))
    con = open_connection(db, {_LABELS: labels})
    try:
        return run(con, f"WITH {_HISTORY} AS ({history}) {sql}", params)
    finally:
        con.close()


def _times(values: pd.Series) -> np.ndarray:
    return pd.to_datetime(values).to_numpy(dtype="datetime64[ns]")
