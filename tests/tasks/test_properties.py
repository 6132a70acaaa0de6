"""Properties on random small databases: labels equal a brute-force computation,
use only rows in ``(t, t + window]``, and ``WHERE`` past windows only rows ``<= t``.

Order times fall on whole hours (often whole days), timestamps and sign-ups
on whole days, so rows often sit exactly on a window bound or an entity's
creation time, where off-by-one mistakes would show.
"""
from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from rdl.db.database import Database
from rdl.db.table import Table
from rdl.tasks import parse, resolve_query
from rdl.tasks.label_table import query_table
from rdl.testing.brute_force import brute_force_labels

BASE = pd.Timestamp("2021-01-01")
FUNCS = [("COUNT", None), ("COUNT", "amount"), ("SUM", "amount"), ("AVG", "amount"),
         ("MIN", "amount"), ("MAX", "amount"), ("COUNT_DISTINCT", "product"), ("EXISTS", None)]
SETTINGS = settings(max_examples=30, deadline=None, derandomize=True)


@st.composite
def databases(draw) -> Database:
    n = draw(st.integers(1, 5))
    timed = draw(st.booleans())
    signup = [BASE + pd.Timedelta(days=draw(st.sampled_from([0, 5, 10, 20]))) for _ in range(n)]
    customers = pd.DataFrame({"cid": [f"k{i}" for i in range(n)], "signup": signup,
                              "age": draw(st.lists(st.integers(10, 60), min_size=n, max_size=n))})
    rows = draw(st.lists(st.tuples(
        st.one_of(st.none(), st.integers(0, n - 1)),
        st.one_of(st.integers(0, 40).map(lambda d: 24 * d), st.integers(0, 40 * 24)),
        st.one_of(st.none(), st.integers(-5, 20).map(float)),
        st.integers(0, 3),
    ), min_size=3, max_size=40))
    orders = pd.DataFrame({
        "oid": range(len(rows)),
        "cid": pd.array([None if c is None else f"k{c}" for c, *_ in rows], dtype="str"),
        "at": [BASE + pd.Timedelta(hours=h) for _, h, *_ in rows],
        "amount": pd.array([a for *_, a, _ in rows], dtype="float64"),
        "product": [p for *_, p in rows],
    })
    orders["at"] = orders["at"].astype("datetime64[ns]")
    customers["signup"] = customers["signup"].astype("datetime64[ns]")
    return Database({
        "customers": Table("customers", customers, "cid", {}, "signup" if timed else None),
        "orders": Table("orders", orders, "oid", {"cid": "customers"}, "at"),
    })


def labels(db: Database, query: str, timestamps) -> pd.DataFrame:
    p = resolve_query(parse(query), db)
    return query_table(p, db, pd.DatetimeIndex(timestamps))


def oracle(db: Database, func: str, column: str | None, start: int, end: int, unit: str,
           timestamps) -> pd.DataFrame:
    customers = db["customers"]
    return brute_force_labels(db["orders"].df, customers.df, entity_id="cid", fk="cid",
                              time="at", func=func, column=column,
                              start=pd.DateOffset(**{unit: start}),
                              end=pd.DateOffset(**{unit: end}), timestamps=timestamps,
                              entity_time=customers.time_column)


windows = st.tuples(st.integers(0, 10), st.integers(1, 15), st.sampled_from(["days", "hours"]))
days = st.lists(st.sampled_from(range(0, 41, 5)) | st.integers(0, 40), min_size=1, max_size=3,
                unique=True).map(
    lambda ds: [BASE + pd.Timedelta(days=d) for d in sorted(ds)])


def add_rows_on_bounds(db: Database, times: list[pd.Timestamp], who: list[int]) -> None:
    """Adds orders exactly at each time and one hour either side of it."""
    orders = db["orders"].df
    n = len(db["customers"].df)
    at = [t + pd.Timedelta(hours=h) for t in times for h in (-1, 0, 1)]
    extra = pd.DataFrame({
        "oid": range(len(orders), len(orders) + len(at)),
        "cid": pd.array([f"k{who[i % len(who)] % n}" for i in range(len(at))], dtype="str"),
        "at": pd.to_datetime(at).astype("datetime64[ns]"),
        "amount": [float(i % 7) for i in range(len(at))],
        "product": [i % 3 for i in range(len(at))],
    })
    db.tables["orders"].df = pd.concat([orders, extra], ignore_index=True)


@SETTINGS
@given(db=databases(), agg=st.sampled_from(FUNCS), window=windows, timestamps=days,
       who=st.lists(st.integers(0, 4), min_size=1, max_size=4))
def test_labels_equal_brute_force(db, agg, window, timestamps, who):
    (func, column), (start, length, unit) = agg, window
    end = start + length
    bounds = [t + pd.DateOffset(**{unit: k}) for t in timestamps for k in (start, end)]
    add_rows_on_bounds(db, bounds, who)
    got = labels(db, f"PREDICT {func}(orders.{column or '*'}, {start}, {end}, {unit}) "
                     "FOR EACH customers.cid", timestamps)
    want = oracle(db, func, column, start, end, unit, timestamps)
    want = want[want["value"].notna()].sort_values(["timestamp", "cid"]).reset_index(drop=True)
    assert got["cid"].tolist() == want["cid"].tolist()
    assert got["timestamp"].tolist() == want["timestamp"].tolist()
    rounded = lambda s: s.astype(float).round(9).tolist()  # noqa: E731
    assert rounded(got["label"]) == rounded(want["value"])
    assert got.attrs["dropped"]["null_label"] == len(oracle(db, "COUNT", None, 0, 1, "days",
                                                            timestamps)) - len(want)


@SETTINGS
@given(db=databases(), agg=st.sampled_from(FUNCS), window=windows, day=st.integers(0, 40),
       seed=st.integers(0, 2**16))
def test_rows_outside_the_window_never_change_labels(db, agg, window, day, seed):
    (func, column), (start, length, unit) = agg, window
    end = start + length
    t = BASE + pd.Timedelta(days=day)
    query = f"PREDICT {func}(orders.{column or '*'}, {start}, {end}, {unit}) FOR EACH customers.cid"
    before = labels(db, query, [t])
    orders = db["orders"].df
    lo, hi = t + pd.DateOffset(**{unit: start}), t + pd.DateOffset(**{unit: end})
    outside = (orders["at"] <= lo) | (orders["at"] > hi)
    # Scramble every row outside the window and add rows right on both bounds.
    changed = orders.copy()
    changed.loc[outside, "amount"] = changed.loc[outside, "amount"].sample(
        frac=1, random_state=seed).to_numpy() + 1000
    changed.loc[outside, "product"] = changed.loc[outside, "product"] + 7
    extra = pd.DataFrame({"oid": [10_000, 10_001], "cid": pd.array(["k0", "k0"], dtype="str"),
                          "at": pd.to_datetime([lo, hi + pd.Timedelta(seconds=1)]).astype(
                              "datetime64[ns]"),
                          "amount": [5000.0, 6000.0], "product": [99, 98]})
    db.tables["orders"].df = pd.concat([changed, extra], ignore_index=True)
    after = labels(db, query, [t])
    pd.testing.assert_frame_equal(before, after)


@SETTINGS
@given(db=databases(), past=st.integers(1, 20), threshold=st.integers(-1, 3),
       day=st.integers(0, 40))
def test_where_past_windows_use_only_rows_up_to_t(db, past, threshold, day):
    t = BASE + pd.Timedelta(days=day)
    query = (f"PREDICT COUNT(orders.*, 0, 5, days) FOR EACH customers.cid "
             f"WHERE COUNT(orders.*, -{past}, 0, days) > {threshold} AND customers.age > 20")
    got = labels(db, query, [t])
    # Independent check of who passes WHERE: brute-force count of (t - past, t].
    counts = oracle(db, "COUNT", None, -past, 0, "days", [t])
    age = db["customers"].df.set_index("cid")["age"]
    keep = counts[(counts["value"] > threshold) & (counts["cid"].map(age) > 20)]
    assert sorted(got["cid"]) == sorted(keep["cid"])
    # Rows after t may change freely: who passes WHERE stays the same.
    orders = db["orders"].df
    future = orders["at"] > t
    orders = orders.loc[~future].copy()
    db.tables["orders"].df = orders
    assert sorted(labels(db, query, [t])["cid"]) == sorted(got["cid"])
