"""Tables the data names but does not hold (``implied_tables`` in the schema
file): one row per distinct value of some key columns.

An event log (``events(user_id, item_id, ts)``) has no table of its users, yet a
task predicts for each user and a model wants a node per user that all of its
events link to. The implied ``users`` table holds every ``user_id`` value the
listed columns hold, keyed by that name, with ``first_seen``: the earliest time
of a row naming it. A user therefore exists from its first event on, and an
entity task at time ``t`` never asks about a user nobody has seen by ``t``. If
a listed table has no time column, its rows are seen at every time, and so is
every value: the implied table is then static.
"""
from __future__ import annotations

import pandas as pd

from rdl.db.issues import DataIssue
from rdl.db.keys import tidy_key_dtype
from rdl.db.schema import ImpliedTable

FIRST_SEEN = "first_seen"


def implied_frame(
    implied: ImpliedTable, frames: dict[str, pd.DataFrame], times: dict[str, str | None],
) -> tuple[pd.DataFrame, str | None, list[DataIssue]]:
    """The rows of :obj:`implied` (its key, and :data:`FIRST_SEEN` where every
    listed table has a time), the time column's name or ``None``, and the
    issues found: listed columns of different kinds of value (text ids beside
    numbers are compared as text; whole floats, as a NULL-able integer column
    is read, count as integers) and a table left without rows."""
    values = [tidy_key_dtype(frames[table][column]) for table, column in implied.sources]
    issues = []
    if len({pd.api.types.is_numeric_dtype(v) for v in values}) > 1:
        kinds = ", ".join(f"{t}.{c} ({v.dtype})" for (t, c), v in zip(implied.sources, values))
        issues.append(DataIssue(
            "mixed_key_types", implied.name, implied.key, 0, "values compared as text",
            f"the columns that name its rows hold different kinds of value: {kinds}"))
        values = [v.astype("string") for v in values]
    timed = all(times[table] is not None for table, _ in implied.sources)
    parts = []
    for (table, _), value in zip(implied.sources, values):
        part = pd.DataFrame({implied.key: value.to_numpy()})
        if timed:
            part[FIRST_SEEN] = frames[table][times[table]].to_numpy(dtype="datetime64[ns]")
        parts.append(part.dropna(subset=[implied.key]))
    rows = pd.concat(parts, ignore_index=True)
    if timed:
        df = rows.groupby(implied.key, sort=True, as_index=False)[FIRST_SEEN].min()
    else:
        df = rows.drop_duplicates(implied.key).sort_values(implied.key, ignore_index=True)
    if df.empty:
        issues.append(DataIssue("empty_table", implied.name, None, 0, "table kept",
                                "the columns that name its rows hold no values"))
    return df.reset_index(drop=True), FIRST_SEEN if timed else None, issues
