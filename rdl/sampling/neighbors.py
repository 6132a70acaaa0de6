"""Neighbour selection for one edge type and one hop, vectorised over the frontier.

Each function takes the frontier of destination nodes (one entry per (seed, node)
pair) and returns two aligned tensors: ``entry``, the frontier position of the
destination of each sampled edge, and ``neighbor``, its source node.
"""
from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from rdl.sampling.csc import ParentIndex, TimeSortedCSC

# Rows up to this degree are scanned (gather every slot's key, compare); longer rows
# are cut by a binary search over all keys (~0.4 us, about the cost of scanning 200
# contiguous slots).
MAX_SCAN_DEGREE = 256
# Uniform sampling of k among n > k neighbours draws random keys for all n slots when
# n <= DENSE_FACTOR * k (one topk), else draws k offsets and redraws duplicates (a
# loop, cheap only when duplicates are rare).
DENSE_FACTOR = 16

Strategy = Literal["uniform", "last"]


def select_from_csc(
    csc: TimeSortedCSC,
    node: Tensor,
    query: Tensor | None,
    count: int,
    strategy: Strategy,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    r"""Samples up to :obj:`count` allowed neighbours of every frontier node.

    Args:
        csc (TimeSortedCSC): The neighbour lists of the edge type.
        node (torch.Tensor): Frontier destination nodes, shape :obj:`[R]`.
        query (torch.Tensor, optional): Per frontier node the largest allowed key,
            :obj:`node * 2**32 + bound`; :obj:`None` allows every neighbour.
        count (int): The fan-out, :obj:`-1` for all allowed neighbours (must not be
            :obj:`0`).
        strategy (str): :obj:`"uniform"` samples without replacement among the
            allowed neighbours, :obj:`"last"` takes the most recent ones.
        generator (torch.Generator, optional): Random number generator.
            (default: :obj:`None`)

    Returns:
        :obj:`(entry, neighbor)`, both of shape :obj:`[num_sampled_edges]`.
    """
    bounds = csc.bounds.index_select(0, node)
    start, end = bounds[:, 0], bounds[:, 1]
    length = end - start
    scan_limit = count if 0 <= count <= MAX_SCAN_DEGREE else MAX_SCAN_DEGREE
    long_rows = (length > scan_limit).nonzero().view(-1)
    sampled = None
    if long_rows.numel() > 0:
        first, take, sampled = _cut_long_rows(
            csc, start, length, long_rows, query, count, strategy, generator
        )
        start = start.index_copy(0, long_rows, first)
        length = length.index_copy(0, long_rows, take)

    entry, slot = expand_ranges(start, length)
    if query is not None:
        # Scanned rows hold future neighbours too; ranges of long rows are allowed.
        keep = csc.key.index_select(0, slot) <= query.index_select(0, entry)
        keep = keep.nonzero().view(-1)
        entry, slot = entry.index_select(0, keep), slot.index_select(0, keep)
    if sampled is not None:
        entry, slot = torch.cat([entry, sampled[0]]), torch.cat([slot, sampled[1]])
    return entry, csc.src.index_select(0, slot)


def _cut_long_rows(
    csc: TimeSortedCSC,
    start: Tensor,
    length: Tensor,
    rows: Tensor,
    query: Tensor | None,
    count: int,
    strategy: Strategy,
    generator: torch.Generator | None,
) -> tuple[Tensor, Tensor, tuple[Tensor, Tensor] | None]:
    # Cuts the long rows at their seed time (binary search). Returns the range of
    # allowed slots to take from each, `(first, length)` (all of them, or the last
    # `count`), and for strategy "uniform" the `(entry, slot)` pairs sampled from
    # rows with more than `count` allowed slots, whose ranges are then empty.
    first = start.index_select(0, rows)
    if query is None:
        allowed = length.index_select(0, rows)
    else:
        allowed = torch.searchsorted(csc.key, query.index_select(0, rows), right=True)
        allowed -= first
    if count < 0:
        return first, allowed, None
    if strategy == "last":
        return first + (allowed - count).clamp_(min=0), allowed.clamp(max=count), None
    over = allowed > count
    picked = over.nonzero().view(-1)
    if picked.numel() == 0:
        return first, allowed, None
    offset = sample_without_replacement(allowed.index_select(0, picked), count, generator)
    slot = (first.index_select(0, picked).unsqueeze(1) + offset).view(-1)
    entry = rows.index_select(0, picked).repeat_interleave(count)
    return first, allowed.masked_fill(over, 0), (entry, slot)


def allowed_ranges(
    csc: TimeSortedCSC,
    node: Tensor,
    query: Tensor | None,
) -> tuple[Tensor, Tensor]:
    r"""The allowed neighbours of every frontier node: since rows are sorted by
    time, they are the first slots of the row, up to the seed time.

    Args:
        csc (TimeSortedCSC): The neighbour lists of the edge type.
        node (torch.Tensor): Frontier destination nodes, shape :obj:`[R]`.
        query (torch.Tensor, optional): Per frontier node the largest allowed key
            (see :func:`select_from_csc`); :obj:`None` allows every neighbour.

    Returns:
        :obj:`(start, allowed)`: the first slot of each row and its number of
        allowed slots, both of shape :obj:`[R]`.
    """
    bounds = csc.bounds.index_select(0, node)
    start = bounds[:, 0]
    if query is None:
        return start, bounds[:, 1] - start
    return start, torch.searchsorted(csc.key, query, right=True) - start


def select_counts(
    csc: TimeSortedCSC,
    start: Tensor,
    allowed: Tensor,
    take: Tensor,
    strategy: Strategy,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    r"""Samples :obj:`take[i]` of the :obj:`allowed[i]` allowed neighbours of
    every frontier node, as from :func:`allowed_ranges`.

    Args:
        csc (TimeSortedCSC): The neighbour lists of the edge type.
        start (torch.Tensor): First slot of each row, shape :obj:`[R]`.
        allowed (torch.Tensor): Allowed slots of each row, shape :obj:`[R]`.
        take (torch.Tensor): How many to sample from each row, at most
            :obj:`allowed`, shape :obj:`[R]`.
        strategy (str): :obj:`"uniform"` samples without replacement,
            :obj:`"last"` takes the most recent ones.
        generator (torch.Generator, optional): Random number generator.

    Returns:
        :obj:`(entry, neighbor)`, both of shape :obj:`[take.sum()]`.
    """
    if strategy == "last":
        entry, slot = expand_ranges(start + allowed - take, take)
        return entry, csc.src.index_select(0, slot)
    whole = take == allowed
    entry, slot = expand_ranges(start, take.masked_fill(~whole, 0))
    part = (~whole).nonzero().view(-1)
    if part.numel() > 0:
        row, offset = sample_subsets(allowed.index_select(0, part), take.index_select(0, part),
                                     generator)
        entry = torch.cat([entry, part.index_select(0, row)])
        slot = torch.cat([slot, start.index_select(0, part).index_select(0, row) + offset])
    return entry, csc.src.index_select(0, slot)


def select_parent(
    index: ParentIndex,
    node: Tensor,
    seed_time: Tensor | None,
    parent_time: Tensor | None,
) -> tuple[Tensor | None, Tensor]:
    r"""Takes the single neighbour of every frontier node, if it exists and is not
    newer than the frontier node's seed.

    Args:
        index (ParentIndex): The edge type's parent of every node.
        node (torch.Tensor): Frontier destination nodes, shape :obj:`[R]`.
        seed_time (torch.Tensor, optional): The seed time of every frontier node;
            :obj:`None` disables the time filter.
        parent_time (torch.Tensor, optional): Times of all source nodes;
            :obj:`None` when the source type is untimed.

    Returns:
        :obj:`(entry, neighbor)`, both of shape :obj:`[num_sampled_edges]`;
        :obj:`entry` is :obj:`None` when every frontier node has its neighbour.
    """
    parent = index.parent.index_select(0, node)
    timed = seed_time is not None and parent_time is not None and parent_time.numel() > 0
    if index.complete and not timed:
        return None, parent
    keep = parent >= 0
    if timed:
        keep &= parent_time.index_select(0, parent.clamp(min=0)) <= seed_time
    if bool(keep.all()):
        return None, parent
    entry = keep.nonzero().view(-1)
    return entry, parent.index_select(0, entry)


def expand_ranges(start: Tensor, length: Tensor) -> tuple[Tensor, Tensor]:
    r"""Lists every slot of the ranges :obj:`[start[i], start[i] + length[i])`.

    Returns:
        :obj:`(entry, slot)`: the range index and the slot of every listed slot.
    """
    total = int(length.sum())
    entry = torch.repeat_interleave(length, output_size=total)
    shift = start - (length.cumsum(0) - length)
    slot = torch.arange(total).add_(shift.index_select(0, entry))
    return entry, slot


def sample_without_replacement(
    population: Tensor,
    count: int,
    generator: torch.Generator | None = None,
) -> Tensor:
    r"""Draws :obj:`count` distinct offsets in :obj:`[0, population[i])` for every
    row, uniformly over all subsets of that size.

    Args:
        population (torch.Tensor): Row sizes, each greater than :obj:`count`,
            shape :obj:`[R]`.
        count (int): Number of offsets per row.
        generator (torch.Generator, optional): Random number generator.

    Returns:
        Offsets of shape :obj:`[R, count]`.
    """
    width = int(population.max())
    if width <= DENSE_FACTOR * count:
        return _by_random_keys(population, width, count, generator)
    dense = population <= DENSE_FACTOR * count
    out = torch.empty(population.numel(), count, dtype=torch.long)
    rows = dense.nonzero().view(-1)
    if rows.numel() > 0:
        out[rows] = _by_random_keys(
            population.index_select(0, rows), DENSE_FACTOR * count, count, generator
        )
    rows = (~dense).nonzero().view(-1)
    out[rows] = _by_redrawing(population.index_select(0, rows), count, generator)
    return out


def sample_subsets(
    population: Tensor,
    take: Tensor,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    r"""Draws :obj:`take[i]` distinct offsets in :obj:`[0, population[i])` for
    every row, uniformly over all subsets of that size.

    Args:
        population (torch.Tensor): Row sizes, each greater than its
            :obj:`take`, shape :obj:`[R]`.
        take (torch.Tensor): Offsets per row, shape :obj:`[R]`.
        generator (torch.Generator, optional): Random number generator.

    Returns:
        :obj:`(row, offset)`, both of shape :obj:`[take.sum()]`.
    """
    count = int(take.max())
    # The first take[i] columns of a uniformly ordered subset of size `count` (or
    # of the whole row, where it is smaller) are a uniform subset of size take[i].
    offsets = torch.empty(population.numel(), count, dtype=torch.long)
    dense = population <= DENSE_FACTOR * count
    rows = dense.nonzero().view(-1)
    if rows.numel() > 0:
        dense_population = population.index_select(0, rows)
        width = int(dense_population.max())
        first = min(count, width)  # a narrower row takes fewer than `width` anyway
        offsets[rows, :first] = _by_random_keys(dense_population, width, first, generator,
                                                ordered=True)
    rows = (~dense).nonzero().view(-1)
    if rows.numel() > 0:
        drawn = _by_redrawing(population.index_select(0, rows), count, generator)
        shuffle = torch.rand(drawn.shape, generator=generator).argsort(dim=1)
        offsets[rows] = drawn.gather(1, shuffle)
    row, column = (torch.arange(count) < take.unsqueeze(1)).nonzero().unbind(1)
    return row, offsets[row, column]


def _by_random_keys(population: Tensor, width: int, count: int, generator,
                    ordered: bool = False) -> Tensor:
    # The `count` slots with the smallest i.i.d. keys form a uniform subset;
    # `ordered` lists them by key, so that any first few are a uniform subset too.
    keys = torch.rand(population.numel(), width, generator=generator, dtype=torch.float64)
    keys.masked_fill_(torch.arange(width) >= population.unsqueeze(1), 2.0)
    return keys.topk(count, dim=1, largest=False, sorted=ordered).indices


def _by_redrawing(population: Tensor, count: int, generator) -> Tensor:
    # Keep one copy of every distinct draw and redraw the others, until all
    # differ. Every step treats all offsets alike, so all subsets are equally likely.
    bound = population.unsqueeze(1).expand(-1, count)
    draws = torch.randint(2**62, bound.shape, generator=generator).remainder_(bound)
    while True:
        draws = draws.sort(dim=1).values
        repeated = draws[:, 1:] == draws[:, :-1]
        num_repeated = int(repeated.sum())
        if num_repeated == 0:
            return draws
        redraw = torch.randint(2**62, (num_repeated,), generator=generator)
        draws[:, 1:][repeated] = redraw.remainder_(bound[:, 1:][repeated])
