"""save_graph/load_graph: every attribute comes back equal, tensors are views
of the mapped file, and the sampler samples exactly as on the built graph."""
from __future__ import annotations

import math
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from torch_frame.data import MultiEmbeddingTensor, MultiNestedTensor
from torch_geometric.loader import NodeLoader

import rdl
from rdl.graph import build_graph
from rdl.graph.store import load_graph, save_graph
from rdl.sampling import TemporalNeighborSampler
from rdl.testing.memory_maps import backing_file, mapped_files

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/maps")


@pytest.fixture(scope="module")
def shop(tmp_path_factory) -> rdl.Database:
    """Text, datetime and integer keys; every stype rdl materialises."""
    rng = np.random.default_rng(0)
    folder = tmp_path_factory.mktemp("shop")
    n = 300
    pd.DataFrame({
        "sku": [f"sku-{i:03d}-ü" for i in range(20)],
        "price": rng.gamma(2, 5, 20), "colour": rng.choice(["red", "blue", None], 20),
        "blurb": [f"a fine product number {i} for you" for i in range(20)],
        "tags": [["x", "y"][: i % 3] for i in range(20)],
        "vector": [[float(i), 1.0, -1.0] for i in range(20)],
    }).to_parquet(folder / "products.parquet")
    days = pd.date_range("2024-01-01", periods=30, freq="D")
    pd.DataFrame({"day": days, "temperature": rng.normal(5, 3, 30)}).to_parquet(folder / "weather.parquet")
    pd.DataFrame({
        "order_id": np.arange(n) * 7, "sku": rng.choice([f"sku-{i:03d}-ü" for i in range(22)], n),
        "day": rng.choice(days, n),
        "placed": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 30 * 86400, n), unit="s"),
        "amount": rng.normal(10, 2, n),
    }).to_parquet(folder / "orders.parquet")
    return rdl.connect(folder, schema={"tables": {
        "products": {"primary_key": "sku", "stypes": {"blurb": "text_embedded",
                                                      "tags": "multicategorical"}},
        "weather": {"primary_key": "day", "time_column": "day"},
        "orders": {"primary_key": "order_id", "time_column": "placed",
                   "foreign_keys": {"sku": "products", "day": "weather"}},
    }})


@pytest.fixture(scope="module")
def built(shop):
    return build_graph(shop)


@pytest.fixture(scope="module")
def stored(built, tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "graph.pt"
    save_graph(built, path)
    return path


def assert_same_value(a, b, where: str) -> None:
    if isinstance(b, torch.Tensor):
        assert isinstance(a, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(b, (MultiNestedTensor, MultiEmbeddingTensor)):
        assert type(a) is type(b) and (a.num_rows, a.num_cols) == (b.num_rows, b.num_cols), where
        assert torch.equal(a.values, b.values) and torch.equal(a.offset, b.offset), where
    elif isinstance(b, dict):
        assert list(a) == list(b), where
        for key in b:
            assert_same_value(a[key], b[key], f"{where}.{key}")
    elif isinstance(b, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_value(x, y, f"{where}[{i}]")
    elif isinstance(b, float) and math.isnan(b):
        assert math.isnan(a), where
    else:
        assert a == b, where


def test_round_trip_keeps_every_attribute(built, stored):
    loaded = load_graph(stored)
    assert loaded.node_types == built.node_types and loaded.edge_types == built.edge_types
    for nt in built.node_types:
        assert loaded[nt].num_nodes == built[nt].num_nodes
        assert set(loaded[nt].keys()) == set(built[nt].keys()), nt
        if "time" in built[nt]:
            assert_same_value(loaded[nt].time, built[nt].time, f"{nt}.time")
        if "tf" in built[nt]:
            assert loaded[nt].tf.col_names_dict == built[nt].tf.col_names_dict
            assert_same_value(loaded[nt].tf.feat_dict, built[nt].tf.feat_dict, f"{nt}.tf")
    for et in built.edge_types:
        assert_same_value(loaded[et].edge_index, built[et].edge_index, str(et))
    assert_same_value(loaded.col_stats_dict, built.col_stats_dict, "col_stats_dict")
    assert loaded.table_of == built.table_of
    for nt, index in built.key_index.items():
        pd.testing.assert_index_equal(loaded.key_index[nt], index, exact=False)
        assert loaded.key_index[nt].get_indexer(index[::-1]).tolist() == list(range(len(index)))[::-1]
    # the graph really has what this test claims to cover
    products = built["products"].tf.feat_dict
    assert {type(f) for f in products.values()} >= {MultiNestedTensor, MultiEmbeddingTensor}
    assert {str(i.dtype) for i in built.key_index.values()} == {"str", "int64", "datetime64[ns]"}


def all_tensors(data) -> list[torch.Tensor]:
    tensors = [data[et].edge_index for et in data.edge_types]
    for nt in data.node_types:
        if "time" in data[nt]:
            tensors.append(data[nt].time)
        if "tf" in data[nt]:
            for feat in data[nt].tf.feat_dict.values():
                tensors.extend([feat.values, feat.offset] if hasattr(feat, "offset") else [feat])
    return tensors


def test_loaded_tensors_are_views_of_the_file(stored):
    mapped = load_graph(stored)
    copied = load_graph(stored, mmap=False)
    maps = mapped_files()
    tensors = all_tensors(mapped)
    assert len(tensors) > 10
    assert {backing_file(t, maps) for t in tensors} == {str(stored)}
    assert {backing_file(t, maps) for t in all_tensors(copied)} == {None}


def test_sampler_samples_the_loaded_graph_as_the_built_one(built, stored):
    seeds = torch.arange(built["orders"].num_nodes)
    times = built["orders"].time + 3600

    def batches(data):
        sampler = TemporalNeighborSampler(data, [3, 2], strategy="uniform", seed=7)
        loader = NodeLoader(data, node_sampler=sampler, input_nodes=("orders", seeds),
                            input_time=times, batch_size=64)
        return list(loader)

    ours, theirs = batches(load_graph(stored)), batches(built)
    assert len(ours) == len(theirs) == 5
    for a, b in zip(ours, theirs):
        assert a.node_types == b.node_types and a.edge_types == b.edge_types
        for nt in b.node_types:
            assert torch.equal(a[nt].n_id, b[nt].n_id) and torch.equal(a[nt].batch, b[nt].batch)
            if "tf" in b[nt]:
                assert_same_value(a[nt].tf.feat_dict, b[nt].tf.feat_dict, nt)
        for et in b.edge_types:
            assert torch.equal(a[et].edge_index, b[et].edge_index)


def test_frame_cache_is_memory_mapped_too(shop, tmp_path):
    build_graph(shop, cache_dir=tmp_path)
    cached = build_graph(shop, cache_dir=tmp_path)
    maps = mapped_files()
    feats = cached["orders"].tf.feat_dict.values()
    assert {backing_file(f, maps) for f in feats} == {
        str(p) for p in tmp_path.glob("orders.*.frame.pt")}


def test_what_cannot_be_stored_is_an_error(built, tmp_path):
    data = built.clone()
    data["orders"].y = torch.zeros(data["orders"].num_nodes)
    with pytest.raises(ValueError, match=r"attribute\(s\) \['y'\] of node type 'orders'"):
        save_graph(data, tmp_path / "g.pt")
    data = built.clone()
    data.seeds = torch.zeros(3)
    with pytest.raises(ValueError, match=r"the graph also has \['seeds'\]"):
        save_graph(data, tmp_path / "g.pt")
    torch.save({"format": "something else"}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="is not a graph written by save_graph"):
        load_graph(tmp_path / "other.pt")
