"""Runs a task's label computation and shapes the result into a label table.

A label table has the columns ``[<entity primary key>, "timestamp", "label"]``
with entity ids in the user's own key values. Labels are ``int64`` 0/1 for
binary tasks, ``float64`` for regression, the column's own values for
multiclass and lists of the referenced keys for recommendation. Rows whose label is NULL (or an
empty list, for recommendation) are dropped; how many is recorded in
``df.attrs["dropped"]`` so that nothing disappears silently.
"""
from __future__ import annotations

import pandas as pd

from rdl.db.database import Database
from rdl.tasks import task_types as types
from rdl.tasks.query.resolve import ResolvedQuery
from rdl.tasks.query.to_sql import TIMESTAMPS_VIEW, label_sql
from rdl.tasks.sandbox import check_select, open_connection, run
from rdl.tasks.errors import TaskError

PLACEHOLDERS = ("{start}", "{end}")


def query_table(plan: ResolvedQuery, db: Database, timestamps: pd.DatetimeIndex | None = None,
                after: pd.Timestamp | None = None,
                upto: pd.Timestamp | None = None) -> pd.DataFrame:
    r"""Labels of a compiled query, all timestamps in one statement.

    Args:
        plan (ResolvedQuery): Checked query.
        db (Database): Database to read.
        timestamps (pd.DatetimeIndex, optional): Prediction times
            (entity-level tasks). (default: :obj:`None`)
        after (pd.Timestamp, optional): Event-level: rows with time
            ``> after``. (default: :obj:`None`)
        upto (pd.Timestamp, optional): Event-level: rows with time
            ``<= upto``. (default: :obj:`None`)
    """
    sql, params = label_sql(plan, after=after, upto=upto)
    extra = {}
    if not plan.event_level:
        ts = pd.DatetimeIndex(timestamps if timestamps is not None else [])
        extra[TIMESTAMPS_VIEW] = pd.DataFrame({"timestamp": ts.astype("datetime64[ns]")})
    con = open_connection(db, extra)
    try:
        raw = run(con, sql, params)
    finally:
        con.close()
    raw.columns = [plan.entity_column, "timestamp", "label"]
    return finish(raw, plan.task_type)


def prepare_sql(sql: str) -> str:
    """Checks an escape-hatch query and turns ``{start}``/``{end}`` into parameters.

    Write the placeholders bare (``time > {start}``), not inside quotes: they
    become the bound parameters ``$start`` and ``$end``.
    """
    if not isinstance(sql, str) or not sql.strip():
        check_select(sql)  # raises: empty
    missing = [p for p in PLACEHOLDERS if p not in sql]
    if missing:
        raise TaskError(
            f"sql does not use {' and '.join(missing)}; label rows must be limited to the "
            "window, e.g. WHERE orders.time > {start} AND orders.time <= {end}"
        )
    prepared = sql.replace("{start}", "$start").replace("{end}", "$end")
    check_select(prepared)
    return prepared


def sql_table(sql: str, db: Database, entity_table: str, task_type: str,
              timestamps: pd.DatetimeIndex, step: pd.DateOffset) -> pd.DataFrame:
    r"""Labels of a raw ``SELECT`` (the escape hatch), one run per timestamp.

    ``{start}`` is bound to ``t`` and ``{end}`` to ``t + step``. Each run sees
    only rows with time ``<= t + step``, so the statement cannot read labels
    from beyond its window even by mistake. Returned ids that are not in the
    entity table at ``t`` (rows with a later time) are dropped and counted
    in ``attrs["dropped"]["unknown_entity"]``.

    Args:
        sql (str): A ``SELECT`` returning (entity id, label).
        db (Database): Database to read.
        entity_table (str): Table the ids belong to.
        task_type (str): Task type, to shape the labels.
        timestamps (pd.DatetimeIndex): Prediction times.
        step (pd.DateOffset): Window length.
    """
    prepared = prepare_sql(sql)
    entity = db[entity_table]
    if entity.primary_key is None:
        raise TaskError(f"entity_table={entity_table!r} has no primary key to predict for")
    parts, unknown = [], 0
    for t in timestamps:
        known = set(entity.upto(t).df[entity.primary_key].dropna())
        end = t + step
        con = open_connection(db.upto(end))
        try:
            out = run(con, prepared, {"start": t.to_pydatetime(), "end": end.to_pydatetime()})
        finally:
            con.close()
        if out.shape[1] != 2:
            raise TaskError(
                f"sql returned {out.shape[1]} columns {list(out.columns)}; it must return "
                "exactly two: the entity id and the label"
            )
        out.columns = [entity.primary_key, "label"]
        if out[entity.primary_key].duplicated().any():
            dup = out.loc[out[entity.primary_key].duplicated(), entity.primary_key].iloc[0]
            raise TaskError(f"sql returned entity {dup!r} twice for {t}; GROUP BY the entity id")
        keep = out[entity.primary_key].isin(known)
        unknown += int((~keep).sum())
        out = out.loc[keep]
        out.insert(1, "timestamp", t)
        parts.append(out)
    raw = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=[entity.primary_key, "timestamp", "label"])
    raw = raw.sort_values(["timestamp", entity.primary_key], kind="stable")
    df = finish(raw, task_type)
    df.attrs["dropped"]["unknown_entity"] = unknown
    return df


def finish(raw: pd.DataFrame, task_type: str) -> pd.DataFrame:
    """Drops NULL/empty labels (counting them) and gives labels their dtype."""
    if len(set(raw.columns)) < 3:
        raise TaskError(
            f"The entity's primary key is named {raw.columns[0]!r}, like a column of the label "
            "table; rename it in the schema"
        )
    label = raw["label"]
    if task_type == types.RECOMMENDATION:
        label = label.map(lambda v: None if v is None or (not isinstance(v, str) and len(v) == 0)
                          else list(v), na_action="ignore")
        empty = label.isna()
        dropped = {"null_label": 0, "empty_list": int(empty.sum())}
    else:
        empty = label.isna()
        dropped = {"null_label": int(empty.sum()), "empty_list": 0}
    df = raw.loc[~empty].copy()
    df["label"] = label[~empty]
    df["timestamp"] = pd.to_datetime(df["timestamp"]).astype("datetime64[ns]")
    if task_type == types.BINARY:
        df["label"] = _binary(df["label"])
    elif task_type == types.REGRESSION:
        try:
            df["label"] = df["label"].astype("float64")
        except (TypeError, ValueError):
            raise TaskError("task_type='regression' needs numeric labels") from None
    df = df.reset_index(drop=True)
    df.attrs["dropped"] = dropped
    return df


def describe_labels(df: pd.DataFrame, task_type: str) -> str:
    """One line on the label distribution: balance, spread or list sizes."""
    label = df["label"]
    if df.empty:
        return "none"
    if task_type == types.BINARY:
        pos = int(label.sum())
        return f"{pos} positive / {len(df) - pos} negative ({pos / len(df):.1%} positive)"
    if task_type == types.REGRESSION:
        return (f"mean {label.mean():.4g}, std {label.std():.4g}, "
                f"min {label.min():.4g}, max {label.max():.4g}")
    if task_type == types.MULTICLASS:
        counts = label.value_counts()
        shown = ", ".join(f"{k}: {v}" for k, v in counts.head(10).items())
        more = f", ... ({len(counts)} classes)" if len(counts) > 10 else ""
        return shown + more
    sizes = label.map(len)
    return f"{sizes.mean():.2f} items per entity on average (max {sizes.max()})"


def describe_split(df: pd.DataFrame, task_type: str, split: str) -> str:
    """One line on a split's label table, for a user to check the task before
    training on it: seeds, prediction times, labels, and rows dropped."""
    times = df["timestamp"].drop_duplicates().sort_values()
    if times.empty:
        when = "(none)"
    elif len(times) == 1:
        when = f"at {_when(times.iloc[0])}"
    else:
        when = (f"at {len(times):,} prediction times "
                f"({_when(times.iloc[0])} .. {_when(times.iloc[-1])})")
    line = f"{split} labels: {len(df):,} seeds {when}; {describe_labels(df, task_type)}"
    dropped = {k: v for k, v in df.attrs.get("dropped", {}).items() if v}
    if dropped:
        line += "; dropped " + ", ".join(f"{v:,} ({k.replace('_', ' ')})"
                                         for k, v in dropped.items())
    return line


def _when(time: pd.Timestamp) -> str:
    return f"{time:%Y-%m-%d}" if time == time.normalize() else str(time)


def _binary(label: pd.Series) -> pd.Series:
    values = set(pd.unique(label).tolist())
    if not values <= {0, 1, True, False}:
        shown = sorted(map(str, values))[:5]
        raise TaskError(
            f"task_type='binary' needs labels that are true/false or 0/1, got {shown}; "
            "compare the target (e.g. COUNT(...) > 0) or use task_type='regression'"
        )
    return label.astype("int64")


def label_windows(times: pd.DatetimeIndex, window: tuple[pd.DateOffset, pd.DateOffset]) -> str:
    """Where the labels at prediction ``times`` look, for messages:
    ``(2016-01-01, 2016-12-31]``, and the last time's window if there are several."""
    start, end = window
    first, last = (f"({_when(t + start)}, {_when(t + end)}]" for t in (times[0], times[-1]))
    if len(times) == 1:
        return f"its labels look at {first} (prediction time {_when(times[0])})"
    return (f"its labels look at {first} .. {last} ({len(times)} prediction times "
            f"{_when(times[0])} .. {_when(times[-1])})")


def check_split_table(df: pd.DataFrame, task_type: str, split: str,
                      windows: str | None = None) -> None:
    """Raises when a split's label table is empty or, for binary tasks, one-class;
    also when a regression training split has one label value only, which
    gives a model nothing to learn (a small val/test split may be constant).
    ``windows`` (:func:`label_windows`) says where the labels looked."""
    where = f"; {windows}" if windows else ""
    if df.empty:
        dropped = df.attrs.get("dropped", {})
        raise TaskError(
            f"The {split} split has no labels (dropped: {dropped}){where}. No entity passes "
            "WHERE or no rows fall in the windows at its timestamps; check the window, its unit "
            "and the split timestamps against the data's time range"
        )
    if task_type == types.BINARY and df["label"].nunique() < 2:
        only = int(df["label"].iloc[0])
        raise TaskError(
            f"Every label of the {split} split is {only}{where}: a binary task needs both "
            "classes. Change the threshold, the window (rows stamped at a period's end can fall "
            "just outside a window of days: '1 years' holds a whole year, '365 days' not one "
            "with a leap day) or the split timestamps"
        )
    if task_type == types.REGRESSION and split == "train" and df["label"].nunique() < 2:
        raise TaskError(
            f"Every label of the train split is {df['label'].iloc[0]:g}: a regression task needs "
            "labels that vary. Check the target column, the window or the split timestamps"
        )
