"""Timestamp ages: days from each timestamp value to its node's seed time,
against pandas' own date arithmetic."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_frame import stype
from torch_frame.data.mapper import TimestampTensorMapper

from rdl.nn import BatchPacker, RelationalModel
from rdl.nn.keys import type_key
from rdl.nn.timestamp_ages import FEATURES_PER_COLUMN, timestamp_days
from rdl.testing.graphs import sample_batches, synthetic_graph

EPOCH = pd.Timestamp("1970-01-01")


def _parts(values: pd.Series) -> torch.Tensor:
    return TimestampTensorMapper.to_tensor(pd.to_datetime(values)).unsqueeze(1)


def _reference_days(parts: torch.Tensor) -> np.ndarray:
    # PyTorch Frame's parts back to dates through pandas, then days since 1970.
    p = parts.numpy()
    frame = pd.DataFrame({"year": p[:, 0], "month": p[:, 1] + 1, "day": p[:, 2] + 1,
                          "hour": p[:, 4], "minute": p[:, 5], "second": p[:, 6]})
    missing = (p < 0).any(axis=1)
    frame[missing] = [2000, 1, 1, 0, 0, 0]
    days = ((pd.to_datetime(frame) - EPOCH) / pd.Timedelta(days=1)).to_numpy()
    return np.where(missing, np.nan, days)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.datetimes(min_value=pd.Timestamp("1700-01-01"),
                                                  max_value=pd.Timestamp("2200-12-31"))),
                min_size=1, max_size=30))
def test_days_equal_pandas(values):
    series = pd.Series(pd.to_datetime(values)).dt.floor("s")
    expected = ((series - EPOCH) / pd.Timedelta(days=1)).to_numpy(dtype=float)
    got = timestamp_days(_parts(series))[:, 0].numpy()
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)


@pytest.fixture(scope="module")
def graph():
    graph = synthetic_graph()
    parts = graph["items"].tf.feat_dict[stype.timestamp]
    parts[1:4] = -1  # the most bought items (Zipf) have no date
    return graph


def test_packed_ages_are_seed_time_minus_each_date(graph):
    packer = BatchPacker(graph.metadata(), "transactions", 2, trim=False, dynamic=False,
                         timestamp_ages=True)
    batch = sample_batches(graph, "transactions", [32], [8, 8])[0]
    packed = packer(batch)
    assert set(packed.ages) == {"items"}  # the one table with a timestamp column
    items = batch["items"]
    parts = graph["items"].tf.feat_dict[stype.timestamp][items.n_id]
    launched = _reference_days(parts[:, 0])
    seed_days = batch["transactions"].seed_time[items.batch].numpy() / 86400
    age = seed_days - launched
    ages = packed.ages["items"].numpy()
    assert ages.shape == (items.num_nodes, FEATURES_PER_COLUMN)
    missing = np.isnan(age)
    assert missing.any() and (~missing).any()
    np.testing.assert_array_equal(ages[:, 2], missing.astype(np.float32))
    known = ~missing
    np.testing.assert_allclose(ages[known, 0], np.sign(age[known]) * np.log1p(np.abs(age[known])),
                               rtol=1e-5)
    np.testing.assert_allclose(ages[known, 1], np.clip(age[known] / 3652.5, -10, 10), rtol=1e-5)
    assert (ages[missing, :2] == 0).all()


def test_without_seed_times_every_age_is_missing(graph):
    static = graph.clone()
    del static["transactions"].time
    packer = BatchPacker(static.metadata(), "items", 1, trim=False, dynamic=False,
                         timestamp_ages=True)
    batch = sample_batches(static, "items", [8], [4])[0]
    ages = packer(batch).ages["items"]
    assert (ages[:, 2] == 1).all() and (ages[:, :2] == 0).all()


def test_off_by_default_and_the_model_learns_from_them(graph):
    assert BatchPacker(graph.metadata(), "transactions", 2)(
        sample_batches(graph, "transactions", [4], [2, 2])[0]).ages == {}
    torch.manual_seed(0)
    model = RelationalModel(graph, seed_type="transactions", task_type="regression",
                            channels=8, temporal_stats=False, timestamp_ages=True)
    assert set(model.encoder.ages) == {type_key("items")}
    batch = sample_batches(graph, "transactions", [16], [4, 4], transform=model.packer)[0]
    model(batch).sum().backward()
    assert model.encoder.ages[type_key("items")][0].weight.grad.abs().sum() > 0
