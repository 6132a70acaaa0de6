"""Fan-outs shared across edge types: the split, and what the sampler takes."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import HeteroData

from rdl.sampling import SamplingSettings, TemporalNeighborSampler
from rdl.sampling.fanout import AUTO_SHARE_LINKS, sharing_groups, water_fill
from rdl.sampling.neighbors import sample_subsets

EVENTS = ("orders", "visits", "tickets")


def test_edge_types_share_where_two_or_more_bring_many_into_a_type():
    into = [("orders", "rev", "customers"), ("visits", "rev", "customers"),
            ("tickets", "rev", "customers")]
    parent = ("orders", "f2p", "customers2")
    other = ("customers", "f2p", "stores")
    fanouts = {into[0]: [16, 8, -1], into[1]: [16, 0, 5], into[2]: [16, 8, 5],
               parent: [16, 8, 5], other: [16, 8, 5]}
    groups = sharing_groups(fanouts, set(into) | {other})
    assert groups == [
        {"customers": into},
        {"customers": [into[0], into[2]]},  # 0 never samples, so takes no share
        {"customers": [into[1], into[2]]},  # -1 (all) takes no share
    ]  # `parent` is not in `many`; `other` is alone into its type


def greedy_fill(available: list[int], budget: int) -> list[int]:
    # Brute force: one neighbour at a time to the link with the fewest taken so far,
    # among equals the one with the most available, then the later one.
    taken = [0] * len(available)
    for _ in range(budget):
        open_ = [i for i, a in enumerate(available) if taken[i] < a]
        if not open_:
            break
        best = min(open_, key=lambda i: (taken[i], -available[i], -i))
        taken[best] += 1
    return taken


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.lists(st.integers(0, 30), min_size=1, max_size=6), min_size=1,
                     max_size=8).filter(lambda r: len({len(x) for x in r}) == 1),
       budget=st.integers(0, 40))
def test_water_fill_equals_filling_one_at_a_time(rows, budget):
    taken = water_fill(torch.tensor(rows), budget)
    assert taken.tolist() == [greedy_fill(row, budget) for row in rows]


def test_a_link_with_few_rows_leaves_its_share_to_the_others():
    taken = water_fill(torch.tensor([[1, 40, 40], [0, 0, 3], [2, 2, 2], [9, 9, 9]]), 16)
    assert taken.tolist() == [[1, 7, 8], [0, 0, 3], [2, 2, 2], [5, 5, 6]]


@settings(max_examples=40, deadline=None)
@given(population=st.lists(st.integers(1, 400), min_size=1, max_size=12),
       data=st.data(), seed=st.integers(0, 1000))
def test_sample_subsets_draws_distinct_offsets_in_range(population, data, seed):
    take = [data.draw(st.integers(0, size - 1)) for size in population]
    row, offset = sample_subsets(torch.tensor(population), torch.tensor(take),
                                 torch.Generator().manual_seed(seed))
    for i, (size, count) in enumerate(zip(population, take)):
        mine = offset[row == i].tolist()
        assert len(mine) == count == len(set(mine))
        assert all(0 <= o < size for o in mine)


@pytest.mark.parametrize("population", [5, 200])  # random keys; redrawing
def test_sample_subsets_is_uniform(population):
    # Every offset is drawn with probability take / population (binomial, 5 sigma).
    draws, take = 2000, torch.tensor([1, 3])
    generator = torch.Generator().manual_seed(0)
    hits = torch.zeros(2, population)
    for _ in range(draws):
        row, offset = sample_subsets(torch.tensor([population, population]), take, generator)
        hits.index_put_((row, offset), torch.ones(row.numel()), accumulate=True)
    for i, count in enumerate(take.tolist()):
        p = count / population
        spread = 5 * (draws * p * (1 - p)) ** 0.5
        assert (hits[i] - draws * p).abs().max() <= spread


def customers_with_events(num_customers: int, rows: list[int], seed: int,
                          tables: tuple[str, ...] = EVENTS) -> HeteroData:
    g = torch.Generator().manual_seed(seed)
    data = HeteroData()
    data["customers"].num_nodes = num_customers
    data["customers"].time = torch.zeros(num_customers, dtype=torch.long)
    for table, num in zip(tables, rows):
        data[table].num_nodes = num
        data[table].time = torch.randint(0, 50, (num,), generator=g)
        owner = torch.randint(0, num_customers, (num,), generator=g)
        edge_index = torch.stack([torch.arange(num), owner])
        data[table, "f2p_customer", "customers"].edge_index = edge_index
        data["customers", "rev_f2p_customer", table].edge_index = edge_index.flip(0)
    return data


def allowed_events(data: HeteroData, table: str, customer: int, seed_time: int) -> list:
    # Brute force: the customer's events at or before the seed time, oldest first.
    owner = data[table, "f2p_customer", "customers"].edge_index[1]
    time = data[table].time
    allowed = [e for e in range(data[table].num_nodes)
               if int(owner[e]) == customer and int(time[e]) <= seed_time]
    return sorted(allowed, key=lambda e: (int(time[e]), e))


def last_allowed(data: HeteroData, table: str, customer: int, seed_time: int, k: int) -> list:
    # Brute force: the k most recent of them.
    return sorted(allowed_events(data, table, customer, seed_time)[-k:]) if k else []


def sharing_tables(data: HeteroData, rows: list[int]) -> list[str]:
    # The tables that give some customer two or more events share; the others
    # give at most one and are sampled on their own.
    return [t for t, num in zip(EVENTS, rows) if num and
            int(data[t, "f2p_customer", "customers"].edge_index[1].bincount().max()) > 1]


@settings(max_examples=30, deadline=None)
@given(rows=st.lists(st.integers(0, 120), min_size=3, max_size=3),
       budget=st.integers(1, 12), seed=st.integers(0, 1000),
       strategy=st.sampled_from(["last", "uniform"]))
def test_a_shared_budget_is_filled_from_the_events_each_table_allows(rows, budget, seed,
                                                                       strategy):
    data = customers_with_events(8, rows, seed)
    seed_time = torch.randint(-1, 55, (8,), generator=torch.Generator().manual_seed(seed))
    sampler = TemporalNeighborSampler(data, [budget], strategy=strategy, shared_fanout=True,
                                      seed=seed)
    out = sampler._sample({"customers": torch.arange(8)}, {"customers": seed_time})
    many = sharing_tables(data, rows)
    for i in range(8):
        allowed = {t: allowed_events(data, t, i, int(seed_time[i])) for t in EVENTS}
        share = dict(zip(many, greedy_fill([min(len(allowed[t]), budget) for t in many],
                                           budget)))
        for table in EVENTS:
            nodes, owners = out.node.get(table), out.batch.get(table)
            got = [] if nodes is None else sorted(nodes[owners == i].tolist())
            count = share.get(table, min(len(allowed[table]), budget))
            if strategy == "last" or count == len(allowed[table]):
                assert got == sorted(allowed[table][len(allowed[table]) - count:])
            else:
                assert len(got) == count == len(set(got)) and set(got) <= set(allowed[table])


def test_auto_shares_only_where_many_tables_point_to_a_type():
    def per_customer(tables: tuple[str, ...], shared_fanout) -> list[int]:
        data = customers_with_events(6, [300] * len(tables), 0, tables)
        out = TemporalNeighborSampler(data, [10], strategy="last",
                                      shared_fanout=shared_fanout)._sample(
            {"customers": torch.arange(6)}, {"customers": torch.full((6,), 60)})
        return [sum(int((out.batch[t] == i).sum()) for t in tables) for i in range(6)]

    few = EVENTS
    many = tuple(f"events{i}" for i in range(AUTO_SHARE_LINKS))
    assert per_customer(few, "auto") == per_customer(few, False) == [10 * len(few)] * 6
    assert per_customer(few, True) == [10] * 6
    assert per_customer(many, "auto") == per_customer(many, True) == [10] * 6
    assert per_customer(many, False) == [10 * len(many)] * 6
    with pytest.raises(ValueError, match="shared_fanout must be true, false or 'auto'"):
        TemporalNeighborSampler(customers_with_events(2, [3], 0), [2], shared_fanout="always")


def test_the_setting_is_stored_and_old_checkpoints_read_as_per_edge_type():
    settings_ = SamplingSettings([16, 8], "last", None, shared_fanout=True)
    plain = settings_.to_plain()
    assert SamplingSettings.from_plain(plain, 2) == settings_
    del plain["shared_fanout"]  # written before the option existed
    assert SamplingSettings.from_plain(plain, 2).shared_fanout is False
    assert SamplingSettings.from_plain({**plain, "shared_fanout": "auto"}, 2).shared_fanout == \
        "auto"
    for wrong in ("yes", 1, None):
        with pytest.raises(ValueError, match="shared_fanout must be true, false or 'auto'"):
            SamplingSettings([16], shared_fanout=wrong)
