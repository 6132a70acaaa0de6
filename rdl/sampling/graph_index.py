"""Everything the sampler keeps of a graph: sizes, node times and neighbour indices."""
from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor
from torch_geometric.data import HeteroData
from torch_geometric.typing import EdgeType, NodeType

from rdl.sampling.csc import Adjacency, ParentIndex, build_adjacency
from rdl.sampling.time_code import TimeCode
from rdl.sampling.validation import check_edge_index, check_node_time

# Node ids times 2**32 (CSC keys) must fit in int64.
MAX_NUM_NODES = 2**31 - 1


@dataclass
class GraphIndex:
    r"""The sampler's view of a heterogeneous graph, without node features.

    Args:
        node_types (List[str]): The node types.
        edge_types (List[Tuple[str, str, str]]): The edge types.
        num_nodes (Dict[str, int]): Number of nodes per type.
        node_time (Dict[str, torch.Tensor]): int64 node times of the timed types.
        time_code (Dict[str, TimeCode]): Time codes of the timed types.
        adjacency (Dict[Tuple[str, str, str], Adjacency]): Neighbour index per edge
            type.
        reverse (Dict[Tuple[str, str, str], Tuple[str, str, str]]): For a
            :class:`ParentIndex` edge type :obj:`(P, r, T)`, the edge type
            :obj:`(T, r', P)` holding exactly its edges reversed, if any. A node
            of type :obj:`T` reached over such an edge from :obj:`p` has :obj:`p`
            as its only neighbour over :obj:`(P, r, T)`.
    """

    node_types: list[NodeType]
    edge_types: list[EdgeType]
    num_nodes: dict[NodeType, int]
    node_time: dict[NodeType, Tensor]
    time_code: dict[NodeType, TimeCode]
    adjacency: dict[EdgeType, Adjacency]
    reverse: dict[EdgeType, EdgeType]

    @classmethod
    def from_data(cls, data: HeteroData, time_attr: str) -> GraphIndex:
        r"""Validates :obj:`data` and builds its index.

        Args:
            data (HeteroData): The graph.
            time_attr (str): Name of the node time attribute.
        """
        node_types, edge_types = data.metadata()
        num_nodes, node_time = {}, {}
        for node_type in node_types:
            store = data[node_type]
            if store.num_nodes is None:
                raise ValueError(
                    f"Node type {node_type!r} has no num_nodes; set "
                    f"data[{node_type!r}].num_nodes"
                )
            if store.num_nodes > MAX_NUM_NODES:
                raise ValueError(
                    f"Node type {node_type!r} has {store.num_nodes} nodes; the "
                    f"sampler supports at most {MAX_NUM_NODES} nodes per type"
                )
            num_nodes[node_type] = store.num_nodes
            if time_attr in store:
                node_time[node_type] = check_node_time(
                    store[time_attr], node_type, time_attr, store.num_nodes
                )
        time_code = {nt: TimeCode(time) for nt, time in node_time.items()}

        edge_index, adjacency = {}, {}
        for edge_type in edge_types:
            src, _, dst = edge_type
            for node_type in (src, dst):
                if node_type not in num_nodes:
                    raise ValueError(
                        f"Edge type {edge_type} names the node type {node_type!r}, "
                        f"which has no nodes in the graph; set "
                        f"data[{node_type!r}].num_nodes"
                    )
            edge_index[edge_type] = check_edge_index(
                data[edge_type].edge_index, edge_type, num_nodes[src], num_nodes[dst]
            )
            adjacency[edge_type] = build_adjacency(
                edge_index[edge_type],
                num_nodes[src],
                num_nodes[dst],
                node_time.get(src),
                time_code.get(src),
            )
        reverse = _find_reverse_edge_types(edge_index, adjacency)
        return cls(node_types, edge_types, num_nodes, node_time, time_code, adjacency, reverse)


def _find_reverse_edge_types(
    edge_index: dict[EdgeType, Tensor],
    adjacency: dict[EdgeType, Adjacency],
) -> dict[EdgeType, EdgeType]:
    reverse = {}
    for edge_type, index in adjacency.items():
        if not isinstance(index, ParentIndex):
            continue
        parent_type, _, child_type = edge_type
        num_edges = edge_index[edge_type].size(1)
        for candidate, candidate_index in edge_index.items():
            if candidate[0] != child_type or candidate[2] != parent_type:
                continue
            child, parent = candidate_index
            if (
                child.numel() == num_edges
                and adjacency[candidate].unique_sources
                and bool((index.parent.index_select(0, child) == parent).all())
            ):
                reverse[edge_type] = candidate
                break
    return reverse
