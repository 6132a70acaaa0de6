"""Local node ids of disjoint mini-batches.

In a disjoint mini-batch a node is a pair (seed index, global node id): each seed owns
its own copy of every node it reaches. :class:`SampledNodes` gives every pair a local
id (its position in the node list of its type) without sorting: a global id is mapped
to a per-batch slot through a scratch array indexed by node id, and the pair
``slot * num_seeds + seed`` to its local id through a second scratch array. Both
arrays live in a :class:`NodeScratch` that is reused by every batch and cleaned by
resetting only the entries a batch wrote. Both are filled by ``scatter_reduce``
with ``amin``, so that values written earlier (smaller) win over later ones and the
first occurrence of a new pair wins over its repeats.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

# Largest pair scratch array (int64 entries); above it a batch sorts instead.
MAX_PAIR_SCRATCH = 2**24
# Value of an unused scratch entry, above every slot, local id and marker.
UNUSED = 2**62
# Pairs not in the batch yet are marked with MARKER + their position, which is
# above every local id.
MARKER = 2**40
_EMPTY = torch.empty(0, dtype=torch.long)  # Read only.


class NodeScratch:
    r"""Scratch memory of one node type, reused by all batches of one process. Every
    entry is :obj:`UNUSED` between batches.

    Args:
        num_nodes (int): Number of nodes of the type.
    """

    def __init__(self, num_nodes: int):
        self.node_slot = torch.full((num_nodes,), UNUSED, dtype=torch.long)
        self.pair_local = torch.full((0,), UNUSED, dtype=torch.long)

    def reserve_pairs(self, size: int) -> None:
        r"""Grows the pair array to at least :obj:`size` entries, keeping its content."""
        if size > self.pair_local.numel():
            size = min(max(size, 2 * self.pair_local.numel()), MAX_PAIR_SCRATCH)
            grown = torch.full((size,), UNUSED, dtype=torch.long)
            grown[: self.pair_local.numel()] = self.pair_local
            self.pair_local = grown


class SampledNodes:
    r"""The nodes of one type in one disjoint mini-batch, in order of arrival, each
    (seed, node) pair once. Call :meth:`release` when the batch is done.

    Args:
        scratch (Callable[[], NodeScratch]): Returns the scratch memory of the
            node type; called only when the batch needs it.
        num_seeds (int): Number of seeds in the batch.
    """

    def __init__(self, scratch: Callable[[], NodeScratch], num_seeds: int):
        self._get_scratch = scratch
        self.num_seeds = max(num_seeds, 1)
        self.num_nodes = 0
        self._nodes: list[Tensor] = []
        self._seeds: list[Tensor] = []
        self._num_indexed = 0  # Nodes whose pairs are in the scratch arrays.
        self._num_slots = 0
        self._num_frontier_chunks = 0
        self._sorting = False  # The pair array would exceed MAX_PAIR_SCRATCH.
        self._closed = False
        self._touched_nodes: list[Tensor] = []
        self._touched_pairs: list[Tensor] = []

    @property
    def node(self) -> Tensor:
        r"""Global id of every node, shape :obj:`[num_nodes]`."""
        return cat_or_empty(self._nodes)

    @property
    def seed(self) -> Tensor:
        r"""Seed index of every node, shape :obj:`[num_nodes]`."""
        return cat_or_empty(self._seeds)

    def add(
        self,
        node: Tensor,
        seed: Tensor,
        distinct: bool = False,
        last: bool = False,
    ) -> Tensor:
        r"""Appends the pairs :obj:`(seed[i], node[i])` not present yet, in order of
        first occurrence.

        Args:
            node (torch.Tensor): Global node ids.
            seed (torch.Tensor): Seed index of each node.
            distinct (bool): Promise that the pairs differ from each other.
                (default: :obj:`False`)
            last (bool): Promise that no pairs will be added after these, which
                saves recording their local ids. (default: :obj:`False`)

        Returns:
            The local id of every pair.
        """
        assert not self._closed, "SampledNodes.add() after add(..., last=True)"
        self._closed = last
        if distinct and self.num_nodes == 0:
            # Nothing to compare with: append now, index when needed.
            self._append(node, seed)
            return torch.arange(node.numel())
        if node.numel() == 0:
            return node.new_empty(0)
        if self._sorting:
            return self._add_by_sorting(node, seed)

        # Pairs appended unindexed go first: being distinct and new, they keep
        # their local ids.
        num_pending = self.num_nodes - self._num_indexed
        if num_pending > 0:
            node = torch.cat([self.node[self._num_indexed :], node])
            seed = torch.cat([self.seed[self._num_indexed :], seed])
        key = self._pair_key(node, seed)
        if key is None:
            return self._add_by_sorting(node[num_pending:], seed[num_pending:])

        pair_local = self._get_scratch().pair_local
        marker = torch.arange(MARKER, MARKER + key.numel())
        pair_local.scatter_reduce_(0, key, marker, "amin")
        found = pair_local.index_select(0, key)
        is_first = found == marker  # First occurrence of a pair new to the batch.
        rank = is_first.cumsum(0).add_(self._num_indexed - 1)
        if self._num_indexed == 0:  # Every pair is new to the batch.
            local = rank.index_select(0, found.sub_(MARKER))
        else:
            first_position = found.sub(MARKER).clamp_(min=0)
            local = torch.where(found < MARKER, found, rank.index_select(0, first_position))
        if not last:
            pair_local.index_copy_(0, key, local)
        self._touched_pairs.append(key)

        new = is_first.nonzero().view(-1)[num_pending:]
        self._append(node.index_select(0, new), seed.index_select(0, new))
        self._num_indexed = self.num_nodes
        return local[num_pending:]

    def take_frontier(self) -> tuple[Tensor, Tensor, int]:
        r"""Returns the nodes appended since the last call: their global ids, seed
        indices and the local id of the first of them."""
        if self._num_frontier_chunks == len(self._nodes):
            return _EMPTY, _EMPTY, self.num_nodes
        chunks = slice(self._num_frontier_chunks, None)
        node = cat_or_empty(self._nodes[chunks])
        seed = cat_or_empty(self._seeds[chunks])
        self._num_frontier_chunks = len(self._nodes)
        return node, seed, self.num_nodes - node.numel()

    def release(self) -> None:
        r"""Resets the scratch entries this batch wrote."""
        if self._touched_nodes:
            touched = cat_or_empty(self._touched_nodes)
            self._get_scratch().node_slot.index_fill_(0, touched, UNUSED)
        if self._touched_pairs:
            touched = cat_or_empty(self._touched_pairs)
            self._get_scratch().pair_local.index_fill_(0, touched, UNUSED)
        self._touched_nodes, self._touched_pairs = [], []

    def _append(self, node: Tensor, seed: Tensor) -> None:
        self._nodes.append(node)
        self._seeds.append(seed)
        self.num_nodes += node.numel()

    def _pair_key(self, node: Tensor, seed: Tensor) -> Tensor | None:
        # Slot of each global id; unseen ids get fresh slots (one per id).
        scratch = self._get_scratch()
        node_slot = scratch.node_slot
        fresh = torch.arange(self._num_slots, self._num_slots + node.numel())
        node_slot.scatter_reduce_(0, node, fresh, "amin")
        self._touched_nodes.append(node)
        self._num_slots += node.numel()
        size = self._num_slots * self.num_seeds
        if size > MAX_PAIR_SCRATCH:
            self._sorting = True
            return None
        scratch.reserve_pairs(size)
        return node_slot.index_select(0, node).mul_(self.num_seeds).add_(seed)

    def _add_by_sorting(self, node: Tensor, seed: Tensor) -> Tensor:
        # Same result as the scratch path, by sorting all pair keys.
        known = self.node * self.num_seeds + self.seed
        key = torch.cat([known, node * self.num_seeds + seed])
        _, inverse = torch.unique(key, return_inverse=True)
        position = torch.arange(key.numel())
        first = torch.full((int(inverse.max()) + 1,), key.numel(), dtype=torch.long)
        first.scatter_reduce_(0, inverse, position, "amin")
        first = first.index_select(0, inverse[known.numel() :])  # Per new pair.
        new = (first == position[known.numel() :]).nonzero().view(-1)
        local_at = torch.arange(key.numel())  # Local id by first position.
        local_at[known.numel() + new] = torch.arange(
            self.num_nodes, self.num_nodes + new.numel()
        )
        self._append(node.index_select(0, new), seed.index_select(0, new))
        self._num_indexed = self.num_nodes
        return local_at.index_select(0, first)


def cat_or_empty(tensors: list[Tensor]) -> Tensor:
    r"""Concatenates int64 tensors, without copying a single one."""
    if len(tensors) == 1:
        return tensors[0]
    if not tensors:
        return torch.empty(0, dtype=torch.long)
    return torch.cat(tensors)
