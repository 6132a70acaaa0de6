"""rdl's vectorised encoding gives exactly PyTorch Frame's tensors and stats."""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch
import torch_frame
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_frame.data import Dataset
from torch_frame.data.stats import StatType

from rdl.db import Table
from rdl.graph.materialize import feature_frame, materialize_table

STYPES = {"amount": "numerical", "count": "numerical", "flag": "numerical",
          "colour": "categorical", "size": "categorical", "mixed": "categorical",
          "member": "categorical", "ratio": "categorical",
          "seen": "timestamp", "zoned": "timestamp"}


@st.composite
def frames(draw) -> pd.DataFrame:
    n = draw(st.integers(1, 40))
    pick = lambda values: draw(st.lists(st.sampled_from(values), min_size=n, max_size=n))  # noqa: E731
    seconds = pick([None, -86400 * 400, 0, 59, 3600 * 25 + 7, 86400 * 365 * 30 + 1, 1.7e9])
    seen = pd.to_datetime(pd.Series(seconds, dtype="float64"), unit="s")
    return pd.DataFrame({
        "amount": pick([0.5, -2.0, np.nan, np.inf, 3.25, 1e9]),
        "count": pd.array(pick([1, 2, None, 7]), dtype="Int64"),
        "flag": pick([True, False]),
        "colour": pd.array(pick(["red", "blue", None, "green", "ünï"]), dtype="str"),
        "size": pick([1, 2, 3, 10]),
        "mixed": pd.Series(pick([1, "1", "a", None, 2.5]), dtype=object),
        "member": pick([True, False]),
        "ratio": pick([0.1, 0.2, np.nan]),
        "seen": seen,
        "zoned": seen.dt.tz_localize("UTC").dt.tz_convert("America/New_York"),
    })


def reference(df: pd.DataFrame, col_stats=None):
    """PyTorch Frame doing all the work, from the frame rdl hands it."""
    dataset = Dataset(feature_frame(df, STYPES), {c: torch_frame.stype(s) for c, s in STYPES.items()})
    dataset.materialize(col_stats=col_stats)
    return dataset.tensor_frame, dataset.col_stats


def assert_same_stats(ours: dict, theirs: dict) -> None:
    assert ours.keys() == theirs.keys()
    for col, stats in theirs.items():
        assert ours[col].keys() == stats.keys(), col
        for stat, value in stats.items():
            mine = ours[col][stat]
            if isinstance(value, torch.Tensor):
                assert torch.equal(mine, value), (col, stat)
            elif stat in (StatType.MEAN, StatType.STD, StatType.QUANTILES):
                np.testing.assert_allclose(mine, value, rtol=1e-12, err_msg=f"{col} {stat}")
            else:
                assert mine == (list(value) if isinstance(value, list) else
                                tuple(list(v) for v in value)), (col, stat)


def assert_same_frame(ours, theirs) -> None:
    assert ours.col_names_dict == theirs.col_names_dict
    for stype, feat in theirs.feat_dict.items():
        assert torch.equal(ours.feat_dict[stype].nan_to_num(-7.0), feat.nan_to_num(-7.0)), stype


@settings(max_examples=25, deadline=None)
@given(df=frames())
def test_encoding_equals_pytorch_frame(df):
    tf, stats = materialize_table(Table("t", df, stypes=STYPES))
    ref_tf, ref_stats = reference(df)
    assert_same_frame(tf, ref_tf)
    assert_same_stats(stats, ref_stats)


@settings(max_examples=10, deadline=None)
@given(train=frames(), new=frames())
def test_encoding_with_given_stats_equals_pytorch_frame(train, new):
    """A model's stats applied to other rows: unseen categories become -1."""
    _, stats = reference(train)
    tf, used = materialize_table(Table("t", new, stypes=STYPES), col_stats=stats)
    assert_same_frame(tf, reference(new, col_stats=stats)[0])
    assert used is not stats and used.keys() == stats.keys()
