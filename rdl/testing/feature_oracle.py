"""A brute-force oracle for every baseline feature (:mod:`rdl.baseline`).

The oracle loops over label rows in pandas and applies the visibility rules
literally: children in ``[t - w, t]``, siblings in ``[t - w, t)``, a parent
only when its time is ``<= t`` (of a child's parent: ``<=`` the child's time).
Windows ``w`` are in days. It reads any database; the tests run it on
:func:`rdl.testing.shops.make_feature_shop`.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pandas as pd

from rdl.db.database import Database
from rdl.db.table import Table
from rdl.testing.shops import DAY


def _same(values: pd.Series, key) -> np.ndarray:
    """Rows whose key equals :obj:`key` (a missing key matches nothing)."""
    if pd.isna(key):
        return np.zeros(len(values), dtype=bool)
    return (values == key).fillna(False).to_numpy(dtype=bool)


def _name(w: float | None) -> str:
    return "all" if w is None else f"{w:g}d"


def _numbers(values: pd.Series) -> dict[str, float]:
    v = values.dropna().astype(float)
    if v.empty:
        return {"sum": np.nan, "mean": np.nan, "min": np.nan, "max": np.nan}
    return {"sum": v.sum(), "mean": v.mean(), "min": v.min(), "max": v.max()}


def children_oracle(db: Database, labels: pd.DataFrame, child: str, fk: str, windows: list,
                    hidden: dict | None = None, two_hops: bool = True) -> dict[str, list]:
    """Children aggregates of each label row, one loop per row and window."""
    hidden = hidden or {}
    table = db[child]
    cols = [c for c, s in table.stypes.items() if s == "numerical"
            and c not in hidden.get(child, [])]
    base, out = f"{child}.{fk}", defaultdict(list)
    for eid, t in zip(labels.iloc[:, 0], labels["timestamp"]):
        mine = table.df[_same(table.df[fk], eid)]
        if table.time_column is not None:
            mine = mine[mine[table.time_column] <= t]
        spans = [None] if table.time_column is None else [*windows, None]
        for w in spans:
            rows = mine if w is None else mine[mine[table.time_column] >= t - w * DAY]
            out[f"{base}.count_{_name(w)}"].append(len(rows))
            for col in cols:
                for kind, value in _numbers(rows[col]).items():
                    out[f"{base}.{kind}_{col}_{_name(w)}"].append(value)
            if two_hops:
                for name, value in _parents_of(db, table, fk, rows, hidden).items():
                    out[f"{name}_{_name(w)}"].append(value)
        if table.time_column is not None:
            times = mine[table.time_column]
            out[f"{base}.days_since_last"].append((t - times.max()) / DAY if len(times) else np.nan)
            out[f"{base}.days_since_first"].append((t - times.min()) / DAY if len(times)
                                                   else np.nan)
    return dict(out)


def _parents_of(db: Database, table: Table, fk: str, rows: pd.DataFrame,
                hidden: dict) -> dict[str, float]:
    out = {}
    for gk, parent_name in table.foreign_keys.items():
        parent = db[parent_name]
        if gk == fk or (table.time_column is None and parent.time_column is not None):
            continue
        stem = f"{table.name}.{fk}.{gk}->{parent_name}."
        seen = []
        for _, row in rows.iterrows():
            match = parent.df[_same(parent.df[parent.primary_key], row[gk])]
            if parent.time_column is not None:
                match = match[match[parent.time_column] <= row[table.time_column]]
            seen.append(match)
        seen = pd.concat(seen) if seen else parent.df.iloc[:0]
        out[f"{stem}distinct"] = seen[parent.primary_key].nunique()
        for col, stype in parent.stypes.items():
            if stype == "numerical" and col not in hidden.get(parent_name, []):
                out[f"{stem}mean_{col}"] = _numbers(seen[col])["mean"]
    return out


def siblings_oracle(db: Database, labels: pd.DataFrame, entity: str, fk: str, sibling: str,
                    sfk: str, windows: list, hidden: dict | None = None) -> dict[str, list]:
    """Siblings aggregates of each label row: rows sharing the entity's parent,
    strictly before the cutoff."""
    hidden = hidden or {}
    e, s = db[entity], db[sibling]
    cols = [c for c, st in s.stypes.items() if st == "numerical"
            and c not in hidden.get(sibling, [])]
    base = f"{fk}->{e.foreign_keys[fk]}<-{sibling}.{sfk}"
    out = defaultdict(list)
    parent_of = e.df.set_index(e.primary_key)[fk]
    for eid, t in zip(labels.iloc[:, 0], labels["timestamp"]):
        parent = parent_of.loc[eid]
        mine = s.df[_same(s.df[sfk], parent)]
        if s.time_column is not None:
            mine = mine[mine[s.time_column] < t]
        spans = [None] if s.time_column is None else [*windows, None]
        for w in spans:
            rows = mine if w is None else mine[mine[s.time_column] >= t - w * DAY]
            out[f"{base}.count_{_name(w)}"].append(len(rows))
            for col in cols:
                out[f"{base}.mean_{col}_{_name(w)}"].append(_numbers(rows[col])["mean"])
        if s.time_column is not None:
            last = mine[s.time_column].max()
            out[f"{base}.days_since_last"].append((t - last) / DAY if len(mine) else np.nan)
    return dict(out)


def assert_matches(features: pd.DataFrame, expected: dict[str, list]) -> None:
    """Every oracle column is a feature, with the same values (NaN where empty),
    to float32 precision, in which the baseline keeps its features."""
    missing = sorted(set(expected) - set(features.columns))
    assert not missing, f"features missing: {missing}"
    for name, values in expected.items():
        np.testing.assert_allclose(features[name].to_numpy(dtype=float),
                                   np.asarray(values, dtype=float), rtol=3e-7, atol=1e-9,
                                   equal_nan=True, err_msg=name)
