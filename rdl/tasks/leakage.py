r"""Leakage guard: feature columns that give a task's label away.

Two rules, measured on the training split only (labels and rows sampled down
to ``max_rows`` with a fixed seed, so large tables cost a few vectorised
passes):

* ``null_pattern`` (event-level binary and multiclass tasks): whether a
  feature column of the entity table is NULL almost decides the label. With
  ``m`` "the column is NULL" and ``y`` "the label is k" (``k = 1`` for binary
  tasks, each class against the rest for multiclass ones), the balanced
  agreement ``max(b, 1 - b)``, ``b = (P(m | y) + P(not m | not y)) / 2``,
  reaches ``threshold``. Balanced, so that a rare label does not make every
  rarely-NULL column look like it. A cancelled flight's ``dep_delay`` scores
  1.0: it is NULL exactly when the flight is cancelled.
* ``future_time`` (all tasks): a timestamp feature column (not the time
  column) of the entity table or of a table joined to it by foreign keys
  holds values later than the time the model sees them at, in at least
  ``min_share`` of the pairs ``(t, row)``: ``t`` a training prediction time,
  ``row`` a row visible at ``t`` (time column ``<= t``; any row of a static
  table) whose value is set. Entity-level tasks predict at the training
  timestamps; event-level tasks at each training row's own time, and their
  entity table's rows are compared with their own time. Where a task's
  ``WHERE`` (or ``sql``) chooses its seeds, the entity table's rows are the
  seeds at each time: a driver born in 1985 is no seed in 1960, so an
  archive's birth dates are not flagged for the decades before them. A
  ``last_purchase_at`` column of a customers table is the churn label in
  disguise; an honest timestamp (a birth date, a signup date) is never
  later than the time it is seen at. A numerical column named for a year
  whose values are whole years (1800-2100) counts as the first day of that
  year: an archive's ``deathYear`` is a date in disguise.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import pandas as pd

from rdl.db.database import Database
from rdl.db.schema import TimeColumn
from rdl.db.table import Table
from rdl.db.times import parse_times
from rdl.tasks import task_types as types
from rdl.tasks.task import Task

NULL_PATTERN = "null_pattern"
FUTURE_TIME = "future_time"
GuardMode = Literal["warn", "exclude", "off"]
GUARD_MODES = get_args(GuardMode)
MAX_CLASSES = 20  # multiclass: the most frequent classes checked one against the rest


@dataclass(frozen=True)
class Leak:
    r"""A feature column that may give the label away.

    Args:
        table: Table name.
        column: Feature column.
        rule: ``"null_pattern"`` or ``"future_time"``.
        score: What the rule measured, in ``[0, 1]``: the balanced agreement
            of NULL with the label, or the share of values later than the
            time they are seen at.
        reason: The measurement in words.
    """

    table: str
    column: str
    rule: str
    score: float
    reason: str

    def __str__(self) -> str:
        return f"{self.table}.{self.column}: {self.reason}"


def reads_train_labels(task: Task) -> bool:
    """Whether :func:`find_leaks` reads ``task``'s training label table: where
    the seeds are chosen (``WHERE``, ``sql``) or are rows at their own time."""
    return task.event_level or task.filters_entities


def find_leaks(db: Database, task: Task, exclude: dict[str, list[str]] | None = None, *,
               threshold: float = 0.99, min_share: float = 0.05, max_rows: int = 200_000,
               seed: int = 0, train_labels: pd.DataFrame | None = None) -> list[Leak]:
    r"""Feature columns of :obj:`db` that may give :obj:`task`'s label away.

    Args:
        db (Database): The database the model reads.
        task (Task): The task; checked against :obj:`db` here.
        exclude (dict, optional): Table -> columns already left out (a
            config's ``exclude_columns``); never reported. (default: :obj:`None`)
        threshold (float): Balanced agreement that flags a NULL pattern.
            (default: :obj:`0.99`)
        min_share (float): Share of later values that flags a timestamp
            column. (default: :obj:`0.05`)
        max_rows (int): Rows sampled per measurement. (default: :obj:`200000`)
        seed (int): Seed of the sampling. (default: :obj:`0`)
        train_labels (pandas.DataFrame, optional): ``task.table(db, "train")``
            where the caller has it; computed when needed otherwise.
            (default: :obj:`None`)

    Returns:
        The suspicious columns, sorted by table and column.
    """
    task.check(db)
    hidden = task.excluded_columns(exclude)
    rng = np.random.default_rng(seed)
    entity = db[task.entity_table]
    leaks: list[Leak] = []
    frame = None  # the entity table's rows of sampled training seeds, where they are chosen
    if reads_train_labels(task):
        if train_labels is None:
            train_labels = task.table(db, "train")
        rows = _sample(train_labels, max_rows, rng)
        index = pd.Index(entity.df[entity.primary_key])
        frame = entity.df.iloc[index.get_indexer(rows[entity.primary_key])]
        seed_times = _times(rows["timestamp"])
    if task.event_level:
        times = seed_times
        if task.task_type in (types.BINARY, types.MULTICLASS):
            columns = [c for c in entity.stypes if c not in hidden.get(entity.name, ())]
            leaks += _null_patterns(entity.name, frame, rows["label"].to_numpy(), columns,
                                    task.task_type, threshold)
    else:
        times = _times(task.timestamps(db, "train").to_series())
    own_time = "its row's own time" if task.event_level else "the prediction time"
    for table in _joined(db, entity.name):
        for column, stype in table.stypes.items():
            if column == table.time_column or column in hidden.get(table.name, ()):
                continue
            values = _time_values(table.df[column], column, stype)
            if values is None or table.df[column].nunique(dropna=False) <= 1:
                continue  # one value for every row (a load date) tells no label from another
            if frame is not None and table.name == entity.name:
                seen = own_time
                own = _time_values(frame[column], column, stype)
                share = None if own is None else _later_than_own(own, seed_times)
            else:
                seen = "the prediction time"
                share = _later_share(table, values, times, max_rows, rng)
            if share is not None and share >= min_share:
                leaks.append(Leak(table.name, column, FUTURE_TIME, share,
                                  f"{share:.1%} of its values seen in training lie after {seen}"))
    return sorted(leaks, key=lambda leak: (leak.table, leak.column))


def guard(db: Database, task: Task, mode: GuardMode = "warn",
          exclude: dict[str, list[str]] | None = None,
          train_labels: pd.DataFrame | None = None) -> dict[str, list[str]]:
    r"""Runs :func:`find_leaks` as :obj:`mode` says and returns the exclusions to use.

    Args:
        db (Database): The database the model reads.
        task (Task): The task.
        mode (str): ``"warn"`` warns once about the flagged columns,
            ``"exclude"`` also leaves them out, ``"off"`` skips the check.
            (default: ``"warn"``)
        exclude (dict, optional): The configured ``exclude_columns``.
            (default: :obj:`None`)
        train_labels (pandas.DataFrame, optional): As in :func:`find_leaks`.
            (default: :obj:`None`)

    Returns:
        :obj:`exclude` plus, with ``"exclude"``, the flagged columns.
    """
    if mode not in GUARD_MODES:
        raise ValueError(f"leakage_guard={mode!r} is not one of {list(GUARD_MODES)}")
    out = {table: list(columns) for table, columns in (exclude or {}).items()}
    if mode == "off":
        return out
    leaks = find_leaks(db, task, exclude, train_labels=train_labels)
    if not leaks:
        return out
    warnings.warn(describe_leaks(leaks, excluded=mode == "exclude"), stacklevel=3)
    if mode == "exclude":
        for table, columns in leak_columns(leaks).items():
            out.setdefault(table, []).extend(c for c in columns if c not in out[table])
    return out


def leak_columns(leaks: list[Leak]) -> dict[str, list[str]]:
    """The flagged columns per table, in the shape of ``exclude_columns``."""
    out: dict[str, list[str]] = {}
    for leak in leaks:
        out.setdefault(leak.table, [])
        if leak.column not in out[leak.table]:
            out[leak.table].append(leak.column)
    return out


def describe_leaks(leaks: list[Leak], excluded: bool = False) -> str:
    """A message naming every flagged column, and how to exclude or keep them."""
    tables = leak_columns(leaks)
    count = sum(len(columns) for columns in tables.values())
    lines = [f"Leakage guard: {'excluded ' if excluded else ''}{count} feature column(s) "
             "that may give the label away:"]
    lines += [f"  - {leak}" for leak in leaks]
    if excluded:
        lines.append("Keep them with data.leakage_guard: warn.")
    else:
        columns = ", ".join(f"{t}: [{', '.join(cols)}]" for t, cols in tables.items())
        lines.append(f"Exclude them with data.exclude_columns: {{{columns}}} or "
                     "data.leakage_guard: exclude (data.leakage_guard: off skips this check).")
    return "\n".join(lines)


def _null_patterns(table: str, frame: pd.DataFrame, labels: np.ndarray, columns: list[str],
                   task_type: str, threshold: float) -> list[Leak]:
    """Columns whose NULLs almost decide the label (one class against the rest)."""
    if task_type == types.BINARY:
        classes = [1]
    else:
        classes = pd.Series(labels).value_counts().index[:MAX_CLASSES].tolist()
    leaks = []
    for column in columns:
        null = frame[column].isna().to_numpy()
        if null.all() or not null.any():
            continue
        best = None
        for k in classes:
            y = labels == k
            if y.all() or not y.any():
                continue
            when, otherwise = null[y].mean(), null[~y].mean()
            b = (when + 1 - otherwise) / 2
            if best is None or max(b, 1 - b) > best[0]:
                best = (max(b, 1 - b), k, when, otherwise)
        if best is not None and best[0] >= threshold:
            score, k, when, otherwise = best
            leaks.append(Leak(table, column, NULL_PATTERN, float(score),
                              f"NULL in {when:.1%} of training rows labelled {k!r} and "
                              f"{otherwise:.1%} of the others (agreement {score:.3f})"))
    return leaks


def _later_share(table: Table, values: np.ndarray, times: np.ndarray, max_rows: int,
                 rng: np.random.Generator) -> float | None:
    """Share of pairs (t in :obj:`times`, row visible at t with its value in
    :obj:`values` set) whose value is later than t; ``None`` when there is
    no pair."""
    rows = _times(table.df[table.time_column]) if table.time_column else None
    keep = np.flatnonzero(~np.isnat(values) if rows is None
                          else ~(np.isnat(values) | np.isnat(rows)))
    if len(keep) > max_rows:
        keep = keep[rng.integers(0, len(keep), max_rows)]
    values = values[keep]
    if rows is None:
        visible = np.full(len(times), len(values))
        settled = np.searchsorted(np.sort(values), times, side="right")
    else:
        rows = rows[keep]
        visible = np.searchsorted(np.sort(rows), times, side="right")
        # visible with a value <= t  <=>  max(row time, value) <= t
        settled = np.searchsorted(np.sort(np.maximum(rows, values)), times, side="right")
    total = int(visible.sum())
    return None if total == 0 else float((visible - settled).sum() / total)


def _later_than_own(values: np.ndarray, own: np.ndarray) -> float | None:
    """Share of set values later than their row's own (or its seed's) time."""
    keep = ~(np.isnat(values) | np.isnat(own))
    return float((values[keep] > own[keep]).mean()) if keep.any() else None


def _joined(db: Database, name: str) -> list[Table]:
    """:obj:`name`'s table and every table linked to it by foreign keys, any hops."""
    links: dict[str, set[str]] = {t.name: set() for t in db}
    for table in db:
        for parent in table.foreign_keys.values():
            links[table.name].add(parent)
            links[parent].add(table.name)
    seen, frontier = {name}, [name]
    while frontier:
        frontier = {n for t in frontier for n in links[t]} - seen
        seen.update(frontier)
    return [t for t in db if t.name in seen]


def _sample(df: pd.DataFrame, max_rows: int, rng: np.random.Generator) -> pd.DataFrame:
    if len(df) <= max_rows:
        return df
    return df.iloc[np.unique(rng.integers(0, len(df), max_rows))]


def _time_values(series: pd.Series, column: str, stype: str) -> np.ndarray | None:
    """A timestamp column's values, or a year column's as the first day of
    each year (see the module's docstring), as :func:`_times` gives them;
    ``None`` for any other column."""
    if stype == "timestamp":
        return _times(series)
    if stype != "numerical" or "year" not in column.lower():
        return None
    present = pd.to_numeric(series, errors="coerce").dropna()
    if present.empty or not ((present % 1 == 0) & present.between(1800, 2100)).all():
        return None
    first_days, _ = parse_times(series, TimeColumn(column, unit="year"))
    return first_days.to_numpy(dtype="datetime64[ns]")


def _times(series: pd.Series) -> np.ndarray:
    """Naive ``datetime64[ns]`` values (NaT for missing or unreadable ones)."""
    times = pd.to_datetime(series, errors="coerce")
    if getattr(times.dt, "tz", None) is not None:
        times = times.dt.tz_convert(None)
    return times.to_numpy(dtype="datetime64[ns]")
