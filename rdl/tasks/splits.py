"""Prediction timestamps of the train/val/test splits and their sanity checks.

Entity-level tasks are evaluated at a few moments ``t``: validation at
``val_timestamp``, test at ``test_timestamp`` and training at
``val_timestamp - k * timedelta`` for ``k = 1, 2, ...`` as long as

* the label window of ``t`` ends at or before ``val_timestamp`` (training
  labels never see validation-period rows), and
* the earliest window of the query (past windows in ``WHERE`` included)
  starts at or after the first row of the database.
"""
from __future__ import annotations

import re
from datetime import date, datetime

import pandas as pd

from rdl.tasks.errors import TaskError

SPLITS = ("train", "val", "test")

_DELTA = re.compile(r"^\s*([-+]?\d+)\s*([a-z]+)\s*$", re.IGNORECASE)
_DELTA_UNITS = {
    "y": "years",
    "year": "years",
    "years": "years",
    "mo": "months",
    "month": "months",
    "months": "months",
    "w": "weeks",
    "week": "weeks",
    "weeks": "weeks",
    "d": "days",
    "day": "days",
    "days": "days",
    "h": "hours",
    "hour": "hours",
    "hours": "hours",
}


def parse_timedelta(value: str | pd.offsets.BaseOffset | pd.Timedelta,
                    name: str = "timedelta") -> pd.offsets.BaseOffset:
    r"""Turns ``"30d"``, ``"12h"``, ``"1mo"``, ``"2w"``, ``"1y"`` or a pandas
    offset into a :class:`pandas.DateOffset`.

    Months and years stay calendar ones (``2013-01-31 + 1mo = 2013-02-28``),
    which is also how the query language's ``months`` and ``years`` count.
    """
    if isinstance(value, pd.offsets.BaseOffset):
        offset = value
    elif isinstance(value, pd.Timedelta):
        offset = pd.DateOffset(seconds=value.total_seconds())
    elif isinstance(value, str):
        match = _DELTA.match(value)
        unit = _DELTA_UNITS.get(match.group(2).lower()) if match else None
        if unit is not None:
            offset = pd.DateOffset(**{unit: int(match.group(1))})
        else:
            try:
                offset = pd.tseries.frequencies.to_offset(value)
            except ValueError:
                offset = None
            if offset is None:
                raise TaskError(
                    f"{name}={value!r} is not a duration; write e.g. '30d', '12h', "
                    "'1mo', '2w', '1y' or a pandas offset such as '7D'"
                )
    else:
        raise TaskError(f"{name}={value!r} is not a duration; write e.g. '30d', '12h' or '1mo'")
    probe = pd.Timestamp("2000-01-01")
    try:
        later = probe + offset
    except (OverflowError, ValueError):  # past pandas' timestamps (OutOfBoundsDatetime)
        later = pd.Timestamp.max
    if later <= probe:
        raise TaskError(f"{name}={value!r} must be a positive duration")
    if later > probe + pd.DateOffset(years=100):
        raise TaskError(f"{name}={value!r} is too long; give at most 100 years")
    return offset


def describe(offset: pd.offsets.BaseOffset) -> str:
    """Human-readable offset, e.g. ``"30 days"`` or ``"1 months"``."""
    kwds = {k: v for k, v in getattr(offset, "kwds", {}).items() if v}
    if kwds:
        return ", ".join(f"{v} {k}" for k, v in kwds.items())
    return offset.freqstr


def parse_timestamp(value: str | date | datetime | pd.Timestamp, name: str) -> pd.Timestamp:
    """Parses a split timestamp, naming the setting when it cannot be read."""
    try:
        ts = pd.Timestamp(value)
    except (ValueError, TypeError):
        ts = None
    if ts is None or pd.isna(ts):
        raise TaskError(f"{name}={value!r} is not a timestamp; write e.g. 2013-10-01")
    if ts.tzinfo is not None:
        raise TaskError(f"{name}={value!r} has a time zone; rdl compares naive timestamps")
    return ts


def check_split_order(val: pd.Timestamp, test: pd.Timestamp, step: pd.DateOffset | None,
                      window_end: pd.DateOffset | None) -> None:
    """Checks ``val < test`` and that one step and one label window fit in between."""
    if val >= test:
        raise TaskError(
            f"val_timestamp={val} must be earlier than test_timestamp={test}; "
            "swap them or move the test timestamp later"
        )
    if step is not None and val + step > test:
        raise TaskError(
            f"timedelta ({describe(step)}) is longer than the "
            f"gap between val_timestamp={val} and test_timestamp={test}; validation labels "
            "would overlap the test period. Shorten timedelta or move test_timestamp later"
        )
    if window_end is not None and val + window_end > test:
        raise TaskError(
            f"The target window ends {describe(window_end)} after val_timestamp={val}, past "
            f"test_timestamp={test}; validation labels would overlap the test period. "
            "Shorten the window or move test_timestamp later"
        )


def check_in_range(name: str, ts: pd.Timestamp, min_time: pd.Timestamp | None,
                   max_time: pd.Timestamp | None) -> None:
    """Raises when :obj:`ts` leaves no data before or after it."""
    if min_time is None or max_time is None:
        raise TaskError("The database has no timed table, so it has no time range to split")
    if ts < min_time or ts >= max_time:
        raise TaskError(
            f"{name}={ts} is outside the data, which runs from {min_time} to {max_time}; "
            f"pick a {name} in [{min_time}, {max_time})"
        )


def train_timestamps(val: pd.Timestamp, step: pd.DateOffset, window_ends: list[pd.DateOffset],
                     window_starts: list[pd.DateOffset], min_time: pd.Timestamp,
                     max_count: int, counted_from: pd.Timestamp | None = None,
                     ) -> pd.DatetimeIndex:
    r"""Training timestamps, stepping back from :obj:`val` by :obj:`step`.

    Args:
        val: Validation timestamp; every training label window ends by then.
        step: Spacing between training timestamps.
        window_ends: Offsets from ``t`` of the label windows' ends.
        window_starts: Offsets from ``t`` of every window the query reads
            (past ``WHERE`` windows included).
        min_time: First row time in the database.
        max_count: Keep at most this many, the most recent ones.
        counted_from: First row of the tables the label windows count: a
            label window ending before it could only count nothing.

    Returns:
        Sorted timestamps; empty when none fits.
    """
    out: list[pd.Timestamp] = []
    k = 1
    while len(out) < max_count:
        t = val - step * k
        if min(t + o for o in window_starts) < min_time:
            break
        if counted_from is not None and max(t + o for o in window_ends) < counted_from:
            break
        if all(t + o <= val for o in window_ends):
            out.append(t)
        k += 1
    return pd.DatetimeIndex(sorted(out), name="timestamp")
