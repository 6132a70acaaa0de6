import pytest
import torch
from torch_geometric.data import Data, HeteroData
from torch_geometric.sampler import EdgeSamplerInput, NodeSamplerInput

from rdl.sampling import TemporalNeighborSampler

AUTHOR = ("posts", "f2p_author", "users")
REV_AUTHOR = ("users", "rev_f2p_author", "posts")


def small_graph() -> HeteroData:
    data = HeteroData()
    data["users"].num_nodes = 2
    data["posts"].num_nodes = 3
    data["posts"].time = torch.tensor([1, 2, 3])
    data[AUTHOR].edge_index = torch.tensor([[0, 1, 2], [0, 0, 1]])
    data[REV_AUTHOR].edge_index = torch.tensor([[0, 0, 1], [0, 1, 2]])
    return data


def node_input(node_type="users", nodes=(0,), times=None) -> NodeSamplerInput:
    return NodeSamplerInput(
        input_id=None,
        node=torch.tensor(nodes, dtype=torch.long),
        time=times,
        input_type=node_type,
    )


@pytest.mark.parametrize(
    "num_neighbors, error, match",
    [
        ({AUTHOR: [1], ("posts", "likes", "users"): [1]}, ValueError,
         r"num_neighbors names edge types the graph does not have: \[\('posts', 'likes'"),
        ({AUTHOR: [1]}, ValueError,
         r"num_neighbors gives no fan-outs for edge types \[\('users', 'rev_f2p_author'.*use \[0, \.\.\.\]"),
        ([2, -2], ValueError, r"holds the fan-out -2; use a count >= 0 or -1"),
        ({AUTHOR: [1, 1], REV_AUTHOR: [1]}, ValueError, r"different numbers of hops per edge type \(\[1, 2\]\)"),
        ([1.5], TypeError, r"num_neighbors must hold ints \(got 1.5 in \[1.5\]\)"),
        ({AUTHOR: [True], REV_AUTHOR: [1]}, TypeError, r"for edge type \('posts', 'f2p_author', 'users'\) must hold ints"),
        (3, TypeError, r"num_neighbors must be a list of per-hop fan-outs or a dict .* \(got int\)"),
    ],
)
def test_bad_num_neighbors(num_neighbors, error, match):
    with pytest.raises(error, match=match):
        TemporalNeighborSampler(small_graph(), num_neighbors)


def test_bad_data_and_strategy():
    with pytest.raises(TypeError, match="data must be a HeteroData \\(got Data\\)"):
        TemporalNeighborSampler(Data(num_nodes=3), [1])
    with pytest.raises(ValueError, match="strategy must be one of \\('uniform', 'last'\\) \\(got 'recent'\\)"):
        TemporalNeighborSampler(small_graph(), [1], strategy="recent")


def test_bad_node_time():
    data = small_graph()
    data["posts"].time = torch.tensor([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"data\['posts'\]\.time must be an integer tensor of seconds \(got torch.float32\); convert"):
        TemporalNeighborSampler(data, [1])
    data["posts"].time = torch.tensor([[1, 2, 3]])
    with pytest.raises(ValueError, match=r"must hold one time per node, shape \[3\] \(got \[1, 3\]\)"):
        TemporalNeighborSampler(data, [1])


def test_bad_edge_index():
    data = small_graph()
    data[AUTHOR].edge_index = torch.tensor([[0, 1, 5], [0, 0, 1]])
    with pytest.raises(ValueError, match=r"has source ids in \[0, 5\], outside the 3 nodes of 'posts'"):
        TemporalNeighborSampler(data, [1])
    data[AUTHOR].edge_index = torch.tensor([0, 1, 2])
    with pytest.raises(ValueError, match=r"must be an integer tensor of shape \[2, num_edges\] \(got \[3\]\)"):
        TemporalNeighborSampler(data, [1])


def test_bad_node_types():
    data = small_graph()
    data["posts", "tagged", "tags"].edge_index = torch.tensor([[0], [0]])
    with pytest.raises(ValueError, match=r"names the node type 'tags', which has no nodes in the graph; set data\['tags'\]\.num_nodes"):
        TemporalNeighborSampler(data, [1])


def test_bad_seeds():
    sampler = TemporalNeighborSampler(small_graph(), [1])
    with pytest.raises(ValueError, match=r"needs the seed node type; pass input_nodes=\(node_type, index\)"):
        sampler.sample_from_nodes(node_input(node_type=None))
    with pytest.raises(ValueError, match=r"Seed node type 'items' is not in the graph"):
        sampler.sample_from_nodes(node_input(node_type="items"))
    with pytest.raises(ValueError, match=r"Seed nodes of type 'users' must lie in \[0, 2\) \(got ids in \[0, 7\]\)"):
        sampler.sample_from_nodes(node_input(nodes=(0, 7)))
    with pytest.raises(ValueError, match=r"Seed times of type 'users' must be an integer tensor of shape \[2\]"):
        sampler.sample_from_nodes(node_input(nodes=(0, 1), times=torch.tensor([5])))
    with pytest.raises(ValueError, match=r"\(got torch.float32, shape \[1\]\)"):
        sampler.sample_from_nodes(node_input(times=torch.tensor([5.0])))


def test_seed_times_need_a_timed_node_type():
    sampler = TemporalNeighborSampler(small_graph(), [1], time_attr="created_at")
    with pytest.raises(ValueError, match="no node type has the time attribute 'created_at'; pass the time_attr"):
        sampler.sample_from_nodes(node_input(times=torch.tensor([5])))
    sampler.sample_from_nodes(node_input())  # Without seed times: fine.


def test_untimed_seed_type_with_seed_times():
    # Entity tables often have no time column (e.g. customers); their seeds still
    # filter timed neighbours.
    sampler = TemporalNeighborSampler(small_graph(), [-1])
    out = sampler.sample_from_nodes(node_input(nodes=(0,), times=torch.tensor([1])))
    assert out.node["posts"].tolist() == [0]


def test_bad_seed_edges():
    sampler = TemporalNeighborSampler(small_graph(), [1])
    edges = dict(input_id=None, row=torch.tensor([0]), col=torch.tensor([0]))
    with pytest.raises(ValueError, match=r"needs the seed edge type; pass edge_label_index=\(edge_type, index\)"):
        sampler.sample_from_edges(EdgeSamplerInput(**edges))
    with pytest.raises(ValueError, match=r"names the node type 'items', which the graph does not have"):
        sampler.sample_from_edges(EdgeSamplerInput(**edges, input_type=("users", "buys", "items")))
