"""Seeds whose entity has not begun: no row of the target's table yet, or an
entity row dated after rows that name it.

A churn query without ``WHERE`` asks about every entity row at every
prediction time, also customers who have never ordered. Where most seeds are
such, their labels are easy (nothing before, nothing after) and crowd out the
question the user meant, about customers who did order. rdl says so, with the
``WHERE`` that asks about active entities only; it changes nothing itself,
since a task about first orders means every entity.
"""
from __future__ import annotations

import pandas as pd

from rdl.db.database import Database
from rdl.db.schema_report import late_parent_hints
from rdl.tasks import task_types as types
from rdl.tasks.query.syntax import Aggregate, aggregates
from rdl.tasks.task import Task

# From this share of dormant training seeds on, the hint is given.
DORMANT_HINT_SHARE = 0.5


def dormant_share(task: Task, db: Database, labels: pd.DataFrame) -> tuple[float, str] | None:
    """Share of ``labels``' rows whose entity has no row of the table the
    target aggregates at or before the row's time, and that table's name;
    ``None`` for a task with ``WHERE``, an event-level or ``sql`` task, or a
    target table without time or linked by a key of several columns."""
    found = _dormant(task, db, labels)
    return None if found is None else (found[0], found[1].table)


def dormant_hint(task: Task, db: Database, labels: pd.DataFrame) -> str | None:
    """A line for the training labels when most seeds' entities have not
    begun (see :func:`dormant_share`), naming the ``WHERE`` that leaves them
    out; ``None`` otherwise, and for recommendation, where a seed is one with
    items to come and a first-time buyer is no easy label but a cold start."""
    if task.task_type == types.RECOMMENDATION:
        return None
    found = _dormant(task, db, labels)
    if found is None or found[0] < DORMANT_HINT_SHARE:
        return None
    share, agg = found
    return (f"{share:.0%} of the training seeds have no {agg.table} row at or before their "
            f"time: their labels are easy and say little about the others. To ask about "
            f"{task.entity_table} rows active in the last window only, add WHERE "
            f"COUNT({agg.table}.*, -{agg.end - agg.start}, 0, {agg.unit}) > 0 to the query")


def seed_hints(task: Task, db: Database, labels: pd.DataFrame) -> list[str]:
    """Lines for the training labels: :func:`dormant_hint`, and where rows
    that name an entity are older than the entity row itself, that those
    entities are no seeds before their own time (a load date taken for a
    start: dellstore2's customers)."""
    hints = [hint] if (hint := dormant_hint(task, db, labels)) is not None else []
    if not task.event_level and db[task.entity_table].time_column is not None:
        hints += late_parent_hints(db, parents={task.entity_table})
    return hints


def _dormant(task: Task, db: Database, labels: pd.DataFrame) -> tuple[float, Aggregate] | None:
    """:func:`dormant_share`'s share, and the target's aggregate it counts by."""
    plan = task.check(db)
    if plan is None or task.event_level or task.filters_entities or labels.empty:
        return None
    agg = aggregates(plan.query.target)[0]
    link, time = plan.links.get(agg), plan.time_columns.get(agg.table)
    if link is None or time is None or "+" in link:
        return None
    rows = db[agg.table].df
    first = rows.dropna(subset=[link]).groupby(link)[time].min()
    began = labels[task.entity_column].map(first)
    dormant = began.isna() | (began > labels["timestamp"])
    return float(dormant.mean()), agg
