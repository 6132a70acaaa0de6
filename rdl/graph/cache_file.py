"""Cache files that are complete, verified, or absent.

A cache file is a ``torch.save`` of a dict sealed with a checksum of its
content (:func:`rdl.checksum.digest`). It is written to a temporary file
with a unique name next to it and renamed over it, so processes writing the
same cache at once each leave a complete file, readers (and memory maps of
the old file) never see a half-written one, and a failed write (a full disk)
leaves nothing behind. Reading checks the checksum, so bytes changed on disk
are found instead of used.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from rdl.checksum import ChecksumError, digest
from rdl.output_file import write_atomically

CHECKSUM_KEY = "checksum"


def write_sealed(payload: dict[str, Any], path: str | Path) -> None:
    """Writes ``payload`` plus its checksum to ``path``, atomically
    (:func:`save_atomically`)."""
    save_atomically({**payload, CHECKSUM_KEY: digest(payload)}, path)


def save_atomically(obj: Any, path: str | Path) -> None:
    """``torch.save`` of ``obj`` to ``path``, written whole or not at all
    (:func:`rdl.output_file.write_atomically`).

    Raises:
        OSError: naming ``path`` when the file cannot be written (e.g. the
            disk is full); ``path`` is then as it was before.
    """
    # a file object: torch.save then raises the OSError itself
    write_atomically(path, lambda file: torch.save(obj, file),
                     after_failure=", and the next run writes it again")


def unseal(payload: dict[str, Any], path: str | Path) -> dict[str, Any]:
    """``payload`` read from ``path`` without its checksum, once verified.

    Raises:
        ChecksumError: naming ``path`` when the content differs from the
            checksum written with it, or there is none.
    """
    content = {k: v for k, v in payload.items() if k != CHECKSUM_KEY}
    stored = payload.get(CHECKSUM_KEY)
    if stored is None:
        raise ChecksumError(f"{path} has no checksum (written by an older rdl)")
    if stored != digest(content):
        raise ChecksumError(f"{path} is corrupt: its content does not match the checksum "
                            "written with it")
    return content

