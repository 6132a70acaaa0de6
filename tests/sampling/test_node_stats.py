"""Temporal neighbour statistics against a brute-force count over the raw edges.

For every sampled node and every edge type into its type, the statistics must
equal what a scan of the whole edge list gives at the node's seed time: all
neighbours with time <= t (whatever the fan-out sampled), those in each window
(t - w, t], and the days since the latest one.
"""
from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import HeteroData
from torch_geometric.loader import NodeLoader

from rdl.sampling import NUM_WINDOWS, TemporalNeighborSampler, TemporalNodeStats, stats_widths
from rdl.sampling.node_stats import NEVER_DAYS, SECONDS_PER_DAY

DAY = int(SECONDS_PER_DAY)
WINDOWS = [DAY, 3 * DAY, 10 * DAY]


@st.composite
def shops(draw) -> HeteroData:
    """Customers (static or timed), orders naming <= 1 customer, and optional
    many-to-many visits with repeated pairs; times in days, or spread so far
    apart that the sampler codes them by rank."""
    data = HeteroData()
    scale = DAY * draw(st.sampled_from([1, 2**20]))
    num_customers = draw(st.integers(1, 5))
    num_orders = draw(st.integers(0, 25))
    data["customers"].num_nodes = num_customers
    if draw(st.booleans()):
        data["customers"].time = torch.tensor(
            draw(st.lists(st.integers(0, 12), min_size=num_customers, max_size=num_customers))
        ) * scale
    data["orders"].num_nodes = num_orders
    data["orders"].time = torch.tensor(
        draw(st.lists(st.integers(0, 12), min_size=num_orders, max_size=num_orders)),
        dtype=torch.long) * scale
    owner = draw(st.lists(st.one_of(st.none(), st.integers(0, num_customers - 1)),
                          min_size=num_orders, max_size=num_orders))
    pairs = [(o, c) for o, c in enumerate(owner) if c is not None]
    edge_index = torch.tensor(pairs, dtype=torch.long).view(-1, 2).t()
    data["orders", "f2p_customer", "customers"].edge_index = edge_index
    data["customers", "rev_f2p_customer", "orders"].edge_index = edge_index.flip(0)
    if num_orders > 0 and draw(st.booleans()):
        visits = draw(st.lists(st.tuples(st.integers(0, num_orders - 1),
                                         st.integers(0, num_customers - 1)), max_size=15))
        data["orders", "visited", "customers"].edge_index = torch.tensor(
            visits, dtype=torch.long).view(-1, 2).t()
    return data


def brute_force(data: HeteroData, edge_type, node: int, seed_time: int | None) -> list[float]:
    src, dst = data[edge_type].edge_index
    neighbours = src[dst == node]
    src_time = data[edge_type[0]].get("time")
    if src_time is None:
        return [math.log1p(neighbours.numel())]
    times = src_time[neighbours]
    if seed_time is None:
        return [math.log1p(times.numel())] + [0.0] * (NUM_WINDOWS + 1)
    times = times[times <= seed_time]
    windows = [int((times > seed_time - w).sum()) for w in WINDOWS]
    days = (seed_time - int(times.max())) / SECONDS_PER_DAY if times.numel() else NEVER_DAYS
    return [math.log1p(v) for v in [times.numel(), *windows, days]]


@settings(max_examples=60, deadline=None)
@given(data=shops(), seed_type=st.sampled_from(["customers", "orders"]),
       fanout=st.integers(1, 3), timed=st.booleans(), draw=st.data())
def test_stats_equal_a_brute_force_count(data, seed_type, fanout, timed, draw):
    num = data[seed_type].num_nodes
    if num == 0:
        return
    seeds = torch.tensor(draw.draw(st.lists(st.integers(0, num - 1), min_size=1, max_size=4)))
    scale = int(data["orders"].time.max()) if data["orders"].time.numel() else DAY
    times = torch.tensor(draw.draw(st.lists(st.integers(0, 14), min_size=seeds.numel(),
                                            max_size=seeds.numel()))) * max(scale // 12, 1)
    if seed_type in data.node_types and "time" in data[seed_type]:
        times = torch.maximum(times, data[seed_type].time[seeds])  # A seed exists at its time.
    sampler = TemporalNeighborSampler(data, [fanout, fanout], strategy="uniform", seed=0)
    stats = TemporalNodeStats(sampler.index, WINDOWS)
    loader = NodeLoader(data, node_sampler=sampler, input_nodes=(seed_type, seeds),
                        input_time=times if timed else None, batch_size=4, transform=stats)
    widths = stats_widths(*data.metadata(), [nt for nt in data.node_types if "time" in data[nt]])
    batch = next(iter(loader))
    seed_time = batch[seed_type].get("seed_time") if timed else None
    for nt in batch.node_types:
        store = batch[nt]
        incoming = [et for et in data.edge_types if et[2] == nt]
        if not incoming or store.num_nodes == 0:
            continue
        assert store.node_stats.shape == (store.num_nodes, widths[nt])
        for i in range(store.num_nodes):
            t = None if seed_time is None else int(seed_time[store.batch[i]])
            expected = [v for et in incoming for v in brute_force(data, et, int(store.n_id[i]), t)]
            assert torch.allclose(store.node_stats[i], torch.tensor(expected), atol=1e-5), (
                nt, i, store.node_stats[i], expected)


def test_counts_are_not_capped_by_the_fanout():
    data = HeteroData()
    data["customers"].num_nodes = 1
    data["orders"].num_nodes = 50
    data["orders"].time = torch.arange(50) * DAY
    edge_index = torch.stack([torch.arange(50), torch.zeros(50, dtype=torch.long)])
    data["orders", "f2p_customer", "customers"].edge_index = edge_index
    data["customers", "rev_f2p_customer", "orders"].edge_index = edge_index.flip(0)
    sampler = TemporalNeighborSampler(data, [2], strategy="last")
    loader = NodeLoader(data, node_sampler=sampler, input_nodes=("customers", torch.tensor([0])),
                        input_time=torch.tensor([39 * DAY + 5]), batch_size=1,
                        transform=TemporalNodeStats(sampler.index, WINDOWS))
    batch = next(iter(loader))
    assert batch["orders"].num_nodes == 2  # sampled
    counts = batch["customers"].node_stats[0].expm1().round()
    assert counts[:4].tolist() == [40, 1, 3, 10]  # all 40 orders up to day 39, then windows


def test_windows_are_checked():
    data = HeteroData()
    data["a"].num_nodes = 1
    sampler = TemporalNeighborSampler(data, {}, strategy="last")
    for windows in ([DAY], [DAY, 0, DAY]):
        try:
            TemporalNodeStats(sampler.index, windows)
        except ValueError as error:
            assert "windows" in str(error)
        else:
            raise AssertionError(f"{windows} was accepted")
