"""Order-preserving 32-bit codes of node times.

A time-sorted CSC keys every edge slot by ``dst * 2**32 + code(time of the source)``.
One int64 comparison against ``dst * 2**32 + bound(seed time)`` then tells whether a
neighbour is allowed, and one binary search over the keys finds a row's temporal cut.
"""
from __future__ import annotations

import torch
from torch import Tensor

CODE_BITS = 32
CODE_MAX = 2**CODE_BITS - 1
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


class TimeCode:
    r"""Maps the times of one node type to integer codes in :obj:`[0, 2**32)` in the
    same order as the times.

    Codes are offsets from the earliest time when all times fit in a 32-bit span
    (136 years of seconds); otherwise they are dense ranks of the distinct times.

    Args:
        time (torch.Tensor): The times of all nodes of the type, an integer tensor.
    """

    def __init__(self, time: Tensor):
        self.origin = int(time.min()) if time.numel() > 0 else 0
        span = int(time.max()) - self.origin if time.numel() > 0 else 0
        fits = (
            span <= CODE_MAX
            and self.origin - 1 >= _INT64_MIN
            and self.origin + CODE_MAX <= _INT64_MAX
        )
        # Sorted distinct times, only when codes are ranks:
        self.distinct: Tensor | None = None if fits else torch.unique(time)

    def encode(self, time: Tensor) -> Tensor:
        r"""Returns the code of each time in :obj:`time`."""
        if self.distinct is None:
            return time - self.origin
        return torch.searchsorted(self.distinct, time)

    def decode(self, code: Tensor) -> Tensor:
        r"""Returns the time of each code in :obj:`code` (the inverse of :meth:`encode`)."""
        if self.distinct is None:
            return code + self.origin
        return self.distinct.index_select(0, code)

    def bound(self, seed_time: Tensor) -> Tensor:
        r"""Returns, for each seed time, the largest code whose time is not after it,
        or :obj:`-1` when every node is newer than the seed."""
        if self.distinct is None:
            clamped = seed_time.clamp(min=self.origin - 1, max=self.origin + CODE_MAX)
            return clamped - self.origin
        return torch.searchsorted(self.distinct, seed_time, right=True) - 1

    def __repr__(self) -> str:
        kind = "offset" if self.distinct is None else "rank"
        return f"{self.__class__.__name__}({kind})"
