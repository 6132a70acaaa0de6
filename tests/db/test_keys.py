"""Foreign-key resolution against a brute-force reference."""
from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rdl.db.keys import resolve_foreign_key, tidy_key_dtype, whole_numbers
from rdl.db.schema import ForeignKey

keys = st.lists(st.integers(-50, 50), unique=True, max_size=20)
refs = st.lists(st.one_of(st.none(), st.integers(-60, 60)), max_size=40)


@settings(max_examples=80, deadline=None)
@given(parent_keys=keys, child_refs=refs, as_text=st.booleans())
def test_single_column_reference(parent_keys, child_refs, as_text):
    parent = pd.DataFrame({"id": pd.array(parent_keys, dtype="int64")})
    values = [None if v is None else (str(v) if as_text else v) for v in child_refs]
    child = pd.DataFrame({"ref": pd.Series(values, dtype="object" if as_text else "Int64")})
    resolved, issues = resolve_foreign_key("c", child, ForeignKey(("ref",), "p"), parent, "id", ("id",))
    present = set(parent_keys)
    expected = [int(v) if v is not None and int(v) in present else None for v in values]
    assert [None if pd.isna(v) else int(v) for v in resolved] == expected
    dangling = sum(v is not None and int(v) not in present for v in values)
    assert sum(i.count for i in issues) == dangling


@settings(max_examples=60, deadline=None)
@given(pairs=st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 3)), unique=True, max_size=12),
       refs=st.lists(st.tuples(st.one_of(st.none(), st.sampled_from("abcd")), st.integers(0, 4)),
                     max_size=30))
def test_composite_reference_maps_to_the_parent_key(pairs, refs):
    parent = pd.DataFrame({"_pk": range(len(pairs)), "x": [p[0] for p in pairs],
                           "y": [p[1] for p in pairs]})
    child = pd.DataFrame({"a": [r[0] for r in refs], "b": [r[1] for r in refs]})
    fk = ForeignKey(("a", "b"), "p")
    resolved, issues = resolve_foreign_key("c", child, fk, parent, "_pk", ("x", "y"))
    where = {p: i for i, p in enumerate(pairs)}
    expected = [where.get(r) if r[0] is not None else None for r in refs]
    assert [None if pd.isna(v) else int(v) for v in resolved] == expected
    assert sum(i.count for i in issues) == sum(r[0] is not None and r not in where for r in refs)


@settings(max_examples=40, deadline=None)
@given(parent_keys=st.lists(st.integers(0, 30), unique=True, max_size=15),
       child_refs=st.lists(st.one_of(st.none(), st.integers(0, 40)), max_size=30),
       kind=st.sampled_from(["text", "float", "time"]))
def test_resolved_reference_keeps_the_parent_key_type(parent_keys, child_refs, kind):
    """Text, float and datetime keys (times in another unit than the parent's
    parsed ns, as parquet stores them) resolve like integers do."""
    def column(values, unit="ns"):
        if kind == "text":
            return pd.Series([None if v is None else f"k{v}" for v in values], dtype="str")
        if kind == "float":
            return pd.Series([None if v is None else v + 0.5 for v in values], dtype="float64")
        return pd.Series(pd.to_datetime(pd.Series(values, dtype="float64"), unit="s")).astype(
            f"datetime64[{unit}]")

    parent = pd.DataFrame({"id": column(parent_keys)})
    child = pd.DataFrame({"ref": column(child_refs, unit="us")})
    resolved, issues = resolve_foreign_key("c", child, ForeignKey(("ref",), "p"), parent, "id", ("id",))
    present = set(parent_keys)
    expected = column([v if v in present else None for v in child_refs])
    pd.testing.assert_series_equal(resolved, expected, check_names=False, check_dtype=False)
    assert resolved.dtype == parent["id"].dtype
    assert sum(i.count for i in issues) == sum(v is not None and v not in present for v in child_refs)


@pytest.mark.parametrize("values, expected", [
    (pd.Series([1, 2, 3]), True),
    (pd.Series([1.0, None, 3.0]), True),  # integers with a gap, as a CSV reader gives them
    (pd.Series([1, None, 3], dtype="Int64"), True),
    (pd.Series([1.0, None, 3.0], dtype="Float64"), True),
    (pd.Series([1.0, 2.5]), False),
    (pd.Series([1.0, float("inf")]), False),
    (pd.Series([True, False]), False),
    (pd.Series(["1", "2"]), False),
])
def test_whole_numbers_are_integers_however_stored(values, expected):
    assert whole_numbers(values) is expected
    tidy = tidy_key_dtype(values)
    assert pd.api.types.is_integer_dtype(tidy) == (expected and not values.dtype == bool)
