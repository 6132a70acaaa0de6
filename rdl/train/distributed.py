r"""What changes when training runs in several processes (Lightning
``strategy: ddp``, launched by Lightning itself, ``torchrun`` or SLURM): which
seeds each process handles, how many CPU threads it may use, and gathering
its predictions into one result.

Seeds are sharded here rather than by Lightning's ``use_distributed_sampler``:
Lightning pads validation shards with repeated seeds, which counts those seeds
twice in every metric. :class:`ShardSampler` is a ``DistributedSampler``, so
Lightning keeps it (and the ``NodeLoader`` around it) as it is, under any
Trainer, and calls its ``set_epoch`` before every training epoch.
"""
from __future__ import annotations

import math
import os

import torch
from torch import Tensor
from torch.utils.data import DistributedSampler


def shard_positions(
    num_seeds: int, rank: int = 0, world_size: int = 1, *, shuffle: bool = False,
    pad: bool = False, seed: int = 0, epoch: int = 0, min_seeds: int = 0,
) -> Tensor:
    r"""Rows of a split's seeds that process ``rank`` of ``world_size`` handles.

    With ``pad`` (training), every process holds
    ``max(ceil(num_seeds / world_size), min_seeds)`` seeds, taken from passes
    over all seeds laid end to end (each pass shuffled anew, if ``shuffle``),
    and process ``r`` takes every ``world_size``-th seed from ``r`` on, as
    torch's ``DistributedSampler`` does: DDP all-reduces gradients at every
    step, so every process must take the same number of steps. Without
    ``min_seeds``, up to ``world_size - 1`` seeds are trained on twice per
    epoch; with it, a small split still gives an epoch enough optimizer steps,
    and every seed is trained on equally often, plus or minus one. Step ``k``
    of all processes together, each with batch size ``b``, covers seeds
    ``k * world_size * b ...`` of that order: the batches a single process
    with batch size ``world_size * b`` would take.

    Without ``pad`` (validation, test and prediction) the shards are
    contiguous, disjoint and cover every seed exactly once, so metrics reduced
    across processes equal the single-process ones.

    Args:
        num_seeds (int): Seeds in the split.
        rank (int): This process's global rank. (default: :obj:`0`)
        world_size (int): Number of processes. (default: :obj:`1`)
        shuffle (bool): Shuffle by ``seed + epoch`` (the same order in every
            process, another in every epoch). (default: :obj:`False`)
        pad (bool): Give every process the same number of seeds.
            (default: :obj:`False`)
        seed (int): Shuffling seed. (default: :obj:`0`)
        epoch (int): Training epoch. (default: :obj:`0`)
        min_seeds (int): With ``pad``, seeds per process at least.
            (default: :obj:`0`)
    """
    if num_seeds < 0 or min_seeds < 0:
        raise ValueError(f"num_seeds={num_seeds} and min_seeds={min_seeds} must not be negative")
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank={rank} must lie in [0, world_size={world_size}) "
                         "and world_size must be at least 1")
    generator = torch.Generator().manual_seed(seed + epoch) if shuffle else None

    def one_pass() -> Tensor:
        if generator is None:
            return torch.arange(num_seeds)
        return torch.randperm(num_seeds, generator=generator)

    if not pad:
        return torch.tensor_split(one_pass(), world_size)[rank]
    if num_seeds == 0:
        return torch.arange(0)
    total = padded_length(num_seeds, world_size, min_seeds) * world_size
    order = torch.cat([one_pass() for _ in range(math.ceil(total / num_seeds))])
    return order[:total][rank::world_size]


def padded_length(num_seeds: int, world_size: int, min_seeds: int = 0) -> int:
    """Training seeds per process and epoch (see :func:`shard_positions`)."""
    return max(math.ceil(num_seeds / world_size), min_seeds) if num_seeds else 0


class ShardSampler(DistributedSampler):
    r"""Yields the seed rows of one process (see :func:`shard_positions`).

    Args:
        num_seeds (int): Seeds in the split.
        rank (int): This process's global rank. (default: :obj:`0`)
        world_size (int): Number of processes. (default: :obj:`1`)
        train (bool): Shuffle every epoch and pad shards to equal length.
            (default: :obj:`False`)
        seed (int): Shuffling seed. (default: :obj:`0`)
        min_seeds (int): With ``train``, seeds per process and epoch at
            least: a data module asks for ``min_steps * batch_size`` so
            that a small split still gives ``min_steps`` optimizer steps.
            (default: :obj:`0`)
    """

    def __init__(self, num_seeds: int, rank: int = 0, world_size: int = 1, *,
                 train: bool = False, seed: int = 0, min_seeds: int = 0) -> None:
        super().__init__(range(num_seeds), num_replicas=world_size, rank=rank, shuffle=train,
                         seed=seed)
        self.num_seeds = num_seeds
        self.train = train
        self.min_seeds = min_seeds if train else 0

    def positions(self) -> Tensor:
        return shard_positions(self.num_seeds, self.rank, self.num_replicas, shuffle=self.train,
                               pad=self.train, seed=self.seed, epoch=self.epoch,
                               min_seeds=self.min_seeds)

    def __iter__(self):
        return iter(self.positions().tolist())

    def __len__(self) -> int:
        if self.train:
            return padded_length(self.num_seeds, self.num_replicas, self.min_seeds)
        extra = self.rank < self.num_seeds % self.num_replicas  # tensor_split: first ones longer
        return self.num_seeds // self.num_replicas + int(extra)

    def __repr__(self) -> str:
        return (f"ShardSampler(rank={self.rank}/{self.num_replicas}, seeds={len(self)}"
                f"/{self.num_seeds}, train={self.train})")


def share_cpu_threads(processes_per_node: int) -> int | None:
    """Gives each of ``processes_per_node`` processes training on one machine
    an equal share of its CPU cores as torch intra-op threads: each process
    would otherwise start one thread per core, and oversubscribed cores slow
    every process down many times. Does nothing for a single process or when
    ``OMP_NUM_THREADS`` is set (``torchrun`` sets it to 1). Returns the
    number of threads set, or :obj:`None`."""
    if processes_per_node <= 1 or "OMP_NUM_THREADS" in os.environ:
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = max(1, (cores or 1) // processes_per_node)
    torch.set_num_threads(threads)
    return threads


def gather_on_rank_zero(items: list, rank: int, world_size: int) -> list | None:
    """The ``items`` of every process, concatenated in rank order, on global
    rank 0 (:obj:`None` on the others); ``items`` itself in a single process.
    Tensors in ``items`` should be on the CPU."""
    if world_size == 1:
        return items
    import torch.distributed as dist

    parts: list | None = [None] * world_size if rank == 0 else None
    dist.gather_object(items, parts, dst=0)
    return None if parts is None else [item for part in parts for item in part]
