r"""Time-aware aggregate features of a task's label rows, computed in DuckDB.

For each label row (entity id, cutoff ``t``) the features are: the entity
row's own columns, its parents' columns, windowed aggregates of its children
(count, sum/mean/min/max of numerical columns, days since the last and the
first child row) and, two hops out, means over the parents of those children
and aggregates of the other children of its parents. Only rows with time
``<= t`` are read (siblings: ``< t``); the exact rules are in
:mod:`rdl.baseline.groups`, which generates the SQL from the schema.

Key columns are never features, nor are the task's hidden columns nor the
configured ``exclude_columns``. Timestamps become ages in days at the cutoff.
Multicategorical, text and embedding columns are left out: only numerical,
categorical and timestamp columns become features.

Without given windows, they follow the data's time step
(:mod:`rdl.baseline.windows`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import duckdb
import numpy as np
import pandas as pd

from rdl.baseline.children import PLANS, ChildRows
from rdl.baseline.groups import GroupBuilder
from rdl.baseline.sql import LABELS, TIME, Visible, hide_progress_bar, q
from rdl.baseline.windows import data_windows
from rdl.db.database import Database
from rdl.db.table import Table
from rdl.db.times import parse_times
from rdl.tasks.task import Task

# A children group is joined (label row x past child row) unless that makes more
# than this many pairs per child and label row; then window functions run
# instead. Measured with 5M child rows: ~0.01 us per joined pair and aggregate,
# ~1.8 us per row and aggregate through a RANGE window frame.
JOIN_PAIRS_PER_ROW = 200
# Characters LightGBM refuses in feature names (it stores them as JSON).
_FORBIDDEN = str.maketrans({c: "_" for c in "\"',:[]{} \t\n"})


class BaselineError(ValueError):
    """A baseline setting or input that cannot work, named in the message."""


@dataclass
class Features:
    r"""The feature matrix of some label rows.

    Args:
        frame: One row per label row, in label order; one column per feature.
        categorical: Names of the categorical columns (``category`` dtype).
        seconds: Wall time of each feature group's query.
        windows: The windows in days the aggregates used.
        notes: What was decided from the data (windows chosen), one line each.
    """

    frame: pd.DataFrame
    categorical: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    windows: tuple[float, ...] = ()
    notes: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        return list(self.frame.columns)


def excluded_columns(db: Database, task: Task,
                     extra: dict[str, list[str]] | None = None) -> dict[str, list[str]]:
    r"""Columns no feature may read: the task's hidden target plus :obj:`extra`.

    Raises:
        BaselineError: :obj:`extra` names a table or column that is not a
            feature column of :obj:`db`.
    """
    for table, cols in (extra or {}).items():
        if table not in db:
            raise BaselineError(f"exclude_columns names table {table!r}, which is not in the "
                                f"database; its tables are {sorted(db.tables)}")
        unknown = sorted(set(cols) - set(db[table].stypes))
        if unknown:
            raise BaselineError(
                f"exclude_columns names {unknown}, which are not feature columns of table "
                f"{table!r}; its features are {sorted(db[table].stypes)}"
            )
    return task.excluded_columns(extra)


def visible_columns(table: Table, hidden: list[str]) -> Visible:
    """Feature columns of :obj:`table` that are not keys and not hidden, by kind."""
    keys = {table.primary_key, *table.foreign_keys}
    kinds: dict[str, list[str]] = {"numerical": [], "categorical": [], "timestamp": []}
    for col, stype in table.stypes.items():
        if col in keys or col in hidden or col not in table.df.columns:
            continue
        if stype == "timestamp" and pd.api.types.is_numeric_dtype(table.df[col]):
            stype = "numerical"  # a number declared a time: use the number
        if stype in kinds:
            kinds[stype].append(col)
    return Visible(*(tuple(kinds[k]) for k in ("numerical", "categorical", "timestamp")))


def feature_table(db: Database, task: Task, split: str, *,
                  windows: tuple[float, ...] | list[float] | None = None, hops: int = 2,
                  exclude_columns: dict[str, list[str]] | None = None,
                  category_min_rows: int = 1) -> pd.DataFrame:
    r"""The label table of :obj:`split` with its features appended.

    Args:
        db (Database): The database.
        task (Task): The task; its label rows are ``task.table(db, split)``.
        split (str): ``"train"``, ``"val"`` or ``"test"``.
        windows (list[float], optional): Past windows in days; all time is
            always added. (default: :obj:`None`, from the data's time step:
            see :mod:`rdl.baseline.windows`)
        hops (int): ``1`` (own, parents, children) or ``2`` (also parents of
            children and children of parents). (default: :obj:`2`)
        exclude_columns (dict, optional): Table -> columns to leave out.
            (default: :obj:`None`)
        category_min_rows (int): Categories of the entity table that fewer
            rows hold read as missing (``data.entity_category_min_rows``, as
            the GNN sees them). (default: :obj:`1`, every category)

    Returns:
        ``[<entity key>, "timestamp", "label", <features>...]``, in the label
        table's row order.
    """
    labels = task.table(db, split)
    feats = compute_features(db, task, labels, windows=windows, hops=hops,
                             exclude_columns=exclude_columns,
                             category_min_rows=category_min_rows)
    return pd.concat([labels.reset_index(drop=True), feats.frame], axis=1)


def compute_features(db: Database, task: Task, labels: pd.DataFrame, *,
                     windows: tuple[float, ...] | list[float] | None = None, hops: int = 2,
                     exclude_columns: dict[str, list[str]] | None = None,
                     category_min_rows: int = 1, threads: int = 0,
                     children_plan: str = "auto") -> Features:
    r"""Features of arbitrary label rows ``[<entity key>, "timestamp", ...]``.

    Rows may repeat an (entity, timestamp) pair; each gets its own features.
    See :func:`feature_table` for the first arguments.

    Args:
        threads (int): DuckDB threads; ``0`` uses all cores. (default: :obj:`0`)
        children_plan (str): ``"join"``, ``"window"`` (see
            :mod:`rdl.baseline.children`; both give the same numbers) or
            ``"auto"``: join unless that pairs each child and label row with
            more than :obj:`JOIN_PAIRS_PER_ROW` others. (default: ``"auto"``)
    """
    if windows is not None:
        windows = check_windows(windows)
    if hops not in (1, 2):
        raise BaselineError(f"hops={hops!r} must be 1 or 2")
    if children_plan not in (*PLANS, "auto"):
        raise BaselineError(f"children_plan={children_plan!r} must be one of "
                            f"{[*PLANS, 'auto']}")
    task.check(db)
    notes = []
    if windows is None:
        windows, note = data_windows(db, task.entity_table, hops)
        notes.append(note)
    hidden = excluded_columns(db, task, exclude_columns)
    visible = {t.name: visible_columns(t, hidden.get(t.name, [])) for t in db}
    times = labels["timestamp"].to_numpy(dtype="datetime64[ns]").view(np.int64)
    label_frame = pd.DataFrame({"__row": np.arange(len(labels), dtype=np.int64),
                                "__id": labels.iloc[:, 0].to_numpy(), "__t": times})
    builder = GroupBuilder(db, task.entity_table, visible, list(windows), task.event_level,
                           int(times.max()) if len(times) else 0)
    con = _connect(db, visible, label_frame, threads)
    try:
        parts, is_categorical, seconds = [], [], {}
        vocab = _Vocabulary(con, {task.entity_table: category_min_rows})

        def choose(rows: ChildRows) -> str:
            if children_plan != "auto":
                return children_plan
            return _cheaper_plan(con, rows, len(labels))

        for group in builder.groups(hops, choose):
            start = time.perf_counter()
            out = con.execute(group.sql).df()
            seconds[group.name] = time.perf_counter() - start
            if len(out) != len(labels) or not np.array_equal(out["__row"], label_frame["__row"]):
                raise AssertionError(f"feature group {group.name!r} lost or repeated label rows")
            columns = {}
            for j, name in enumerate(group.features):
                values = out[f"f{j}"]
                if name in group.categories:
                    categories = vocab(*group.categories[name])
                    columns[name] = pd.Categorical(values, categories=categories)
                else:
                    # float32: DuckDB's parallel sums differ run to run in the last
                    # bits of a double, enough to send a row down the other side of
                    # a LightGBM split (the blend's prior moved by 0.002 between two
                    # calls on the same seeds); rounded, every call gives one value.
                    columns[name] = pd.to_numeric(values, errors="coerce").astype("float32")
                is_categorical.append(name in group.categories)
            parts.append(pd.DataFrame(columns))
    finally:
        con.close()
    frame = pd.concat(parts, axis=1) if parts else pd.DataFrame(index=range(len(labels)))
    frame.columns = _clean_names(list(frame.columns))
    categorical = [n for n, c in zip(frame.columns, is_categorical) if c]
    return Features(frame, categorical, seconds, windows, notes)


def check_windows(windows) -> tuple[float, ...]:
    """Window lengths as sorted distinct positive floats; raises on anything else."""
    if isinstance(windows, (int, float)):
        windows = [windows]
    try:
        values = [float(w) for w in windows]
    except (TypeError, ValueError):
        raise BaselineError(f"windows={windows!r} must be a list of days, e.g. [7, 30]") from None
    bad = [w for w in values if not np.isfinite(w) or w <= 0]
    if bad:
        raise BaselineError(f"windows={windows!r}: every window must be a positive number "
                            f"of days, not {bad[0]}")
    return tuple(sorted(set(values)))


def _cheaper_plan(con: duckdb.DuckDBPyConnection, rows: ChildRows, num_labels: int) -> str:
    """``"join"`` unless the label rows pair with too many child rows (an upper
    bound that ignores time: every child row of each label row's entity)."""
    fk, table = q(rows.fk), q(rows.table.name)
    pairs, children = con.execute(
        f"SELECT coalesce(sum(c.n), 0), (SELECT count(*) FROM {table}) FROM {LABELS} l "
        f"JOIN (SELECT {fk} AS k, count(*) AS n FROM {table} GROUP BY 1) c ON c.k = l.__id"
    ).fetchone()
    return "join" if pairs <= JOIN_PAIRS_PER_ROW * (children + num_labels) else "window"


class _Vocabulary:
    """Categories of a column: its distinct values as text, sorted, read once;
    in the tables of ``min_rows``, only the values that many rows hold (the
    others read as missing)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, min_rows: dict[str, int]) -> None:
        self.con = con
        self.min_rows = min_rows
        self.cache: dict[tuple[str, str], list[str]] = {}

    def __call__(self, table: str, column: str) -> list[str]:
        if (table, column) not in self.cache:
            rows = self.con.execute(
                f"SELECT CAST({q(column)} AS VARCHAR) FROM {q(table)} "
                f"WHERE {q(column)} IS NOT NULL GROUP BY 1 "
                f"HAVING count(*) >= {int(self.min_rows.get(table, 1))} ORDER BY 1").fetchall()
            self.cache[(table, column)] = [r[0] for r in rows]
        return self.cache[(table, column)]


def _connect(db: Database, visible: dict[str, Visible], labels: pd.DataFrame,
             threads: int) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the label rows and each table's needed columns."""
    config = {"enable_external_access": False, "autoinstall_known_extensions": False,
              "autoload_known_extensions": False}
    if threads:
        config["threads"] = int(threads)
    con = duckdb.connect(":memory:", config=config)
    hide_progress_bar(con)
    con.register(LABELS, labels)
    for table in db:
        con.register(table.name, _table_frame(table, visible[table.name]))
    return con


def _table_frame(table: Table, cols: Visible) -> pd.DataFrame:
    """Keys, visible columns (timestamps as epoch ns) and ``__rdl_time``."""
    if TIME in table.df.columns or table.name == LABELS:
        raise BaselineError(f"table {table.name!r} uses the name {TIME!r} or {LABELS!r}, which "
                            "the baseline reserves; rename it in the schema")
    df = table.df
    keys = [k for k in (table.primary_key, *table.foreign_keys) if k is not None]
    wanted = list(dict.fromkeys([*keys, *cols.numerical, *cols.categorical]))
    frame = df[wanted].copy(deep=False)
    for col in cols.timestamp:
        parsed, _ = parse_times(df[col])
        missing = parsed.isna().to_numpy()
        ns = np.where(missing, 0, parsed.to_numpy(dtype="datetime64[ns]").view(np.int64))
        frame[col] = pd.arrays.IntegerArray(ns, missing)
    if table.time_column is not None:
        frame[TIME] = df[table.time_column].to_numpy(dtype="datetime64[ns]").view(np.int64)
    return frame


def _clean_names(names: list[str]) -> list[str]:
    """Feature names LightGBM accepts, still unique."""
    out, seen = [], set()
    for name in names:
        clean = name.translate(_FORBIDDEN)
        base, n = clean, 1
        while clean in seen:
            n += 1
            clean = f"{base}_{n}"
        seen.add(clean)
        out.append(clean)
    return out
