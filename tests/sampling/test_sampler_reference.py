"""TemporalNeighborSampler against a brute-force reference on random small graphs.

The reference lists, for a destination node, an edge type and a seed time, the
allowed neighbours in time order (ties: smaller node id first). Walking the sampled
mini-batch hop by hop, every frontier node's sampled neighbours must be:

* all allowed neighbours, when the fan-out is -1 or not smaller than their number;
* the ``k`` last allowed neighbours, for strategy ``"last"``;
* ``k`` distinct allowed edges, for strategy ``"uniform"``.

The nodes added at each hop must be exactly the new (seed, node) pairs those edges
reach, seeds (of one node type, or of two as for links) come first, and no node may
be newer than its seed.
"""
from __future__ import annotations

from collections import Counter
from contextlib import ExitStack
from unittest import mock

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import HeteroData

from rdl.sampling import TemporalNeighborSampler, neighbors, relabel

TYPES = ("t0", "t1", "t2")
WIDE = 2**33  # Times this far apart need rank codes instead of offsets.


@st.composite
def temporal_graphs(draw) -> tuple[HeteroData, bool]:
    data = HeteroData()
    wide = draw(st.booleans())
    node_types = TYPES[: draw(st.integers(1, 3))]
    for node_type in node_types:
        num_nodes = draw(st.integers(0, 6))
        data[node_type].num_nodes = num_nodes
        if draw(st.booleans()):
            time = draw(st.lists(st.integers(0, 5), min_size=num_nodes, max_size=num_nodes))
            data[node_type].time = torch.tensor(time, dtype=torch.long) * (WIDE if wide else 1)
    for child in node_types:  # Foreign keys, each child row names <= 1 parent.
        for parent in node_types:
            if draw(st.integers(0, 2)) > 0:
                continue
            col = f"fk_{parent}"
            parent_of = draw(
                st.lists(
                    st.one_of(st.none(), st.integers(0, data[parent].num_nodes - 1))
                    if data[parent].num_nodes > 0
                    else st.none(),
                    min_size=data[child].num_nodes,
                    max_size=data[child].num_nodes,
                )
            )
            pairs = [(c, p) for c, p in enumerate(parent_of) if p is not None]
            edge_index = torch.tensor(pairs, dtype=torch.long).view(-1, 2).t()
            data[child, f"f2p_{col}", parent].edge_index = edge_index
            data[parent, f"rev_f2p_{col}", child].edge_index = edge_index.flip(0)
    if draw(st.booleans()):  # A many-to-many edge type, repeated edges allowed.
        src, dst = draw(st.sampled_from(node_types)), draw(st.sampled_from(node_types))
        if data[src].num_nodes > 0 and data[dst].num_nodes > 0:
            pairs = draw(
                st.lists(
                    st.tuples(
                        st.integers(0, data[src].num_nodes - 1),
                        st.integers(0, data[dst].num_nodes - 1),
                    ),
                    max_size=12,
                )
            )
            edge_index = torch.tensor(pairs, dtype=torch.long).view(-1, 2).t()
            data[src, "links", dst].edge_index = edge_index
    return data, wide


@st.composite
def sampling_cases(draw):
    data, wide = draw(temporal_graphs())
    with_nodes = [nt for nt in data.node_types if data[nt].num_nodes > 0]
    # One seed type (node sampling) or two (link sampling), seeds in dict order.
    seed_types = []
    if with_nodes:
        seed_types = draw(st.lists(st.sampled_from(with_nodes), min_size=1, max_size=2, unique=True))
    seeds = {
        nt: draw(st.lists(st.integers(0, data[nt].num_nodes - 1), min_size=1, max_size=5))
        for nt in seed_types
    }
    seed_time = None
    if draw(st.booleans()) and any("time" in data[nt] for nt in data.node_types):
        seed_time = {
            nt: torch.tensor(
                draw(st.lists(st.integers(-1, 6), min_size=len(ids), max_size=len(ids)))
            ) * (WIDE if wide else 1)
            for nt, ids in seeds.items()
        }
    num_hops = draw(st.integers(1, 3))
    hop_counts = st.lists(st.sampled_from([-1, 0, 1, 2, 3]), min_size=num_hops, max_size=num_hops)
    if draw(st.booleans()):
        num_neighbors = draw(hop_counts)
    else:
        num_neighbors = {et: draw(hop_counts) for et in data.edge_types}
    return dict(
        data=data,
        seeds={nt: torch.tensor(ids, dtype=torch.long) for nt, ids in seeds.items()},
        seed_time=seed_time,
        num_neighbors=num_neighbors,
        strategy=draw(st.sampled_from(["uniform", "last"])),
        seed=draw(st.integers(0, 2**16)),
        max_scan_degree=draw(st.sampled_from([neighbors.MAX_SCAN_DEGREE, 1])),
        sort_pairs=draw(st.booleans()),
    )


def allowed_neighbors(data: HeteroData, edge_type, node: int, seed_time) -> list[int]:
    r"""Sources of the edges into :obj:`node`, allowed at :obj:`seed_time`, oldest
    first, ties by node id."""
    src_type = edge_type[0]
    time = data[src_type].get("time")
    sources = [
        int(s) for s, d in data[edge_type].edge_index.t().tolist() if d == node
    ]
    if seed_time is not None and time is not None:
        sources = [s for s in sources if time[s] <= seed_time]
    if time is None:
        return sorted(sources)
    return sorted(sources, key=lambda s: (int(time[s]), s))


def check_against_reference(case: dict, out) -> None:
    data, fanouts = case["data"], case["num_neighbors"]
    if not isinstance(fanouts, dict):
        fanouts = {et: fanouts for et in data.edge_types}
    seed_of_batch = [(nt, n) for nt, ids in case["seeds"].items() for n in ids.tolist()]
    seed_time = None
    if case["seed_time"] is not None:
        seed_time = torch.cat([case["seed_time"][nt] for nt in case["seeds"]])
    pairs = {
        nt: list(zip(out.batch[nt].tolist(), out.node[nt].tolist())) for nt in data.node_types
    }

    # Every (seed, node) pair once; seeds first, with their own batch index.
    for node_type, nodes in pairs.items():
        assert len(set(nodes)) == len(nodes)
        expected_seeds = [(b, n) for b, (nt, n) in enumerate(seed_of_batch) if nt == node_type]
        assert nodes[: len(expected_seeds)] == expected_seeds
        assert out.num_sampled_nodes[node_type][0] == len(expected_seeds)
        assert sum(out.num_sampled_nodes[node_type]) == len(nodes)

    # No node newer than its seed (seeds excepted).
    for node_type, nodes in pairs.items():
        time = data[node_type].get("time")
        num_seeds = out.num_sampled_nodes[node_type][0]
        if seed_time is not None and time is not None:
            for b, n in nodes[num_seeds:]:
                assert time[n] <= seed_time[b]

    node_start = {nt: [0] for nt in data.node_types}
    for node_type in data.node_types:
        for count in out.num_sampled_nodes[node_type]:
            node_start[node_type].append(node_start[node_type][-1] + count)
    edge_start = {et: 0 for et in data.edge_types}
    num_hops = len(next(iter(fanouts.values()), []))
    for hop in range(num_hops):
        reached = {nt: [] for nt in data.node_types}
        for edge_type in data.edge_types:
            src_type, _, dst_type = edge_type
            count = fanouts[edge_type][hop]
            num_edges = out.num_sampled_edges[edge_type][hop]
            window = slice(edge_start[edge_type], edge_start[edge_type] + num_edges)
            edge_start[edge_type] += num_edges
            row = out.row[edge_type][window].tolist()
            col = out.col[edge_type][window].tolist()
            sampled = {}
            for r, c in zip(row, col):
                b, u = pairs[src_type][r]
                assert pairs[dst_type][c][0] == b  # Edges stay inside a subgraph.
                sampled.setdefault(c, []).append(u)
                reached[src_type].append((b, u))
            frontier = range(node_start[dst_type][hop], node_start[dst_type][hop + 1])
            assert set(sampled) <= set(frontier)
            for local in frontier:
                b, v = pairs[dst_type][local]
                t = None if seed_time is None else int(seed_time[b])
                allowed = allowed_neighbors(data, edge_type, v, t)
                got = sampled.get(local, [])
                if count == 0:
                    assert got == []
                elif count == -1 or len(allowed) <= count:
                    assert Counter(got) == Counter(allowed)
                elif case["strategy"] == "last":
                    assert Counter(got) == Counter(allowed[-count:])
                else:
                    assert len(got) == count
                    assert not Counter(got) - Counter(allowed)
        for node_type, new_pairs in reached.items():
            known = set(pairs[node_type][: node_start[node_type][hop + 1]])
            expected = list(dict.fromkeys(p for p in new_pairs if p not in known))
            added = pairs[node_type][node_start[node_type][hop + 1] : node_start[node_type][hop + 2]]
            assert sorted(added) == sorted(expected)


@settings(max_examples=300, deadline=None)
@given(case=sampling_cases())
def test_sampler_matches_reference(case):
    if not case["seeds"]:
        return
    with ExitStack() as stack:
        stack.enter_context(
            mock.patch.object(neighbors, "MAX_SCAN_DEGREE", case["max_scan_degree"])
        )
        if case["sort_pairs"]:  # Force the sorting fallback of the relabelling.
            stack.enter_context(mock.patch.object(relabel, "MAX_PAIR_SCRATCH", 4))
        sampler = TemporalNeighborSampler(
            case["data"], case["num_neighbors"], strategy=case["strategy"], seed=case["seed"]
        )
        # The internal entry point of sample_from_nodes (one seed type) and
        # sample_from_edges (the two endpoint types of the seed links).
        out = sampler._sample(case["seeds"], case["seed_time"])
        check_against_reference(case, out)
        # The scratch memory is clean again: a second batch gives valid output too.
        check_against_reference(case, sampler._sample(case["seeds"], case["seed_time"]))
