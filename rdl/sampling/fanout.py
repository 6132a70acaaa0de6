"""Per-hop fan-outs (``num_neighbors``): validation, and budgets shared
across edge types."""
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


def share_fanouts(
    fanouts: dict[EdgeType, list[int]],
    many: set[EdgeType],
) -> dict[EdgeType, list[int]]:
    r"""Makes each hop's fan-out a budget per node rather than per edge type.

    For every destination node type and hop, the fan-out is split evenly
    (rounded down, at least one each) among the edge types of :obj:`many`
    (those that can bring a node many neighbours) that sample into that type
    in that hop. An entity with ten event tables then gets about as many
    neighbours as one with a single table, instead of ten times as many. Edge
    types outside :obj:`many` (one parent at most), fan-outs of ``0`` and ``-1``
    (all neighbours) are kept.

    Args:
        fanouts (dict): Fan-outs per edge type and hop, as from
            :func:`resolve_fanouts`.
        many (set): The edge types whose neighbours share the budget.
    """
    out = {et: list(hops) for et, hops in fanouts.items()}
    num_hops = len(next(iter(fanouts.values()), []))
    for hop in range(num_hops):
        sharing: dict[str, list[EdgeType]] = {}
        for et, hops in fanouts.items():
            if et in many and hops[hop] > 0:
                sharing.setdefault(et[2], []).append(et)
        for edge_types in sharing.values():
            for et in edge_types:
                out[et][hop] = max(1, fanouts[et][hop] // len(edge_types))
    return out


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
