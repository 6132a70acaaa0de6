"""Strategy "uniform" draws every subset of the allowed neighbours equally often."""
from collections import Counter
from itertools import combinations
from math import sqrt

import pytest
import torch
from torch_geometric.data import HeteroData
from torch_geometric.sampler import NodeSamplerInput

from rdl.sampling import TemporalNeighborSampler, neighbors

NUM_POSTS = 14
SEED_TIME = 10  # Posts 0..9 (times 1..10) are allowed, posts 10..13 are newer.
NUM_SEEDS = 3000
SIGNIFICANCE = 1e-3


def chi_square_accepts(counts: list[int]) -> bool:
    r"""Whether :obj:`counts` fit equal probabilities at :obj:`SIGNIFICANCE`."""
    try:
        from scipy.stats import chisquare
    except ImportError:  # Wilson-Hilferty approximation of the critical value.
        expected = sum(counts) / len(counts)
        statistic = sum((c - expected) ** 2 / expected for c in counts)
        df, z = len(counts) - 1, 3.09  # z: upper 1e-3 quantile of N(0, 1).
        return statistic < df * (1 - 2 / (9 * df) + z * sqrt(2 / (9 * df))) ** 3
    return chisquare(counts).pvalue > SIGNIFICANCE


@pytest.mark.parametrize("count, dense_factor", [(3, 4), (2, 1)])  # Keys, redrawing.
def test_uniform_subsets(count, dense_factor, monkeypatch):
    monkeypatch.setattr(neighbors, "DENSE_FACTOR", dense_factor)
    data = HeteroData()
    data["users"].num_nodes = 1
    data["posts"].num_nodes = NUM_POSTS
    data["posts"].time = torch.arange(1, NUM_POSTS + 1)
    edge_index = torch.stack([torch.arange(NUM_POSTS), torch.zeros(NUM_POSTS, dtype=torch.long)])
    data["posts", "f2p_author", "users"].edge_index = edge_index
    sampler = TemporalNeighborSampler(data, [count], seed=12345)

    out = sampler.sample_from_nodes(
        NodeSamplerInput(
            input_id=None,
            node=torch.zeros(NUM_SEEDS, dtype=torch.long),
            time=torch.full((NUM_SEEDS,), SEED_TIME),
            input_type="users",
        )
    )
    per_seed: dict[int, list[int]] = {}
    for seed, post in zip(out.batch["posts"].tolist(), out.node["posts"].tolist()):
        per_seed.setdefault(seed, []).append(post)
    assert len(per_seed) == NUM_SEEDS
    assert all(len(set(posts)) == count for posts in per_seed.values())
    subsets = Counter(tuple(sorted(posts)) for posts in per_seed.values())
    allowed = range(SEED_TIME)
    assert set(subsets) <= set(combinations(allowed, count))
    assert chi_square_accepts([subsets[s] for s in combinations(allowed, count)])
