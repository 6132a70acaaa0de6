"""Reference answers computed the slow, obvious way, one Python loop per
row, to check rdl's vectorised SQL and pandas against."""
from __future__ import annotations

import pandas as pd

from rdl.db.database import Database


def brute_force_labels(child: pd.DataFrame, entities: pd.DataFrame, *, entity_id: str, fk: str,
                       time: str, func: str, column: str | None, start: pd.DateOffset,
                       end: pd.DateOffset, timestamps,
                       entity_time: str | None = None) -> pd.DataFrame:
    """Labels computed the slow, obvious way: one Python loop per (entity, t).

    Returns ``[entity_id, "timestamp", "value"]`` with NaN for empty AVG/MIN/MAX.
    """
    rows = []
    for t in pd.to_datetime(list(timestamps)):
        alive = entities if entity_time is None else entities[entities[entity_time] <= t]
        for eid in alive[entity_id].dropna():
            sel = child[(child[fk] == eid) & (child[time] > t + start) & (child[time] <= t + end)]
            vals = sel[column].dropna() if column is not None else sel
            if func == "COUNT":
                v = len(vals)
            elif func == "EXISTS":
                v = len(vals) > 0
            elif func == "SUM":
                v = float(vals.sum()) if len(vals) else 0.0
            elif func == "COUNT_DISTINCT":
                v = vals.nunique()
            elif func in ("AVG", "MIN", "MAX"):
                agg = {"AVG": "mean", "MIN": "min", "MAX": "max"}[func]
                v = float(getattr(vals, agg)()) if len(vals) else float("nan")
            else:  # LIST_DISTINCT
                v = sorted(vals.unique().tolist())
            rows.append((eid, t, v))
    return pd.DataFrame(rows, columns=[entity_id, "timestamp", "value"])


def seen_by_brute_force(db: Database, user, at) -> set:
    """The items ``user`` viewed at or before ``at`` in a
    :func:`~rdl.testing.views.make_views` database, straight from the rows."""
    views = db["views"].df
    mine = views[(views["user_id"] == user) & (views["at"] <= pd.Timestamp(at))]
    return set(mine["item_id"].tolist())
