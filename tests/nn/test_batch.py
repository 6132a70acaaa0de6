"""BatchPacker: distinct rows, relative times and per-layer prefixes."""
from __future__ import annotations

import pytest
import torch
from torch_frame import stype

from rdl.nn import BatchPacker
from rdl.nn.batch import without_features
from rdl.nn.keys import edge_key
from rdl.testing.graphs import sample_batches, synthetic_graph


@pytest.fixture(scope="module")
def graph():
    return synthetic_graph()


@pytest.fixture(scope="module")
def raw(graph):
    return sample_batches(graph, "transactions", [16, 1], [3, 3])


def packer(graph, **kwargs):
    return BatchPacker(graph.metadata(), "transactions", 2, **kwargs)


def test_features_are_gathered_from_distinct_rows(graph, raw):
    batch = raw[0]
    packed = packer(graph, trim=False)(batch)
    for nt in graph.node_types:
        n_id = batch[nt].n_id
        assert torch.equal(packed.rows[nt][packed.gather[nt]], n_id)
        assert packed.rows[nt].unique().numel() == packed.rows[nt].numel()
        if "tf" not in graph[nt]:
            assert nt not in packed.features
            continue
        full = graph[nt].tf
        for st in (stype.numerical, stype.categorical, stype.timestamp):
            if st in full.feat_dict:
                got = packed.features[nt][st.value][packed.gather[nt]]
                torch.testing.assert_close(got, full.feat_dict[st][n_id], equal_nan=True)
    assert packed.features["items"]["multicategorical_bag"].numel() == \
        packed.features["items"]["multicategorical"].numel()
    assert packed.features["customers"]["embedding"].shape == (packed.rows["customers"].numel(), 4)


@pytest.mark.parametrize("trim", [True, False])
def test_gathering_from_the_graph_packs_what_the_loader_copy_packs(graph, trim):
    # The same seeds sampled from the whole graph (PyG copies every sampled
    # row) and from its featureless skeleton (the packer reads distinct rows).
    skeleton, frames = without_features(graph)
    assert all("tf" not in skeleton[nt] for nt in skeleton.node_types)
    assert set(frames) == {nt for nt in graph.node_types if "tf" in graph[nt]}
    assert skeleton["transactions"].time is graph["transactions"].time  # shared, not copied
    base = packer(graph, trim=trim, dynamic=False)
    copied = sample_batches(graph, "transactions", [16, 40], [3, 3], transform=base)
    gathered = sample_batches(skeleton, "transactions", [16, 40], [3, 3],
                              transform=base.gathering_from(frames))
    assert base.frames == {}  # the original packer is unchanged
    for a, b in zip(copied, gathered):
        assert a.features.keys() == b.features.keys()
        for nt in a.features:
            assert a.features[nt].keys() == b.features[nt].keys()
            for name, tensor in a.features[nt].items():
                torch.testing.assert_close(b.features[nt][name], tensor, equal_nan=True)
        for name in ("rows", "gather", "rel_time", "node_id", "seed_index"):
            for nt, tensor in getattr(a, name).items():
                assert torch.equal(getattr(b, name)[nt], tensor), (name, nt)
        for la, lb in zip(a.edge_index, b.edge_index):
            assert all(torch.equal(la[k], lb[k]) for k in la)


def test_relative_times_are_days_before_the_seed(graph, raw):
    batch = raw[0]
    packed = packer(graph, trim=False)(batch)
    rel = packed.rel_time["transactions"]
    assert (rel >= 0).all()  # the sampler never goes past a seed's time
    seed_time = batch["transactions"].seed_time[batch["transactions"].batch]
    expected = (seed_time - batch["transactions"].time).float() / 86400
    torch.testing.assert_close(rel, expected)
    assert set(packed.rel_time) == {"transactions"}


def test_trimmed_layers_keep_node_and_edge_prefixes(graph, raw):
    batch = raw[0]
    full, trimmed = packer(graph, trim=False)(batch), packer(graph)(batch)
    seeds = int(batch["transactions"].batch_size)
    # Last layer: only the seeds are updated, only edges into them are kept.
    assert trimmed.inv_degree[1]["transactions"].size(0) == seeds
    assert trimmed.inv_degree[1]["customers"].size(0) == 0
    for et in graph.edge_types:
        key = edge_key(et)
        kept = trimmed.edge_index[1][key]
        assert torch.equal(kept, full.edge_index[1][key][:, : kept.size(1)])
        assert (kept[1] < trimmed.inv_degree[1][et[2]].size(0)).all()
        for layer in (0, 1):
            num_src = trimmed.gather[et[0]].numel() if layer == 0 else \
                trimmed.inv_degree[0][et[0]].size(0)
            assert (trimmed.edge_index[layer][key][0] < num_src).all()


def test_every_node_and_edge_type_is_present_even_when_empty(graph, raw):
    packed = packer(graph)(raw[1])  # one seed
    assert set(packed.rows) == set(graph.node_types)
    for layer in packed.edge_index:
        assert set(layer) == {edge_key(et) for et in graph.edge_types}
    assert packed.num_seeds == 1
    assert any(e.size(1) == 0 for e in packed.edge_index[1].values())


def test_sizes_are_marked_unbacked_and_views_are_copied(graph, raw):
    packed = packer(graph)(raw[0])
    assert 0 in packed.gather["transactions"]._dynamo_unbacked_indices
    for edges in packed.edge_index[0].values():
        assert edges._base is None and 1 in edges._dynamo_unbacked_indices
    assert repr(packer(graph)) == "BatchPacker(seed_type='transactions', num_layers=2, trim=True)"


def test_unknown_seed_type_is_named(graph):
    with pytest.raises(ValueError, match=r"seed_type='users' is not a node type"):
        BatchPacker(graph.metadata(), "users", 2)


def test_without_seed_times_relative_times_are_zero(graph, raw):
    batch = raw[0].clone()
    del batch["transactions"].seed_time
    packed = packer(graph)(batch)
    assert torch.equal(packed.rel_time["transactions"],
                       torch.zeros_like(packed.rel_time["transactions"]))


def test_to_moves_every_tensor(graph, raw):
    packed = packer(graph)(raw[0])
    moved = packed.to("cpu")
    assert moved is not packed and moved.num_seeds == packed.num_seeds
    assert torch.equal(moved.msg_slot[0], packed.msg_slot[0])
    assert set(moved.features["items"]) == set(packed.features["items"])


def test_past_labels_show_only_rows_older_than_their_seed(graph):
    # Event level: transactions predicted at their own times; other transactions
    # reach the subgraph two hops away, through their customer, item or store.
    shop = graph.clone()
    num = shop["transactions"].num_nodes
    label = (torch.arange(num) % 3).float()
    shop["transactions"].past_label = label.masked_fill(label == 2, float("nan"))
    batch = sample_batches(shop, "transactions", [32], [8, 8])[0]
    packed = packer(shop, trim=False, label_type="transactions")(batch)
    store = batch["transactions"]
    seed_time = store.seed_time[store.batch]
    shown = packed.past_label["transactions"]
    older = store.time < seed_time
    known = ~torch.isnan(store.past_label)
    assert torch.equal(shown[:, 1].bool(), older & known)
    assert torch.equal(shown[:, 0], torch.where(older & known, store.past_label, 0.0))
    assert not shown[: store.batch_size, 1].any()  # a seed never sees its own label
    assert (older & known).any() and (~older & known).any()  # both cases occur
    with pytest.raises(ValueError, match="past_label"):
        packer(graph, label_type="transactions")(_without_labels(batch))


def _without_labels(batch):
    out = batch.clone()
    del out["transactions"].past_label
    return out
