r"""Default feature windows from the data's time step.

Windows of 7, 30, 90 and 365 days are empty on data that comes once a year.
Without configured windows, the baseline measures the time step of the
tables it aggregates over windows (the entity's timed child tables and, with
2 hops, those of its parents): the median gap between consecutive distinct
times of each table, the finest table deciding. A step of about a year gets
windows of 1, 2 and 5 years, about a month 1, 3 and 12 months, anything
finer :data:`DEFAULT_WINDOWS`.

A window ``w`` holds the child rows with time in ``[t - w, t]``. At a cutoff
``t`` on a period boundary (1 January, the 1st of a month), with ``at:
start`` the current period's row sits at ``t`` and the row ``k`` periods
earlier ``k`` periods before ``t``; with ``at: end`` the newest row (of the
period just over) sits one second before ``t`` and the row ``k`` periods
earlier ``k`` periods and one second before ``t``. A window of ``N`` periods
is therefore the shortest span ``N`` periods can have, less one day (years:
``365 N - 1`` days; months: 27, 88 and 364 days for 1, 3 and 12): it
reaches the rows of the ``N`` latest periods visible at ``t`` and none
older, with either placement.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.db.database import Database
from rdl.db.table import Table

DEFAULT_WINDOWS = (7.0, 30.0, 90.0, 365.0)
YEARLY_WINDOWS = (364.0, 729.0, 1824.0)  # 1, 2 and 5 years
MONTHLY_WINDOWS = (27.0, 88.0, 364.0)  # 1, 3 and 12 months
# Median gaps from which data counts as yearly or monthly (a month is 28 to 31 days).
_YEARLY_STEP = pd.Timedelta(days=360)
_MONTHLY_STEP = pd.Timedelta(days=27)


def data_windows(db: Database, entity: str, hops: int) -> tuple[tuple[float, ...], str]:
    """Windows in days for the tables a task on :obj:`entity` aggregates, and
    a one-line note saying which and why."""
    steps = {t.name: step for t in windowed_tables(db, entity, hops)
             if (step := time_step(t.df[t.time_column])) is not None}
    if not steps:
        return DEFAULT_WINDOWS, (f"baseline windows {_days(DEFAULT_WINDOWS)} (the defaults): "
                                 "no table aggregated over windows has two distinct times")
    finest = min(steps.values())
    tables = ", ".join(sorted(steps))
    if finest >= _YEARLY_STEP:
        windows, what = YEARLY_WINDOWS, "1, 2 and 5 years"
    elif finest >= _MONTHLY_STEP:
        windows, what = MONTHLY_WINDOWS, "1, 3 and 12 months"
    else:
        windows, what = DEFAULT_WINDOWS, "the defaults"
    return windows, (f"baseline windows {_days(windows)} ({what}): rows of {tables} come every "
                     f"{_duration(finest)} (the finest median gap between distinct times); set "
                     "baseline windows: to choose others")


def windowed_tables(db: Database, entity: str, hops: int) -> list[Table]:
    """Timed tables whose rows the baseline aggregates over windows: children
    of :obj:`entity` and, with 2 hops, children of its parents."""
    parents = [entity] + (sorted(set(db[entity].foreign_keys.values())) if hops >= 2 else [])
    found = {t.name: t for p in parents for t in db
             if p in t.foreign_keys.values() and t.time_column is not None}
    return list(found.values())


def time_step(times: pd.Series) -> pd.Timedelta | None:
    """Median gap between consecutive distinct times; ``None`` with fewer than two."""
    distinct = np.sort(pd.unique(times.dropna().to_numpy(dtype="datetime64[ns]")))
    if len(distinct) < 2:
        return None
    return pd.Timedelta(int(np.median(np.diff(distinct).astype(np.int64))), unit="ns")


def _days(windows: tuple[float, ...]) -> str:
    return ", ".join(f"{w:g}" for w in windows) + " days"


def _duration(step: pd.Timedelta) -> str:
    for unit, length in (("day", pd.Timedelta(days=1)), ("hour", pd.Timedelta(hours=1)),
                         ("second", pd.Timedelta(seconds=1))):
        if step >= length or unit == "second":
            amount = step / length
            return f"{amount:.4g} {unit}{'' if amount == 1 else 's'}"
