"""Per-hop fan-outs (``num_neighbors``): validation, and budgets shared
across edge types (which edge types share, and how a budget is split)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor
from torch_geometric.typing import EdgeType, NodeType

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


# `shared_fanout="auto"` shares where at least this many edge types bring a node
# type many neighbours in one hop (a table that many event tables point to).
AUTO_SHARE_LINKS = 5


def check_shared_fanout(value: object) -> None:
    """Raises ``ValueError`` unless ``value`` is ``True``, ``False`` or ``"auto"``."""
    if not (isinstance(value, bool) or value == "auto"):
        raise ValueError(f"shared_fanout must be true, false or 'auto' (got {value!r})")


def sharing_groups(
    fanouts: dict[EdgeType, list[int]],
    many: set[EdgeType],
    min_links: int = 2,
) -> list[dict[NodeType, list[EdgeType]]]:
    r"""Per hop, the edge types that share one budget per destination node.

    Edge types of :obj:`many` (those that can bring a node many neighbours)
    with a positive fan-out share the hop's budget of their destination type
    when at least :obj:`min_links` of them sample into it. Edge types outside
    :obj:`many` (one neighbour at most), fan-outs of ``0`` and ``-1`` (all
    neighbours) never share.

    Args:
        fanouts (dict): Fan-outs per edge type and hop, as from
            :func:`resolve_fanouts`.
        many (set): The edge types whose neighbours may share a budget.
        min_links (int): The fewest edge types that share a budget.
            (default: :obj:`2`)

    Returns:
        One dictionary per hop, from destination node type to its sharing
        edge types (in the order of :obj:`fanouts`).
    """
    num_hops = len(next(iter(fanouts.values()), []))
    groups = []
    for hop in range(num_hops):
        sharing: dict[NodeType, list[EdgeType]] = {}
        for et, hops in fanouts.items():
            if et in many and hops[hop] > 0:
                sharing.setdefault(et[2], []).append(et)
        groups.append({dst: ets for dst, ets in sharing.items()
                       if len(ets) >= max(min_links, 2)})
    return groups


def water_fill(available: Tensor, budget: int) -> Tensor:
    r"""Splits a budget per row among columns, as evenly as the columns allow.

    Every row takes :math:`\min(a, L)` from each column of :obj:`available`,
    with the level :math:`L` as high as the budget allows, so a column that
    needs less than an even share leaves the rest to the others; what an
    integer level leaves over goes, one each, to the columns with the most
    available (among equals, the later ones). A row with
    :math:`\sum a \le` :obj:`budget` takes everything.

    Args:
        available (torch.Tensor): Non-negative counts, shape :obj:`[R, k]`.
        budget (int): The most a row takes in all, :obj:`>= 0`.

    Returns:
        The counts taken, shape :obj:`[R, k]`, each at most its available count.
    """
    num_rows, k = available.shape
    if num_rows == 0 or k == 0:
        return available.clone()
    ordered, order = available.sort(dim=1, stable=True)
    below = ordered.cumsum(1) - ordered  # what the smaller columns take in full
    remaining = torch.arange(k, 0, -1)  # columns from this one on
    level = torch.div(budget - below, remaining, rounding_mode="floor")
    short = ordered > level  # the column cannot be taken in full
    first = torch.where(short.any(1), short.int().argmax(1), k)
    at = first.clamp(max=k - 1).unsqueeze(1)
    row_level = level.gather(1, at)
    sharing = remaining.index_select(0, at.view(-1)).unsqueeze(1)
    left = budget - below.gather(1, at) - row_level * sharing
    position = torch.arange(k).unsqueeze(0)
    capped = row_level + (position >= k - left).long()
    taken = torch.where(position < first.unsqueeze(1), ordered, capped)
    return torch.empty_like(taken).scatter_(1, order, taken)


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
