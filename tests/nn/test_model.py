"""RelationalModel: output shapes per task, head and GNN, exact trimming,
training, errors and repr."""
from __future__ import annotations

import pytest
import torch
from torch_frame import stype

from rdl.nn import GraphSpec, RelationalModel
from rdl.testing.graphs import sample_batches, synthetic_graph


@pytest.fixture(scope="module")
def shop():
    return synthetic_graph()


@pytest.fixture(scope="module")
def raw(shop):
    return sample_batches(shop, "transactions", [12, 1], [3, 3])


def make(shop, **kwargs):
    torch.manual_seed(0)
    kwargs.setdefault("seed_type", "transactions")
    kwargs.setdefault("task_type", "regression")
    return RelationalModel(shop, channels=8, heads=2, **{"temporal_stats": False, **kwargs})


@pytest.mark.parametrize("gnn", ["sage", "gat", "hgt"])
@pytest.mark.parametrize("task_type,out_channels,width", [
    ("binary", 1, 1), ("regression", 1, 1), ("multiclass", 4, 4)])
def test_node_heads_give_one_row_per_seed(shop, raw, gnn, task_type, out_channels, width):
    model = make(shop, gnn=gnn, task_type=task_type, out_channels=out_channels)
    for batch in raw:
        out = model(model.pack(batch))
        assert out.shape == (int(batch["transactions"].batch_size), width)


@pytest.mark.parametrize("gnn", ["sage", "gat", "hgt"])
def test_recommendation_heads(shop, raw, gnn):
    two_tower = make(shop, gnn=gnn, task_type="recommendation", item_type="items")
    packed = two_tower.pack(raw[0])
    assert two_tower(packed).shape == (12, shop["items"].num_nodes)
    idgnn = make(shop, gnn=gnn, task_type="recommendation", item_type="items", rec_head="idgnn")
    packed = idgnn.pack(raw[0])
    assert idgnn(packed).shape == (12, shop["items"].num_nodes)
    assert torch.equal(packed.node_id["items"], raw[0]["items"].n_id)  # all candidates kept


def test_idgnn_adds_subgraph_scores_to_a_score_of_every_item(shop, raw):
    model = make(shop, task_type="recommendation", item_type="items", rec_head="idgnn").eval()
    packed = model.pack(raw[0])
    seed, item = packed.seed_index["items"], packed.node_id["items"]
    inside = torch.zeros(12, shop["items"].num_nodes, dtype=torch.bool)
    inside[seed, item] = True
    assert inside.any() and not inside.all()
    with torch.no_grad():
        scores = model(packed)
        model.head.mlp[-1].bias.add_(100.0)  # subgraph items: +100 more
        lifted = model(packed)
    diff = lifted - scores
    assert torch.allclose(diff[inside], torch.full_like(diff[inside], 100.0))
    assert (diff[~inside] == 0).all()  # items outside the subgraph keep their two-tower score
    assert torch.isfinite(scores).all()


def test_identity_marks_only_the_seeds(shop, raw):
    model = make(shop, task_type="recommendation", item_type="items", rec_head="idgnn",
                 num_layers=0)
    packed = model.pack(raw[0])
    with torch.no_grad():
        model.head.mlp[0].weight.zero_()
    assert torch.isfinite(model(packed)).all()
    seeds = model.encoder(packed)["transactions"]
    marked = {}
    model.gnn.register_forward_pre_hook(lambda m, args: marked.update(args[0]))
    model(packed)
    diff = (marked["transactions"] - seeds).abs().sum(-1)
    assert (diff[:12] > 0).all() and (diff[12:] == 0).all()


@pytest.mark.parametrize("gnn", ["sage", "gat", "hgt"])
def test_trimming_is_exact_at_the_seeds(shop, raw, gnn):
    model = make(shop, gnn=gnn, num_layers=2).eval()
    trimmed = model(model.pack(raw[0]))
    model.packer.trim = False
    full = model(model.pack(raw[0]))
    model.packer.trim = True
    torch.testing.assert_close(trimmed, full, atol=1e-5, rtol=1e-5)


def test_shallow_embeddings_and_spec(shop, raw):
    spec = GraphSpec.from_data(shop)
    assert spec.time_types == ["transactions"] and "stores" not in spec.col_names_dicts
    model = make(spec, shallow_types=["customers", "stores"])
    assert model.encoder.shallow["n_customers"].num_embeddings == 200
    assert model(model.pack(raw[0])).shape == (12, 1)


def test_loss_goes_down_on_a_tiny_graph(shop):
    # Target: the customer's age, which only message passing can bring to the
    # transaction.
    model = make(shop, num_layers=1)
    batches = sample_batches(shop, "transactions", [64] * 2, [2], transform=model.packer)
    age = shop["customers"].tf.feat_dict[stype.numerical][:, 0]
    age = torch.nan_to_num((age - 40) / 12)
    edges = shop["transactions", "f2p_customer", "customers"].edge_index
    customer_of = torch.empty(shop["transactions"].num_nodes, dtype=torch.long)
    customer_of[edges[0]] = edges[1]
    targets = [age[customer_of[b.node_id["transactions"][: b.num_seeds]]] for b in batches]
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01))
    losses = []
    for epoch in range(15):
        total = 0.0
        for batch, y in zip(batches, targets):
            loss = (model(batch).squeeze(-1) - y).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss)
        losses.append(total / len(batches))
    assert losses[-1] < 0.5 * losses[0], losses


def test_errors_name_argument_value_and_choices(shop):
    with pytest.raises(ValueError, match=r"Unknown task_type='ranking'; valid choices are "
                                         r"\['binary', 'multiclass', 'regression', "
                                         r"'recommendation'\]"):
        make(shop, task_type="ranking")
    with pytest.raises(ValueError, match=r"Unknown gnn='gin'"):
        make(shop, gnn="gin")
    with pytest.raises(ValueError, match=r"Unknown seed_type='users'"):
        make(shop, seed_type="users")
    with pytest.raises(ValueError, match=r"multiclass model needs out_channels = number of "
                                         r"classes >= 2 \(got 1\)"):
        make(shop, task_type="multiclass")
    with pytest.raises(ValueError, match=r"binary model has out_channels=1 \(got 3\)"):
        make(shop, task_type="binary", out_channels=3)
    with pytest.raises(ValueError, match="needs item_type"):
        make(shop, task_type="recommendation")
    with pytest.raises(ValueError, match=r"Unknown rec_head='matrix'"):
        make(shop, task_type="recommendation", item_type="items", rec_head="matrix")
    with pytest.raises(ValueError, match=r"Unknown shallow_types entry='users'"):
        make(shop, shallow_types=["users"])


@pytest.mark.parametrize("task_type,extra,aggr", [
    ("binary", {}, "mean+last"), ("regression", {}, "mean"),
    ("multiclass", {"out_channels": 3}, "mean"),
    ("recommendation", {"item_type": "items"}, "mean"),
])
def test_auto_aggregation_adds_the_newest_neighbour_for_binary_tasks_only(
        shop, task_type, extra, aggr):
    model = make(shop, task_type=task_type, **extra)  # aggr: auto, the default
    assert model.settings.aggr == aggr
    assert {conv.aggr for conv in model.gnn.convs} == {aggr}
    assert make(shop, task_type=task_type, aggr="max", **extra).settings.aggr == "max"
    with pytest.raises(ValueError, match="'auto' picks the whole aggregation"):
        make(shop, task_type=task_type, aggr="auto+last", **extra)


def test_forward_wants_a_packed_batch(shop, raw):
    with pytest.raises(TypeError, match=r"takes a PackedBatch \(got HeteroData\); pass "
                                        r"model.pack\(batch\)"):
        make(shop)(raw[0])


def test_repr_is_short(shop):
    assert repr(make(shop)) == ("RelationalModel(task_type='regression', gnn='sage', "
                                "encoder='mlp', num_layers=2)")
    model = make(shop, task_type="recommendation", item_type="items", rec_head="idgnn",
                 gnn="hgt")
    assert repr(model) == ("RelationalModel(task_type='recommendation', gnn='hgt', "
                           "encoder='mlp', num_layers=2, rec_head='idgnn')")
