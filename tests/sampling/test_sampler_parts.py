"""The sampler's building blocks: time codes, neighbour indices, selection, relabelling."""
from unittest import mock

import pytest
import torch

from rdl.sampling import relabel
from rdl.sampling.csc import ParentIndex, TimeSortedCSC, build_adjacency
from rdl.sampling.neighbors import expand_ranges, sample_without_replacement, select_from_csc
from rdl.sampling.relabel import NodeScratch, SampledNodes
from rdl.sampling.time_code import TimeCode


@pytest.mark.parametrize("scale, kind", [(1, "offset"), (2**40, "rank")])
def test_time_code_preserves_order(scale, kind):
    time = torch.tensor([5, -3, 5, 9, 0]) * scale
    code = TimeCode(time)
    assert repr(code) == f"TimeCode({kind})"
    encoded = code.encode(time)
    assert encoded.min() >= 0 and encoded.max() < 2**32
    assert torch.equal(encoded.argsort(stable=True), time.argsort(stable=True))
    seed_time = torch.tensor([-4, -3, 4, 5, 100]) * scale
    # A node is allowed exactly when its code is at most the seed's bound.
    allowed = encoded.view(-1, 1) <= code.bound(seed_time).view(1, -1)
    assert torch.equal(allowed, time.view(-1, 1) <= seed_time.view(1, -1))


def test_csc_rows_sorted_by_time_then_id():
    # Destination 0 has sources 3, 1, 2, 0 with times 7, 5, 5, 9 (unsorted sources).
    time = torch.tensor([9, 5, 5, 7])
    edge_index = torch.tensor([[3, 1, 2, 0, 2], [0, 0, 0, 0, 1]])
    csc = build_adjacency(edge_index, 4, 2, time, TimeCode(time))
    assert isinstance(csc, TimeSortedCSC)
    assert csc.src.tolist() == [1, 2, 3, 0, 2]
    assert csc.bounds.tolist() == [[0, 4], [4, 5]]
    assert not csc.unique_sources
    # "last" with ties: the larger id counts as more recent.
    query = torch.tensor([(0 << 32) + int(TimeCode(time).bound(torch.tensor([6])))])
    entry, neighbor = select_from_csc(csc, torch.tensor([0]), query, 1, "last")
    assert neighbor.tolist() == [2]


def test_parent_index_for_single_source_edge_types():
    edge_index = torch.tensor([[0, 0, 1], [2, 0, 3]])  # Parent 0 has children 2 and 0.
    index = build_adjacency(edge_index, 2, 5)
    assert isinstance(index, ParentIndex)
    assert index.parent.tolist() == [0, -1, 0, 1, -1]
    assert not index.unique_sources and not index.complete
    assert build_adjacency(torch.tensor([[1, 0], [0, 1]]), 2, 2).complete
    assert build_adjacency(torch.empty(2, 0, dtype=torch.long), 0, 3).parent.tolist() == [-1] * 3


def test_expand_ranges():
    entry, slot = expand_ranges(torch.tensor([5, 0, 2]), torch.tensor([2, 0, 3]))
    assert entry.tolist() == [0, 0, 2, 2, 2]
    assert slot.tolist() == [5, 6, 2, 3, 4]


@pytest.mark.parametrize("population", [[4, 9, 5], [100, 3000, 7]])
def test_sample_without_replacement(population):
    generator = torch.Generator().manual_seed(0)
    offsets = sample_without_replacement(torch.tensor(population), 3, generator)
    assert offsets.shape == (3, 3)
    for row, size in zip(offsets.tolist(), population):
        assert len(set(row)) == 3 and all(0 <= offset < size for offset in row)


@pytest.mark.parametrize("max_pairs", [relabel.MAX_PAIR_SCRATCH, 4])  # Scratch, sorting.
def test_sampled_nodes_relabel(max_pairs):
    scratch = NodeScratch(10)
    with mock.patch.object(relabel, "MAX_PAIR_SCRATCH", max_pairs):
        for _ in range(2):  # The second batch finds the scratch clean.
            nodes = SampledNodes(lambda: scratch, num_seeds=3)
            seeds = torch.tensor([0, 1, 2])
            assert nodes.add(torch.tensor([7, 7, 2]), seeds, distinct=True).tolist() == [0, 1, 2]
            assert nodes.take_frontier()[2] == 0
            local = nodes.add(torch.tensor([7, 3, 3, 7, 2]), torch.tensor([1, 0, 0, 0, 0]))
            assert local.tolist() == [1, 3, 3, 0, 4]
            node, seed, first = nodes.take_frontier()
            assert (node.tolist(), seed.tolist(), first) == ([3, 2], [0, 0], 3)
            assert nodes.node.tolist() == [7, 7, 2, 3, 2]
            assert nodes.seed.tolist() == [0, 1, 2, 0, 0]
            nodes.release()
            assert torch.all(scratch.node_slot == relabel.UNUSED)
            assert torch.all(scratch.pair_local == relabel.UNUSED)
