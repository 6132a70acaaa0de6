"""Time columns and stypes: what rdl infers, and every storage form it parses."""
from __future__ import annotations

import datetime as dt
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rdl
from rdl.db.schema import TimeColumn
from rdl.db.stypes import infer_stype
from rdl.db.text_numbers import recover_numbers
from rdl.db.times import looks_like_dates, parse_times, pick_time_column


@pytest.mark.parametrize("values, expected", [
    ([True, False, True], "categorical"),
    ([0, 1, 1, 0], "categorical"),
    ([1.5, 2.0, -3.25], "numerical"),
    ([3, 7, 11, 400], "numerical"),
    (["2024-01-02", "2024-02-03 10:00:00", "2023-12-31T23:59:59Z"], "timestamp"),
    (["01/02/2024", "12/31/2023"], "timestamp"),
    (["red", "green", "red", "blue"], "categorical"),
    (["a|b", "b|c", "a", "c|a|b"] * 5, "multicategorical"),
    ([["a", "b"], ["c"], []], "multicategorical"),
    ([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]], "embedding"),
    (["the cat sat on the mat", "a dog barked at the mailman", "rain fell all day long here"],
     "text_embedded"),
])
def test_infer_stype(values, expected):
    assert infer_stype(pd.Series(values)) == expected


# classicmodels' offices.phone: numbers written in groups, four or five "words" each
OFFICE_PHONES = ["+1 650 219 4782", "+1 215 837 0825", "+1 212 555 3000", "+33 14 723 4404",
                 "+81 33 224 5000", "+61 2 9264 2451"]


def test_whole_numbers_named_as_ids_or_codes_are_labels_not_quantities(tmp_path):
    """Olist's zip prefixes, a store number and Sakila's and classicmodels' phone numbers are
    categories; a quantity, a fractional 'code', a count of phones and a declared stype stay
    as they are."""
    pd.DataFrame({"sale_id": range(6), "store_id": [7, 1, 7, 3, 3, 1],
                  "customer_zip_code_prefix": [1037, 14409, 1037, 99900, 5500, 1037],
                  "area_code": [212.0, None, 415.0, 212.0, 617.0, 212.0],
                  "score_code": [0.5, 1.25, 2.0, 0.5, 1.0, 3.5],
                  "phone": [491271355190, 686015532180, 177727722820, 282667506728,
                            44659553405, 491271355190],
                  "fax_number": ["0212 555 0101", "", "0212 555 0199", "", "", ""],
                  "phones_owned": [1, 2, 1, 3, 1, 2],
                  "quantity": [1, 4, 2, 9, 3, 2], "paid": [3, 5, 7, 9, 11, 13],
                  "office_phone": OFFICE_PHONES, "remark": OFFICE_PHONES}
                 ).to_csv(tmp_path / "sales.csv", index=False)
    stypes = rdl.connect(tmp_path)["sales"].stypes
    assert stypes["remark"] == "text_embedded"  # the same words under another name: text
    labels = ("store_id", "customer_zip_code_prefix", "area_code", "phone", "fax_number",
              "office_phone")
    assert {c: stypes[c] for c in labels} == dict.fromkeys(labels, "categorical")
    quantities = ("score_code", "phones_owned", "quantity", "paid")
    assert {c: stypes[c] for c in quantities} == dict.fromkeys(quantities, "numerical")
    declared = {"tables": {"sales": {"stypes": {"store_id": "numerical"}}}}
    assert rdl.connect(tmp_path, schema=declared)["sales"].stypes["store_id"] == "numerical"


def test_a_things_number_and_article_numbers_are_labels_and_counts_stay_numbers(tmp_path):
    """UCI Online Retail's InvoiceNo and StockCode (whole numbers in most rows) were
    quantities; so were an account number and an EAN. What a count is named stays a number."""
    pd.DataFrame({"line": range(6), "InvoiceNo": [536365, 536365, 536366, 536367, 536367, 536368],
                  "StockCode": [85123, 71053, 22633, 84879, 22745, 22748],
                  "account_number": [1001, 1002, 1001, 1003, 1002, 1001],
                  "ean": [4006381333931] * 6, "invoice_nr": [1, 2, 3, 4, 5, 6],
                  "Quantity": [6, 6, 8, 32, 6, 6], "num_items": [1, 2, 1, 3, 1, 2],
                  "number_of_items": [2, 1, 4, 1, 1, 2], "NumberOfItems": [2, 1, 4, 1, 1, 2]}
                 ).to_csv(tmp_path / "lines.csv", index=False)
    stypes = rdl.connect(tmp_path)["lines"].stypes
    labels = ("InvoiceNo", "StockCode", "account_number", "ean", "invoice_nr")
    assert {c: stypes[c] for c in labels} == dict.fromkeys(labels, "categorical")
    counts = ("Quantity", "num_items", "number_of_items", "NumberOfItems")
    assert {c: stypes[c] for c in counts} == dict.fromkeys(counts, "numerical")


def test_dates_written_as_datetimes_are_timestamps():
    assert infer_stype(pd.Series(pd.to_datetime(["2024-01-01", "2024-05-05"]))) == "timestamp"


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, min_value=-1e9, max_value=1e9),
                min_size=3, max_size=50).filter(lambda xs: len({*xs} - {0.0, 1.0}) > 0))
def test_any_non_binary_numbers_are_numerical(values):
    assert infer_stype(pd.Series(values)) == "numerical"


@settings(max_examples=50)
@given(st.lists(st.datetimes(min_value=pd.Timestamp("1970-01-02").to_pydatetime(),
                             max_value=pd.Timestamp("2200-01-01").to_pydatetime()),
                min_size=1, max_size=30))
def test_iso_text_dates_roundtrip(datetimes):
    text = pd.Series([d.strftime("%Y-%m-%d %H:%M:%S") for d in datetimes])
    assert looks_like_dates(text)
    parsed, bad = parse_times(text)
    assert bad == 0
    expected = pd.Series(pd.to_datetime([d.replace(microsecond=0) for d in datetimes]))
    assert (parsed.to_numpy() == expected.to_numpy().astype("datetime64[ns]")).all()


@pytest.mark.parametrize("unit, values, expected", [
    ("s", [0, 86_400], ["1970-01-01", "1970-01-02"]),
    ("ms", [86_400_000], ["1970-01-02"]),
    ("year", [1999, 2013], ["1999-01-01", "2013-01-01"]),
    ("month", [201302, 199912], ["2013-02-01", "1999-12-01"]),
    ("day", [20130215], ["2013-02-15"]),
])
def test_declared_time_units(unit, values, expected):
    parsed, bad = parse_times(pd.Series(values), TimeColumn("t", unit=unit))
    assert bad == 0
    assert parsed.tolist() == [pd.Timestamp(e) for e in expected]


@settings(max_examples=50)
@given(st.lists(st.dates(min_value=dt.date(1969, 1, 1), max_value=dt.date(2068, 12, 31)),
                min_size=1, max_size=30))
def test_whole_numbers_in_a_declared_date_format_are_dates_even_without_their_leading_zeros(
        dates):
    """The PKDD'99 bank archive writes 5 July 1993 as the number 930705; 5 January 2001,
    as a number, loses its leading zero (10105)."""
    numbers = pd.Series([int(d.strftime("%y%m%d")) for d in dates])
    parsed, bad = parse_times(numbers, TimeColumn("date", format="%y%m%d"))
    assert bad == 0
    assert parsed.tolist() == [pd.Timestamp(d) for d in dates]


def test_numbers_that_are_no_date_in_the_declared_format_are_null_and_counted():
    values = pd.Series([930705, 931345, 12.5, -930705, None])  # month 13, a fraction, a sign
    parsed, bad = parse_times(values, TimeColumn("date", format="%y%m%d"))
    assert bad == 3
    assert parsed.iloc[0] == pd.Timestamp("1993-07-05") and parsed.iloc[1:].isna().all()


def test_time_zones_become_naive_utc():
    parsed, _ = parse_times(pd.Series(["2024-01-01T12:00:00+02:00", "2024-01-01T12:00:00Z"]))
    assert parsed.tolist() == [pd.Timestamp("2024-01-01 10:00"), pd.Timestamp("2024-01-01 12:00")]


@pytest.mark.parametrize("values", [
    [dt.date(1995, 1, 1), dt.date(9999, 1, 1), None],  # a driver's dates
    pd.Series([dt.date(1995, 1, 1), dt.date(9999, 1, 1), None], dtype="datetime64[us]"),
    ["1995-01-01", "9999-12-31", None],
    pd.Series(["1995-01-01", "0001-01-01 00:00:00+00:00", None], dtype="datetime64[us, UTC]"),
])
def test_an_open_end_outside_what_a_time_holds_is_null_and_counted(values):
    """Employee histories and other validity ranges end "never" as 9999-12-31 (PostgreSQL:
    infinity, read as that); nanosecond times stop at 2262, so it is a counted NULL."""
    parsed, bad = parse_times(pd.Series(values))
    assert parsed.dtype == "datetime64[ns]"
    assert parsed.tolist()[0] == pd.Timestamp("1995-01-01")
    assert parsed.iloc[1:].isna().all() and bad == 1

def test_declared_format_and_bad_values_are_counted():
    parsed, bad = parse_times(pd.Series(["31.12.2023", "nonsense", None]),
                              TimeColumn("d", format="%d.%m.%Y"))
    assert parsed.iloc[0] == pd.Timestamp("2023-12-31")
    assert bad == 1  # the NULL is not a parse failure


def test_pick_time_column_prefers_creation_and_skips_birthdays():
    df = pd.DataFrame({
        "birth_date": ["1990-01-01"], "updated_at": ["2024-01-01"],
        "created_at": ["2023-01-01"], "note": ["x"],
    })
    assert pick_time_column(df, exclude=set()) == "created_at"
    assert pick_time_column(df[["birth_date", "note"]], exclude=set()) is None


@pytest.mark.parametrize("name", ["deathDate", "died_on", "final_game", "last_seen_at",
                                  "shipping_limit_date", "due_date", "deadline",
                                  "order_estimated_delivery_date", "promised_at"])
def test_a_later_moment_than_the_rows_creation_is_never_its_time_column(name):
    df = pd.DataFrame({name: ["2024-01-01", "2024-02-01"], "signup": ["2023-01-01"] * 2})
    assert pick_time_column(df, exclude=set()) == "signup"


def test_a_date_column_missing_in_most_rows_is_no_time_column():
    """It would drop the rows it lacks; a creation time is recorded for (nearly) every row."""
    sparse = pd.DataFrame({"created_at": ["2024-01-01", None, None], "joined": ["2023-01-01"] * 3})
    assert pick_time_column(sparse, exclude=set()) == "joined"
    half = sparse.iloc[:2]  # one row in two: its rows are dropped and counted
    assert pick_time_column(half, exclude=set()) == "created_at"


def test_integer_year_time_column_from_schema(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    pd.DataFrame({"id": [1, 2, 3], "built": [1999, 2005, None], "seats": [100, 150, 200]}) \
        .to_parquet(folder / "planes.parquet")
    db = rdl.connect(folder, schema={"tables": {"planes": {
        "primary_key": "id", "time_column": {"column": "built", "unit": "year"}}}})
    planes = db["planes"]
    assert planes.time_column == "built"
    assert planes.df["built"].tolist() == [pd.Timestamp("1999-01-01"), pd.Timestamp("2005-01-01")]
    assert [(i.kind, i.count) for i in db.issues] == [("null_time", 1)]


def test_multicategorical_text_is_split_into_lists(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    pd.DataFrame({"id": range(20), "tags": ["a|b", "b", "c|a", "b|c"] * 5}).to_csv(
        folder / "items.csv", index=False)
    db = rdl.connect(folder, schema={"tables": {"items": {"primary_key": "id"}}})
    assert db["items"].stypes == {"tags": "multicategorical"}
    assert db["items"].df["tags"].iloc[0] == ["a", "b"]


def test_stype_override_wins(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    pd.DataFrame({"id": [1, 2], "zip": [10115, 80331]}).to_csv(folder / "shops.csv", index=False)
    db = rdl.connect(folder, schema={"tables": {"shops": {
        "primary_key": "id", "stypes": {"zip": "categorical"}}}})
    assert db["shops"].stypes == {"zip": "categorical"}


def test_numbers_with_nulls_stay_numbers(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    pd.DataFrame({"id": [1, 2, 3], "x": [1.0, np.nan, 3.0]}).to_parquet(folder / "t.parquet")
    db = rdl.connect(folder, schema={"tables": {"t": {"primary_key": "id"}}})
    assert db["t"].stypes == {"x": "numerical"}


def test_mixed_iso_precisions_and_slashed_dates_all_parse():
    parsed, bad = parse_times(pd.Series(["2024-01-02", "2024-02-03 10:00:00", "2023-12-31T23:59:59Z", None]))
    assert bad == 0
    assert parsed.iloc[1] == pd.Timestamp("2024-02-03 10:00")
    parsed, bad = parse_times(pd.Series(["12/31/2023", "01/15/2024"]))
    assert (bad, parsed.iloc[0]) == (0, pd.Timestamp("2023-12-31"))


_LOCALES = {"us": ("%m/%d/%Y", False), "uk": ("%d/%m/%Y", True),
            "de": ("%d.%m.%Y", True), "nl": ("%d-%m-%Y", True)}
_CLOCKS = {"none": "", "minutes": " %H:%M", "seconds": " %H:%M:%S", "am_pm": " %I:%M:%S %p"}


@settings(max_examples=80, deadline=None)
@given(st.lists(st.datetimes(dt.datetime(1950, 1, 1), dt.datetime(2099, 12, 31)),
                min_size=1, max_size=25),
       st.sampled_from(sorted(_LOCALES)), st.sampled_from(sorted(_CLOCKS)), st.booleans())
def test_day_and_month_are_read_in_the_order_the_column_writes_them(times, locale, clock,
                                                                    padded):
    """09/03/2024 is 9 March where a day above 12 comes first elsewhere in the column, and
    3 September where one comes second; with no day above 12, dots and dashes are read day
    first and slashes month first (as US spreadsheets write them). Brute force: the format."""
    times = [t.replace(second=t.second * (clock in ("seconds", "am_pm")), microsecond=0,
                       minute=t.minute * (clock != "none"), hour=t.hour * (clock != "none"))
             for t in times]
    fmt, day_first = _LOCALES[locale]
    text = [t.strftime(fmt + _CLOCKS[clock]) for t in times]
    if not padded:  # 3/9/2024 1:05:00 PM, as Excel writes them in the US
        text = [re.sub(r"(?<![\d:])0(\d)", r"\1", v) for v in text]
    parsed, bad = parse_times(pd.Series(text))
    told = any(t.day > 12 for t in times)
    reads_day_first = day_first if told else locale != "us" and locale != "uk"
    expected = [t if reads_day_first == day_first or t.day > 12 or t.day == t.month
                else _swapped(t) for t in times]
    assert bad == 0
    assert [None if pd.isna(p) else p.to_pydatetime() for p in parsed] == expected


def _swapped(t: dt.datetime) -> dt.datetime:
    return t.replace(day=t.month, month=t.day)


def test_a_column_of_both_orders_reads_most_of_it_and_counts_the_rest():
    parsed, bad = parse_times(pd.Series(["18/03/2024", "25/12/2023", "03/18/2024", "02/01/2024"]))
    assert bad == 1 and pd.isna(parsed[2])
    assert parsed[[0, 1, 3]].tolist() == [pd.Timestamp("2024-03-18"), pd.Timestamp("2023-12-25"),
                                           pd.Timestamp("2024-01-02")]


def test_a_european_export_gets_its_time_column(tmp_path):
    """`;`, dates written 18.10.2024 10:00 and amounts 1,5: before, the dates were a category
    of their own each and the table had no time; 09/03/2024 beside 18/10/2024 was read as
    3 September, and every date with a day above 12 was dropped."""
    rows = ["id;datum;tag;betrag"] + [
        f"{i};{1 + i % 28:02d}.{1 + i % 12:02d}.2024 10:00;{1 + i % 28:02d}/{1 + i % 12:02d}/2024;"
        f"{i},5" for i in range(60)]
    (tmp_path / "buchungen.csv").write_text("\n".join(rows) + "\n")
    db = rdl.connect(tmp_path)
    table = db["buchungen"]
    assert table.time_column == "datum" and table.stypes["tag"] == "timestamp"
    assert len(table.df) == 60 and [i for i in db.issues if i.table == "buchungen"] == []
    row = table.df.set_index("id").loc[20]
    assert (row["datum"], row["tag"]) == (pd.Timestamp("2024-09-21 10:00"),
                                          pd.Timestamp("2024-09-21"))


DAYS = ["2024-03-09", "2024-10-18", "2025-01-01"]


@pytest.mark.parametrize("written, expected", [
    (["09-MAR-24", "18-OCT-24", "01-JAN-25"], DAYS),                # Oracle's default
    (["9-Mar-2024", "18-Oct-2024", "1-Jan-2025"], DAYS),            # Excel's d-mmm-yyyy
    (["9 March 2024", "18 October 2024", "1 January 2025"], DAYS),
    (["2024/03/09", "2024/10/18", "2025/01/01"], DAYS),             # year first, slashed
    (["Mar 9, 2024 10:15 AM", "Oct 18, 2024 1:15 PM", "Jan 1, 2025 12:00 AM"],
     ["2024-03-09 10:15", "2024-10-18 13:15", "2025-01-01 00:00"]),
    (["Sat, 09 Mar 2024 10:00:00 GMT", "Fri, 18 Oct 2024 13:00:00 GMT",
      "Wed, 01 Jan 2025 00:00:00 GMT"],                           # HTTP and e-mail headers
     ["2024-03-09 10:00", "2024-10-18 13:00", "2025-01-01 00:00"]),
])
def test_dates_with_month_names_or_year_first_slashes_are_a_tables_time(tmp_path, written,
                                                                        expected):
    """Each was a category per value before, and the table had no time."""
    pd.DataFrame({"order_id": range(30), "ordered": written * 10}).to_csv(
        tmp_path / "orders.csv", index=False)
    orders = rdl.connect(tmp_path)["orders"]
    assert orders.time_column == "ordered"
    assert orders.df.sort_values("order_id")["ordered"].tolist()[:3] == [
        pd.Timestamp(t) for t in expected]


@pytest.mark.parametrize("text", [["May", "June", "March"], ["Mayonnaise 12 2024", "x 1 2024"],
                                  ["mar 1234", "dec 99"], ["Jan 12", "Feb 3"]])
def test_month_names_without_a_whole_date_are_not_dates(text):
    assert infer_stype(pd.Series(text * 5)) == "categorical"


def test_codes_with_a_few_letters_keep_their_text(tmp_path):
    """MovieLens' users: US zip codes and a few Canadian ones. Read as numbers the letters
    would become NULL (and leading zeros vanish); a column named as a code or an id keeps its
    text, the spellings of NULL aside, and a quantity with the same stray value does not."""
    zips = ["85711", "01002", "T8H1N", "94043", "N/A"] + [str(10000 + i) for i in range(95)]
    pd.DataFrame({"user_id": range(100), "zip_code": zips, "age": zips}
                 ).to_csv(tmp_path / "users.csv", index=False)
    db = rdl.connect(tmp_path)
    users = db["users"]
    assert users.stypes["zip_code"] == "categorical"
    assert users.df["zip_code"][:4].tolist() == ["85711", "01002", "T8H1N", "94043"]
    assert pd.isna(users.df["zip_code"][4])
    assert [(i.column, i.count) for i in db.issues if i.kind == "unparseable_number"] == [
        ("age", 1)]
    assert users.stypes["age"] == "numerical" and pd.isna(users.df["age"][2])


def test_long_runs_of_digits_as_text_are_labels(tmp_path):
    """dellstore2's creditcard (VARCHAR of sixteen digits) was read as numbers; so would an
    EAN or a phone number with its country code. Text amounts, short or long, stay numbers,
    and a declared stype decides."""
    cards = [f"{4000000000000000 + 7919 * i}" for i in range(60)]
    pd.DataFrame({"customer": range(60), "creditcard": cards,
                  "ean": [f"40063813{i:05d}" for i in range(60)],
                  "paid": [f"{1234567.5 + i}" for i in range(60)],
                  "total_cents": [f"{123456789012 + i}" for i in range(60)]}
                 ).to_parquet(tmp_path / "customers.parquet")
    table = rdl.connect(tmp_path)["customers"]
    assert {c: table.stypes[c] for c in ("creditcard", "ean", "paid", "total_cents")} == {
        "creditcard": "categorical", "ean": "categorical", "paid": "numerical",
        "total_cents": "numerical"}
    assert table.df["creditcard"].tolist() == cards  # every digit as written
    declared = {"tables": {"customers": {"stypes": {"creditcard": "numerical"}}}}
    assert rdl.connect(tmp_path, schema=declared)["customers"].stypes["creditcard"] == "numerical"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "+", "-"]), st.integers(0, 30),
                          st.integers(0, 59), st.integers(0, 59), st.integers(0, 999),
                          st.booleans()), min_size=1, max_size=30))
def test_durations_written_on_a_clock_are_seconds(clocks):
    """`1:26.572`, `01:34:50.616`, `-0:30`: text on a clock is read as the seconds it
    spells, as a typed TIME or INTERVAL column is."""
    text, seconds = [], []
    for sign, hours, minutes, secs, millis, with_hours in clocks:
        head = f"{hours}:{minutes:02d}" if with_hours else str(minutes)
        text.append(f"{sign}{head}:{secs:02d}.{millis:03d}")
        value = hours * 3600 * with_hours + minutes * 60 + secs + millis / 1000
        seconds.append(-value if sign == "-" else value)
    df = pd.DataFrame({"lap": text})
    assert recover_numbers("laps", df, ["lap"], {}) == []
    assert df["lap"].dtype == "float64"
    np.testing.assert_allclose(df["lap"].to_numpy(), seconds, rtol=0, atol=1e-9)


def test_laps_and_race_times_are_numbers_and_scores_stay_text(tmp_path):
    """Formula 1's results: a lap time per driver and the winner's race time beside the
    others' gaps are quantities; a match's score and an aspect ratio are not clocks."""
    laps = [f"1:{20 + i % 30:02d}.{i:03d}" for i in range(40)]
    race = ["1:34:50.616"] + [f"+{i}.{i:03d}" for i in range(1, 39)] + ["\\N"]
    pd.DataFrame({"result_id": range(40), "fastest_lap": laps, "time": race,
                  "score": [f"{i % 4}:{i % 3}" for i in range(40)],
                  "ratio": ["16:9", "4:3"] * 20}).to_csv(tmp_path / "results.csv", index=False)
    db = rdl.connect(tmp_path)
    results = db["results"]
    assert results.stypes["fastest_lap"] == results.stypes["time"] == "numerical"
    assert results.df["fastest_lap"][1] == pytest.approx(81.001)
    assert results.df["time"][0] == pytest.approx(5690.616)
    assert results.df["time"][2] == pytest.approx(2.002) and pd.isna(results.df["time"][39])
    assert results.stypes["score"] == results.stypes["ratio"] == "categorical"
    assert results.df["score"][5] == "1:2"
    assert [i for i in db.issues if i.kind == "unparseable_number"] == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "-"]), st.sampled_from(["$", "€", "£", ""]),
                          st.integers(0, 10**9), st.integers(0, 99), st.booleans(),
                          st.booleans()), min_size=1, max_size=30))
def test_amounts_as_spreadsheets_write_them_are_numbers(amounts):
    """`$1,007.99`, `-€5`, `45%`: the signs and the grouping commas go, the number stays."""
    text, values = [], []
    for sign, currency, whole, cents, grouped, percent in amounts:
        digits = f"{whole:,}" if grouped else str(whole)
        text.append(f"{sign}{currency}{digits}.{cents:02d}{'%' if percent else ''}")
        values.append((-1 if sign else 1) * (whole + cents / 100))
    df = pd.DataFrame({"paid": text})
    assert recover_numbers("sales", df, ["paid"], {}) == []
    np.testing.assert_allclose(df["paid"].to_numpy(), values, rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "minus", "parentheses"]),
                          st.sampled_from(["$", "EUR ", "CHF", ""]), st.booleans(),
                          st.integers(0, 10**9), st.integers(0, 99),
                          st.sampled_from([",", "'", ""])), min_size=1, max_size=30))
def test_accounts_negatives_codes_and_swiss_grouping_are_numbers(amounts):
    """`(1,234.56)` as accountants write -1234.56, `$(12.50)`, `EUR 5`, `12.50 CHF`,
    `1'234.56` (grouped as in Switzerland)."""
    text, values = [], []
    for negative, currency, before, whole, cents, group in amounts:
        amount = f"{whole:,}".replace(",", group) + f".{cents:02d}"
        if negative == "parentheses":
            amount = f"({amount})"
        amount = f"{currency}{amount}" if before else f"{amount} {currency.strip()}".strip()
        text.append(f"-{amount}" if negative == "minus" else amount)
        values.append((-1 if negative else 1) * (whole + cents / 100))
    df = pd.DataFrame({"balance": text})
    assert recover_numbers("ledger", df, ["balance"], {}) == []
    np.testing.assert_allclose(df["balance"].to_numpy(), values, rtol=1e-12)


def test_three_letters_that_name_no_currency_keep_a_column_text():
    """Flight numbers as airlines' ICAO codes write them are no amounts in euros."""
    df = pd.DataFrame({"flight": ["DLH 400", "BAW 117", "AFR 6", "EUR 12"] * 5})
    recover_numbers("flights", df, ["flight"], {})
    assert df["flight"].tolist()[:4] == ["DLH 400", "BAW 117", "AFR 6", "EUR 12"]
    unbalanced = pd.DataFrame({"paid": ["(12.50", "12.50)"] + ["3.50"] * 38})
    [issue] = recover_numbers("sales", unbalanced, ["paid"], {})
    assert issue.count == 2 and unbalanced["paid"][:2].isna().all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "-"]),
                          st.sampled_from(["€", "€ ", " €", "\xa0€", ""]), st.booleans(),
                          st.integers(0, 10**9), st.integers(0, 99),
                          st.sampled_from([".", " ", "\xa0", ""])), min_size=1, max_size=30))
def test_amounts_with_a_decimal_comma_are_numbers_where_the_file_writes_them(amounts):
    """Excel in a European locale: `1.234,56 €`, `-€12,50`, `1 234,56`; grouping by dots
    or spaces. Read as numbers where the file's decimal mark is a comma; elsewhere, as
    before, a comma between one and two digits is no number."""
    text, values = [], []
    for sign, currency, before, whole, cents, group in amounts:
        digits = f"{whole:,}".replace(",", group)
        amount = f"{digits},{cents:02d}"
        text.append(f"{sign}{currency.strip()}{amount}" if before
                    else f"{sign}{amount}{currency}")
        values.append((-1 if sign else 1) * (whole + cents / 100))
    df = pd.DataFrame({"paid": text})
    assert recover_numbers("sales", df, ["paid"], {}, decimal_comma=True) == []
    np.testing.assert_allclose(df["paid"].to_numpy(), values, rtol=1e-12)
    elsewhere = pd.DataFrame({"paid": text})
    recover_numbers("sales", elsewhere, ["paid"], {})
    assert not (elsewhere["paid"] == pd.Series(values)).all()


def test_a_semicolon_file_reads_its_decimal_commas_with_strays_and_its_decimal_dots(tmp_path):
    """One value that is no number made Arrow give up the whole column, and each amount
    became a category of its own. A column of dots (`12.5`) in the same file, and one of
    thousands (`1.234`) without a comma, read as they did."""
    rows = ["id;paid;qty;weight;count"] + [
        f"{i};{i}.{i:03d},5{' €' * (i % 2)};{i},{i % 10};{i}.{i % 10};1.{i:03d}"
        for i in range(1, 100)] + ["100;1.000,00 €;n.v.;-;-"]
    (tmp_path / "orders.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    db = rdl.connect(tmp_path)
    orders = db["orders"].df
    assert db["orders"].stypes["paid"] == db["orders"].stypes["qty"] == "numerical"
    assert orders["paid"].tolist()[:3] == [1001.5, 2002.5, 3003.5] and orders["paid"][99] == 1000
    assert orders["qty"][11] == 12.2 and pd.isna(orders["qty"][99])
    assert orders["weight"][11] == 12.2 and orders["count"][11] == 1.012
    [issue] = [i for i in db.issues if i.kind == "unparseable_number"]
    assert (issue.column, issue.count) == ("qty", 1) and "'n.v.'" in issue.message


def test_a_decimal_comma_is_not_taken_for_grouping(tmp_path):
    """`12,5` and `1,25` cannot be grouped thousands: counted as stray values, never read
    as 125; `1,250` is grouping, as spreadsheets in English write it."""
    paid = [f"${i}.50" for i in range(97)] + ["12,5", "1,25", "$1,250"]
    pd.DataFrame({"sale_id": range(100), "paid": paid}).to_csv(tmp_path / "s.csv", index=False)
    db = rdl.connect(tmp_path)
    assert db["s"].stypes["paid"] == "numerical"
    assert db["s"].df["paid"][:3].tolist() == [0.5, 1.5, 2.5] and db["s"].df["paid"][99] == 1250
    assert db["s"].df["paid"][97:99].isna().all()
    [issue] = [i for i in db.issues if i.kind == "unparseable_number"]
    assert (issue.column, issue.count) == ("paid", 2) and "'12,5', '1,25'" in issue.message
