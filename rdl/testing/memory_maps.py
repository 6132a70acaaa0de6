"""Which file, if any, backs a tensor's memory: to check that loaded graphs
and frames are views of their memory-mapped files (Linux only: reads
``/proc/self/maps``)."""
from __future__ import annotations

import torch


def mapped_files() -> list[tuple[int, int, str]]:
    """(start, end, path) of the file mappings of this process."""
    out = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and parts[5].startswith("/"):
                start, end = (int(x, 16) for x in parts[0].split("-"))
                out.append((start, end, parts[5].strip()))
    return out


def backing_file(tensor: torch.Tensor, maps: list[tuple[int, int, str]]) -> str | None:
    """The path of the mapping in ``maps`` that holds ``tensor``'s storage, or
    :obj:`None` when it lives in anonymous memory."""
    pointer = tensor.untyped_storage().data_ptr()
    return next((path for start, end, path in maps if start <= pointer < end), None)
