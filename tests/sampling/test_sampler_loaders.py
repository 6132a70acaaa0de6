"""TemporalNeighborSampler driven by PyG's stock NodeLoader and LinkLoader."""
import pytest
import torch
from torch_geometric.data import HeteroData
from torch_geometric.loader import LinkLoader, NodeLoader
from torch_geometric.sampler import NegativeSampling

from rdl.sampling import TemporalNeighborSampler

NUM_USERS, NUM_ITEMS, NUM_ORDERS = 12, 8, 60
LIKES = ("users", "likes", "items")  # A link task; not an edge type of the graph.


def shop_graph() -> HeteroData:
    r"""Users and items (untimed) and timed orders naming a user and an item, with
    features on every node type (a TensorFrame on orders, when available)."""
    generator = torch.Generator().manual_seed(0)
    data = HeteroData()
    data["users"].num_nodes = NUM_USERS
    data["users"].x = torch.randn(NUM_USERS, 3, generator=generator)
    data["items"].num_nodes = NUM_ITEMS
    data["items"].x = torch.arange(NUM_ITEMS, dtype=torch.float).view(-1, 1)
    data["orders"].num_nodes = NUM_ORDERS
    data["orders"].time = torch.randint(100, (NUM_ORDERS,), generator=generator)
    data["orders"].x = data["orders"].time.view(-1, 1).float()
    try:
        from torch_frame import TensorFrame, stype

        data["orders"].tf = TensorFrame(
            {stype.numerical: data["orders"].x.clone()}, {stype.numerical: ["time"]}
        )
    except ImportError:
        pass
    order = torch.arange(NUM_ORDERS)
    for col, table, size in (("user", "users", NUM_USERS), ("item", "items", NUM_ITEMS)):
        parent = torch.randint(size, (NUM_ORDERS,), generator=generator)
        data["orders", f"f2p_{col}", table].edge_index = torch.stack([order, parent])
        data[table, f"rev_f2p_{col}", "orders"].edge_index = torch.stack([parent, order])
    return data


def assert_no_future_nodes(batch: HeteroData, seed_time: torch.Tensor) -> None:
    # Orders (the only timed type) are never newer than their seed.
    orders = batch["orders"]
    assert torch.all(orders.x.view(-1) <= seed_time[orders.batch])
    assert torch.equal(orders.time, orders.x.view(-1).long())


def mark(batch: HeteroData) -> HeteroData:
    batch.marked = True
    return batch


@pytest.mark.parametrize("num_workers", [0, 2])
def test_node_loader(num_workers):
    data = shop_graph()
    sampler = TemporalNeighborSampler(data, [4, -1], seed=0)
    seed_time = torch.arange(NUM_USERS) * 8
    loader = NodeLoader(
        data,
        node_sampler=sampler,
        input_nodes=("users", torch.arange(NUM_USERS)),
        input_time=seed_time,
        batch_size=5,
        num_workers=num_workers,
        transform=mark,
    )
    seen = []
    for batch in loader:
        assert isinstance(batch, HeteroData) and batch.marked
        users = batch["users"]
        seen.append(users.input_id)
        assert users.batch_size == users.input_id.numel()
        assert torch.equal(users.n_id[: users.batch_size], users.input_id)
        assert torch.equal(users.x, data["users"].x[users.n_id])
        assert torch.equal(batch["items"].x.view(-1), batch["items"].n_id.float())
        if "tf" in data["orders"]:
            assert batch["orders"].tf.num_rows == batch["orders"].num_nodes
        assert_no_future_nodes(batch, users.seed_time)
        for edge_type in batch.edge_types:
            src, _, dst = edge_type
            row, col = batch[edge_type].edge_index
            assert torch.equal(batch[src].batch[row], batch[dst].batch[col])
        assert batch["users", "rev_f2p_user", "orders"].num_edges > 0
        assert batch["orders"].num_sampled_nodes == [0, batch["orders"].num_nodes, 0]
    assert torch.equal(torch.cat(seen).sort().values, torch.arange(NUM_USERS))


@pytest.mark.parametrize("neg_sampling", [None, "binary", "triplet"])
def test_link_loader(neg_sampling):
    data = shop_graph()
    sampler = TemporalNeighborSampler(data, [3, 2], strategy="last")
    links = torch.stack([torch.arange(10) % NUM_USERS, torch.arange(10) % NUM_ITEMS])
    link_time = torch.arange(10) * 10
    loader = LinkLoader(
        data,
        link_sampler=sampler,
        edge_label_index=(LIKES, links),
        edge_label_time=link_time,
        neg_sampling=NegativeSampling(neg_sampling) if neg_sampling else None,
        batch_size=4,
        num_workers=1 if neg_sampling == "binary" else 0,
    )
    for batch in loader:
        num_pos = batch[LIKES].input_id.numel()
        pos_time = link_time[batch[LIKES].input_id]
        if neg_sampling == "triplet":
            users, items = batch["users"], batch["items"]
            assert torch.equal(users.n_id[users.src_index], links[0, batch[LIKES].input_id])
            assert torch.equal(items.n_id[items.dst_pos_index], links[1, batch[LIKES].input_id])
            assert items.dst_neg_index.shape == (num_pos,)
            assert torch.equal(users.seed_time, pos_time)
        else:
            label_index = batch[LIKES].edge_label_index
            expected_labels = 2 * num_pos if neg_sampling else num_pos
            assert label_index.shape == (2, expected_labels)
            assert torch.equal(batch["users"].n_id[label_index[0, :num_pos]], links[0, batch[LIKES].input_id])
            assert torch.equal(batch[LIKES].edge_label_time[:num_pos], pos_time)
            if neg_sampling:
                assert batch[LIKES].edge_label.tolist() == [1.0] * num_pos + [0.0] * num_pos
        assert_no_future_nodes(batch, pos_time)
