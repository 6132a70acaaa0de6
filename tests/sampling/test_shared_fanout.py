"""Fan-outs shared across edge types: the split, and what the sampler takes."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import HeteroData

from rdl.sampling import SamplingSettings, TemporalNeighborSampler
from rdl.sampling.fanout import share_fanouts

EVENTS = ("orders", "visits", "tickets")


def test_each_hop_is_split_among_the_edge_types_that_share_it():
    into = [("orders", "rev", "customers"), ("visits", "rev", "customers"),
            ("tickets", "rev", "customers")]
    parent = ("orders", "f2p", "customers2")
    other = ("customers", "f2p", "stores")
    fanouts = {into[0]: [16, 8, -1], into[1]: [16, 0, 5], into[2]: [16, 8, 5],
               parent: [16, 8, 5], other: [16, 8, 5]}
    shared = share_fanouts(fanouts, set(into) | {other})
    assert shared[into[0]] == [5, 4, -1]  # -1 (all) is kept and takes no share
    assert shared[into[1]] == [5, 0, 2]  # 0 stays 0 and takes no share
    assert shared[into[2]] == [5, 4, 2]
    assert shared[parent] == [16, 8, 5]  # not in `many`: at most one neighbour anyway
    assert shared[other] == [16, 8, 5]  # alone into its type
    assert share_fanouts({into[0]: [2], into[1]: [2], into[2]: [2]}, set(into)) == {
        into[0]: [1], into[1]: [1], into[2]: [1]}  # at least one each
    assert fanouts[into[0]] == [16, 8, -1]  # the input is not changed


def customers_with_events(num_customers: int, rows: list[int], seed: int) -> HeteroData:
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    data["customers"].num_nodes = num_customers
    data["customers"].time = torch.zeros(num_customers, dtype=torch.long)
    for table, num in zip(EVENTS, rows):
        data[table].num_nodes = num
        data[table].time = torch.randint(0, 50, (num,), generator=g)
        owner = torch.randint(0, num_customers, (num,), generator=g)
        edge_index = torch.stack([torch.arange(num), owner])
        data[table, "f2p_customer", "customers"].edge_index = edge_index
        data["customers", "rev_f2p_customer", table].edge_index = edge_index.flip(0)
    return data


def last_allowed(data: HeteroData, table: str, customer: int, seed_time: int, k: int) -> list:
    # Brute force: the k most recent events of the customer at or before the seed time.
    owner = data[table, "f2p_customer", "customers"].edge_index[1]
    time = data[table].time
    allowed = [e for e in range(data[table].num_nodes)
               if int(owner[e]) == customer and int(time[e]) <= seed_time]
    return sorted(sorted(allowed, key=lambda e: (int(time[e]), e))[-k:]) if k else []


@settings(max_examples=30, deadline=None)
@given(rows=st.lists(st.integers(0, 120), min_size=3, max_size=3),
       budget=st.integers(1, 12), seed=st.integers(0, 1000))
def test_a_shared_budget_takes_the_last_events_of_each_table(rows, budget, seed):
    data = customers_with_events(8, rows, seed)
    seeds = torch.arange(8)
    seed_time = torch.randint(-1, 55, (8,), generator=torch.Generator().manual_seed(seed))
    sampler = TemporalNeighborSampler(data, [budget], strategy="last", shared_fanout=True)
    out = sampler._sample({"customers": seeds}, {"customers": seed_time})
    # The budget is split among the tables that give some customer two or more
    # events, one each at least; the others give at most one anyway.
    many = [t for t in EVENTS
            if rows[EVENTS.index(t)] and
            int(data[t, "f2p_customer", "customers"].edge_index[1].bincount().max()) > 1]
    for table in EVENTS:
        share = max(1, budget // len(many)) if table in many else budget
        nodes, owners = out.node.get(table), out.batch.get(table)
        for i in range(8):
            got = [] if nodes is None else sorted(nodes[owners == i].tolist())
            assert got == last_allowed(data, table, i, int(seed_time[i]), share)
    taken = sum(out.node[t].numel() if t in out.node else 0 for t in many)
    assert taken <= 8 * max(budget, len(many))


def test_without_sharing_each_table_gets_the_whole_fanout():
    data = customers_with_events(8, [100, 100, 100], 0)
    seed_time = torch.full((8,), 60)
    out = TemporalNeighborSampler(data, [6], strategy="last")._sample(
        {"customers": torch.arange(8)}, {"customers": seed_time})
    shared = TemporalNeighborSampler(data, [6], strategy="last", shared_fanout=True)._sample(
        {"customers": torch.arange(8)}, {"customers": seed_time})
    for table in EVENTS:
        for i in range(8):
            assert sorted(out.node[table][out.batch[table] == i].tolist()) == \
                last_allowed(data, table, i, 60, 6)
            assert sorted(shared.node[table][shared.batch[table] == i].tolist()) == \
                last_allowed(data, table, i, 60, 2)


def test_the_setting_is_stored_and_old_checkpoints_read_as_per_edge_type():
    settings_ = SamplingSettings([16, 8], "last", None, shared_fanout=True)
    plain = settings_.to_plain()
    assert SamplingSettings.from_plain(plain, 2) == settings_
    del plain["shared_fanout"]  # written before the option existed
    assert SamplingSettings.from_plain(plain, 2).shared_fanout is False
    with pytest.raises(TypeError, match="shared_fanout must be true or false"):
        SamplingSettings([16], shared_fanout="yes")
