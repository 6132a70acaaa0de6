"""Infers the PyTorch Frame stype of a feature column from its values.

The rules are deliberately simple and predictable; the schema file overrides
any of them per column.

==================  ===========================================================
stype               chosen for
==================  ===========================================================
categorical         booleans, 0/1 integers, short strings, whole numbers named
                    as ids, codes or phone numbers (``store_id``,
                    ``zip_code_prefix``, ``phone``): labels, whose size means
                    nothing; and text so named (``+1 650 219 4782``)
numerical           other numbers
timestamp           datetimes, date objects, dates written as text
multicategorical    lists of strings, or strings of delimited tags ("a|b|c",
                    see :func:`tag_delimiter`)
text_embedded       free text: several words per value on average, mostly unique
embedding           lists of numbers (precomputed vectors)
==================  ===========================================================
"""
from __future__ import annotations

import re
from collections.abc import Hashable

import numpy as np
import pandas as pd

from rdl.db.issues import DataIssue, SchemaError
from rdl.db.keys import id_named, whole_numbers
from rdl.db.placeholder_times import placeholder_message, placeholder_times
from rdl.db.times import is_time_like, parse_times

# Tag delimiters, tried in this order, and the share of values that must hold
# one: a comma also separates the words of ordinary text, so it needs most
# values, while "|" and ";" rarely appear in anything but lists.
TAG_DELIMITERS = ("|", ";", ",")
_MIN_DELIMITED = {"|": 0.3, ";": 0.3, ",": 0.5}
# A tag is short: nine pieces in ten have at most this many words and characters.
_MAX_TAG_WORDS = 4
_MAX_TAG_CHARS = 40
_SHORT_SHARE = 0.9
# A tag recurs at least this many times as often as a whole value does.
_TAG_REPEATS = 2.0
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
    if _holds_lists(sample):
        return _list_stype(sample)
    text = sample.astype(str)
    if _inferred_delimiter(text) is not None:
        return "multicategorical"
    if _mean_words(text) >= _TEXT_MIN_WORDS and text.nunique() > 0.5 * len(text):
        return "text_embedded"
    return "categorical"


def tag_delimiter(series: pd.Series) -> str | None:
    r"""The delimiter of a column of tag strings, or ``None`` for lists or no delimiter.

    Inference takes the first of :data:`TAG_DELIMITERS` that splits the values
    into tags: it is in enough of them (30% for ``|`` and ``;``, half for
    ``,``); nine pieces in ten are short (at most 4 words and 40
    characters); comma pieces are not mostly numbers (``12,5`` and ``1,200``
    are numbers); there are fewer distinct pieces than distinct values; and a
    piece recurs at least twice as often as a whole value does. Tags are a
    small vocabulary combined in many ways ("Action|Comedy"), whereas a
    city and state ("Paris, TX"), a code with a suffix ("NY|10001") or a
    sentence with commas are mostly unique pieces. A column declared
    ``multicategorical`` whose values fail these rules is split at the
    delimiter found in the most values.
    """
    sample = _sample(series)
    if sample.empty or _holds_lists(sample):
        return None
    text = sample.astype(str)
    inferred = _inferred_delimiter(text)
    if inferred is not None:
        return inferred
    counts = {d: int(text.str.contains(d, regex=False).sum()) for d in TAG_DELIMITERS}
    best = max(TAG_DELIMITERS, key=lambda d: counts[d])
    return best if counts[best] else None


def split_tags(series: pd.Series, delimiter: str | None) -> pd.Series:
    """Each value as its list of tags, stripped and without empty ones (a
    whole value is one tag without a delimiter); NULL stays NULL."""
    def tags(value: str) -> list[str]:
        pieces = value.split(delimiter) if delimiter else [value]
        return [t for t in (p.strip() for p in pieces) if t]

    return series.astype(object).map(lambda v: None if pd.isna(v) else tags(str(v)))


def _sample(series: pd.Series) -> pd.Series:
    values = series.dropna()
    return values.iloc[:: max(1, len(values) // _SAMPLE)].iloc[:_SAMPLE]


def _holds_lists(values: pd.Series) -> bool:
    first = values.dropna().head(1)
    return len(first) > 0 and isinstance(first.iloc[0], (list, tuple, np.ndarray))


def _list_stype(sample: pd.Series) -> str:
    items = [x for value in sample for x in value]
    if items and all(isinstance(x, (int, float, np.number)) for x in items[:1000]):
        lengths = {len(value) for value in sample}
        if len(lengths) == 1:
            return "embedding"
    return "multicategorical"


def _mean_words(text: pd.Series) -> float:
    return float(text.str.split().str.len().mean())


def _inferred_delimiter(text: pd.Series) -> str | None:
    """The first delimiter that splits ``text`` into tags (rules: :func:`tag_delimiter`)."""
    for delimiter in TAG_DELIMITERS:
        if _splits_into_tags(text, delimiter):
            return delimiter
    return None


def _splits_into_tags(text: pd.Series, delimiter: str) -> bool:
    if text.str.contains(delimiter, regex=False).mean() < _MIN_DELIMITED[delimiter]:
        return False
    pieces = text.str.split(delimiter, regex=False).explode().str.strip()
    pieces = pieces[pieces != ""]
    if pieces.empty:
        return False
    short = (pieces.str.len() <= _MAX_TAG_CHARS) & (pieces.str.split().str.len() <= _MAX_TAG_WORDS)
    if short.mean() < _SHORT_SHARE:
        return False
    if delimiter == "," and pd.to_numeric(pieces, errors="coerce").notna().mean() > 0.5:
        return False
    distinct_pieces, distinct_values = pieces.nunique(), text.nunique()
    return (distinct_pieces < distinct_values
            and len(pieces) / distinct_pieces >= _TAG_REPEATS * len(text) / distinct_values)


def assign_stypes(
    name: str, df: pd.DataFrame, not_features: set[str],
    declared: dict[str, str], issues: list[DataIssue],
) -> dict[str, str]:
    """Stype per feature column of table ``name``, declared or inferred, and
    all-NULL columns dropped (counted in ``issues``); values are normalised
    in place to what the stype expects (dates parsed, tag strings split into
    lists at :func:`tag_delimiter`).
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
            del df[col]
            continue
        stype = declared.get(col) or infer_stype(df[col])
        if stype == "numerical" and col not in declared and names_a_label(col, df[col]):
            stype = "categorical"
        if stype == "text_embedded" and col not in declared and label_named(col):
            stype = "categorical"  # '+1 650 219 4782' has words, yet is a label, not text
        if stype == "timestamp":  # text parsed; any time as naive UTC nanoseconds
            parsed, bad = parse_times(df[col])
            df[col] = parsed
            if bad:
                issues.append(DataIssue(
                    "unparseable_time", name, col, bad, "value set to NULL",
                    "value could not be parsed as a date/time, or lies outside 1677-2262 "
                    "(an open end such as 9999-12-31 or infinity)",
                ))
            placeholders = placeholder_times(parsed)
            if placeholders.any():
                issues.append(DataIssue(
                    "placeholder_time", name, col, int(placeholders.sum()),
                    "value set to NULL", placeholder_message(parsed, placeholders)))
                df[col] = parsed.mask(placeholders)
        elif stype == "multicategorical" and not _holds_lists(df[col]):
            df[col] = split_tags(df[col], tag_delimiter(df[col]))
        stypes[col] = stype
    return stypes


# Names of number columns that label things rather than measure them: codes,
# phone numbers (Sakila's address.phone: 603 twelve-digit numbers), article
# numbers, and a thing's number (UCI Online Retail's InvoiceNo, an
# account_number): a count is named for what it counts (num_items).
_CODE_NAMES = re.compile(r"zip|postal|postcode|(^|_)code$"
                         r"|(^|_)(phone|telephone|tel|fax|mobile)(_?(number|no|num|nr))?$"
                         r"|(^|_)(sku|ean|upc|gtin|isbn|iban)(_|$)|.(_no|_nr|_number)$",
                         re.IGNORECASE)
_CAMEL_NUMBER = re.compile(r"[a-z](No|Nr|Number|Code)$")


def label_named(column: Hashable) -> bool:
    """Whether a column's name says it holds labels: an id
    (:func:`~rdl.db.keys.id_named`), a code (``zip``, ``postal``, ``..._code``,
    ``StockCode``, ``sku``), a phone number (``phone``, ``fax``, ``..._phone_number``) or a
    thing's number (``invoice_no``, ``InvoiceNo``, ``account_number``)."""
    name = str(column)
    return id_named(column) or bool(_CODE_NAMES.search(name) or _CAMEL_NUMBER.search(name))


def names_a_label(column: Hashable, series: pd.Series) -> bool:
    """Whether a number column holds labels: whole numbers in a column
    :func:`label_named`. A store number of 7 is not seven times store 1."""
    return label_named(column) and whole_numbers(series)


def _dtype_stype(series: pd.Series) -> str:
    """The stype of a column of an empty table, from its dtype alone."""
    if pd.api.types.is_bool_dtype(series):
        return "categorical"
    if pd.api.types.is_numeric_dtype(series):
        return "numerical"
    if pd.api.types.is_datetime64_any_dtype(series):
        return "timestamp"
    return "categorical"
