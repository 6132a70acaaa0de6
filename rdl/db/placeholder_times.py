"""Dates that stand for "unknown": the day zero of a tool, written where a
value was missing, far from every real date of its column.

SQL Server turns an empty string into 1900-01-01, Access and Excel exports
write their day zero (1899-12-30, 1899-12-31), a NULL stored as a number
becomes the Unix epoch (1970-01-01), and an open end is often written as a
far-future day (2099-12-31). Read as times, three orders dated 1900-01-01 in a
shop that opened in 2021 make the data start in 1900: training label windows
step back over 120 years that count nothing, and each of those orders is seen
at every prediction time. Such a day is a placeholder only when it lies a year
or more before (or after) every other value of its column, so a customer born
on 1970-01-01 among others born around then keeps the date.
"""
from __future__ import annotations

import pandas as pd

# Days written for an unknown start, which lie before the real dates...
EARLY_PLACEHOLDERS = pd.DatetimeIndex([
    "1753-01-01",  # SQL Server's smallest datetime
    "1899-12-30",  # the OLE Automation (Access, Excel on Windows) day zero
    "1899-12-31",  # Excel's day zero, shown as 1900-01-00
    "1900-01-01",  # SQL Server's datetime of an empty string, Excel's day one
    "1970-01-01",  # the Unix epoch: a NULL stored as 0
])
# ... and for an open end, which lie after them.
LATE_PLACEHOLDERS = pd.DatetimeIndex(["2099-12-31", "2100-01-01", "2199-12-31", "2200-01-01"])
# How far a placeholder lies from every other value of its column.
ISOLATION = pd.Timedelta(days=365)


def placeholder_times(times: pd.Series) -> pd.Series:
    """Which values of the parsed ``times`` are placeholders: on a day of
    :data:`EARLY_PLACEHOLDERS` at least :data:`ISOLATION` before the
    column's first other value, or on one of :data:`LATE_PLACEHOLDERS` as far
    after its last. A column of nothing else keeps its values (there is no
    real date to be far from)."""
    days = times.dt.normalize()
    early, late = days.isin(EARLY_PLACEHOLDERS), days.isin(LATE_PLACEHOLDERS)
    others = times[~(early | late)].dropna()
    if others.empty:
        return pd.Series(False, index=times.index)
    return ((early & (times + ISOLATION < others.min()))
            | (late & (times - ISOLATION > others.max())))


def placeholder_message(times: pd.Series, mask: pd.Series) -> str:
    """Why the values under ``mask`` are taken for unknown, naming their days
    and where the column's other values lie."""
    days = sorted({str(day.date()) for day in times[mask].dt.normalize()})
    others = times[~mask].dropna()
    return (f"{' and '.join(days)} stands for an unknown date here (a tool's day zero or "
            f"an open end): every other value lies in {others.min()} .. {others.max()}, a "
            "year or more away")
