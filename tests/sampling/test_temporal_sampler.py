import pytest
import torch
from torch_geometric.data import HeteroData
from torch_geometric.sampler import NodeSamplerInput

from rdl.sampling import TemporalNeighborSampler
from rdl.sampling.csc import ParentIndex, TimeSortedCSC


def forum_graph() -> HeteroData:
    r"""Users (untimed), posts and comments, times after the "@":

    .. code-block:: text

        c0@2    c1@4   c2@6        c3@3
         |        \    /             |
        p0@1      p1@3      p2@5    p3@2
           \        |        /       |
            +------ u0 -----+       u1

    Each post names its author, each comment its post (foreign keys).
    """
    data = HeteroData()
    data["users"].num_nodes = 2
    data["posts"].num_nodes = 4
    data["posts"].time = torch.tensor([1, 3, 5, 2])
    data["comments"].num_nodes = 4
    data["comments"].time = torch.tensor([2, 4, 6, 3])
    for child, col, parent, parent_of in (
        ("posts", "author", "users", [0, 0, 0, 1]),
        ("comments", "post", "posts", [0, 1, 1, 3]),
    ):
        edge_index = torch.stack([torch.arange(len(parent_of)), torch.tensor(parent_of)])
        data[child, f"f2p_{col}", parent].edge_index = edge_index
        data[parent, f"rev_f2p_{col}", child].edge_index = edge_index.flip(0)
    return data


def sample(sampler, node_type, nodes, times=None):
    return sampler.sample_from_nodes(
        NodeSamplerInput(
            input_id=torch.arange(len(nodes)),
            node=torch.tensor(nodes, dtype=torch.long),
            time=None if times is None else torch.tensor(times, dtype=torch.long),
            input_type=node_type,
        )
    )


def sampled_pairs(out, node_type):
    return list(zip(out.batch[node_type].tolist(), out.node[node_type].tolist()))


def global_edges(out, edge_type):
    src, _, dst = edge_type
    return sorted(
        (int(out.batch[src][r]), int(out.node[src][r]), int(out.node[dst][c]))
        for r, c in zip(out.row[edge_type].tolist(), out.col[edge_type].tolist())
    )


def test_forum_graph_all_neighbours():
    # Seeds: u0 at time 4, u0 again at time 6, u1 at time 1 (its post p3 is newer).
    sampler = TemporalNeighborSampler(forum_graph(), [-1, -1])
    out = sample(sampler, "users", [0, 0, 1], [4, 6, 1])

    assert sampled_pairs(out, "users") == [(0, 0), (1, 0), (2, 1)]
    assert sampled_pairs(out, "posts") == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)]
    assert sampled_pairs(out, "comments") == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2)]
    # Each post leads back to its author, the seed itself (no new user).
    assert global_edges(out, ("users", "rev_f2p_author", "posts")) == [
        (0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 0, 1), (1, 0, 2)
    ]
    assert global_edges(out, ("comments", "f2p_post", "posts")) == [
        (0, 0, 0), (0, 1, 1), (1, 0, 0), (1, 1, 1), (1, 2, 1)
    ]
    assert out.num_sampled_nodes == {"users": [3, 0, 0], "posts": [0, 5, 0], "comments": [0, 0, 5]}
    assert out.num_sampled_edges[("posts", "f2p_author", "users")] == [5, 0]
    assert out.num_sampled_edges[("users", "rev_f2p_author", "posts")] == [0, 5]


def test_forum_graph_last():
    sampler = TemporalNeighborSampler(forum_graph(), [1, 1], strategy="last")
    out = sample(sampler, "users", [0, 0, 1], [4, 6, 1])

    assert sampled_pairs(out, "posts") == [(0, 1), (1, 2)]  # Most recent allowed post.
    assert sampled_pairs(out, "comments") == [(0, 1)]  # p2 has no comment.


def test_back_to_a_seed_newer_than_its_time():
    # A post leads back to its author, the seed; u0 joined at 5, after seed time 4.
    data = forum_graph()
    data["users"].time = torch.tensor([5, 0])
    sampler = TemporalNeighborSampler(data, [-1, -1])
    out = sample(sampler, "users", [0, 0], [4, 6])
    assert global_edges(out, ("users", "rev_f2p_author", "posts")) == [
        (1, 0, 0), (1, 0, 1), (1, 0, 2)
    ]


def test_forum_graph_without_seed_times():
    sampler = TemporalNeighborSampler(forum_graph(), [-1])
    out = sample(sampler, "users", [1])
    assert sampled_pairs(out, "posts") == [(0, 3)]  # No time filter.


def test_seeds_of_a_child_table_reach_their_parent():
    sampler = TemporalNeighborSampler(forum_graph(), [-1, -1])
    out = sample(sampler, "comments", [1, 2], [4, 4])  # c2@6 is a seed: kept.

    assert sampled_pairs(out, "posts") == [(0, 1), (1, 1)]
    assert sampled_pairs(out, "users") == [(0, 0), (1, 0)]
    # Hop 2 from p1: c1@4 is allowed (seed 0 has it already), c2@6 is not.
    assert sampled_pairs(out, "comments") == [(0, 1), (1, 2), (1, 1)]


def test_foreign_keys_become_parent_indices():
    sampler = TemporalNeighborSampler(forum_graph(), [1])
    adjacency = sampler.index.adjacency
    assert isinstance(adjacency[("users", "rev_f2p_author", "posts")], ParentIndex)
    assert isinstance(adjacency[("posts", "f2p_author", "users")], TimeSortedCSC)
    assert adjacency[("users", "rev_f2p_author", "posts")].parent.tolist() == [0, 0, 0, 1]
    csc = adjacency[("comments", "f2p_post", "posts")]
    assert csc.bounds.tolist() == [[0, 1], [1, 3], [3, 3], [3, 4]]
    assert csc.src.tolist() == [0, 1, 2, 3]


def test_empty_and_tiny_node_types():
    data = forum_graph()
    data["tags"].num_nodes = 0
    data["tags"].time = torch.empty(0, dtype=torch.long)
    data["site"].num_nodes = 1
    empty = torch.empty(2, 0, dtype=torch.long)
    data["tags", "f2p_tag", "posts"].edge_index = empty
    data["posts", "rev_f2p_tag", "tags"].edge_index = empty
    data["users", "f2p_site", "site"].edge_index = torch.tensor([[0, 1], [0, 0]])
    data["site", "rev_f2p_site", "users"].edge_index = torch.tensor([[0, 0], [0, 1]])
    sampler = TemporalNeighborSampler(data, [-1, -1, -1])
    out = sample(sampler, "site", [0], [3])

    assert sampled_pairs(out, "users") == [(0, 0), (0, 1)]
    assert sampled_pairs(out, "posts") == [(0, 0), (0, 1), (0, 3)]
    assert out.node["tags"].numel() == 0
    assert out.row[("tags", "f2p_tag", "posts")].numel() == 0


def test_isolated_seed_and_empty_batch():
    data = forum_graph()
    data["users"].num_nodes = 3  # User u2 has no posts.
    sampler = TemporalNeighborSampler(data, [2, 2])
    out = sample(sampler, "users", [2], [10])
    assert sampled_pairs(out, "users") == [(0, 2)]
    assert out.node["posts"].numel() == 0

    out = sample(sampler, "users", [], [])
    assert all(nodes.numel() == 0 for nodes in out.node.values())


def test_reproducible_with_seed():
    outputs = []
    for _ in range(2):
        sampler = TemporalNeighborSampler(forum_graph(), [2, 1], seed=7)
        outputs.append(sample(sampler, "users", [0] * 20, [6] * 20))
    assert torch.equal(outputs[0].node["posts"], outputs[1].node["posts"])


def test_sampler_state_leaves_out_features_and_scratch():
    import pickle

    data = forum_graph()
    data["posts"].x = torch.randn(4, 1000)
    sampler = TemporalNeighborSampler(data, [2])
    sample(sampler, "users", [0], [6])
    state = pickle.dumps(sampler)
    assert len(state) < 8000  # The features alone take 16 kB.
    assert pickle.loads(state)._scratch == {}


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_repr(strategy):
    sampler = TemporalNeighborSampler(forum_graph(), [2, 2], strategy=strategy)
    assert repr(sampler) == (
        f"TemporalNeighborSampler(num_hops=2, strategy='{strategy}', time_attr='time')"
    )
