"""Validation of per-hop fan-outs (``num_neighbors``)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from torch_geometric.typing import EdgeType

FanoutSpec = Sequence[int] | Mapping[EdgeType, Sequence[int]]


def resolve_fanouts(
    num_neighbors: FanoutSpec,
    edge_types: list[EdgeType],
) -> dict[EdgeType, list[int]]:
    r"""Expands :obj:`num_neighbors` to one list of per-hop fan-outs per edge type.

    Args:
        num_neighbors (List[int] or Dict[Tuple[str, str, str], List[int]]): The
            number of neighbours to sample per hop, either for every edge type or
            per edge type (every edge type of the graph must be named). :obj:`-1`
            takes all neighbours, :obj:`0` none.
        edge_types (List[Tuple[str, str, str]]): The edge types of the graph.

    Returns:
        A dictionary from every edge type to its list of fan-outs; all lists have the
        same length, the number of hops.
    """
    if isinstance(num_neighbors, Mapping):
        unknown = [key for key in num_neighbors if key not in edge_types]
        if unknown:
            raise ValueError(
                f"num_neighbors names edge types the graph does not have: "
                f"{unknown}; use edge types from {edge_types}"
            )
        missing = [edge_type for edge_type in edge_types if edge_type not in num_neighbors]
        if missing:
            raise ValueError(
                f"num_neighbors gives no fan-outs for edge types {missing}; "
                f"add them (use [0, ...] to never sample an edge type)"
            )
        fanouts = {et: _check_hops(num_neighbors[et], et) for et in edge_types}
    elif isinstance(num_neighbors, Sequence) and not isinstance(num_neighbors, str):
        hops = _check_hops(num_neighbors, None)
        fanouts = {edge_type: list(hops) for edge_type in edge_types}
    else:
        raise TypeError(
            f"num_neighbors must be a list of per-hop fan-outs or a dict from edge "
            f"type to such a list (got {type(num_neighbors).__name__})"
        )

    num_hops = {len(hops) for hops in fanouts.values()}
    if len(num_hops) > 1:
        raise ValueError(
            f"num_neighbors gives different numbers of hops per edge type "
            f"({sorted(num_hops)}); give every edge type the same number of hops"
        )
    return fanouts


def _check_hops(hops: Sequence[int], edge_type: EdgeType | None) -> list[int]:
    where = "" if edge_type is None else f" for edge type {edge_type}"
    if not isinstance(hops, Sequence) or isinstance(hops, str):
        raise TypeError(f"num_neighbors{where} must be a list of ints (got {hops!r})")
    for count in hops:
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(
                f"num_neighbors{where} must hold ints (got {count!r} in {list(hops)})"
            )
        if count < -1:
            raise ValueError(
                f"num_neighbors{where} holds the fan-out {count}; use a count >= 0 "
                f"or -1 to take all neighbours"
            )
    return list(hops)
