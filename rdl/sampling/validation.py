"""Checks of the sampler's inputs, raising errors that name the value and the fix."""
from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.typing import EdgeType, NodeType


def check_node_time(time: object, node_type: NodeType, time_attr: str, num_nodes: int) -> Tensor:
    r"""Returns the node times of one type as a contiguous int64 tensor."""
    where = f"data[{node_type!r}].{time_attr}"
    if not isinstance(time, Tensor) or not _is_integer(time):
        kind = time.dtype if isinstance(time, Tensor) else type(time).__name__
        raise ValueError(
            f"{where} must be an integer tensor of seconds (got {kind}); convert "
            f"times to int64 seconds, or pass another time_attr"
        )
    if time.dim() != 1 or time.numel() != num_nodes:
        raise ValueError(
            f"{where} must hold one time per node, shape [{num_nodes}] (got "
            f"{list(time.shape)})"
        )
    return time.long().contiguous()


def check_edge_index(
    edge_index: object,
    edge_type: EdgeType,
    num_src: int,
    num_dst: int,
) -> Tensor:
    r"""Returns the edge index of one edge type as a contiguous int64 tensor."""
    where = f"data[{edge_type}].edge_index"
    if (
        not isinstance(edge_index, Tensor)
        or not _is_integer(edge_index)
        or edge_index.dim() != 2
        or edge_index.size(0) != 2
    ):
        shape = list(edge_index.shape) if isinstance(edge_index, Tensor) else edge_index
        raise ValueError(
            f"{where} must be an integer tensor of shape [2, num_edges] (got {shape})"
        )
    for row, size, name in ((0, num_src, "source"), (1, num_dst, "destination")):
        ids = edge_index[row]
        if ids.numel() > 0 and (int(ids.min()) < 0 or int(ids.max()) >= size):
            raise ValueError(
                f"{where} has {name} ids in [{int(ids.min())}, {int(ids.max())}], "
                f"outside the {size} nodes of {edge_type[2 * row]!r}; fix the graph "
                f"or its num_nodes"
            )
    return edge_index.long().contiguous()


def check_seeds(
    seed: dict[NodeType, Tensor],
    seed_time: dict[NodeType, Tensor] | None,
    num_nodes: dict[NodeType, int],
    node_time: dict[NodeType, Tensor],
    time_attr: str,
) -> tuple[dict[NodeType, Tensor], Tensor | None]:
    r"""Checks seed nodes and times.

    Returns:
        The seeds as int64 tensors, and the seed times concatenated in the order of
        :obj:`seed` (or :obj:`None`).
    """
    checked = {}
    for node_type, nodes in seed.items():
        if node_type not in num_nodes:
            raise ValueError(
                f"Seed node type {node_type!r} is not in the graph; use one of "
                f"{list(num_nodes)}"
            )
        if not _is_integer(nodes) or nodes.dim() != 1:
            raise ValueError(
                f"Seed nodes of type {node_type!r} must be a 1-D integer tensor "
                f"(got {nodes.dtype}, shape {list(nodes.shape)})"
            )
        size = num_nodes[node_type]
        if nodes.numel() > 0:
            low, high = (int(value) for value in torch.aminmax(nodes))
            if low < 0 or high >= size:
                raise ValueError(
                    f"Seed nodes of type {node_type!r} must lie in [0, {size}) (got "
                    f"ids in [{low}, {high}])"
                )
        checked[node_type] = nodes.long()
    if seed_time is None:
        return checked, None

    if not node_time:
        raise ValueError(
            f"Seed times were given but no node type has the time attribute "
            f"{time_attr!r}; pass the time_attr the graph uses, or no seed times"
        )
    times = []
    for node_type, nodes in checked.items():
        time = seed_time.get(node_type)
        if time is None or not _is_integer(time) or time.shape != nodes.shape:
            got = "none" if time is None else f"{time.dtype}, shape {list(time.shape)}"
            raise ValueError(
                f"Seed times of type {node_type!r} must be an integer tensor of "
                f"shape {list(nodes.shape)}, one time per seed (got {got})"
            )
        times.append(time.long())
    return checked, times[0] if len(times) == 1 else torch.cat(times)


def _is_integer(tensor: Tensor) -> bool:
    return not tensor.dtype.is_floating_point and not tensor.dtype.is_complex and (
        tensor.dtype != torch.bool
    )
