"""Inverse-CDF lookups in constant expected time (a guide table).

``np.searchsorted`` with random queries costs a binary search each, which
dominated generation time. A guide table remembers, for each of many equal
cells of the value range, the first index past the cell's start; a query
starts there and steps forward, usually zero or one step.
"""
from __future__ import annotations

import numpy as np


class GuideTable:
    r"""``index(x)`` equals ``np.searchsorted(values, x, side="right")``.

    Args:
        values (np.ndarray): Non-decreasing values, all in ``[0, top]``.
        top (float): Upper end of the value range.
        cells_per_unit (float): Guide cells per unit of value; about two
            per value keeps the forward steps short.
    """

    def __init__(self, values: np.ndarray, top: float, cells_per_unit: float) -> None:
        self.values = np.asarray(values, dtype=np.float64)
        self.scale = float(cells_per_unit)
        cells = int(np.ceil(top * self.scale)) + 1
        # Cell starts are lowered by far more than float rounding, so that a
        # query never starts past its answer.
        starts = np.arange(cells) / self.scale - 1e-9 * max(1.0, top)
        self.guide = np.searchsorted(self.values, starts, side="right")

    def index(self, x: np.ndarray) -> np.ndarray:
        """First index whose value is greater than ``x``, per element."""
        cell = np.minimum((x * self.scale).astype(np.int64), len(self.guide) - 1)
        i = self.guide[cell]
        last = len(self.values)
        todo = np.flatnonzero(self.values[np.minimum(i, last - 1)] <= x)
        todo = todo[i[todo] < last]
        while todo.size:
            i[todo] += 1
            todo = todo[i[todo] < last]
            todo = todo[self.values[i[todo]] <= x[todo]]
        return i
