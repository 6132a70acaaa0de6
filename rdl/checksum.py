"""Content checksums of nested payloads (dicts and lists of tensors, strings
and numbers), so that bytes flipped in a cache file or checkpoint are found
on load instead of silently becoming wrong features or NaN predictions.

Dependency-free within rdl: the graph caches (stage 2) and checkpoints
(stage 6) both use it.
"""
from __future__ import annotations

import hashlib
import os
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import torch

ALGORITHM = "blake2b"
# Tensors larger than this are hashed in chunks of this size, in parallel
# threads (hashlib releases the GIL), then the chunk digests in order.
CHUNK_BYTES = 1 << 23
_MAX_THREADS = 8


class ChecksumError(ValueError):
    """Content that does not match the checksum written with it."""


def digest(payload: Any) -> str:
    """A digest of ``payload``'s structure and content, as ``"blake2b:<hex>"``.

    Dict items are taken in the order of their keys' ``repr`` and tensors by
    dtype, shape and logical bytes (memory layout, device and memory maps do
    not matter), so a payload hashes the same before ``torch.save`` and after
    ``torch.load``.

    Raises:
        TypeError: for values other than tensors, ``str``, ``bytes``,
            numbers, ``None``, dicts, lists and tuples (nothing is skipped).
    """
    state = hashlib.blake2b(digest_size=32)
    with ThreadPoolExecutor(min(_MAX_THREADS, os.cpu_count() or 1)) as pool:  # threads start on use
        _update(state, payload, pool)
    return f"{ALGORITHM}:{state.hexdigest()}"


def _update(state: Any, value: Any, pool: Executor) -> None:
    """Feeds ``value`` to ``state``: a type tag, lengths, then content."""
    if isinstance(value, torch.Tensor):
        data = _tensor_bytes(value)
        state.update(f"T{value.dtype}{tuple(value.shape)}{data.nbytes};".encode())
        if data.nbytes <= CHUNK_BYTES:
            state.update(data)
        else:
            chunks = (data[i:i + CHUNK_BYTES] for i in range(0, data.nbytes, CHUNK_BYTES))
            for part in pool.map(_chunk_digest, chunks):
                state.update(part)
    elif isinstance(value, dict):
        state.update(f"d{len(value)};".encode())
        for key, item in sorted(value.items(), key=lambda kv: repr(kv[0])):
            _update(state, key, pool)
            _update(state, item, pool)
    elif isinstance(value, (list, tuple)):
        state.update(f"{'l' if isinstance(value, list) else 't'}{len(value)};".encode())
        for item in value:
            _update(state, item, pool)
    elif isinstance(value, str):
        raw = value.encode("utf-8", "surrogatepass")
        state.update(f"s{len(raw)};".encode())
        state.update(raw)
    elif isinstance(value, bytes):
        state.update(f"y{len(value)};".encode())
        state.update(value)
    elif value is None or isinstance(value, (bool, int)):
        state.update(f"i{value!r};".encode())
    elif isinstance(value, float):
        state.update(f"f{value.hex()};".encode())
    else:
        raise TypeError(f"Cannot checksum a value of type {type(value).__name__}.")


def _tensor_bytes(tensor: torch.Tensor) -> memoryview:
    """The tensor's elements in row-major order, as bytes (no copy when the
    tensor is a contiguous CPU tensor, e.g. a view of a memory-mapped file)."""
    flat = tensor.detach().cpu().contiguous().reshape(-1)
    return memoryview(flat.view(torch.uint8).numpy()).cast("B")


def _chunk_digest(chunk: memoryview) -> bytes:
    return hashlib.blake2b(chunk, digest_size=32).digest()
