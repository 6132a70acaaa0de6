"""The hops of disjoint temporal neighbour sampling, from seeds outwards."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple

import torch
from torch import Tensor
from torch_geometric.typing import EdgeType, NodeType

from rdl.sampling.csc import ParentIndex
from rdl.sampling.graph_index import GraphIndex
from rdl.sampling.fanout import water_fill
from rdl.sampling.neighbors import (
    Strategy,
    allowed_ranges,
    select_counts,
    select_from_csc,
    select_parent,
)
from rdl.sampling.relabel import SampledNodes, cat_or_empty
from rdl.sampling.time_code import CODE_BITS


@dataclass
class Expansion:
    r"""The sampled edges of a mini-batch, as local ids, and per-hop counts.

    Args:
        row (Dict[Tuple[str, str, str], torch.Tensor]): Local source ids per edge type.
        col (Dict[Tuple[str, str, str], torch.Tensor]): Local destination ids.
        num_sampled_edges (Dict[Tuple[str, str, str], List[int]]): Edges per hop.
        num_sampled_nodes (Dict[str, List[int]]): Nodes per hop, seeds first.
    """

    row: dict[EdgeType, Tensor] = field(default_factory=dict)
    col: dict[EdgeType, Tensor] = field(default_factory=dict)
    num_sampled_edges: dict[EdgeType, list[int]] = field(default_factory=dict)
    num_sampled_nodes: dict[NodeType, list[int]] = field(default_factory=dict)


class _Edges(NamedTuple):
    # Edges sampled over one edge type in one hop, before relabelling.
    edge_type: EdgeType
    neighbor: Tensor  # Global id of the source node.
    seed: Tensor  # Its seed index.
    dst_local: Tensor  # Local id of the destination node.
    dst_node: Tensor | None  # Global id of the destination, kept if timed.


def expand(
    index: GraphIndex,
    fanouts: dict[EdgeType, list[int]],
    strategy: Strategy,
    sampled: dict[NodeType, SampledNodes],
    seed_time: Tensor | None,
    generator: torch.Generator | None = None,
    shared: list[dict[NodeType, list[EdgeType]]] | None = None,
) -> Expansion:
    r"""Samples hop after hop from the seeds already in :obj:`sampled`.

    Args:
        index (GraphIndex): The graph.
        fanouts (Dict[Tuple[str, str, str], List[int]]): Fan-out per edge type and hop.
        strategy (str): :obj:`"uniform"` or :obj:`"last"`.
        sampled (Dict[str, SampledNodes]): The nodes of the batch per type, holding
            the seeds; sampled nodes are appended.
        seed_time (torch.Tensor, optional): Time of every seed; :obj:`None`
            disables the time filter.
        generator (torch.Generator, optional): Random number generator.
        shared (List[Dict[str, List[Tuple[str, str, str]]]], optional): Per hop
            and destination type, edge types that share one budget per node, the
            largest of their fan-outs, split by :func:`~rdl.sampling.fanout.water_fill`
            (see :func:`~rdl.sampling.fanout.sharing_groups`).

    Returns:
        The sampled edges (:class:`Expansion`).
    """
    frontier = {nt: nodes.take_frontier() for nt, nodes in sampled.items()}
    out = Expansion(
        num_sampled_edges={et: [] for et in index.edge_types},
        num_sampled_nodes={nt: [front[0].numel()] for nt, front in frontier.items()},
    )
    row, col = defaultdict(list), defaultdict(list)
    bounds: dict[NodeType, Tensor] = {}  # Seed time bound per timed node type.
    # Per node type, the edges over which all nodes added in the last hop came.
    arrival: dict[NodeType, _Edges] = {}
    num_hops = len(next(iter(fanouts.values()), []))

    for hop in range(num_hops):
        found = defaultdict(list)  # Source node type -> [_Edges].
        split = {}  # Edge type -> (start, allowed, take) of its rows.
        for dst, edge_types in (shared[hop] if shared else {}).items():
            node, seed, _ = frontier[dst]
            if node.numel() > 0:
                split.update(_split_budget(index, edge_types, fanouts, hop, node, seed,
                                           seed_time, bounds))
        for edge_type in index.edge_types:
            src, _, dst = edge_type
            node, seed, first_local = frontier[dst]
            count = fanouts[edge_type][hop]
            num_edges = out.num_sampled_edges[edge_type]
            if count == 0 or node.numel() == 0:
                num_edges.append(0)
                continue
            came = arrival.get(dst)
            if came is not None and came.edge_type == index.reverse.get(edge_type):
                src_local, dst_local = _backtrack(index, src, came, seed, first_local, seed_time)
                row[edge_type].append(src_local)
                col[edge_type].append(dst_local)
                num_edges.append(src_local.numel())
                continue
            if edge_type in split:
                entry, neighbor = select_counts(index.adjacency[edge_type], *split[edge_type],
                                                strategy, generator)
            else:
                entry, neighbor = _select(index, edge_type, node, seed, count, strategy,
                                          seed_time, bounds, generator)
            num_edges.append(neighbor.numel())
            keep_node = seed_time is not None and dst in index.node_time
            if entry is None:  # Every frontier node has one neighbour.
                dst_local = _arange(first_local, node.numel())
                edges = _Edges(edge_type, neighbor, seed, dst_local, node if keep_node else None)
            else:
                edges = _Edges(
                    edge_type,
                    neighbor,
                    seed.index_select(0, entry),
                    entry + first_local if first_local > 0 else entry,
                    node.index_select(0, entry) if keep_node else None,
                )
            found[src].append(edges)

        arrival = {}
        for src, parts in found.items():
            distinct = len(parts) == 1 and index.adjacency[parts[0].edge_type].unique_sources
            if distinct and sampled[src].num_nodes == 0:
                arrival[src] = parts[0]
            local = sampled[src].add(
                cat_or_empty([part.neighbor for part in parts]),
                cat_or_empty([part.seed for part in parts]),
                distinct=distinct,
                last=hop == num_hops - 1,
            )
            if len(parts) > 1:
                local_parts = local.split([part.neighbor.numel() for part in parts])
            else:
                local_parts = (local,)
            for part, src_local in zip(parts, local_parts):
                row[part.edge_type].append(src_local)
                col[part.edge_type].append(part.dst_local)
        frontier = {nt: nodes.take_frontier() for nt, nodes in sampled.items()}
        for node_type, front in frontier.items():
            out.num_sampled_nodes[node_type].append(front[0].numel())

    out.row = {et: cat_or_empty(row[et]) for et in index.edge_types}
    out.col = {et: cat_or_empty(col[et]) for et in index.edge_types}
    return out


def _select(
    index: GraphIndex,
    edge_type: EdgeType,
    node: Tensor,
    seed: Tensor,
    count: int,
    strategy: Strategy,
    seed_time: Tensor | None,
    bounds: dict[NodeType, Tensor],
    generator: torch.Generator | None,
) -> tuple[Tensor | None, Tensor]:
    src = edge_type[0]
    adjacency = index.adjacency[edge_type]
    if isinstance(adjacency, ParentIndex):
        entry_time = None
        if seed_time is not None and src in index.node_time:
            entry_time = seed_time.index_select(0, seed)
        return select_parent(adjacency, node, entry_time, index.node_time.get(src))

    query = _query(index, edge_type, node, seed, seed_time, bounds)
    return select_from_csc(adjacency, node, query, count, strategy, generator)


def _query(
    index: GraphIndex,
    edge_type: EdgeType,
    node: Tensor,
    seed: Tensor,
    seed_time: Tensor | None,
    bounds: dict[NodeType, Tensor],
) -> Tensor | None:
    # The largest allowed key of every frontier row (None: no time filter).
    src = edge_type[0]
    if seed_time is None or index.adjacency[edge_type].key is None:
        return None
    if src not in bounds:
        bounds[src] = index.time_code[src].bound(seed_time)
    return torch.add(bounds[src].index_select(0, seed), node, alpha=2**CODE_BITS)


def _split_budget(
    index: GraphIndex,
    edge_types: list[EdgeType],
    fanouts: dict[EdgeType, list[int]],
    hop: int,
    node: Tensor,
    seed: Tensor,
    seed_time: Tensor | None,
    bounds: dict[NodeType, Tensor],
) -> dict[EdgeType, tuple[Tensor, Tensor, Tensor]]:
    # Each frontier node's budget (the largest fan-out of the group), water-filled
    # over what each edge type allows it at its seed time, capped by its own fan-out.
    ranges = [allowed_ranges(index.adjacency[et], node,
                             _query(index, et, node, seed, seed_time, bounds))
              for et in edge_types]
    caps = torch.tensor([fanouts[et][hop] for et in edge_types])
    available = torch.stack([allowed for _, allowed in ranges], dim=1).minimum(caps)
    take = water_fill(available, int(caps.max()))
    return {et: (start, allowed, take[:, i])
            for i, (et, (start, allowed)) in enumerate(zip(edge_types, ranges))}


def _backtrack(
    index: GraphIndex,
    parent_type: NodeType,
    came: _Edges,
    seed: Tensor,
    first_local: int,
    seed_time: Tensor | None,
) -> tuple[Tensor, Tensor]:
    # Frontier nodes reached over the reverse of a parent edge type: their parent
    # is the node they came from, already in the batch. Returns (row, col).
    src_local = came.dst_local
    dst_local = _arange(first_local, src_local.numel())
    if seed_time is not None and came.dst_node is not None:  # A seed may be newer.
        parent_time = index.node_time[parent_type].index_select(0, came.dst_node)
        keep = (parent_time <= seed_time.index_select(0, seed)).nonzero().view(-1)
        src_local, dst_local = src_local.index_select(0, keep), dst_local.index_select(0, keep)
    return src_local, dst_local


def _arange(start: int, length: int) -> Tensor:
    return torch.arange(start, start + length)
