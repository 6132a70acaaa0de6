"""How subgraphs are sampled, as one value that training stores in its
checkpoint and prediction reads back, so both sample alike."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rdl.sampling.fanout import check_shared_fanout, resolve_fanouts
from rdl.sampling.temporal_sampler import STRATEGIES


@dataclass(frozen=True)
class SamplingSettings:
    r"""Fan-out, neighbour choice and the windows of the temporal counts.

    Args:
        num_neighbors (list[int]): Neighbours per node and edge type, per hop.
        strategy (str): ``"uniform"`` or ``"last"``.
        stat_windows (list[int], optional): The windows of
            :class:`~rdl.sampling.TemporalNodeStats`, in seconds.
        shared_fanout (bool or str): Each hop's fan-out is a budget per node
            shared by its edge types; ``"auto"`` where a node type has many
            (see :class:`~rdl.sampling.TemporalNeighborSampler`).
    """

    num_neighbors: tuple[int, ...] = (16, 16)
    strategy: str = "last"
    stat_windows: tuple[int, ...] | None = None
    shared_fanout: bool | Literal["auto"] = "auto"

    def __post_init__(self) -> None:
        object.__setattr__(self, "num_neighbors", tuple(self.num_neighbors))
        if self.stat_windows is not None:
            object.__setattr__(self, "stat_windows", tuple(self.stat_windows))
        if not self.num_neighbors:
            raise ValueError("num_neighbors must give at least one hop's fan-out")
        resolve_fanouts(list(self.num_neighbors), [])  # checks every fan-out
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy={self.strategy!r} is not one of {list(STRATEGIES)}")
        check_shared_fanout(self.shared_fanout)

    def to_plain(self) -> dict:
        return {"num_neighbors": list(self.num_neighbors), "strategy": self.strategy,
                "stat_windows": None if self.stat_windows is None else list(self.stat_windows),
                "shared_fanout": self.shared_fanout}

    @classmethod
    def from_plain(cls, plain: dict, num_layers: int) -> SamplingSettings:
        """Reads :meth:`to_plain`'s keys; checkpoints written before rdl stored
        the fan-out get ``16`` per layer and ``"last"``, what rdl used then
        (and a fan-out per edge type, ``shared_fanout=False``)."""
        return cls(plain.get("num_neighbors") or [16] * max(num_layers, 1),
                   plain.get("strategy", "last"), plain.get("stat_windows"),
                   plain.get("shared_fanout", False))
