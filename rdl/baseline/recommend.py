r"""The classic recommendation baseline: an entity's own past items, then what is popular.

For a label row (entity ``e``, cutoff ``t``) of ``PREDICT LIST_DISTINCT(
rows.item, ...) RANK TOP k``, items are ranked by how often ``e`` itself
interacted with them up to ``t``, ties and the remaining places going to the
items most frequent among all entities in the last target window ``(t - w, t]``
(``w`` = the length of the query's target window). With ``exclude_seen`` the
entity's own past items are left out instead: the most popular items it has
not had yet. The reference ranks by global popularity alone. Rows and past
items are those of :mod:`rdl.tasks.history` (the target's table, link and
``WHERE`` filter), with time ``<= t``.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.baseline.groups import LABELS, q
from rdl.baseline.sql import hide_progress_bar
from rdl.db.database import Database
from rdl.tasks.history import item_history, seen_items
from rdl.tasks.task import Task

_WINDOWS = "__rdl_windows"
_HISTORY = "__rdl_history"
_SEEN = "__rdl_seen"


def recommend(db: Database, task: Task, labels: pd.DataFrame, *, popularity_only: bool = False,
              exclude_seen: bool = False, threads: int = 0) -> list[list]:
    r"""Top-``k`` items for each label row, best first.

    Args:
        db (Database): The database.
        task (Task): A recommendation task (``LIST_DISTINCT ... RANK TOP k``).
        labels (pandas.DataFrame): ``[<entity key>, "timestamp", ...]`` rows.
        popularity_only (bool): Rank by global popularity only (the
            reference). (default: :obj:`False`)
        exclude_seen (bool): Never recommend an item the entity had at or
            before the row's time: popular items it has not had, in order.
            (default: :obj:`False`)
        threads (int): DuckDB threads; ``0`` uses all cores. (default: :obj:`0`)

    Returns:
        One list of at most ``k`` item keys per label row, in label order.
    """
    import duckdb

    target = task.check(db).query.target
    window = pd.DateOffset(**{target.unit: target.end - target.start})
    cutoffs = pd.DatetimeIndex(labels["timestamp"].unique())
    windows = pd.DataFrame({"__t": _ns(cutoffs), "__lo": _ns(cutoffs - window)})
    label_frame = pd.DataFrame({"__row": np.arange(len(labels)), "__t": _ns(labels["timestamp"])})
    rows = item_history(task, db)
    history = pd.DataFrame({"__item": rows["item"].to_numpy(), "__ct": _ns(rows["time"])})
    seen = seen_items(task, db, labels)
    seen = pd.DataFrame({"__row": seen["row"].to_numpy(), "__item": seen["item"].to_numpy(),
                         "__own": seen["count"].to_numpy()})
    config = {"enable_external_access": False}
    if threads:
        config["threads"] = int(threads)
    con = duckdb.connect(":memory:", config=config)
    try:
        hide_progress_bar(con)
        con.register(LABELS, label_frame)
        con.register(_WINDOWS, windows)
        con.register(_HISTORY, history)
        con.register(_SEEN, seen)
        out = con.execute(_sql(task.top_k, popularity_only, exclude_seen)).df()
    finally:
        con.close()
    ranked = dict(zip(out["__row"], out["items"]))
    return [list(ranked.get(i, []))[: task.top_k] for i in range(len(labels))]


def _sql(k: int, popularity_only: bool, exclude_seen: bool) -> str:
    popular = f"SELECT l.__row, p.__item, 0 AS own FROM {LABELS} l JOIN pop p ON p.__t = l.__t"
    if popularity_only:
        candidates = f"{popular} WHERE p.r <= {int(k)}"
    elif exclude_seen:
        # The k-th unseen item ranks at most k + (seen items) in popularity.
        candidates = (f"{popular} LEFT JOIN (SELECT __row, count(*) AS n FROM {_SEEN} "
                      f"GROUP BY 1) s ON s.__row = l.__row "
                      f"WHERE p.r <= {int(k)} + coalesce(s.n, 0) AND NOT EXISTS (SELECT 1 "
                      f"FROM {_SEEN} x WHERE x.__row = l.__row AND x.__item = p.__item)")
    else:
        candidates = (f"SELECT __row, __item, __own AS own FROM {_SEEN} UNION ALL "
                      f"{popular} WHERE p.r <= {int(k)}")
    return (
        f"WITH pop AS (SELECT *, row_number() OVER (PARTITION BY __t ORDER BY n DESC, __item) "
        f"AS r FROM (SELECT w.__t, h.__item, count(*) AS n FROM {q(_WINDOWS)} w "
        f"JOIN {_HISTORY} h ON h.__ct > w.__lo AND h.__ct <= w.__t GROUP BY 1, 2)), "
        f"cand AS ({candidates}), "
        "scored AS (SELECT c.__row, c.__item, max(c.own) AS own, coalesce(max(p.n), 0) AS pop "
        f"FROM cand c JOIN {LABELS} l ON l.__row = c.__row "
        "LEFT JOIN pop p ON p.__t = l.__t AND p.__item = c.__item GROUP BY 1, 2) "
        "SELECT __row, list(__item ORDER BY own DESC, pop DESC, __item) AS items "
        "FROM scored GROUP BY __row"
    )


def evaluate_ranking(recommended: list[list], truth: pd.Series, item_keys: pd.Index,
                     names: list[str], k: int) -> dict[str, float]:
    r"""The task's ranking metrics (``map@k`` ...) from :mod:`rdl.tasks.metrics`.

    Args:
        recommended (list[list]): Ranked item keys per row.
        truth (pandas.Series): The true item keys per row (the label lists).
        item_keys (pandas.Index): Every item key, to turn keys into indices.
        names (list[str]): Metric names, as in ``task.metrics``.
        k (int): The task's ``RANK TOP k``.
    """
    import torch

    from rdl.tasks import task_types as types
    from rdl.tasks.metrics import get_metrics

    preds = np.full((len(recommended), k), -2, dtype=np.int64)  # -2 matches no item
    for i, items in enumerate(recommended):
        idx = item_keys.get_indexer(list(items)[:k])
        preds[i, : len(idx)] = idx
    target = [item_keys.get_indexer(list(items)).tolist() for items in truth]
    out = {}
    for name, metric in get_metrics(names, types.RECOMMENDATION, k=k).items():
        metric.update(torch.from_numpy(preds), target)
        out[name] = float(metric.compute())
    return out


def _ns(times) -> np.ndarray:
    return pd.DatetimeIndex(times).to_numpy(dtype="datetime64[ns]").view(np.int64)
