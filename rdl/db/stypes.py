"""Infers the PyTorch Frame stype of a feature column from its values.

The rules are deliberately simple and predictable; the schema file overrides
any of them per column.

==================  ===========================================================
stype               chosen for
==================  ===========================================================
categorical         booleans, 0/1 integers, short strings
numerical           other numbers
timestamp           datetimes, date objects, dates written as text
multicategorical    lists of strings, or strings of delimited tags ("a|b|c")
text_embedded       free text: several words per value on average, mostly unique
embedding           lists of numbers (precomputed vectors)
==================  ===========================================================
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.db.issues import DataIssue, SchemaError
from rdl.db.times import is_time_like, parse_times

_TAG_DELIMITERS = ("|", ";")
_TEXT_MIN_WORDS = 4.0
_SAMPLE = 2000


def infer_stype(series: pd.Series) -> str:
    """Returns the stype name for ``series`` (which must have non-null values)."""
    if pd.api.types.is_bool_dtype(series):
        return "categorical"
    if pd.api.types.is_numeric_dtype(series):
        values = series.dropna()
        if values.isin([0, 1]).all():
            return "categorical"
        return "numerical"
    if is_time_like(series):
        return "timestamp"
    sample = _sample(series)
    first = sample.iloc[0]
    if isinstance(first, (list, tuple, np.ndarray)):
        return _list_stype(sample)
    text = sample.astype(str)
    if _mean_words(text) >= _TEXT_MIN_WORDS and text.nunique() > 0.5 * len(text):
        return "text_embedded"
    if _delimiter(text) is not None:
        return "multicategorical"
    return "categorical"


def tag_delimiter(series: pd.Series) -> str | None:
    """The delimiter of a multicategorical text column, if it has one."""
    sample = _sample(series)
    if isinstance(sample.iloc[0], (list, tuple, np.ndarray)):
        return None
    return _delimiter(sample.astype(str))


def _sample(series: pd.Series) -> pd.Series:
    values = series.dropna()
    return values.iloc[:: max(1, len(values) // _SAMPLE)].iloc[:_SAMPLE]


def _list_stype(sample: pd.Series) -> str:
    items = [x for value in sample for x in value]
    if items and all(isinstance(x, (int, float, np.number)) for x in items[:1000]):
        lengths = {len(value) for value in sample}
        if len(lengths) == 1:
            return "embedding"
    return "multicategorical"


def _mean_words(text: pd.Series) -> float:
    return float(text.str.split().str.len().mean())


def _delimiter(text: pd.Series) -> str | None:
    """A tag delimiter present in most values whose tags repeat across rows."""
    for delimiter in _TAG_DELIMITERS:
        has = text.str.contains(delimiter, regex=False)
        if has.mean() < 0.3:
            continue
        tags = text.str.split(delimiter, regex=False).explode().str.strip()
        if tags.nunique() < 0.5 * len(tags):
            return delimiter
    return None


def assign_stypes(
    name: str, df: pd.DataFrame, not_features: set[str],
    declared: dict[str, str], issues: list[DataIssue],
) -> dict[str, str]:
    """Stype per feature column of table ``name``, declared or inferred, and
    all-NULL columns dropped (counted in ``issues``); values are normalised
    in place to what the stype expects (dates parsed, tags split into lists).
    The columns of an empty table keep their declared stype, or their dtype's."""
    for col in declared:
        if col in not_features:
            raise SchemaError(
                f"Table {name!r}: column {col!r} is a key, not a feature; "
                "remove it from 'stypes' in the schema file."
            )
    stypes = {}
    for col in [c for c in df.columns if c not in not_features]:
        if df.empty:  # no values to judge by: the declared stype, or the dtype's
            stypes[col] = declared.get(col) or _dtype_stype(df[col])
            continue
        if df[col].isna().all():
            issues.append(DataIssue(
                "empty_column", name, col, len(df), "column dropped",
                "column holds only NULL values",
            ))
            df.drop(columns=col, inplace=True)
            continue
        stype = declared.get(col) or infer_stype(df[col])
        if stype == "timestamp" and not pd.api.types.is_datetime64_any_dtype(df[col]):
            parsed, bad = parse_times(df[col])
            df[col] = parsed
            if bad:
                issues.append(DataIssue(
                    "unparseable_time", name, col, bad, "value set to NULL",
                    "value could not be parsed as a date/time",
                ))
        elif stype == "multicategorical" and df[col].dtype != object:
            delimiter = tag_delimiter(df[col]) or ","
            df[col] = df[col].str.split(delimiter, regex=False).map(
                lambda tags: [t.strip() for t in tags] if isinstance(tags, list) else tags
            )
        stypes[col] = stype
    return stypes


def _dtype_stype(series: pd.Series) -> str:
    """The stype of a column of an empty table, from its dtype alone."""
    if pd.api.types.is_bool_dtype(series):
        return "categorical"
    if pd.api.types.is_numeric_dtype(series):
        return "numerical"
    if pd.api.types.is_datetime64_any_dtype(series):
        return "timestamp"
    return "categorical"
