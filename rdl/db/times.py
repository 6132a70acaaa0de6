"""Time columns: recognising dates stored as text and parsing every storage form
(datetimes, date strings, epoch numbers, integer years/months/days) into naive
UTC ``datetime64[ns]``; a year, month or day declared ``at: end`` becomes the
last second of that period."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd

from rdl.db.schema import CALENDAR_UNITS, COUNTED_UNITS, TimeColumn

_ISO = r"\d{4}-\d{1,2}-\d{1,2}([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?"
# Day and month in either order, then a four-digit year, as spreadsheets write
# dates in their locale: 03/09/2024 (US), 09/03/2024 (UK), 09.03.2024 (Germany),
# 09-03-2024; a clock may follow, with seconds and AM/PM or without.
_DAY_MONTH = (r"(?P<a>\d{1,2})(?P<sep>[./-])(?P<b>\d{1,2})(?P=sep)(?P<year>\d{4})"
              r"(?:[ T]+(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}(?:\.\d+)?))?"
              r"\s*(?P<half>[AaPp][Mm])?)?")
_DAY_MONTH_TEXT = re.compile(rf"^\s*{_DAY_MONTH}\s*$")
# Months by name (Oracle's 09-MAR-24, Excel's 9-Mar-2024, Mar 9, 2024, an HTTP
# date's Sat, 09 Mar 2024 10:00:00 GMT) and year-first slashes (2024/03/09),
# which pandas reads once they are known to be dates.
_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_CLOCK = r"(?:,?[ T]+\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?\s*(?:[ap]m)?(?:\s*(?:gmt|utc|z))?)?"
_NAMED = (rf"(?:[a-z]{{3}},?\s+)?(?:\d{{1,2}}[ -]?{_MONTH}[ -]?\d{{2,4}}"
          rf"|{_MONTH}\s+\d{{1,2}},?\s+\d{{4}}|\d{{4}}/\d{{1,2}}/\d{{1,2}}){_CLOCK}")
_DATE_PATTERN = re.compile(rf"^\s*(?:{_ISO}|{_DAY_MONTH}|{_NAMED})\s*$", re.I)
_EPOCH_UNITS = ("s", "ms", "us", "ns")
# From a period's first instant to the next period's.
_NEXT_PERIOD = {"year": pd.offsets.YearBegin(1), "month": pd.offsets.MonthBegin(1),
                "day": pd.Timedelta(days=1)}

# Column-name hints for the time column, best first. Names that say the time
# is not the row's creation (birth and death dates, expiry, updates, a last or
# final moment, a deadline or an estimate: Olist's shipping_limit_date) are never picked.
_TIME_NAME_HINTS = ("created", "creation", "timestamp", "event", "time", "date", "_at", "_on")
NOT_CREATION = re.compile(
    r"birth|dob|death|died|expir|until|end|final|last|updated|modified|deleted"
    r"|limit|deadline|(^|_)due|estimat|promised", re.I)


def looks_like_dates(series: pd.Series, sample: int = 200) -> bool:
    """True if (nearly) all of a text column's values are written as dates."""
    if not (pd.api.types.is_string_dtype(series) or series.dtype == object):
        return False
    values = series.dropna()
    if values.empty:
        return False
    values = values.iloc[:: max(1, len(values) // sample)].iloc[:sample]
    if not all(isinstance(v, str) for v in values):
        return False
    hits = sum(bool(_DATE_PATTERN.match(v)) for v in values)
    return hits >= 0.9 * len(values)


def is_time_like(series: pd.Series) -> bool:
    """True for datetime columns, date objects, and dates stored as text."""
    if pd.api.types.is_datetime64_any_dtype(series):
        return True
    if series.dtype == object:
        first = series.dropna().head(1)
        if len(first) and hasattr(first.iloc[0], "year") and hasattr(first.iloc[0], "month"):
            return True
    return looks_like_dates(series)


def parse_times(series: pd.Series, spec: TimeColumn | None = None) -> tuple[pd.Series, int]:
    """Parses ``series`` into naive UTC ``datetime64[ns]``.

    Returns the parsed series and how many non-null values could not be
    parsed (they become NaT; the caller reports them). Calendar units are
    placed at the start of their period, or with ``spec.at == "end"`` at its
    last second (the next period's start minus one second).
    """
    unit = spec.unit if spec else None
    fmt = spec.format if spec else None
    present = series.notna()
    if unit in _EPOCH_UNITS:
        numbers = pd.to_numeric(series, errors="coerce")
        parsed = pd.to_datetime(numbers, unit=unit, errors="coerce", origin=spec.zero)
    elif unit in COUNTED_UNITS:  # whole days or weeks
        step = COUNTED_UNITS[unit]
        parsed = spec.zero + pd.to_numeric(series, errors="coerce") * step
        if spec.at == "end":
            parsed = parsed + step - pd.Timedelta(seconds=1)
    elif unit in CALENDAR_UNITS:
        parsed = _parse_calendar_numbers(series, unit)
        if spec.at == "end":
            parsed = parsed + _NEXT_PERIOD[unit] - pd.Timedelta(seconds=1)
    elif pd.api.types.is_datetime64_any_dtype(series):
        parsed = series
    elif pd.api.types.is_numeric_dtype(series) and fmt is not None:
        parsed = _parse_formatted_numbers(series, fmt)
    elif pd.api.types.is_numeric_dtype(series):
        raise ValueError(
            f"column {series.name!r} holds numbers; declare its unit in the schema "
            f"file (time_column: {{column: {series.name}, unit: s|ms|year|...}}), or the "
            f"date format its digits follow ({{column: {series.name}, format: '%y%m%d'}})"
        )
    elif fmt is not None:
        parsed = pd.to_datetime(series, format=fmt, errors="coerce", utc=True)
    else:
        parsed = _parse_date_text(series)
    parsed = _naive_utc(parsed)
    bad = int((present & parsed.isna()).sum())
    return parsed, bad


def _parse_date_text(series: pd.Series) -> pd.Series:
    """ISO 8601 in any precision first, then day and month in the order the
    column writes them (:func:`_parse_day_month`); what remains gets pandas'
    format inference, so mixed ISO precisions all parse. Values pandas cannot
    place (MySQL's zero date ``0000-00-00``) become NaT for the caller to
    count, without pandas' warning about each guess."""
    parsed = pd.to_datetime(series, format="ISO8601", errors="coerce", utc=True)
    retry = series.notna() & parsed.isna()
    if retry.any():
        parts = series[retry].astype(str).str.extract(_DAY_MONTH_TEXT)
        written = parts["year"].notna()
        parsed[written[written].index] = _parse_day_month(parts[written])
        retry &= ~written.reindex(series.index, fill_value=False)
    if retry.any():
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Could not infer format", UserWarning)
            parsed[retry] = pd.to_datetime(series[retry], errors="coerce", utc=True)
    return parsed


def _parse_day_month(parts: pd.DataFrame) -> pd.Series:
    """Dates split by :data:`_DAY_MONTH` as UTC times. A column writes day
    and month in one order, which its values tell: a first number above 12
    is a day (09/03/2024 is 9 March where 18/03/2024 is in the column), a
    second one a month's day. A column that has both is read in the order
    more of its values need, the others becoming NaT (counted by the
    caller); one with neither reads 09.03.2024 and 09-03-2024 day first, as
    the places that write dots and dashes do, and 09/03/2024 month first, as
    US spreadsheets and pandas do (a schema file's ``format`` decides
    otherwise)."""
    first, second = pd.to_numeric(parts["a"]), pd.to_numeric(parts["b"])
    days_first, days_second = int((first > 12).sum()), int((second > 12).sum())
    if days_first or days_second:
        day_first = days_first >= days_second
    else:
        day_first = bool((parts["sep"] != "/").all())
    day, month = (first, second) if day_first else (second, first)
    dates = pd.to_datetime(pd.DataFrame({"year": pd.to_numeric(parts["year"]), "month": month,
                                         "day": day}), errors="coerce")
    hour = pd.to_numeric(parts["h"]).fillna(0)
    half = parts["half"].str.lower()
    hour = hour.where(half.isna(), hour % 12 + 12 * (half == "pm"))
    minute, second = pd.to_numeric(parts["m"]).fillna(0), pd.to_numeric(parts["s"]).fillna(0)
    valid_clock = (hour < 24) & (minute < 60) & (second < 61)  # 61: a leap second
    times = dates + pd.to_timedelta(hour * 3600 + minute * 60 + second, unit="s")
    return times.where(valid_clock).dt.tz_localize("UTC")


def _parse_calendar_numbers(series: pd.Series, unit: str) -> pd.Series:
    fmt = {"year": "%Y", "month": "%Y%m", "day": "%Y%m%d"}[unit]
    return pd.to_datetime(_whole_number_text(series), format=fmt, errors="coerce")


def _parse_formatted_numbers(series: pd.Series, fmt: str) -> pd.Series:
    """Whole numbers whose digits are a date in ``fmt`` (``930705`` in
    ``%y%m%d``, as the PKDD'99 bank archive writes them), each padded with
    leading zeros to the format's width first (``10105`` is ``010105``: a
    number drops the zeros a date of 2001 starts with; a sign never parses)."""
    width = len(pd.Timestamp("2000-01-01").strftime(fmt))
    text = _whole_number_text(series).str.zfill(width)
    return pd.to_datetime(text, format=fmt, errors="coerce")


def _whole_number_text(series: pd.Series) -> pd.Series:
    """Each whole number as its digits; NULL for anything else."""
    numbers = pd.to_numeric(series, errors="coerce")
    valid = numbers.notna() & (numbers == np.floor(numbers))
    return numbers.where(valid).astype("Int64").astype("string")


def _naive_utc(parsed: pd.Series) -> pd.Series:
    """``parsed`` in naive UTC nanoseconds; a time outside what those hold
    (1677-09-21 .. 2262-04-11), such as the open end 9999-12-31 of a
    validity range, becomes NaT (the caller counts it)."""
    if getattr(parsed.dt, "tz", None) is not None:
        parsed = parsed.dt.tz_convert("UTC").dt.tz_localize(None)
    if parsed.dtype != "datetime64[ns]":
        parsed = parsed.where(parsed.isna() | parsed.between(pd.Timestamp.min, pd.Timestamp.max))
    return parsed.astype("datetime64[ns]")


def pick_time_column(df: pd.DataFrame, exclude: set[str]) -> str | None:
    """Chooses the column most likely to hold the row's creation time.

    Only time-like columns qualify; among them the best name hint wins, and
    names that describe other moments (birth, expiry, update) are skipped, as
    are columns missing in more than half of the rows: a row's creation is
    recorded for (nearly) every row, and a time column drops the rows it
    lacks. Without any hint, the first time-like column is taken.
    """
    candidates = [
        c for c in df.columns
        if c not in exclude and not NOT_CREATION.search(str(c))
        and 2 * df[c].isna().sum() <= len(df) and is_time_like(df[c])
    ]
    if not candidates:
        return None

    def rank(col: str) -> int:
        lowered = str(col).lower()
        for i, hint in enumerate(_TIME_NAME_HINTS):
            if hint in lowered:
                return i
        return len(_TIME_NAME_HINTS)

    return min(candidates, key=lambda c: (rank(c), list(df.columns).index(c)))
