"""Prediction windows: the leakage rules on them and their offsets from ``t``.

A window ``(start, end]`` in a unit is read relative to each prediction time
``t``. Target windows must lie after ``t`` (``start >= 0``) and ``WHERE``
windows at or before it (``end <= 0``); the offsets computed here let
:mod:`rdl.tasks.splits` keep every window inside the data and the training
label windows before the validation timestamp.
"""
from __future__ import annotations

import pandas as pd

from rdl.tasks.errors import QueryError
from rdl.tasks.query.syntax import Aggregate, Query, aggregates


# Farthest a window may reach from ``t``: 100 years, so that ``t + offset``
# stays inside pandas' timestamps (1677-2262) for data of this era.
MAX_WINDOW = {"days": 36_525, "hours": 876_600, "months": 1_200, "years": 100}


def window_offset(amount: int, unit: str) -> pd.DateOffset:
    """The offset of ``amount`` query-language units (days, hours, months, years)."""
    return pd.DateOffset(**{unit: amount})


def target_windows(query: Query) -> list[tuple[pd.DateOffset, pd.DateOffset]]:
    """(start, end) offsets of the target's aggregates."""
    return [(window_offset(a.start, a.unit), window_offset(a.end, a.unit))
            for a in aggregates(query.target)]


def window_starts(query: Query) -> list[pd.DateOffset]:
    """Start offsets of every window the query reads, plus ``t`` itself."""
    aggs = aggregates(query.target) + aggregates(query.where)
    return [window_offset(0, "days")] + [window_offset(a.start, a.unit) for a in aggs]


def check_window(agg: Aggregate, role: str, query: Query) -> None:
    """Window rules: at most 100 years from ``t``; non-empty; in the future for the
    target, in the past for ``WHERE``."""
    if max(abs(agg.start), abs(agg.end)) > MAX_WINDOW[agg.unit]:
        message = (f"Window ({agg.start}, {agg.end}] {agg.unit} of {agg.func} is too long: "
                   f"it may reach at most {MAX_WINDOW[agg.unit]} {agg.unit} (100 years) from "
                   "the prediction time")
    elif agg.end <= agg.start:
        message = (f"Window ({agg.start}, {agg.end}] of {agg.func} is empty; the end must be "
                   "after the start")
    elif role == "target" and agg.start < 0:
        message = (f"The target window ({agg.start}, {agg.end}] starts before the prediction "
                   "time; labels may only use rows after it (start >= 0)")
    elif role == "where" and agg.end > 0:
        message = (f"WHERE uses a future window ({agg.start}, {agg.end}]: filtering entities on "
                   "what happens after the prediction time leaks the label. Use end <= 0")
    else:
        return
    raise QueryError(message, query.text, agg.pos)
