"""Numbers stored as text: a column of numbers with a few stray strings in it
(``N/A``, ``12,5``, ``-``) is read as numerical, not as categorical.

CSV readers, spreadsheet exports and untyped SQL columns hand over a whole
column as text as soon as one value is not a number, which would silently
turn a quantity into thousands of categories. rdl instead reads a text
feature column as numbers when at least :data:`MIN_NUMERIC_SHARE` of its
values are numbers: the common spellings of NULL (:data:`NULL_SPELLINGS`)
become NULL, and every other value that is not a number becomes NULL and is
counted in ``db.issues`` with examples and the first row it is in. Durations
and times of day written on a clock (a lap of ``1:26.572``, a race of
``1:34:50.616``, ``06:00:00``) count as numbers too, in seconds, as SQL's
typed ``TIME`` and ``INTERVAL`` columns are read: as text each value would be
a category of its own. A clock's minutes and seconds are two digits under 60,
so a football score (``2:1``) or a ratio (``16:9``) stays text. So do
amounts as spreadsheets write them: a currency sign or a common currency's
code, a percent sign and thousands grouped by commas (or apostrophes) are
dropped (``$1,007.99`` is 1007.99, ``45%`` is 45, ``€5`` and ``EUR 5`` are
5), an accountant's parentheses make a negative (``(1,234.56)``), while a
decimal comma (``12,5``) stays a stray value, as a comma between one and two
digits cannot be told from grouping. Where the
file says its decimal mark is a comma (a ``;``-separated CSV, as Excel writes
them in European locales), a column with commas between digits and no dot
before one, two or four digits is read the other way round: ``1.234,56 €``
is 1234.56 and ``12,5`` is 12.5 (a column of ``12.5`` there reads as before,
as Arrow's reader reads only commas as decimal marks in those files). A column
that is mostly text is left as text, and so is one named as an id or a code
(:func:`~rdl.db.stypes.label_named`), or one whose values are mostly runs of
13 digits or more (card numbers, EANs): a zip code column of US numbers and a
few Canadian codes (MovieLens' users) keeps ``T8H1N`` and ``01002`` as they
are written, only the spellings of NULL becoming NULL.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rdl.db.issues import DataIssue
from rdl.db.stypes import label_named

# Values that mean "no value" in text exports (R, pandas, Excel, SQL dumps;
# \N is MySQL's SELECT ... INTO OUTFILE and PostgreSQL's COPY text format).
NULL_SPELLINGS = ("", "NA", "N/A", "n/a", "#N/A", "null", "NULL", "Null",
                  "nan", "NaN", "NAN", "-", "\\N")
# Share of the non-NULL values that must be numbers: one stray value in
# twenty at most, so that a text column that merely holds some numbers
# (codes, sizes like "10", "XL") stays text.
MIN_NUMERIC_SHARE = 0.95
# Digits in a row from which text is an identifier, not a quantity (an EAN has 13)
LABEL_DIGITS = 13
# [sign] [hours:] minutes : seconds [.fraction], minutes and seconds of a clock
_CLOCK = r"^(?P<sign>[+-]?)(?:(?P<h>\d+):)??(?P<m>\d+):(?P<s>[0-5]\d)(?P<frac>\.\d+)?$"
# A currency as a sign or as the ISO code of a common one (EUR 12.50, 12.50 USD);
# not any three letters, which flight numbers (DLH 400) and codes also start with.
_CURRENCY = (r"(?:[$€£¥₹]|(?:USD|EUR|GBP|JPY|CHF|CAD|AUD|NZD|CNY|HKD|SGD|INR|BRL|MXN|ZAR"
             r"|SEK|NOK|DKK|PLN|CZK|HUF|RUB|TRY|KRW)(?=[\s\d(]|$))")


def _amount(digits: str) -> str:
    """[sign] [currency] DIGITS [% or currency], or in parentheses, as accountants
    write a negative amount (``(1,234.56)``, ``$(12.50)``)."""
    outer, inner = rf"\s*{_CURRENCY}?\s*", rf"\s*(?:{_CURRENCY}|%)?\s*"
    return (rf"^(?P<sign>[+-]?){outer}(?P<open>\(?){outer}(?P<digits>{digits}){inner}"
            rf"(?P<close>\)?){inner}$")


# digits, grouped by commas (or a Swiss apostrophe) or not, [.fraction]
_AMOUNT = _amount(r"\d{1,3}(?:[,'’]\d{3})+(?:\.\d+)?|\d*\.?\d+")
# The same, written with a decimal comma: digits, grouped by dots or spaces or
# not, [,fraction] (1.234,56 €, 12,5, 1 234,56)
_COMMA_AMOUNT = _amount(r"\d{1,3}(?:[.\s]\d{3})+(?:,\d+)?|\d*,?\d+")
# A dot before other than three digits is a decimal point: such a column does
# not write decimal commas, whatever its file does.
_DECIMAL_DOT = r"\d\.(?:\d{1,2}|\d{4,})(?!\d)"
_SAMPLE = 1000  # values looked at first, so that text columns are skipped fast
_EXAMPLES = 3


def recover_numbers(
    name: str, df: pd.DataFrame, features: list[str], declared: dict[str, str],
    decimal_comma: bool = False,
) -> list[DataIssue]:
    """Converts, in place, the text feature columns of table ``name`` that
    hold numbers (see the module docstring) to float64; returns an issue per
    column for the values set to NULL. A column declared ``numerical`` in the
    schema file is converted whatever its share of numbers; one declared
    with another stype is left alone. ``decimal_comma``: the table's file
    writes decimal commas (see the module docstring)."""
    issues = []
    for col in features:
        stype = declared.get(col)
        if stype not in (None, "numerical") or not _is_text(df[col]):
            continue
        if stype is None and (label_named(col) or _long_digit_labels(df[col])):
            df[col] = _without_null_spellings(df[col])
            continue
        if stype is None and _share(*_parse(_sample(df[col]), decimal_comma)) < 0.5:
            continue  # clearly text: spare parsing every value
        numbers, bad = _parse(df[col], decimal_comma)
        if stype is None and _share(numbers, bad) < MIN_NUMERIC_SHARE:
            continue
        if bad.any():
            issues.append(_issue(name, col, df[col], bad))
        df[col] = numbers
    return issues


def _long_digit_labels(series: pd.Series) -> bool:
    """Whether most values are runs of :data:`LABEL_DIGITS` digits or more
    with nothing around them: card numbers, EANs, phone numbers with their
    country code, which no one writes a quantity as (dellstore2's
    ``creditcard`` was read as sixteen-digit amounts)."""
    text = _sample(series).astype(str).str.strip()
    return bool(len(text)) and text.str.fullmatch(rf"\d{{{LABEL_DIGITS},}}").mean() >= 0.5


def _is_text(series: pd.Series) -> bool:
    if isinstance(series.dtype, pd.StringDtype):
        return True
    return series.dtype == object and all(isinstance(v, str) for v in _sample(series))


def _sample(series: pd.Series) -> pd.Series:
    values = series.dropna()
    return values.iloc[:: max(1, len(values) // _SAMPLE)].iloc[:_SAMPLE]


def _parse(series: pd.Series, decimal_comma: bool = False) -> tuple[pd.Series, pd.Series]:
    """The values as float64 (NULL where not a finite number), and which
    non-NULL values are not numbers."""
    text = series.astype(object).where(series.notna())
    stripped = text.str.strip()
    null = stripped.isna() | stripped.isin(NULL_SPELLINGS)
    readers = [_plain, _clock_seconds, _amounts]
    if decimal_comma and _writes_decimal_commas(stripped[~null]):
        readers = [_comma_amounts, _plain, _clock_seconds]  # 1.234 is a thousand and more
    numbers = pd.Series(np.nan, index=stripped.index)
    unread = ~null
    for read_as in readers:  # each on what is still unread
        if not unread.any():
            break
        numbers = numbers.fillna(read_as(stripped[unread]))
        unread &= numbers.isna()
    numbers = numbers.where(np.isfinite(numbers))
    return numbers, ~null & numbers.isna()


def _plain(text: pd.Series) -> pd.Series:
    """Values as Python and C write numbers (``12.5``, ``-3``, ``1e3``)."""
    return pd.to_numeric(text, errors="coerce").astype("float64")


def _writes_decimal_commas(text: pd.Series) -> bool:
    """Whether some value has a comma between digits and none a decimal dot."""
    return bool(text.str.contains(r"\d,\d").any()) and not text.str.contains(_DECIMAL_DOT).any()


def _clock_seconds(text: pd.Series) -> pd.Series:
    """Values written on a clock (see :data:`_CLOCK`) as seconds, NULL for
    the rest. With hours the minutes must be two digits under 60 too."""
    parts = text.str.extract(_CLOCK)
    hours = pd.to_numeric(parts["h"]).fillna(0)
    minutes = pd.to_numeric(parts["m"])
    clock = parts["h"].isna() | ((parts["m"].str.len() == 2) & (minutes < 60))
    seconds = (hours * 3600 + minutes * 60 + pd.to_numeric(parts["s"])
               + pd.to_numeric(parts["frac"]).fillna(0))
    seconds = seconds.where(parts["sign"] != "-", -seconds)
    return seconds.where(clock).astype("float64")


def _amounts(text: pd.Series) -> pd.Series:
    """Values written as amounts (see :data:`_AMOUNT`) as numbers, NULL for
    the rest."""
    parts = text.str.extract(_AMOUNT)
    return _signed(parts, parts["digits"].str.replace(r"[,'’]", "", regex=True))


def _comma_amounts(text: pd.Series) -> pd.Series:
    """Values written as amounts with a decimal comma (see
    :data:`_COMMA_AMOUNT`) as numbers, NULL for the rest."""
    parts = text.str.extract(_COMMA_AMOUNT)
    digits = parts["digits"].str.replace(r"[.\s]", "", regex=True).str.replace(",", ".")
    return _signed(parts, digits)


def _signed(parts: pd.DataFrame, digits: pd.Series) -> pd.Series:
    """``digits`` as numbers, negative where a minus or parentheses say so;
    NULL where a parenthesis is not closed or not opened."""
    value = pd.to_numeric(digits)
    negative = (parts["sign"] == "-") ^ (parts["open"] == "(")
    value = value.where(~negative, -value).astype("float64")
    return value.where(parts["open"].eq("(") == parts["close"].eq(")"))


def _without_null_spellings(series: pd.Series) -> pd.Series:
    """The text values, NULL where they spell NULL (:data:`NULL_SPELLINGS`)."""
    return series.where(~series.astype(object).str.strip().isin(NULL_SPELLINGS))


def _share(numbers: pd.Series, bad: pd.Series) -> float:
    """The share of the non-NULL values that are numbers."""
    parsed = int(numbers.notna().sum())
    return parsed / (parsed + int(bad.sum())) if parsed else 0.0


def _issue(name: str, col: str, values: pd.Series, bad: pd.Series) -> DataIssue:
    examples = ", ".join(repr(str(v)[:20]) for v in values[bad].drop_duplicates().head(_EXAMPLES))
    first = int(np.flatnonzero(bad.to_numpy())[0]) + 1
    return DataIssue(
        "unparseable_number", name, col, int(bad.sum()), "value set to NULL",
        f"value is not a number in a column of numbers, e.g. {examples} (first at row "
        f"{first} of those read); declare the column categorical to keep the text",
    )
