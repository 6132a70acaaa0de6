"""A tiny recommendation database, users --< views >-- items, and its task."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.db.database import Database
from rdl.db.table import Table

VIEWS_START = "2022-01-01"


def make_views(num_users: int = 24, num_items: int = 30, per_user: int = 10, days: int = 110,
               repeat: bool = False, seed: int = 0) -> Database:
    r"""A tiny recommendation database: users --< views >-- items.

    With ``repeat=False`` no user views the same item twice (each picks
    ``per_user`` distinct items); with ``repeat=True`` each user views only
    three items of its own, each first in the first 5 days, then again and
    again. Task:
    ``LIST_DISTINCT(views.item_id, 0, 10, days)`` for each user (see
    :data:`VIEWS_TASK`).
    """
    rng = np.random.default_rng(seed)
    start = pd.Timestamp(VIEWS_START)
    rows = []
    for u in range(num_users):
        pool = rng.choice(num_items, 3 if repeat else per_user, replace=False)
        minutes = rng.integers(0, days * 24 * 60, per_user)
        items = pool
        if repeat:
            items = np.concatenate([pool, rng.choice(pool, per_user - 3)])
            minutes[:3] = rng.integers(0, 5 * 24 * 60, 3)
            minutes[3:] = rng.integers(5 * 24 * 60, days * 24 * 60, per_user - 3)
        for item, minute in zip(items, minutes):
            rows.append((f"u{u}", int(item), start + pd.Timedelta(minutes=int(minute))))
    views = pd.DataFrame(rows, columns=["user_id", "item_id", "at"])
    views.insert(0, "view_id", np.arange(len(views), dtype=np.int64))
    views["at"] = views["at"].astype("datetime64[ns]")
    views["seconds"] = rng.integers(1, 300, len(views)).astype(float)
    users = pd.DataFrame({"user_id": [f"u{u}" for u in range(num_users)],
                          "age": rng.integers(18, 70, num_users).astype(float)})
    items = pd.DataFrame({"item_id": np.arange(num_items, dtype=np.int64),
                          "price": rng.lognormal(2, 1, num_items),
                          "kind": [f"k{i % 4}" for i in range(num_items)]})
    return Database({
        "users": Table("users", users, "user_id", {}, None, {"age": "numerical"}),
        "items": Table("items", items, "item_id", {}, None,
                       {"price": "numerical", "kind": "categorical"}),
        "views": Table("views", views, "view_id", {"user_id": "users", "item_id": "items"}, "at",
                       {"seconds": "numerical"}),
    }, source="views")


VIEWS_TASK = {"query": "PREDICT LIST_DISTINCT(views.item_id, 0, 10, days) RANK TOP 5 "
                       "FOR EACH users.user_id",
              "val_timestamp": "2022-03-22", "test_timestamp": "2022-04-01"}
