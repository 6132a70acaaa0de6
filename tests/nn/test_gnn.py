"""rdl's heterogeneous layers compute what PyG's do (weights mapped over)."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.data import HeteroData
from torch_geometric.nn import GATv2Conv, HeteroConv, HGTConv, SAGEConv

from rdl.nn import BatchPacker, HeteroGATv2Conv, HeteroGNN, HeteroSAGEConv, HGTLayer
from rdl.nn.keys import edge_key, type_key

C = 8
EDGE_TYPES = [("a", "to", "b"), ("b", "back", "a"), ("a", "self", "a"), ("c", "to", "a")]
NODE_TYPES = ["a", "b", "c"]
NUM = {"a": 6, "b": 4, "c": 3}
DST_TYPES = ["a", "b"]


def tiny_graph(seed: int = 0) -> tuple[HeteroData, dict, dict]:
    r"""Three node types, four edge types (one with no edges), a node of type
    ``b`` with no incoming edge::

        a0..a5 --to--> b0..b2     b0..b3 --back--> a*     a --self--> a
    """
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    for nt, num in NUM.items():
        data[nt].num_nodes = num
        data[nt].n_id = torch.arange(num)
        data[nt].batch = torch.zeros(num, dtype=torch.long)
    data["a"].batch_size = 2
    counts = {EDGE_TYPES[0]: 9, EDGE_TYPES[1]: 7, EDGE_TYPES[2]: 5, EDGE_TYPES[3]: 0}
    for (src, rel, dst), num in counts.items():
        high = NUM[dst] - 1 if dst == "b" else NUM[dst]  # b3 gets no message
        data[src, rel, dst].edge_index = torch.stack([
            torch.randint(NUM[src], (num,), generator=g), torch.randint(high, (num,), generator=g)])
    x = {nt: torch.randn(num, C, generator=g) for nt, num in NUM.items()}
    edge_index = {et: data[et].edge_index for et in EDGE_TYPES}
    return data, x, edge_index


def packed(data: HeteroData):
    return BatchPacker((NODE_TYPES, EDGE_TYPES), "a", 1, trim=False, dynamic=False)(data)


@pytest.mark.parametrize("aggr", ["mean", "sum", "max"])
def test_sage_matches_heteroconv_of_sageconv(aggr):
    data, x, edge_index = tiny_graph()
    ref = HeteroConv({et: SAGEConv((C, C), C, aggr=aggr) for et in EDGE_TYPES}, aggr="sum")
    ours = HeteroSAGEConv(NODE_TYPES, EDGE_TYPES, NODE_TYPES, C, aggr)
    with torch.no_grad():
        for nt in DST_TYPES:
            convs = [ref.convs[et] for et in ours.layout.incoming[nt]]
            lin = ours.lin[type_key(nt)]
            lin.weight.copy_(torch.cat([c.lin_l.weight for c in convs]
                                       + [sum(c.lin_r.weight for c in convs)], dim=1))
            lin.bias.copy_(sum(c.lin_l.bias for c in convs))
    expected = ref(x, edge_index)
    out = ours(x, packed(data), 0)
    assert sorted(expected) == DST_TYPES  # PyG drops types no edge type enters.
    for nt in DST_TYPES:
        torch.testing.assert_close(out[nt], expected[nt], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("seed", range(4))
def test_last_aggregation_takes_each_slots_newest_neighbour(seed):
    data, x, edge_index = tiny_graph(seed)
    g = torch.Generator().manual_seed(seed)
    data["a"].seed_time = torch.tensor([100, 90])
    for nt in ("a", "b"):  # few distinct times, so that some neighbours tie; c has none
        data[nt].time = torch.randint(3, (NUM[nt],), generator=g) * 10
    conv = HeteroSAGEConv(NODE_TYPES, EDGE_TYPES, NODE_TYPES, C, "last")
    out = conv(x, packed(data), 0)
    times = {nt: data[nt].time for nt in ("a", "b")}
    for nt in DST_TYPES:
        blocks = []
        for et in conv.layout.incoming[nt]:
            src, dst = edge_index[et]
            block = torch.zeros(NUM[nt], C)
            for i in range(NUM[nt]):
                sources = src[dst == i]
                if sources.numel() == 0:
                    continue
                if et[0] in times:  # all sources belong to seed 0: the newest is the latest
                    when = times[et[0]][sources]
                    sources = sources[when == when.max()]
                block[i] = x[et[0]][sources].mean(0)
            blocks.append(block)
        expected = conv.lin[type_key(nt)](torch.cat(blocks + [x[nt]], dim=1))
        torch.testing.assert_close(out[nt], expected, atol=1e-5, rtol=1e-5)


def test_gat_matches_heteroconv_of_gatv2conv():
    data, x, edge_index = tiny_graph(1)
    heads = 2
    ref = HeteroConv({et: GATv2Conv((C, C), C // heads, heads=heads, add_self_loops=False,
                                    residual=True) for et in EDGE_TYPES}, aggr="sum")
    ours = HeteroGATv2Conv(EDGE_TYPES, NODE_TYPES, C, heads=heads)
    with torch.no_grad():
        for nt, ets in ours.outgoing.items():
            lin = ours.src_lin[type_key(nt)]
            lin.weight.copy_(torch.cat([ref.convs[et].lin_l.weight for et in ets]))
            lin.bias.copy_(torch.cat([ref.convs[et].lin_l.bias for et in ets]))
        for nt in DST_TYPES:
            convs = [ref.convs[et] for et in ours.incoming[nt]]
            lin = ours.dst_lin[type_key(nt)]
            lin.weight.copy_(torch.cat([c.lin_r.weight for c in convs]
                                       + [sum(c.res.weight for c in convs)]))
            lin.bias.copy_(torch.cat([c.lin_r.bias for c in convs]
                                     + [sum(c.bias for c in convs)]))
        for et in ours.att.keys():
            ours.att[et].copy_(ref.convs[tuple(et.split("__"))].att[0])
    expected = ref(x, edge_index)
    out = ours(x, packed(data), 0)
    for nt in expected:
        torch.testing.assert_close(out[nt], expected[nt], atol=1e-5, rtol=1e-5)


def test_hgt_matches_pyg_hgtconv():
    data, x, edge_index = tiny_graph(2)
    heads, dim = 2, C // 2
    ref = HGTConv(C, C, (NODE_TYPES, EDGE_TYPES), heads=heads)
    ours = HGTLayer(NODE_TYPES, EDGE_TYPES, NODE_TYPES, C, heads=heads)
    with torch.no_grad():
        for p in ref.parameters():
            p.normal_()
        for nt in NODE_TYPES:
            ours.kqv[type_key(nt)].weight.copy_(ref.kqv_lin.lins[nt].weight)
            ours.kqv[type_key(nt)].bias.copy_(ref.kqv_lin.lins[nt].bias)
            ours.out_lin[type_key(nt)].weight.copy_(ref.out_lin.lins[nt].weight)
            ours.out_lin[type_key(nt)].bias.copy_(ref.out_lin.lins[nt].bias)
            ours.skip[type_key(nt)].copy_(ref.skip[nt])
        for i, et in enumerate(EDGE_TYPES):
            for h in range(heads):
                ours.k_rel[edge_key(et)][h].copy_(ref.k_rel.weight[h * len(EDGE_TYPES) + i])
                ours.v_rel[edge_key(et)][h].copy_(ref.v_rel.weight[h * len(EDGE_TYPES) + i])
            ours.p_rel[edge_key(et)].copy_(ref.p_rel["__".join(et)][0])
    expected = ref(x, edge_index)
    out = ours(x, packed(data), 0)
    for nt in expected:  # PyG leaves out types that receive no edge type.
        torch.testing.assert_close(out[nt], expected[nt], atol=1e-4, rtol=1e-4)
    assert dim * heads == C


@pytest.mark.parametrize("gnn", ["sage", "gat", "hgt"])
def test_stack_updates_only_out_types_in_last_layer(gnn):
    data, x, _ = tiny_graph()
    model = HeteroGNN(NODE_TYPES, EDGE_TYPES, C, 2, ["a"], gnn=gnn, heads=2)
    batch = BatchPacker((NODE_TYPES, EDGE_TYPES), "a", 2, trim=False, dynamic=False)(data)
    out = model(x, batch)
    assert list(out) == ["a"] and out["a"].shape == (NUM["a"], C)
    assert repr(model) == f"HeteroGNN({gnn!r}, num_layers=2)"


def test_unknown_gnn_and_aggregation_are_named():
    with pytest.raises(ValueError, match=r"Unknown gnn='gcn'; valid choices are "
                                         r"\['sage', 'gat', 'hgt'\]"):
        HeteroGNN(NODE_TYPES, EDGE_TYPES, C, 1, ["a"], gnn="gcn")
    with pytest.raises(ValueError, match=r"Unknown aggr='median'"):
        HeteroSAGEConv(NODE_TYPES, EDGE_TYPES, NODE_TYPES, C, aggr="median")
    with pytest.raises(ValueError, match="heads=3 must divide channels=8"):
        HeteroGATv2Conv(EDGE_TYPES, NODE_TYPES, C, heads=3)
