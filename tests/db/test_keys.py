"""Foreign-key resolution against a brute-force reference."""
from __future__ import annotations

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from rdl.db.keys import resolve_foreign_key
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
