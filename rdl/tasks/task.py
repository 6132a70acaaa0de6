"""The task: a query (or raw SQL) plus split timestamps, as one config dataclass."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from datetime import date, datetime

import pandas as pd

from rdl.db.database import Database
from rdl.db.table import Table
from rdl.tasks import task_types as types
from rdl.tasks.query.resolve import ResolvedQuery, resolve_query
from rdl.tasks.errors import TaskError
from rdl.tasks.query.syntax import Aggregate, Column, Query, aggregates, columns
from rdl.tasks.query.parser import parse
from rdl.tasks.splits import (
    SPLITS,
    check_in_range,
    check_split_order,
    describe,
    parse_timedelta,
    parse_timestamp,
    train_timestamps,
)
from rdl.tasks.label_table import (check_split_table, label_windows, prepare_sql, query_table,
                                  sql_table)
from rdl.tasks.query.windows import check_window, target_windows, window_starts

Time = str | date | datetime  # pd.Timestamp is a datetime


@dataclass(kw_only=True)
class Task:
    r"""A predictive task with leakage-proof temporal splits.

    The constructor arguments are the YAML schema of ``task:`` in configs::

        task:
          query: PREDICT COUNT(orders.*, 0, 30, days) = 0 FOR EACH customers.customer_id
          val_timestamp: 2013-10-01
          test_timestamp: 2013-11-01

    Splits, for entity-level tasks (aggregate targets): validation predicts
    at :obj:`val_timestamp`, test at :obj:`test_timestamp`, and training at
    ``val_timestamp - k * timedelta`` (``k = 1, 2, ...``) as long as the label
    window ends by :obj:`val_timestamp` and every window the query reads
    starts within the data. Labels only use rows in ``(t, t + window]``;
    the entities at ``t`` are the entity-table rows with time ``<= t``.
    Event-level tasks (a column of the entity table as target) predict each
    row at its own time: train holds rows with time ``<= val_timestamp``,
    val ``(val_timestamp, test_timestamp]`` and test ``> test_timestamp``;
    :attr:`hidden_columns` names what the model must not see.

    Args:
        val_timestamp (optional): Validation prediction time; training labels
            end by it. Chosen when left out (see :obj:`test_timestamp`).
            (default: :obj:`None`)
        test_timestamp (optional): Test prediction time, later than
            :obj:`val_timestamp`. Left out (with :obj:`val_timestamp`), it is
            chosen from the data: the last day whose label window ends by the
            last row the target counts, and validation one window (or
            :obj:`timedelta`, if longer) before; an event-level task splits
            its rows at about 80% and 90% of their times. One given, the
            other lies one window from it. :attr:`split_choice` says what
            was chosen. (default: :obj:`None`)
        query (str, optional): A predictive query (see :mod:`rdl.tasks.query.parser`).
            (default: :obj:`None`)
        sql (str, optional): Instead of :obj:`query`, one ``SELECT`` returning
            (entity id, label) for the window ``({start}, {end}]``; needs
            :obj:`entity_table`, :obj:`task_type` and :obj:`timedelta`.
            (default: :obj:`None`)
        entity_table (str, optional): Entity table; taken from the query when
            there is one. (default: :obj:`None`)
        task_type (str, optional): ``binary``, ``multiclass``, ``regression``
            or ``recommendation``; inferred from the query when omitted.
            (default: :obj:`None`)
        timedelta (str, optional): Spacing of training timestamps, e.g.
            ``"30d"``, ``"12h"``, ``"1mo"``; for ``sql`` also the window
            length. Defaults to the length of the target window.
            (default: :obj:`None`)
        metrics (list[str], optional): Metric names; defaults depend on the
            task type. (default: :obj:`None`)
        max_train_timestamps (int, optional): Keep at most this many (the
            most recent) training timestamps. (default: :obj:`1000`)
        val_timestamps (int, optional): Validation prediction times:
            :obj:`val_timestamp` and the next ones, ``timedelta`` apart, each
            label window ending by :obj:`test_timestamp` (RelBench's
            ``num_eval_timestamps``, for validation only: where entities are
            few, more validation seeds for early stopping and the blend).
            (default: :obj:`1`)
        test_timestamps (int, optional): Test prediction times:
            :obj:`test_timestamp` and the next ones, ``timedelta`` apart, each
            label window ending by the last row of the tables the target
            aggregates, not a later calendar's (RelBench's
            ``num_eval_timestamps`` for the test split: where few entities
            are active at a time, such as the twenty drivers of a Formula 1
            season, one test time is too few seeds to rank models).
            (default: :obj:`1`)
    """

    val_timestamp: Time | None = None
    test_timestamp: Time | None = None
    query: str | None = None
    sql: str | None = None
    entity_table: str | None = None
    task_type: str | None = None
    timedelta: str | None = None
    metrics: list[str] | None = None
    max_train_timestamps: int = 1000
    val_timestamps: int = 1
    test_timestamps: int = 1

    def __post_init__(self) -> None:
        self._plan: ResolvedQuery | None = None  # set by check(db); not part of the config
        if (self.query is None) == (self.sql is None):
            raise TaskError("Give exactly one of query= (a PREDICT query) or sql= (a SELECT)")
        self._val = self._given_val = _given_time(self.val_timestamp, "val_timestamp")
        self._test = _given_time(self.test_timestamp, "test_timestamp")
        self.split_choice: str | None = None  # how chosen split times were found, once they are
        if self.task_type is not None:
            types.check_task_type(self.task_type)
        if not isinstance(self.max_train_timestamps, int) or self.max_train_timestamps < 1:
            raise TaskError(
                f"max_train_timestamps={self.max_train_timestamps!r} must be a whole number >= 1"
            )
        self._step = None if self.timedelta is None else parse_timedelta(self.timedelta)
        if self.query is not None:
            self._init_query()
        else:
            self._init_sql()
        if self._val is not None and self._test is not None:
            check_split_order(self._val, self._test, self._step, self._window_end())
        self._check_eval_timestamps()
        if self.task_type is not None:
            self._check_metrics()

    @property
    def split_times(self) -> dict[str, pd.Timestamp | None]:
        """``val_timestamp`` and ``test_timestamp``, given or chosen (``None``
        until chosen: see :meth:`table`)."""
        return {"val_timestamp": self._val, "test_timestamp": self._test}

    @property
    def reference_time(self) -> pd.Timestamp:
        """Where the lengths of calendar offsets are measured (a month's days
        vary): the given :obj:`val_timestamp`, else 2000-01-01, so that the
        config alone fixes them whether the split times are chosen yet or not."""
        return self._given_val if self._given_val is not None else pd.Timestamp("2000-01-01")

    def _window_end(self) -> pd.DateOffset | None:
        """The latest end of the target's windows, relative to a prediction time."""
        ends = [end for _, end in self._windows]
        return max(ends, key=lambda o: self.reference_time + o) if ends else None

    def _check_eval_timestamps(self) -> None:
        """Raises unless :attr:`val_timestamps` and :attr:`test_timestamps` are
        whole numbers >= 1 (above 1 only for window tasks) and the validation
        times fit before the test period (saying how many do); whether the
        test times fit in the data is known once it is read."""
        for name, n in (("val_timestamps", self.val_timestamps),
                        ("test_timestamps", self.test_timestamps)):
            if isinstance(n, bool) or not isinstance(n, int) or n < 1:
                raise TaskError(f"{name}={n!r} must be a whole number >= 1")
            if n > 1 and self.event_level:
                raise TaskError(f"{name} applies to window tasks; an event-level task predicts "
                                "every row of its split at the row's own time")
        n = self.val_timestamps
        if n == 1 or self._val is None or self._test is None:
            return
        fit = len(self._val_times())
        if fit < n:
            raise TaskError(
                f"val_timestamps={n}: only {fit} validation time(s) timedelta "
                f"({describe(self._step)}) apart from val_timestamp={self._val} have their "
                f"label window end by test_timestamp={self._test}; give at most {fit}")

    def _val_times(self) -> list[pd.Timestamp]:
        """``val_timestamp + k * timedelta`` for ``k < val_timestamps`` whose label
        window ends by ``test_timestamp`` (the first always: check_split_order)."""
        return self._stepped_times(self._val, self.val_timestamps, self._test)

    def _test_times(self, db: Database) -> list[pd.Timestamp]:
        """``test_timestamp + k * timedelta`` for ``k < test_timestamps``, the
        later ones only where their label window ends by the target's last row."""
        known_until, what = self._labels_known_until(db)
        if self._test >= known_until:
            raise TaskError(
                f"test_timestamp={self._test} is not before {what} ({known_until}): every test "
                "label window lies past the rows the target counts, so each label would count "
                f"nothing there; pick a test_timestamp before {known_until}")
        times = self._stepped_times(self._test, self.test_timestamps, known_until)
        if len(times) < self.test_timestamps:
            raise TaskError(
                f"test_timestamps={self.test_timestamps}: only {len(times)} test time(s) "
                f"timedelta ({describe(self._step)}) apart from test_timestamp={self._test} "
                f"have their label window end by {what} ({known_until}); give at most "
                f"{len(times)}")
        return times

    def _choose_split_times(self, db: Database) -> None:
        """Chooses the split times the config leaves out, from the data: for a
        window task, test at the last whole day whose label window ends by the
        last row the target counts, validation one step (and one window)
        before; for an event-level task, the days at 80% and 90% of the entity
        rows' times. :attr:`split_choice` says what was chosen and why."""
        if self._val is not None and self._test is not None:
            return
        if self.event_level:
            table = db[self.entity_table]
            times = table.df[table.time_column].dropna()
            if times.empty:
                raise TaskError(f"Cannot choose val_timestamp and test_timestamp: "
                                f"{table.name} has no rows in time; give them in the task")
            test = self._test or times.quantile(0.9).normalize()
            val = self._val or times.quantile(0.8).normalize()
            why = (f"from the data: {table.name} rows up to val_timestamp train, up to "
                   "test_timestamp validate, about 80% and 10% of them")
        else:
            last, what = self._labels_known_until(db)
            end = self._window_end() or pd.DateOffset(days=0)
            gap = max(self._step, end, key=lambda o: self.reference_time + o)  # the longer one
            if self._val is not None:  # test one gap after the given validation time
                val, test = self._val, self._val + gap
                why = f"{describe(gap)} after val_timestamp"
            elif self._test is not None:
                val, test = (self._test - gap).normalize(), self._test
                why = f"{describe(gap)} before test_timestamp"
            else:
                test = (last - end).normalize()
                val = (test - gap).normalize()
                why = (f"from the data: test on the last day whose {describe(end)} label "
                       f"window ends by {what} ({last}), validation {describe(gap)} before it")
        chosen = [f"{name} {time.date() if time == time.normalize() else time}"
                  for name, time, given
                  in (("val_timestamp", val, self._val), ("test_timestamp", test, self._test))
                  if given is None]
        self.split_choice = (f"task: {' and '.join(chosen)} chosen ({why}); "
                             "task.val_timestamp and task.test_timestamp set them")
        try:
            check_split_order(val, test, self._step, self._window_end())
            check_in_range("val_timestamp", val, db.min_time, db.max_time)
            check_in_range("test_timestamp", test, db.min_time, db.max_time)
        except TaskError as exc:
            raise TaskError(f"{exc} ({self.split_choice})") from None
        self._val, self._test = val, test
        self._check_eval_timestamps()

    def _labels_known_until(self, db: Database) -> tuple[pd.Timestamp, str]:
        """Until when the target's rows are known, and where that comes from:
        the earliest last row of the timed tables the target aggregates (a
        calendar table that runs on does not make later windows countable),
        else the data's last row."""
        ends = [(table.max_time, table.name) for table in self._timed_target_tables(db)]
        if ends:
            last, name = min(ends)
            return last, f"the last row of {name}"
        return db.max_time, "the data's last row"

    def _labels_known_from(self, db: Database) -> tuple[pd.Timestamp, str]:
        """From when the target's rows are known, and where that comes from:
        the latest first row of the timed tables the target aggregates, else
        the data's first row. Chinook's employees are hired from 2002 on, its
        invoices start in 2021: a window ending before then counts nothing
        because nothing was recorded yet, not because customers churned."""
        starts = [(table.min_time, table.name) for table in self._timed_target_tables(db)]
        if starts:
            first, name = max(starts)
            return first, f"the first row of {name}"
        return db.min_time, "the data's first row"

    def _timed_target_tables(self, db: Database) -> list[Table]:
        """The tables with rows in time that the query's target aggregates."""
        if self._ast is None:
            return []
        names = {agg.table for agg in aggregates(self._ast.target)}
        return [db[name] for name in sorted(names)
                if name in db.tables and db[name].min_time is not None]

    def _stepped_times(self, first: pd.Timestamp, n: int,
                       last_end: pd.Timestamp) -> list[pd.Timestamp]:
        """``first + k * timedelta`` for ``k < n``, the later ones only while
        their label window ends by ``last_end``."""
        window_end = self._window_end()
        times = [first]
        while len(times) < n:
            t = first + len(times) * self._step
            if window_end is not None and t + window_end > last_end:
                break
            times.append(t)
        return times

    def _init_query(self) -> None:
        self._ast = parse(self.query)
        if self.entity_table is not None and self.entity_table != self._ast.table:
            raise TaskError(
                f"entity_table={self.entity_table!r} differs from the query's FOR EACH "
                f"{self._ast.table}; drop entity_table, the query sets it"
            )
        self.entity_table = self._ast.table
        for role, part in (("target", self._ast.target), ("where", self._ast.where)):
            for agg in aggregates(part):
                check_window(agg, role, self._ast)
        self._windows = target_windows(self._ast)
        self._starts = window_starts(self._ast)
        if self._step is None and self._windows:
            first = aggregates(self._ast.target)[0]
            self._step = pd.DateOffset(**{first.unit: first.end - first.start})
        if self._windows:
            inferred = _type_without_schema(self._ast)
            if self.task_type is None:
                self.task_type = inferred
            types.check_override(self.task_type, inferred, None, self._ast)

    def _init_sql(self) -> None:
        self._ast = None
        for name in ("entity_table", "task_type", "timedelta"):
            if getattr(self, name) is None:
                raise TaskError(f"A task given as sql= also needs {name}=")
        prepare_sql(self.sql)
        self._windows = [(pd.DateOffset(days=0), self._step)]
        self._starts = [pd.DateOffset(days=0)]

    def _check_metrics(self) -> None:
        if self.metrics is None:
            self.metrics = types.default_metrics(self.task_type, self.top_k)
        if isinstance(self.metrics, str) or not isinstance(self.metrics, (list, tuple)):
            raise TaskError(f"metrics={self.metrics!r} must be a list of names, e.g. [auroc]")
        for name in self.metrics:
            types.split_metric_name(name, self.task_type, self.top_k)

    def __repr__(self) -> str:
        what = f"query={self.query!r}" if self.query is not None else f"sql={self.sql!r}"
        return (f"Task({self.task_type or 'type unknown until check(db)'}, {what}, "
                f"val={self._val}, test={self._test})")

    # Properties --------------------------------------------------------------
    @property
    def event_level(self) -> bool:
        """Whether each entity row is predicted at its own time (e.g. fraud)."""
        return self._ast is not None and not self._windows

    @property
    def filters_entities(self) -> bool:
        """Whether not every entity row is a seed at a prediction time: a
        ``WHERE`` filter, or ``sql`` that returns the seeds it chooses."""
        return self._ast is None or self._ast.where is not None

    @property
    def horizon(self) -> pd.Timedelta | None:
        """How far ahead the task looks: the length of its (first) target window,
        measured at ``val_timestamp``, whatever the spacing of training
        timestamps; ``None`` for event-level tasks."""
        if not self._windows:
            return None
        start, end = self._windows[0]
        return (self.reference_time + end) - (self.reference_time + start)

    @property
    def entity_column(self) -> str | None:
        """Entity primary key (from the query; for ``sql`` after :meth:`check`)."""
        if self._ast is not None:
            return self._ast.column
        return self._plan.entity_column if self._plan is not None else None

    @property
    def hidden_columns(self) -> dict[str, list[str]]:
        """Columns a model must hide for the predicted row and later rows."""
        if self._ast is None or not self.event_level:
            return {}
        return {self._ast.table: sorted({c.column for c in columns(self._ast.target)})}

    def value_floor(self, db: Database) -> float | None:
        """The least value a regression label can take, as the query says: ``0``
        for a count, or for a sum, mean, least or greatest value of a column
        (or an event's own column) that holds no negative value in :obj:`db`;
        ``None`` where it may be negative or the task is given as ``sql``.
        Predictions are raised to it: a count or a total below 0 is never
        right, and raising a value to 0 never moves it away from a label of 0
        or more."""
        if self.task_type != types.REGRESSION or self._ast is None:
            return None
        target = self._ast.target
        if isinstance(target, Aggregate) and target.func in ("COUNT", "COUNT_DISTINCT"):
            return 0.0
        if not isinstance(target, (Aggregate, Column)) or target.column is None:
            return None
        values = pd.to_numeric(db[target.table].df[target.column], errors="coerce")
        return 0.0 if values.notna().any() and values.min() >= 0 else None

    def excluded_columns(self, extra: dict[str, list[str]] | None = None
                         ) -> dict[str, list[str]]:
        """Feature columns no model may see: :attr:`hidden_columns` plus
        ``extra`` (a config's ``exclude_columns``), per table, without repeats."""
        merged = {t: list(cols) for t, cols in self.hidden_columns.items()}
        for table, cols in (extra or {}).items():
            merged.setdefault(table, []).extend(c for c in cols if c not in merged[table])
        return merged

    @property
    def top_k(self) -> int | None:
        """``k`` of ``RANK TOP k`` for recommendation, else ``None``."""
        return self._ast.top_k if self._ast is not None else None

    @property
    def item_table(self) -> str | None:
        """Table of the recommended items; known after :meth:`check`."""
        return self._plan.item_table if self._plan is not None else None

    # Database-dependent API --------------------------------------------------
    def check(self, db: Database) -> ResolvedQuery | None:
        r"""Checks the task against :obj:`db`'s schema and resolves what needs it.

        Fills in :obj:`task_type` (and default :obj:`metrics`) for column
        targets, whose type depends on the column's dtype. Returns the
        resolved query plan (``None`` for ``sql`` tasks).
        """
        if self._ast is None:
            entity = db[self.entity_table]
            if entity.primary_key is None:
                raise TaskError(f"entity_table={self.entity_table!r} has no primary key")
            self._plan = ResolvedQuery(None, self.entity_table, entity.primary_key,
                                       entity.time_column, False, self.task_type)
            return None
        self._plan = resolve_query(self._ast, db, self.task_type)
        if self.task_type is None:
            self.task_type = self._plan.task_type
            self._check_metrics()
        return self._plan

    def timestamps(self, db: Database, split: str) -> pd.DatetimeIndex:
        """Prediction times of :obj:`split` (entity-level tasks)."""
        _check_split(split)
        if self.event_level:
            raise TaskError("An event-level task predicts each row at its own time; it has no "
                            "split timestamps. Use task.table(db, split)")
        self._choose_split_times(db)
        check_in_range("val_timestamp", self._val, db.min_time, db.max_time)
        check_in_range("test_timestamp", self._test, db.min_time, db.max_time)
        if split in ("val", "test"):
            times = self._test_times(db) if split == "test" else self._val_times()
            t = times[-1]
            known_until, what = self._labels_known_until(db)
            late = [t + end for _, end in self._windows if t + end > known_until]
            if late:
                warnings.warn(
                    f"The {split} label window ends at {max(late)}, after {what} "
                    f"({known_until}); its labels only see part of the window",
                    stacklevel=2,
                )
            return pd.DatetimeIndex(times, name="timestamp")
        ends = [end for _, end in self._windows]
        counted_from, what = self._labels_known_from(db)
        out = train_timestamps(self._val, self._step, ends, self._starts, db.min_time,
                               self.max_train_timestamps, counted_from)
        if len(out) == 0:
            raise TaskError(self._no_training_time(db, ends, what, counted_from))
        return out

    def _no_training_time(self, db: Database, ends: list[pd.DateOffset], what: str,
                          counted_from: pd.Timestamp | None) -> str:
        """Why no training time fits before ``val_timestamp``, naming the
        query's look-back where history plus label window outlast the data."""
        back = self._val - min(self._val + o for o in self._starts)
        ahead = max(self._val + o for o in ends) - self._val
        had = self._val - db.min_time
        if back > pd.Timedelta(0) and back + ahead > had:
            return (f"No training timestamp fits before val_timestamp={self._val}: the query "
                    f"looks back {back.days} days from each prediction time (a WHERE's windows "
                    f"included) and its label window {ahead.days} days ahead, "
                    f"{(back + ahead).days} days in all, but the data starts {db.min_time}, "
                    f"{had.days} days before val_timestamp. Shorten the query's "
                    "look-back (e.g. COUNT(..., -90, 0, days)) or its label window, or set "
                    "task.val_timestamp and task.test_timestamp later")
        return (f"No training timestamp fits between the data start {db.min_time} and "
                f"val_timestamp={self._val}: every t = val_timestamp - k * timedelta "
                f"({describe(self._step)}) either has its label window past val_timestamp, "
                f"reads rows before the data starts or has its label window end before {what} "
                f"({counted_from}). Move val_timestamp later or shorten timedelta / the windows")

    def make_table(self, db: Database, timestamps) -> pd.DataFrame:
        """Labels at arbitrary :obj:`timestamps`, without the split checks."""
        if self.event_level:
            raise TaskError("make_table() takes timestamps; an event-level task uses table()")
        self.check(db)
        ts = pd.DatetimeIndex(pd.to_datetime(list(timestamps)), name="timestamp")
        if self._ast is None:
            return sql_table(self.sql, db, self.entity_table, self.task_type, ts, self._step)
        return query_table(self._plan, db, ts)

    def table(self, db: Database, split: str) -> pd.DataFrame:
        r"""The label table of :obj:`split`.

        Args:
            db (Database): Database to compute labels from.
            split (str): ``"train"``, ``"val"`` or ``"test"``.

        Returns:
            Columns ``[<entity primary key>, "timestamp", "label"]``, sorted
            by timestamp then id; ``df.attrs["dropped"]`` counts dropped rows.

        Raises:
            TaskError: Split timestamps outside the data, a split without
                labels or, for binary tasks, with a single class.
        """
        _check_split(split)
        self.check(db)
        if self.event_level:
            self._choose_split_times(db)
            check_in_range("val_timestamp", self._val, db.min_time, db.max_time)
            check_in_range("test_timestamp", self._test, db.min_time, db.max_time)
            bounds = {"train": (None, self._val), "val": (self._val, self._test),
                      "test": (self._test, None)}[split]
            df = query_table(self._plan, db, after=bounds[0], upto=bounds[1])
            check_split_table(df, self.task_type, split)
        else:
            times = self.timestamps(db, split)
            df = self.make_table(db, times)
            if df.empty:
                self._check_entities_exist(db, split, times[-1])
            check_split_table(df, self.task_type, split, label_windows(times, self._windows[0]))
        return df

    def _check_entities_exist(self, db: Database, split: str, latest: pd.Timestamp) -> None:
        """Raises, naming the time column, when every entity row is dated after
        the split's last prediction time: a row exists only from its time on."""
        entity = db[self.entity_table]
        first = entity.min_time
        if first is not None and first > latest:
            raise TaskError(
                f"The {split} split has no labels: every {entity.name} row is dated after its "
                f"last prediction time {latest} ({entity.name}.{entity.time_column} runs "
                f"{first} .. {entity.max_time}), and a row exists only from its time on. If "
                f"{entity.time_column} records when rows were loaded, declare {entity.name}: "
                "time_column: null in a schema file (rdl inspect shows such columns)")

    def event_labels(self, db: Database) -> pd.DataFrame:
        """Event-level tasks: the label of every row of the entity table, at the
        row's own time (the same columns as :meth:`table`), so that a model can
        see the labels of rows older than the one it predicts."""
        if not self.event_level:
            raise TaskError("event_labels() is for event-level tasks (PREDICT <table>.<column> "
                            "FOR EACH <table>.<key>); this task predicts over a window")
        self.check(db)
        return query_table(self._plan, db)

    def classes(self, db: Database) -> list:
        """Sorted distinct labels of a multiclass task over all splits."""
        if self.task_type is None:
            self.check(db)
        if self.task_type != types.MULTICLASS:
            raise TaskError(f"classes() is for multiclass tasks; this one is {self.task_type}")
        labels = pd.concat([self.table(db, s)["label"] for s in SPLITS])
        return sorted(pd.unique(labels.dropna()).tolist())

    def num_classes(self, db: Database) -> int:
        """Number of classes of a multiclass task (see :meth:`classes`)."""
        return len(self.classes(db))


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise TaskError(f"split={split!r} is not a split; use one of {list(SPLITS)}")


def _type_without_schema(query: Query) -> str:
    """Task type of an aggregate target, which needs no schema to infer."""
    target = query.target
    if isinstance(target, Aggregate):
        if target.func == "LIST_DISTINCT":
            return types.RECOMMENDATION
        return types.BINARY if target.func == "EXISTS" else types.REGRESSION
    return types.BINARY


def _given_time(value: Time | None, name: str) -> pd.Timestamp | None:
    """A split time of the config, parsed; ``None`` where it leaves it to the data."""
    return None if value is None else parse_timestamp(value, name)
